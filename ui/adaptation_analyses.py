"""The Adaptation page's HAT-VTR analyses of a run (:mod:`robustlab.adapt.analyses`): the Reliable Memory's accuracy
per batch, the time breakdown, the adapted per-query top-k next to the unadapted one, the score heatmaps, and R@1
against severity before and after adaptation. Everything shown comes from the result objects (the run's
:class:`~robustlab.adapt.loop.AdaptResult`, a :class:`~robustlab.adapt.analyses.SeverityCurve` kept in session
state with the settings that made it), never from widget state."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from robustlab import adapt
from ui.adaptation import ADAPTED, SHIFTED, Setup
from ui.media import md_escape
from ui.loaders import Bench
from ui.widget_state import clamp, initial
from ui.widgets import one_line_failure

CURVE = "ad_curve"  # session key of the last severity curve
SEVERITIES = (1, 2, 3, 4, 5)
#: HAT-VTR's shares on an RTX 4090 (§5.5, Table 15): forward, backward, Reliable Memory, HSM, loss
PAPER_SHARES = {"forward": 6.9, "backward": 65.7, "memory": 7.6, "hsm": 13.0, "loss": 6.8}


# ---- the Reliable Memory and the time breakdown -------------------------------------------------------------------
def memory_figure(res) -> go.Figure | None:
    """The Reliable Memory's pseudo-label accuracy per batch (all kept pairs, the pairs added, the batch's
    pseudo-positives), or None for a method without one."""
    m = adapt.memory_accuracy(res)
    if not m["batch"]:
        return None
    fig = go.Figure()
    for key, name, style in (("accuracy", "pairs kept in the memory", dict(width=3, color=ADAPTED)),
                             ("added_accuracy", "pairs added this batch", dict(dash="dot", color="#2ca02c")),
                             ("batch_accuracy", "all the batch's pseudo-positives", dict(dash="dash",
                                                                                         color="#7f7f7f"))):
        fig.add_trace(go.Scatter(x=m["batch"], y=m[key], mode="lines+markers", name=name, line=style,
                                 connectgaps=False))
    fig.update_layout(title="Reliable Memory: accuracy of its pseudo-labels per batch", height=340,
                      xaxis_title="batch of queries (online, in stream order)", yaxis_title="accuracy",
                      yaxis_range=[-0.02, 1.02], margin=dict(t=40, b=20),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig


def timing_frame(res) -> pd.DataFrame | None:
    """The time breakdown (seconds, per 1,000 queries, share of the adaptation and the paper's share)."""
    rows = adapt.time_breakdown(res)
    if not rows:
        return None
    return pd.DataFrame([{"phase": r["label"], "seconds": r["seconds"], "s per 1,000 queries": r["per_1000_queries"],
                          "share %": 100 * r["share"],
                          "paper's share % (RTX 4090)": PAPER_SHARES.get(r["phase"])} for r in rows])


def memory_and_time(res) -> None:
    """The page's section: the memory's accuracy curve and the time table."""
    fig, df = memory_figure(res), timing_frame(res)
    if fig is None and df is None:
        return
    st.subheader("Reliable Memory and where the time goes")
    if fig is not None:
        st.plotly_chart(fig, key="ad_memory")
        st.caption("Measured against the ground truth, which the method never sees: how often the pseudo-positive "
                   "of a query (its HSM-refined nearest gallery item) is a true item.")
    if df is not None:
        st.dataframe(df, hide_index=True, width="stretch", key="ad_timing",
                     column_config={c: st.column_config.NumberColumn(format="%.3f") for c in df.columns[1:]})
        st.caption("time.perf_counter around each phase (the device synchronised before each reading). Forward: "
                   "the query tower and the scores; backward: backpropagation and the AdamW step; HSM: target "
                   "selection and the output reranking; frozen parts: what does not adapt, once per batch (not in "
                   "the paper's breakdown).")


# ---- the adapted ranking and heatmaps -------------------------------------------------------------------------------
def namer(bench, direction: str):
    """(query label, gallery item label) functions for ``direction``'s rows and columns."""
    texts, kind = bench.caption_texts, bench.kind

    def cap(j: int) -> str:
        t = texts[j] if 0 <= j < len(texts) else ""
        return t if len(t) <= 60 else t[:59] + "…"

    def visual(i: int) -> str:
        j = bench.caption_of.get(int(i))
        return f"{kind} {i}" + (f" ({cap(j)})" if j is not None else "")

    if direction[0] == "t":
        return (lambda q: f"caption {q}: {cap(q)}"), visual
    return (lambda q: visual(int(bench.captioned[q]))), (lambda j: f"caption {j}: {cap(j)}")


def topk_frames(res, query: int, k: int, item_label) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Two tables (before, after): rank, item, score, true item; and the :func:`robustlab.adapt.top_k` dict."""
    t = adapt.top_k(res, query, k)
    frames = [pd.DataFrame([{"rank": x["rank"], "item": item_label(x["item"]), "score": x["score"],
                             "true": "✓" if x["positive"] else ""} for x in t[side]["items"]])
              for side in ("before", "after")]
    return frames[0], frames[1], t


def heatmap_figure(h: dict, query_label, item_label) -> go.Figure:
    """The shifted and the adapted score sub-matrices side by side (each its own colour scale: HSM's reranked
    scores are not cosines); the ground truth on the diagonal."""
    from plotly.subplots import make_subplots  # plotly's subplot helper, only where a figure is drawn

    fig = make_subplots(rows=1, cols=2, subplot_titles=("before (shifted, unadapted)", "after (adapted)"),
                        horizontal_spacing=0.12)
    ys = [f"q{q}" for q in h["queries"]]
    xs = [f"g{g}" for g in h["items"]]
    hover = [[f"{query_label(q)}<br>{item_label(g)}" for g in h["items"]] for q in h["queries"]]
    for c, key in ((1, "shifted"), (2, "adapted")):
        fig.add_trace(go.Heatmap(z=h[key], x=xs, y=ys, colorscale="Viridis", text=hover, name=f"scores {key}",
                                 hovertemplate="%{text}<br>score %{z:.4f}<extra></extra>",
                                 colorbar=dict(x=0.44 if c == 1 else 1.0, len=0.9)), 1, c)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=460, margin=dict(t=40, b=20))
    return fig


def ranking_section(ctx: Bench, res) -> None:
    """The adapted top-k of a chosen query next to the unadapted one, and the two score heatmaps."""
    if res.scores_adapted is None:
        return
    st.subheader("One query's ranking, before and after")
    qlab, ilab = namer(ctx.bench, res.direction)
    c1, c2 = st.columns([1, 4])
    clamp("ad_query", 0, res.n_queries - 1, default_value=0)
    q = int(c1.number_input("Query", 0, res.n_queries - 1, key="ad_query", **initial("ad_query", value=0)))
    clamp("ad_topk", 1, max(1, min(20, res.n_gallery)))
    k = int(c1.slider("Top k", 1, max(1, min(20, res.n_gallery)), key="ad_topk",
                      **initial("ad_topk", value=max(1, min(5, res.n_gallery)))))
    before, after, t = topk_frames(res, q, k, ilab)
    c2.markdown(f"**{md_escape(qlab(q))}** · rank of the true item: before **{t['before']['gt_rank']}**, after "
                f"**{t['after']['gt_rank']}**")
    left, right = c2.columns(2)
    cfg = {"score": st.column_config.NumberColumn(format="%.4f")}
    left.caption("before (shifted, unadapted)")
    left.dataframe(before, hide_index=True, width="stretch", key="ad_topk_before", column_config=cfg)
    right.caption(f"after ({res.method})")
    right.dataframe(after, hide_index=True, width="stretch", key="ad_topk_after", column_config=cfg)
    n_max = max(1, min(40, res.n_queries))
    h1, h2 = st.columns([1, 4])
    clamp("ad_hm_n", 1, n_max, default_value=min(20, n_max))
    n = int(h1.number_input("Queries", 1, n_max, key="ad_hm_n", **initial("ad_hm_n", value=min(20, n_max))))
    clamp("ad_hm_start", 0, res.n_queries - 1, default_value=0)
    start = int(h1.number_input("From query", 0, res.n_queries - 1, key="ad_hm_start",
                                **initial("ad_hm_start", value=0)))
    h = adapt.heatmap(res, n, start)
    h2.plotly_chart(heatmap_figure(h, qlab, ilab), key="ad_heatmap")
    h1.caption("Rows: queries; columns: their true items, so the truth is on the diagonal. After: the scores the "
               "adapted stream ranked by (HSM-reranked for HAT-VTR).")


# ---- R@1 against severity ------------------------------------------------------------------------------------------
def curve_key(ctx: Bench, setup: Setup) -> tuple:
    c = setup.cond
    return ((ctx.spec, ctx.device, ctx.gid), setup.direction, c.name, c.variant, c.seed, setup.method,
            tuple(sorted(setup.params.items())))


def run_curve(ctx: Bench, setup: Setup) -> None:
    """One run per severity 1-5 of the query shift; the curve or a one-line error kept in session state."""
    out: dict = {"key": curve_key(ctx, setup)}
    name = setup.cond.name + (f"/{setup.cond.variant}" if setup.cond.variant else "")
    bar = st.progress(0.0, text="Adapting at each severity…")
    with one_line_failure(bar, out, "severity curve", (adapt.AdaptError, ValueError)):
        out["curve"] = adapt.severity_curve(
            ctx.bench.model, ctx.dataset, setup.method, setup.direction, name, SEVERITIES, perturb_seed=setup.cond.seed,
            bench=ctx.bench, progress=lambda d, t: bar.progress(d / t, text=f"Severity {d}/{t} done"), **setup.params)
    st.session_state[CURVE] = out


def severity_figure(curve) -> go.Figure:
    s = curve.series("R@1")
    fig = go.Figure()
    for key, name, style in (("clean", "clean queries", dict(dash="dot", color="#7f7f7f")),
                             ("shifted", "R@1 before adaptation", dict(color=SHIFTED)),
                             ("adapted", f"R@1 after adaptation ({curve.method})", dict(color=ADAPTED, width=3))):
        fig.add_trace(go.Scatter(x=s["severity"], y=s[key], mode="lines+markers", name=name, line=style))
    fig.update_layout(title=f"R@1 vs severity of {curve.perturbation} ({curve.direction})", height=360,
                      xaxis=dict(title="severity", tickmode="array", tickvals=s["severity"]), yaxis_title="R@1",
                      margin=dict(t=40, b=20), legend=dict(orientation="h", y=1.02, x=1, xanchor="right",
                                                           yanchor="bottom"))
    return fig


def severity_section(ctx: Bench, setup: Setup) -> None:
    """A button that sweeps the chosen shift over severities 1-5 with the chosen method, and the curve."""
    st.subheader("R@1 vs severity, before and after adaptation")
    if setup.cond.name is None:
        st.caption("Pick a query shift above to sweep its severities.")
        return
    if st.button(f"Run at severities 1–5 ({setup.cond.name}, {setup.method})", key="ad_curve_run",
                 icon=":material/show_chart:"):
        run_curve(ctx, setup)
    o = st.session_state.get(CURVE)
    if o is None or o["key"][0] != (ctx.spec, ctx.device, ctx.gid):
        st.caption("Five runs, one per severity, each from the unadapted model (HAT-VTR Fig. 13).")
        return
    if "error" in o:
        if o["key"] == curve_key(ctx, setup):
            st.error(o["error"])
        return
    if o["key"] != curve_key(ctx, setup):
        st.info("The settings above changed since this curve: press the button to sweep with them.")
    st.plotly_chart(severity_figure(o["curve"]), key="ad_curve_fig")


__all__ = ["memory_figure", "timing_frame", "memory_and_time", "namer", "topk_frames", "heatmap_figure",
           "ranking_section", "run_curve", "severity_figure", "severity_section", "CURVE", "SEVERITIES"]
