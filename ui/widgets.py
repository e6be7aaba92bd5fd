"""Shared widgets: perturbation picker and condition row, encode-with-progress, ranked grid and caption table,
metrics table and recall chart, the basket and its export link."""
from __future__ import annotations

import contextlib
import threading
import weakref

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from robustlab.metrics.retrieval import mean_recall
from robustlab.perturb import list_perturbations
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import DIRECTION_LABELS
from ui import choice
from ui.media import hide_paths, safe_md, show_visual
from ui.widget_state import clamp, initial, valid

NONE = choice.NONE
SHORT = {"image": "img", "video": "vid", "text": "txt"}


def perturbation_names(modality: str) -> tuple[list[str], dict]:
    """["(none)", available perturbations of ``modality``...] and name -> category; each perturbation with other
    variants is followed by ``name/variant`` for each (another paper's parameters, e.g. shot_noise/schiappa_video),
    accepted as is by Condition and every task."""
    specs = [s for s in list_perturbations(modality=modality) if s.available]
    names = [n for s in specs for n in [s.name] + [f"{s.name}/{v}" for v in s.variants if v != s.default_variant]]
    cats = {s.name: s.category for s in specs}
    return [NONE] + names, {n: cats[n.split("/")[0]] for n in names}


def perturbation_picker(modality: str, key: str, sev_key: str, default: str | None = None, severity: int = 3,
                        label: str | None = None, kind: str | None = None) -> tuple[str | None, int]:
    """A perturbation of ``modality`` (grouped by category) and its severity -> (name or None, severity). With
    ``kind`` (the kind of data, "image" or "video"), the session's one choice (:mod:`ui.choice`): the box starts
    from the pick made on any page (else ``default``/``severity``) and a pick here is that choice for every page."""
    names, cat = perturbation_names(modality)
    fmt = lambda n: n if n == NONE else f"{cat[n]} · {n}"  # noqa: E731
    label = label or {"image": "Image", "video": "Video", "text": "Text"}[modality]
    shared = {}
    if kind is not None:
        st.session_state[choice.KIND] = kind
        default, severity = choice.picked(modality, kind, (default, severity))
        if key not in st.session_state:  # (a perturbation set for this page alone keeps the page's severity)
            choice.seed(key, default if default in names else NONE)
            choice.seed(sev_key, int(severity))
        s = st.session_state

        def pick():
            choice.remember(modality, kind, None if s.get(key, NONE) == NONE else s[key], s.get(sev_key))
        shared = {"on_change": pick}
    name = st.selectbox(f"{label} perturbation", names, key=key, format_func=fmt,
                        **valid(key, names, default if default in names else NONE, fmt), **shared)
    clamp(sev_key, 0, 5)
    sev = st.slider(f"{label} severity", 0, 5, key=sev_key, disabled=name == NONE, **initial(sev_key, value=severity),
                    **shared)
    return (None if name == NONE else name), int(sev)


def condition_row(kind: str, prefix: str, seed: int, defaults: dict, stacked: bool = False):
    """The visual (``kind``) and text perturbation pickers, side by side (or stacked in the current column) ->
    (visual condition, text condition). Keys: ``{prefix}img_pert``/``{prefix}vid_pert`` and ``{prefix}txt_pert``
    (and ``_sev``); ``defaults``: modality -> (name, severity), the page's first choice (else
    :data:`ui.choice.DEFAULTS`). Both pickers are the session's one choice (:mod:`ui.choice`)."""
    defaults = {kind: choice.default(kind, kind), **defaults}
    cols = [st.container(), st.container()] if stacked else st.columns(2)
    out = []
    for col, mod in zip(cols, (kind, "text")):
        with col:
            name, sev = perturbation_picker(mod, f"{prefix}{SHORT[mod]}_pert", f"{prefix}{SHORT[mod]}_sev",
                                            *defaults.get(mod, (None, 3)), kind=kind)
            out.append(Condition(name, sev, int(seed)))
    return tuple(out)


# one lock per (bench, side, condition): a bench is shared by every session (ui.cache) and memoises each
# condition, but unlocked, N sessions that need the same condition before it is memoised all perturb and encode the
# whole gallery, N times the CPU and the memory (benchmarks/bench_concurrency.py, 16 sessions on a cold server: the
# server's RSS peaked at 3.4 GB and the first steps took twice as long; 1.6 GB with the lock): the first one encodes,
# the others wait for its result
_ENCODING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ENCODING_GUARD = threading.Lock()


def _encoding(bench, side: str, cond) -> threading.Lock:
    with _ENCODING_GUARD:
        return _ENCODING.setdefault(bench, {}).setdefault((side, cond.key()), threading.Lock())


@contextlib.contextmanager
def _turn(bench, side: str, cond, bar, what: str):
    """Hold the (bench, side, condition) lock; while another holder computes the same thing (another session, or
    the server's warm-up: ui/warmup.py), ``bar`` says so instead of standing still at 0."""
    lock = _encoding(bench, side, cond)
    if not lock.acquire(blocking=False):
        bar.progress(0.0, text=f"{what}: the same work is under way (another session or the server's start-up); "
                               "waiting for it…")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def compute(bench, visual_cond, text_cond, fn, *, msg: str, failure: str, texts: bool = True):
    """Perturb and encode the clean and perturbed dataset (memoised by the bench, embeddings on disk) under a
    progress bar, then ``fn()``; its result, or None after a clear message (bad input: a warning; anything a
    perturbation raises on this dataset: ``failure`` and the error) so the page stays up. ``texts=False``: the
    captions are left to ``fn`` (a page that draws a ranking before the gallery metrics, see
    :func:`gallery_metrics`)."""
    from robustlab.io.files import InputError

    what = f"{bench.kind}s"
    bar = st.progress(0.0, text=f"Perturbing and encoding the {what}…")

    def progress_of(label):
        def progress(done, total):
            bar.progress(min(done / max(total, 1), 1.0), text=f"{label}… {done}/{total}")
        return progress

    try:
        with st.spinner(f"Perturbing and encoding the {what}…"):
            with _turn(bench, "visual", Condition(), bar, f"Encoding the clean {what}"):
                bench.visuals(Condition(), progress=progress_of(f"Encoding the clean {what}"))
            with _turn(bench, "visual", visual_cond, bar, f"Perturbing and encoding the {what}"):
                bench.visuals(visual_cond, progress=progress_of(f"Perturbing and encoding the {what}"))
        if texts:
            with st.spinner("Perturbing and encoding the captions…"):
                with _turn(bench, "text", Condition(), bar, "Encoding the clean captions"):
                    bench.texts(Condition(), progress=progress_of("Encoding the clean captions"))
                with _turn(bench, "text", text_cond, bar, "Perturbing and encoding the captions"):
                    bench.texts(text_cond, progress=progress_of("Perturbing and encoding the captions"))
        with st.spinner(msg):
            return fn()
    except (InputError, ValueError) as e:
        st.warning(str(e))
    except Exception as e:  # noqa: BLE001 - a perturbation failing on this dataset must not take the page down
        st.error(f"{failure} ({type(e).__name__}: {e})")
    finally:
        bar.empty()
    return None


def gallery_metrics(bench, visual_cond, text_cond, *, failure: str):
    """The bench's metrics under clean, visual-, text- and both-perturbed conditions (``condition_metrics``),
    encoding whatever captions are not encoded yet under a progress bar; None after a clear message."""
    from robustlab.io.files import InputError

    bar = st.progress(0.0, text="Perturbing and encoding the captions for the gallery metrics…")

    def progress_of(label):
        def progress(done, total):
            bar.progress(min(done / max(total, 1), 1.0), text=f"{label}… {done}/{total}")
        return progress

    try:
        with _turn(bench, "text", Condition(), bar, "Encoding the clean captions"):
            bench.texts(Condition(), progress=progress_of("Encoding the clean captions"))
        with _turn(bench, "text", text_cond, bar, "Perturbing and encoding the captions"):
            bench.texts(text_cond, progress=progress_of("Perturbing and encoding the captions"))
        with st.spinner("Scoring the gallery…"):
            return applied(bench.condition_metrics(visual_cond, text_cond), bench.kind, visual_cond, text_cond)
    except (InputError, ValueError) as e:
        st.warning(str(e))
    except Exception as e:  # noqa: BLE001 - as compute(): the page stays up
        st.error(f"{failure} ({type(e).__name__}: {e})")
    finally:
        bar.empty()
    return None


def applied(metrics: dict, kind: str, visual_cond, text_cond) -> dict:
    """``condition_metrics`` without the rows of a side that nothing perturbs: with the text perturbation at none,
    "text perturbed" is the clean score again and "both perturbed" the visual one (shown twice, they read as two
    results); the same for the visual side. Clean stays."""
    drop = set()
    if visual_cond.clean:
        drop |= {f"{kind} perturbed", "both perturbed"}
    if text_cond.clean:
        drop |= {"text perturbed", "both perturbed"}
    return {c: m for c, m in metrics.items() if c not in drop}


def condition_name(cond: str, kind: str) -> str:
    """A ``condition_metrics`` key as a headline says it ("both perturbed": "image and text perturbed")."""
    return f"{kind} and text perturbed" if cond == "both perturbed" else cond


def headline_r1(slot, metrics: dict, direction: str, kind: str) -> None:
    """The gallery R@1 of the most perturbed condition in ``metrics`` (:func:`applied`), labelled with that
    condition, and its change from clean; a change that rounds to 0.000 shows no arrow (no colour for no change)."""
    cond = list(metrics)[-1]
    r1, clean = metrics[cond][direction]["R@1"], metrics["clean"][direction]["R@1"]
    label = f"Gallery {DIRECTION_LABELS[direction]} R@1, {condition_name(cond, kind)}"
    if cond == "clean":
        slot.metric(label + " (nothing perturbed)", f"{r1:.3f}")
        return
    change = round(r1 - clean, 3)
    if change == 0:  # also -0.000: no arrow, no colour
        slot.metric(label, f"{r1:.3f}", delta="±0.000", delta_color="off", delta_arrow="off")
    else:
        slot.metric(label, f"{r1:.3f}", delta=f"{change:+.3f}")


def ranked_grid(title: str, key: str, ranked, visuals, gt, *, kind: str, gid: str, cond: Condition,
                fps: float | None = None) -> None:
    """Top-k images or videos with rank, score, item and a ✓ on the ground truth."""
    st.subheader(title)
    with st.container(key=key):
        cols = st.columns(min(5, max(1, len(ranked.indices))))
        for j, (i, s) in enumerate(zip(ranked.indices, ranked.scores)):
            with cols[j % len(cols)]:
                show_visual(visuals[i], kind=kind, gid=gid, cond=cond, index=i, fps=fps, slot=f"{key} #{j + 1}",
                            caption=f"#{j + 1} · {s:.3f} · item {i}{' ✓ ground truth' if i in gt else ''}")


def ranked_captions(title: str, key: str, ranked, texts, gt) -> None:
    """Top-k captions as a table (user text stays literal in a dataframe)."""
    st.subheader(title)
    # the short columns first, the caption last and wide: a long caption never pushes the ground truth off the table
    rows = [{"rank": j + 1, "ground truth": "✓" if i in gt else "", "score": round(s, 4), "caption #": i,
             "caption": texts[i]} for j, (i, s) in enumerate(zip(ranked.indices, ranked.scores))]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=key, column_config={
        "rank": st.column_config.NumberColumn(width="small"),
        "ground truth": st.column_config.TextColumn(width="small", help="✓: a ground-truth caption of the query"),
        "score": st.column_config.NumberColumn(width="small", format="%.4f"),
        "caption #": st.column_config.NumberColumn(width="small"),
        "caption": st.column_config.TextColumn(width="large")})


MEAN_RECALL = "mean recall"  # the Retrieval table's column: Qiu et al.'s per-direction Mean (issue 48)


def metrics_table(metrics: dict, key: str, mean: bool = False) -> None:
    """Condition × direction rows of R@K, MdR, MnR; ``mean``: and Qiu et al.'s per-direction mean recall
    (R@1 + R@5 + R@10) / 3 (:func:`robustlab.metrics.retrieval.mean_recall` of the same metrics; a sweep's
    ``<dir>_mean_recall`` column)."""
    rows = [{"condition": c, "direction": DIRECTION_LABELS[d], **{k: round(v, 4) for k, v in m.items()},
             **({MEAN_RECALL: round(mean_recall(m), 4)} if mean else {})}
            for c, dirs in metrics.items() for d, m in dirs.items()]
    cfg = {MEAN_RECALL: st.column_config.NumberColumn(
        MEAN_RECALL, help="Qiu et al.'s per-direction Mean: (R@1 + R@5 + R@10) / 3 (results.csv: <dir>_mean_recall)")}
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=key, column_config=cfg if mean else None)


def recall_chart(metrics: dict, direction: str, key: str) -> None:
    """Grouped bars: R@1/5/10 of every condition in one direction."""
    fig = go.Figure()
    for cond, dirs in metrics.items():
        m = dirs[direction]
        fig.add_bar(name=cond, x=["R@1", "R@5", "R@10"], y=[m["R@1"], m["R@5"], m["R@10"]])
    fig.update_layout(barmode="group", yaxis_title=f"{DIRECTION_LABELS[direction]} recall", yaxis_range=[0, 1],
                      height=320, margin=dict(t=20, b=20))
    st.plotly_chart(fig, key=key)


def int_slider(label: str, lo: int, hi: int, value: int, key: str, **kw) -> int:
    """An integer slider whose range depends on the data (a gallery of one image): a single possible value is
    shown as text (Streamlit refuses a slider with min == max)."""
    if hi <= lo:
        st.caption(f"{label}: {lo} (the only possible value here)")
        return int(lo)
    clamp(key, lo, hi)
    return int(st.slider(label, lo, hi, key=key, **initial(key, value=min(max(value, lo), hi)), **kw))


@contextlib.contextmanager
def one_line_failure(bar, out: dict | None, what: str, expected=(ValueError, RuntimeError)):
    """A page's long run under ``bar`` (emptied at the end), its failure as one line: an ``expected`` error by its
    message's first line, anything else as "The ``what`` failed (type: message)"; kept in ``out["error"]``, or,
    without ``out``, shown (an unexpected error then propagates, as Streamlit shows it)."""
    try:
        yield
    except expected as e:
        line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if out is None:
            st.error(f"{what[0].upper()}{what[1:]} cannot run: {line}")
        else:
            out["error"] = line
    except Exception as e:  # noqa: BLE001 - a failing run must not take the page down
        if out is None:
            raise
        out["error"] = f"The {what} failed ({type(e).__name__}: {e})".splitlines()[0]
    finally:
        bar.empty()


def basket():
    """The session's basket of perturbed examples (created on first use)."""
    from robustlab.export.basket import Basket

    return st.session_state.setdefault("basket", Basket())


def export_link() -> None:
    st.page_link("pages/export.py", label=f"Export the basket ({len(basket())})", icon=":material/inventory_2:")


def param_inputs(params, key: str) -> dict:
    """Number inputs for a method's int / float parameters (``p.name, p.kind, p.min, p.max, p.default,
    p.help``), side by side; other kinds (arrays) keep their defaults. -> name -> value."""
    shown = [p for p in params if p.kind in ("int", "float")]
    out = {}
    for col, p in zip(st.columns(max(1, len(shown))), shown):
        cast = int if p.kind == "int" else float
        lo, hi = (None if v is None else cast(v) for v in (p.min, p.max))
        with col:
            if lo is not None and hi is not None:  # (an open range: nothing to keep it inside)
                clamp(f"{key}_{p.name}", lo, hi)
            out[p.name] = cast(st.number_input(p.name, lo, hi, key=f"{key}_{p.name}", help=p.help,
                                               **initial(f"{key}_{p.name}", value=cast(p.default)),
                                               **({"step": 1} if p.kind == "int" else {"format": "%.4g"})))
    return out


def _catalogue_choice(kind: str, by_name: dict) -> dict:
    """The Perturb page's catalogue as the session's one choice (:mod:`ui.choice`): it starts from the perturbation
    picked for ``kind`` on any page (``name`` or ``name/variant``) and a pick here is that choice. -> the widgets'
    ``on_change``."""
    data = choice.data_kind()
    name, _ = choice.picked(kind, data)
    base, _, variant = (name or "").partition("/")
    if base in by_name and f"pt_name_{kind}" not in st.session_state:
        choice.seed(f"pt_group_{kind}", "all")
        choice.seed(f"pt_name_{kind}", base)
        choice.seed(f"pt_variant_{base}", variant or by_name[base].default_variant)
    s = st.session_state

    def pick():
        n = s.get(f"pt_name_{kind}")
        if n in by_name:
            v = s.get(f"pt_variant_{n}", by_name[n].default_variant)
            choice.remember(kind, data, n if v == by_name[n].default_variant else f"{n}/{v}")
    return {"on_change": pick}


def _group(spec) -> str:
    return f"{spec.modality} · {spec.category}"


def perturbation_catalogue(kind: str):
    """The whole catalogue for an input of ``kind``: category filter, perturbation (searchable; native ones
    first, then per-frame image ones for videos), variant and seed, its description, and the unavailable ones
    listed with why. -> (spec, variant, seed), or None after saying why nothing can run."""
    specs = list_perturbations(modality=kind)
    if not specs:
        st.warning(f"No perturbation accepts {kind} input yet.")
        return None
    # default: the first available one registered for this modality (e.g. gaussian_noise, keyboard)
    default = next((s.name for s in specs if s.available and s.modality == kind),
                   next((s.name for s in specs if s.available), specs[0].name))
    specs.sort(key=lambda s: (s.modality != kind, _group(s), s.name))
    by_name = {s.name: s for s in specs}
    shared = _catalogue_choice(kind, by_name)
    c1, c2, c3, c4 = st.columns([2, 3, 2, 1])
    groups = ["all"] + list(dict.fromkeys(_group(s) for s in specs))
    count = lambda g: f"all ({len(specs)})" if g == "all" else f"{g} ({sum(_group(s) == g for s in specs)})"  # noqa: E731
    grp = c1.selectbox("Category", groups, key=f"pt_group_{kind}", format_func=count,
                       **valid(f"pt_group_{kind}", groups, format_func=count))
    names = [s.name for s in specs if grp == "all" or _group(s) == grp]
    spec = by_name[c2.selectbox("Perturbation (type to search)", names, key=f"pt_name_{kind}", **shared,
                                **valid(f"pt_name_{kind}", names, default),
                                format_func=lambda n: f"{_group(by_name[n])} › {n}"
                                + ("" if by_name[n].available else "  — unavailable"))]
    variants = list(spec.variants)
    variant = c3.selectbox("Variant", variants, key=f"pt_variant_{spec.name}", **shared,
                           **valid(f"pt_variant_{spec.name}", variants, spec.default_variant),
                           format_func=lambda v: f"{v} (default)" if v == spec.default_variant else v)
    seed = int(c4.number_input("Seed", 0, 2**31 - 1, key="pt_seed", **initial("pt_seed", value=0)))
    note = spec.variant_notes.get(variant, "")
    st.caption(f"**{spec.name}** — {(spec.description or spec.category).rstrip('. ')}. Source: {spec.source}."
               + (f" Variant: {note}" if note else "")
               + (" Applied frame by frame to videos." if kind == "video" and spec.modality == "image" else ""))
    unavailable = [s for s in specs if not s.available]
    if unavailable:
        with st.expander(f"{len(unavailable)} perturbation(s) unavailable here (listed, never run)"):
            st.dataframe(pd.DataFrame([{"perturbation": s.name, "group": _group(s), "why": hide_paths(s.reason)}
                                       for s in unavailable]), hide_index=True, key="pt_unavailable")
    if not spec.available:
        st.warning(f"**{spec.name}** is unavailable here: {safe_md(spec.reason, hide=True)}")
        return None
    return spec, variant, seed
