"""Composite panels (widgets + a robustlab call + figures) that a page shows as one block: hubness reduction
before/after, the grounding severity sweep, the Perturb page's severity strip and caption diff."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from robustlab.diagnostics import views
from ui.charts import occurrence_histogram
from ui.media import safe_md
from ui.widget_state import valid
from ui.widgets import param_inputs
from ui.cache import shared


@shared("results")
def reduction_data(key: tuple, method: str, params: tuple, _view) -> views.ReductionView:
    """``key``: what ``_view`` was computed from (model, dataset, direction, conditions, k)."""
    return views.reduce_view(_view, method, **dict(params))


def reduction_panel(view: views.HubnessView, key: tuple, log_y: bool) -> None:
    """Pick a hubness-reduction method and its parameters; R@K, k-skewness and k-occurrence before and after it,
    clean and perturbed."""
    st.subheader("Hubness reduction")
    try:
        methods = views.reduction_methods()
    except ImportError as e:
        st.info(f"Hubness reduction is not available in this robustlab: {e}")
        return
    method = st.selectbox("Method", ["none"] + list(methods), key="hub_reduction",
                          **valid("hub_reduction", ["none"] + list(methods)),
                          format_func=lambda n: "none" if n == "none" else methods[n].label,
                          help="Re-scores the query × gallery similarities (no model change), applied to the clean "
                               "and the perturbed scores alike.")
    if method == "none":
        st.caption("Pick a method to see R@K and the k-occurrence histogram before and after it.")
        return
    entry = methods[method]
    st.caption(f"{entry.description} Source: {entry.source}."
               + (" Transductive: uses all the queries at once." if entry.transductive else ""))
    params = param_inputs(entry.params, f"hub_red_{method}")
    try:
        with st.spinner(f"Applying {method}…"):
            red = reduction_data(key, method, tuple(sorted(params.items())), view)
    except (ValueError, TypeError) as e:
        st.warning(f"{method} cannot run with these parameters: {e}")
        return
    label = {"clean": "clean", "perturbed": f"perturbed ({view.label})"}
    rows = [{"condition": label[c], "reduction": w, **{kk: round(v, 4) for kk, v in red.recall[c][w].items()},
             "k_skewness": round(red.measures[c][w].get("k_skewness", float("nan")), 4)}
            for c in ("clean", "perturbed") for w in ("before", "after")]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="hub_reduction_table", placeholder="—")
    raised = [label[c] for c in ("clean", "perturbed")
              if red.measures[c]["after"].get("k_skewness", 0) > red.measures[c]["before"].get("k_skewness", 0)]
    if raised:  # a "reduction" that made hubness worse says why that can happen (issue 45)
        st.caption(f"{method} raised the k-skewness here ({' and '.join(raised)}): it re-ranks the gallery for "
                   "each query by how that item scores across all queries, which evens out the strongest hubs but "
                   "can pile the queries onto a few other items instead, so the k-occurrence gets more skewed. "
                   "Compare R@K: a reduction is worth keeping only when retrieval improves.")
    for col, c in zip(st.columns(2), ("clean", "perturbed")):
        col.plotly_chart(occurrence_histogram({"before": red.nk[c]["before"], f"after {method}": red.nk[c]["after"]},
                                              log_y, label[c]), key=f"hub_red_hist_{c}")


NO_OP_MARKER = dict(symbol="circle-open", size=11, color="#888888", line=dict(width=2))


def severity_runs(sevs) -> str:
    """Severities as runs: [1, 2, 3, 5] -> "s1–3, s5"."""
    sevs, out = sorted(set(int(k) for k in sevs)), []
    for k in sevs:
        if out and k == out[-1][1] + 1:
            out[-1][1] = k
        else:
            out.append([k, k])
    return ", ".join(f"s{a}" if a == b else f"s{a}–{b}" for a, b in out)


def no_op_line(rows: list[dict], names: dict) -> str:
    """One line naming what changed nothing in a grounding sweep (from the rows' ``no_op`` / ``unchanged``), "" when
    every perturbation changed its input."""
    whole, part = {}, {}
    for r in rows:
        if r.get("no_op"):
            whole.setdefault(r["condition"], []).append(r["severity"])
        elif r.get("unchanged"):
            part.setdefault((r["condition"], r["unchanged"]), []).append(r["severity"])
    bits = [f"{names[c]} at {severity_runs(k)}" for c, k in whole.items()]
    bits += [f"{names[c]}: its {u} part at {severity_runs(k)} (the line there is the other part alone)"
             for (c, u), k in part.items()]
    return ("No-op (the perturbation changed nothing, so it is not robustness): " + "; ".join(bits) + ".") if bits \
        else ""


def sweep_chart(rows: list[dict], names: dict | None, key: str) -> None:
    """IoU per severity (0–5), one line per condition ("image", "text", "both"), with the IoU 0.5 line.

    The conditions' names come from the rows (``perturbation``) unless ``names`` gives them. A severity where the
    condition changed nothing (``no_op``) is not drawn on its line (it would read as a flat, robust line): it is a
    hollow grey "no-op" marker, and one line under the chart names the conditions and severities."""
    df = pd.DataFrame(rows)
    names = {r["condition"]: (names or {}).get(r["condition"]) or
             (r["condition"] if r["condition"] == "both" else f"{r['condition']}: {r.get('perturbation', '')}")
             for r in rows}
    no_op = df["no_op"].astype(bool) if "no_op" in df else pd.Series(False, index=df.index)
    fig = go.Figure()
    for cond, g in df.groupby("condition", sort=False):
        y = g["iou"].where(~no_op[g.index])  # a no-op severity: a gap in the line, never a robust-looking point
        fig.add_trace(go.Scatter(x=g["severity"], y=y, mode="lines+markers", name=names[cond], legendgroup=cond))
    if no_op.any():
        n = df[no_op]
        fig.add_trace(go.Scatter(x=n["severity"], y=n["iou"], mode="markers", marker=NO_OP_MARKER,
                                 name="no-op: changed nothing", text=[names[c] for c in n["condition"]],
                                 hovertemplate="%{text} · s%{x}: no-op (changed nothing) · IoU %{y}<extra></extra>"))
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="IoU 0.5 (correct above)")
    fig.update_layout(xaxis_title="severity", yaxis_title=f"IoU to the {rows[0]['reference']}", height=300,
                      yaxis_range=[-0.02, 1.02], margin=dict(t=20, b=20))
    st.plotly_chart(fig, key=key)
    line = no_op_line(rows, names)
    if line:
        with st.container(key=f"{key}_no_op"):
            st.caption(safe_md(line))  # perturbation names: no link or HTML can form
    with st.expander("Sweep table"):
        st.dataframe(df, hide_index=True, key=f"{key}_table", placeholder="—")


@shared("results", spinner="Loading MiniLM for text similarity…")
def text_similarities(reference: str, texts: tuple[str, ...]) -> list[float]:
    from robustlab.diagnostics.text_similarity import similarities

    return similarities(reference, list(texts))


def _similarities(reference: str, texts: tuple[str, ...], warn: bool) -> list[float]:
    try:
        return text_similarities(reference, texts)
    except (ImportError, OSError, RuntimeError) as e:  # the MiniLM weights or transformers are missing/broken
        if warn:
            st.warning(f"MiniLM similarity is unavailable here: {e}")
        return [float("nan")] * len(texts)


def severity_strip(kind: str, x, outs: list) -> None:
    """Severities 1–5 at a glance: five images, five filmstrips, or a table of captions with their MiniLM cosine
    to the original and a similarity-by-severity chart."""
    from robustlab.diagnostics.text_similarity import edit_stats
    from robustlab.export.basket import filmstrip

    st.subheader("Severities 1–5")
    if kind != "text":
        with st.container(key="pt_strip"):
            if kind == "video":
                st.caption("Six evenly spaced frames of each severity")
            for k, col in zip(range(1, 6), st.columns(5) if kind == "image" else [st.container()] * 5):
                same = np.shape(outs[k - 1]) == np.shape(x) and np.array_equal(outs[k - 1], x)
                col.image(outs[k - 1] if kind == "image" else filmstrip(outs[k - 1]),
                          caption=f"severity {k}" + (" · no-op (unchanged)" if same else ""), width="stretch")
        return
    sims = _similarities(x, tuple(outs), warn=True)
    same = [o == x for o in outs]  # a no-op: the caption came back unchanged (not a robust caption)
    rows = [{"severity": k, "perturbed caption": o, "MiniLM cosine": round(s, 3),
             "words changed": "no-op (unchanged)" if u else f"{edit_stats(x, o)['changed_fraction']:.0%}"}
            for k, o, s, u in zip(range(1, 6), outs, sims, same)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="pt_strip_table",
                 placeholder="—")  # MiniLM unavailable: no cosine
    fig = go.Figure(go.Scatter(x=[0, 1, 2, 3, 4, 5], y=[1.0] + [None if u else v for v, u in zip(sims, same)],
                               mode="lines+markers", name="similarity"))
    noop = [k for k, u in zip(range(1, 6), same) if u]
    if noop:
        fig.add_trace(go.Scatter(x=noop, y=[1.0] * len(noop), mode="markers", marker=NO_OP_MARKER,
                                 name="no-op: unchanged"))
    fig.add_hline(y=0.9, line_dash="dot", annotation_text="0.9 semantic gate (Qiu et al. / MLVP)")
    fig.update_layout(xaxis_title="severity", yaxis_title="MiniLM cosine to the original", height=260,
                      margin=dict(t=20, b=20), yaxis_range=[min([v for v in sims if v == v] + [0.5]) - 0.05, 1.02])
    st.plotly_chart(fig, key="pt_sim_chart")
    if noop:
        st.caption(f"No-op (the caption came back unchanged, not a robust caption): {severity_runs(noop)}.")


def caption_diff(x: str, out: str, left, right) -> None:
    """The clean caption (literal) on the left, the highlighted diff on the right, then MiniLM cosine and words
    changed."""
    from robustlab.diagnostics.text_similarity import edit_stats
    from ui.media import diff_markdown

    left.text(x)
    with right:
        level = st.radio("Diff", ["word", "char"], key="pt_diff_level", horizontal=True,
                         **valid("pt_diff_level", ["word", "char"]),
                         format_func=lambda v: "by word" if v == "word" else "by character")
        st.markdown(diff_markdown(x, out, level))
        st.caption("red: removed · green: inserted · ␣: a changed space")
    sim, stats = _similarities(x, (out,), warn=False)[0], edit_stats(x, out)
    m1, m2 = st.columns(2)
    m1.metric("MiniLM cosine to the original", "—" if sim != sim else f"{sim:.3f}",
              help="all-MiniLM-L6-v2 sentence embeddings (mean pooling); Qiu et al. and MLVP keep a perturbed "
                   "caption when this is ≥ 0.9")
    m2.metric("Words changed", f"{stats['deleted']} of {stats['units']}")
