"""The Adaptation page's state, widgets and figures: test-time adaptation (:mod:`robustlab.adapt`) of the sidebar's
model against a query shift.

- :func:`controls`: direction, query shift (a perturbation of the query side), method and its parameters (widgets
  generated from :func:`robustlab.adapt.list_methods`; an empty box is "auto": the value chosen by direction);
- :func:`run`: one ``robustlab.adapt.run`` under a progress bar; the outcome (result or one-line error) is kept in
  ``st.session_state`` with the settings and widget values that made it, so leaving the page and coming back shows
  it again with its controls;
- figures: loss curves per batch, the query/gallery map (t-SNE or PCA) with the three centroids.
"""
from __future__ import annotations

import math
import uuid
from dataclasses import astuple, dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from robustlab import adapt
from robustlab.diagnostics import embedding
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import DIRECTION_LABELS
from ui import choice
from ui.loaders import Bench
from ui.widget_state import initial, valid
from ui.widgets import NONE, one_line_failure, perturbation_names, perturbation_picker
from ui.cache import shared

LAST = "ad_last"  # session key of the last run's outcome
MAX_POINTS = 1000  # the map's points: shifted queries + adapted queries + gallery
# The query shift on the text side: the page's own (keyboard s3: a shift for the text tower to adapt to, where the
# shared text default on videos is none); on the image or video side, the session's one choice, whose default is every
# page's (ui.choice.DEFAULTS: gaussian_noise s3 on images, reverse_sampling s1 on videos).
TEXT_SHIFT = ("keyboard", 3)
SHORT = {"image": "img", "video": "vid", "text": "txt"}


@dataclass
class Setup:
    """What the controls ask for: one ``robustlab.adapt.run``."""

    direction: str
    side: str  # the query side's modality: "text", "image" or "video"
    cond: Condition
    method: str
    params: dict  # the parameters set (auto ones left out)
    widgets: dict  # widget key -> value (restored after a page switch)

    def key(self) -> tuple:
        return (self.direction, self.side, astuple(self.cond), self.method, tuple(sorted(self.params.items())))


def _saved(key: str, default):
    """The value a widget had in the last run's settings (so a page switch keeps the controls), else ``default``."""
    return (st.session_state.get(LAST) or {}).get("widgets", {}).get(key, default)


def _step(v) -> float:
    """A number input's step: the default's order of magnitude (1e-5 for a learning rate of 3e-5)."""
    v = abs(float(v or 0))
    return 10.0 ** math.floor(math.log10(v)) if v else 0.01


def _declared(key: str, value) -> dict:
    """:func:`initial` for a number box that may be empty (None: "auto"): an empty kept value is declared too, where
    :func:`initial` would declare nothing and Streamlit would fill the box with its minimum."""
    got = initial(key, value=value)
    return {"value": None} if key in st.session_state and st.session_state[key] is None else got


def param_widgets(method: dict, auto: dict) -> tuple[dict, dict]:
    """One widget per parameter of ``method`` (a :func:`robustlab.adapt.list_methods` entry), four a row; a None
    default is an empty box shown as "auto" (its value for this direction in ``auto``). -> (set params, widgets)."""
    params, widgets = {}, {}
    ps = method["params"]
    if not ps:
        st.caption("No parameters: the shifted queries through the unadapted model.")
        return params, widgets
    cols = st.columns(4)
    for i, p in enumerate(ps):
        key = f"ad_{method['name']}_{p['name']}"
        default = _saved(key, p["default"])
        with cols[i % 4]:
            if p["type"] == "bool":
                v = st.checkbox(p["name"], key=key, help=p["help"], **initial(key, value=bool(default)))
            elif p["type"] == "choice":
                v = st.selectbox(p["name"], p["choices"], key=key, help=p["help"],
                                 **valid(key, p["choices"], default))
            else:
                cast = int if p["type"] == "int" else float
                lo, hi = (None if x is None else cast(x) for x in (p["min"], p["max"]))
                a = auto.get(p["name"])
                hint = f"auto ({a:.4g})" if p["default"] is None and a is not None else "auto"
                v = st.number_input(p["name"], lo, hi, key=key,
                                    **_declared(key, None if default is None else cast(default)),
                                    placeholder=hint, help=p["help"] + (f". Empty: {hint}, chosen by direction."
                                                                        if p["default"] is None else ""),
                                    **({"step": 1} if cast is int else {"step": _step(default if default is not None
                                                                                      else a), "format": "%.4g"}))
        widgets[key] = v
        if v is not None:
            params[p["name"]] = v
    return params, widgets


def controls(ctx: Bench) -> Setup:
    """Direction, query shift, method and parameters."""
    bench, kind = ctx.bench, ctx.bench.kind
    dirs = list(bench.directions)
    c1, c2, c3 = st.columns([2, 3, 2])
    with c1:
        d = _saved("ad_direction", dirs[0])
        direction = st.radio("Direction", dirs, key="ad_direction", format_func=DIRECTION_LABELS.get,
                             **valid("ad_direction", dirs, d, DIRECTION_LABELS.get),
                             help=f"{DIRECTION_LABELS[dirs[0]]}: caption queries adapt the text tower; "
                                  f"{DIRECTION_LABELS[dirs[1]]}: {kind} queries adapt the {kind} tower.")
        seed = int(st.number_input("Seed", 0, 2**31 - 1, key="ad_seed",
                                   **initial("ad_seed", value=int(_saved("ad_seed", 0))),
                                   help="Query i is perturbed with seed + i."))
    side = "text" if direction[0] == "t" else kind
    with c2:
        pk, sk = f"ad_{SHORT[side]}_pert", f"ad_{SHORT[side]}_sev"
        name0, sev0 = TEXT_SHIFT if side == "text" else choice.default(side, kind)
        name, sev = perturbation_picker(side, pk, sk, default=_saved(pk, name0), severity=int(_saved(sk, sev0)),
                                        label=f"Query shift ({side})",
                                        kind=kind)  # the session's one choice (ui.choice): a pick on any page
        if side == "video" and name and perturbation_names("video")[1].get(name) == "temporal":
            st.caption(f"{name} only changes the frames' order or timing: an order-sensitive model (seqTransf) is "
                       "shifted, one that averages its frames (meanP) hardly is; a corruption (noise, blur) shifts "
                       "both.")
    cond = Condition(name, sev, seed)
    methods = {m["name"]: m for m in adapt.list_methods()}
    with c3:
        names = list(methods)
        m0 = _saved("ad_method", "hat-vtr")
        method = st.selectbox("Method", names, key="ad_method", format_func=lambda n: methods[n]["label"],
                              **valid("ad_method", names, m0))
    m = methods[method]
    st.caption(f"**{m['label']}** — {m['description']} Source: {m['source']}."
               + (f" Adapts the LayerNorms of the {side} query tower." if m["adapts"] else ""))
    n_gallery = len(ctx.dataset) if side == "text" else len(bench.text_items)
    auto = adapt.resolve(method, "text" if side == "text" else "visual", n_gallery, {})
    params, widgets = param_widgets(m, auto)
    widgets.update({"ad_direction": direction, "ad_seed": seed, pk: name or NONE, sk: sev, "ad_method": method})
    return Setup(direction, side, cond, method, params, widgets)


# ---- the run and its outcome --------------------------------------------------------------------------------
def run(ctx: Bench, setup: Setup) -> None:
    """``robustlab.adapt.run`` with the sidebar's model and dataset under a progress bar (encoding, then one step
    per batch); the result or a one-line error is kept in session state."""
    from robustlab.io.files import InputError

    bench = ctx.bench
    bar = st.progress(0.0, text=f"Perturbing and encoding the {bench.kind}s…")
    out = {"ctx": (ctx.spec, ctx.device, ctx.gid), "key": setup.key(), "widgets": setup.widgets,
           "id": uuid.uuid4().hex}

    def encoding(done, total):
        bar.progress(min(done / max(total, 1), 1.0), text=f"Perturbing and encoding the {bench.kind}s… {done}/{total}")

    def adapting(done, total):
        bar.progress(min(done / max(total, 1), 1.0), text=f"Adapting… batch {done}/{total}")

    # a model or setting that cannot adapt: one line (out["error"])
    with one_line_failure(bar, out, "adaptation", (adapt.AdaptError, InputError, ValueError)):
        with st.spinner(f"Perturbing and encoding the {bench.kind}s and captions…"):
            bench.visuals(Condition(), progress=encoding)
            bench.texts(Condition())
            if setup.side == "text":
                bench.texts(setup.cond)
            elif not setup.cond.clean:
                bench.visuals(setup.cond, progress=encoding)
        bar.progress(0.0, text="Adapting…")
        with st.spinner(f"Adapting ({setup.method})…"):
            out["result"] = adapt.run(bench.model, ctx.dataset, setup.method, setup.direction, setup.cond,
                                      bench=bench, progress=adapting, **setup.params)
    st.session_state[LAST] = out


def last(ctx: Bench, setup: Setup) -> dict | None:
    """The last outcome for this model and dataset: its result (with a note when the controls changed since), or
    None after showing its one-line error (or when there is none)."""
    o = st.session_state.get(LAST)
    if o is None or o["ctx"] != (ctx.spec, ctx.device, ctx.gid):
        return None
    same = o["key"] == setup.key()
    if "error" in o:
        if same:
            st.error(o["error"])
        return None
    if not same:
        st.info("The settings above changed since the run shown below: press Run to adapt with them.")
    return o


def summary(res) -> str:
    """One line: method, direction, queries × gallery, the shift, parameters adapted, time."""
    what = {"t2i": ("captions", "images"), "t2v": ("captions", "videos"), "i2t": ("images", "captions"),
            "v2t": ("videos", "captions")}[res.direction]
    label = adapt.get_method(res.method).label
    cond = Condition.from_dict(res.condition)
    s = res.seconds
    return (f"{label} · {DIRECTION_LABELS[res.direction]} · {res.n_queries} query {what[0]} × {res.n_gallery} gallery "
            f"{what[1]} · query shift: {cond.label()} · {res.adapted_parameters:,} LayerNorm parameters adapted · "
            f"{s.get('total', 0):.1f} s ({s.get('per_1000_queries', 0):.2f} s per 1,000 queries adapting)")


# ---- figures ------------------------------------------------------------------------------------------------
def loss_figure(res) -> go.Figure | None:
    """The loss per batch (its last step) and the method's parts, or None when nothing adapted."""
    if not res.losses:
        return None
    parts = [k for k in res.losses[0] if k not in ("batch", "step", "loss")]
    total = res.loss_curve("loss")
    x = list(range(1, len(total) + 1))
    same = [p for p in parts if np.allclose(res.loss_curve(p), total, equal_nan=True)]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=total, mode="lines+markers", name="loss" + (f" (= {same[0]})" if same else ""),
                             line=dict(width=3)))
    for p in parts:
        if p not in same:
            fig.add_trace(go.Scatter(x=x, y=res.loss_curve(p), mode="lines", name=p))
    fig.update_layout(title="Loss per batch (last step)", xaxis_title="batch of queries (online, in stream order)",
                      yaxis_title="loss", height=340, margin=dict(t=40, b=20),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig


def subsample(n_q: int, n_g: int, cap: int = MAX_POINTS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Query and gallery rows for the map: all of them when 2·n_q + n_g ≤ ``cap``, else a seeded share of each
    (the same queries before and after)."""
    if 2 * n_q + n_g <= cap:
        return np.arange(n_q), np.arange(n_g)
    f = cap / (2 * n_q + n_g)
    rng = np.random.default_rng(seed)
    q = np.sort(rng.choice(n_q, max(2, int(n_q * f)), replace=False))
    g = np.sort(rng.choice(n_g, max(2, min(n_g, cap - 2 * len(q))), replace=False))
    return q, g


@shared("results")
def projection(run_id: str, method: str, perplexity: float, _x: np.ndarray) -> np.ndarray:
    """2-D coordinates of ``_x`` (cached per run and projection; the array is not hashed)."""
    if method == "tsne":
        return embedding.project(_x, "tsne", perplexity=perplexity, seed=0)
    return embedding.project(_x, "pca")


SHIFTED, ADAPTED = "#d62728", "#1f77b4"
GROUPS = (("queries before (shifted)", SHIFTED, "circle-open"), ("queries after (adapted)", ADAPTED, "circle"),
          ("gallery", "#7f7f7f", "diamond"))


def map_figure(xy: np.ndarray, sizes: tuple[int, int, int], labels: tuple, method: str) -> go.Figure:
    """Shifted queries, adapted queries and gallery points (``xy`` rows in that order, ``sizes`` of each group),
    each group's centroid (mean of its 2-D points) a large cross (HAT-VTR Fig. 5c). Drawn gallery first and the
    shifted queries' open circles last, so a query that barely moved shows both; the legend keeps GROUPS' order."""
    fig = go.Figure()
    ends = np.cumsum((0,) + tuple(sizes))
    traces, centroids = [], []
    for g, ((name, color, symbol), lab) in enumerate(zip(GROUPS, labels)):
        pts = xy[ends[g]:ends[g + 1]]
        traces.append(go.Scatter(x=pts[:, 0], y=pts[:, 1], mode="markers", name=name, text=lab, legendrank=g + 1,
                                 hovertemplate="%{text}<extra></extra>",
                                 marker=dict(color=color, symbol=symbol, size=8 if g == 0 else 6, opacity=0.8)))
        centroids.append(go.Scatter(x=[pts[:, 0].mean()], y=[pts[:, 1].mean()], mode="markers",
                                    name=f"centroid · {name}", legendrank=g + 4,
                                    hovertemplate=f"centroid · {name}<extra></extra>",
                                    marker=dict(color=color, symbol="x", size=18, line=dict(width=2, color="black"))))
    for t in [traces[2], traces[1], traces[0]] + centroids:  # the open circles of the shifted queries on top
        fig.add_trace(t)
    label = "t-SNE" if method == "tsne" else "PCA"
    fig.update_layout(height=560, margin=dict(t=20, b=20), xaxis_title=f"{label} 1", yaxis_title=f"{label} 2",
                      legend=dict(orientation="h", y=1.02, x=0, xanchor="left", yanchor="bottom"))
    return fig


def centroid_gap(q: np.ndarray, g: np.ndarray) -> float:
    """‖mean query − mean gallery‖ in the embedding space (the modality gap the cross-modal losses hold)."""
    return float(np.linalg.norm(np.asarray(q, np.float64).mean(0) - np.asarray(g, np.float64).mean(0)))


__all__ = ["Setup", "controls", "run", "last", "summary", "loss_figure", "map_figure", "projection", "subsample",
           "centroid_gap", "MAX_POINTS", "LAST", "SHIFTED", "ADAPTED"]
