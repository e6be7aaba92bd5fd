"""The Attention page's figures (plotly: the toolbar exports PNG; the page offers SVG-ready figures and CSV numbers):
attention matrices before / after each QUAG short-circuit on one colour scale with the quadrant boundaries and the
padding marked (Rawal et al. Fig. 5), a text token's attention drawn on the image or frames, the answer
distributions."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from robustlab.diagnostics.attention_view import AttentionView

PAD_FILL = "rgba(120,120,120,0.45)"


def _title(name: str) -> str:
    return "baseline" if name == "baseline" else name.replace("quag-attention:", "QUAG-attn ")


def heatmaps(view: AttentionView, layer: int, head: Optional[int], names: Sequence[str]) -> go.Figure:
    """One panel per name (baseline first), one shared colour scale (0 .. the largest weight shown)."""
    names = list(names)
    mats = [view.matrix(n, layer, head) for n in names]
    top = float(max(m.max() for m in mats)) or 1.0
    fig = make_subplots(1, len(names), subplot_titles=[_title(n) for n in names], horizontal_spacing=0.02)
    lay, sp = view.layout, view.spans
    labels = list(lay.tokens) or [str(i) for i in range(len(lay))]
    n = mats[0].shape[0]
    for k, m in enumerate(mats, start=1):
        fig.add_trace(go.Heatmap(z=m, x=list(range(n)), y=list(range(n)), coloraxis="coloraxis",
                                 customdata=np.array([[f"{labels[i]} → {labels[j]}" for j in range(n)]
                                                      for i in range(n)]),
                                 hovertemplate="%{customdata}<br>weight %{z:.4f}<extra></extra>"), 1, k)
        ref = "" if k == 1 else str(k)
        for a in sorted({sp.text[0], sp.text[1], sp.visual[0], sp.visual[1]} - {0, n}):
            for kind in ("h", "v"):  # quadrant boundaries
                x0, x1, y0, y1 = (-0.5, n - 0.5, a - 0.5, a - 0.5) if kind == "h" else (a - 0.5, a - 0.5, -0.5,
                                                                                       n - 0.5)
                fig.add_shape(type="line", x0=x0, x1=x1, y0=y0, y1=y1, xref=f"x{ref}", yref=f"y{ref}",
                              line=dict(color="white", width=2))
        for i in np.flatnonzero(lay.is_pad):  # padding: grey bands over its rows and columns
            fig.add_shape(type="rect", x0=i - 0.5, x1=i + 0.5, y0=-0.5, y1=n - 0.5, xref=f"x{ref}", yref=f"y{ref}",
                          fillcolor=PAD_FILL, line_width=0)
            fig.add_shape(type="rect", y0=i - 0.5, y1=i + 0.5, x0=-0.5, x1=n - 0.5, xref=f"x{ref}", yref=f"y{ref}",
                          fillcolor=PAD_FILL, line_width=0)
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_yaxes(showticklabels=True, row=1, col=1, title_text="query")
    fig.update_xaxes(showticklabels=False, title_text="key")
    fig.update_layout(coloraxis=dict(colorscale="Viridis", cmin=0, cmax=top, colorbar_title="weight"),
                      height=340, margin=dict(t=40, b=30, l=40, r=10))
    return fig


def token_overlay(view: AttentionView, names: Sequence[str], layer: int, head: Optional[int], position: int,
                  frames: np.ndarray) -> go.Figure:
    """The query token's attention over the visual patches drawn on the input (rows: ablations; columns: frames,
    at most 8 shown), one colour scale."""
    frames = np.asarray(frames)
    frames = frames[None] if frames.ndim == 3 else frames
    maps = {n: view.token_map(n, layer, head, position) for n in names}
    nf = next(iter(maps.values())).shape[0]
    show = list(range(nf)) if nf <= 8 else list(np.linspace(0, nf - 1, 8).round().astype(int))
    top = float(max(m.max() for m in maps.values())) or 1.0
    fig = make_subplots(len(names), len(show), horizontal_spacing=0.01, vertical_spacing=0.06,
                        row_titles=[_title(n) for n in names])
    src = np.linspace(0, len(frames) - 1, nf).round().astype(int)  # model frame -> input frame
    for r, n in enumerate(names, start=1):
        for c, f in enumerate(show, start=1):
            img = frames[src[f]]
            h, w = img.shape[:2]
            m = maps[n][f]
            fig.add_trace(go.Image(z=img, hoverinfo="skip"), r, c)
            gy, gx = m.shape
            fig.add_trace(go.Heatmap(z=m, x0=w / gx / 2 - 0.5, dx=w / gx, y0=h / gy / 2 - 0.5, dy=h / gy,
                                     coloraxis="coloraxis", opacity=0.55,
                                     hovertemplate="weight %{z:.4f}<extra></extra>"), r, c)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(coloraxis=dict(colorscale="Inferno", cmin=0, cmax=top, colorbar_title="weight"),
                      height=170 * len(names) + 40, margin=dict(t=30, b=10, l=10, r=10))
    return fig


def answer_bars(view: AttentionView, names: Sequence[str], top: int = 5) -> go.Figure:
    """The answers' probabilities under each ablation (the baseline's top answers and each ablation's own top)."""
    keys: list = []
    for n in names:
        keys += [a for a in view.answers(n, top) if a not in keys]
    fig = go.Figure()
    for n in names:
        o = view.captures[n].outputs
        scores = o.get("vqa_scores") or o.get("scores") or {}
        fig.add_bar(x=keys, y=[scores.get(a, 0.0) for a in keys], name=_title(n))
    fig.update_layout(barmode="group", yaxis_title="probability", height=300, margin=dict(t=20, b=20),
                      legend=dict(orientation="h", y=1.05, x=1, xanchor="right", yanchor="bottom"))
    return fig


MISSING = "—"  # a cell with no value (an intervention whose item set has no question of that type)
PP = "percentage points"


def table1_display(t):
    """Rawal et al.'s Table 1 as they report it: accuracy in % and Δ to the baseline in percentage points (the
    library's table holds fractions, 0.85 and −0.80), one decimal, every column named with its unit. -> a DataFrame
    (numbers stay numbers, a missing one NaN: st.dataframe shows it as :data:`MISSING` with ``placeholder``)."""
    import pandas as pd

    if not isinstance(t, pd.DataFrame) or t.empty:
        return t
    metric = {"acc": "accuracy"}
    names = sorted({str(x) for x in t.get("metric", pd.Series(dtype=str)).dropna()})
    what = " / ".join(metric.get(n, n) for n in names) or "score"
    out = pd.DataFrame({"intervention": t["intervention"]})
    pct = lambda c: (pd.to_numeric(t[c], errors="coerce") * 100).round(1)  # noqa: E731
    out[f"{what} (%)"] = pct("score")
    out[f"Δ vs baseline ({PP})"] = pct("delta")
    if "drop" in t:
        out["drop ≥ 2 pts"] = t["drop"].fillna("")
    if "mult_ops_saving" in t:  # QUAG-attention's "Δ multiplication ops", measured on one forward
        out["multiplications saved (%, measured)"] = pct("mult_ops_saving")
    if "n" in t:
        out["items"] = t["n"]
    for c in t.columns:
        if str(c).startswith("type: "):
            out[f"{what} on {str(c)[len('type: '):]} questions (%)"] = pct(c)
    return out.reset_index(drop=True)


__all__ = ["heatmaps", "token_overlay", "answer_bars", "table1_display", "rank_section", "MISSING", "PP"]


def rank_section(view: AttentionView, layer: int, head: Optional[int]) -> None:
    """Rawal et al.'s Lemma 2.2 on this layer's baseline attention: singular values of A and of φ(A, S) for the
    video and text short-circuits (log scale), their numerical ranks and the paper's bounds."""
    import streamlit as st

    from robustlab.diagnostics.quag import rank_diagnostic

    r = rank_diagnostic(view.matrix("baseline", layer, head), view.spans)
    fig = go.Figure()
    for name in ("baseline", "video", "text"):
        sv = np.maximum(np.asarray(r[name]["singular_values"]), 1e-18)
        fig.add_scatter(x=np.arange(1, len(sv) + 1), y=sv, mode="lines+markers",
                        name=f"{name} (rank {r[name]['rank']})")
    fig.update_layout(yaxis_type="log", xaxis_title="singular value index", yaxis_title="singular value",
                      height=320, margin=dict(l=10, r=10, t=30, b=10))
    st.plotly_chart(fig, key="at_rank", width="stretch")
    st.caption(f"{r['l_text']} text and {r['l_visual']} visual tokens. Video short-circuit: rank {r['video']['rank']} "
               f"(bound l_T + 2 = {r['video']['bound']}, {'holds' if r['video']['holds'] else 'violated'}); text "
               f"short-circuit: rank {r['text']['rank']} (bound l_V + 2 = {r['text']['bound']}, "
               f"{'holds' if r['text']['holds'] else 'violated'}). Numerical rank: singular values above "
               "σ_max · N · machine epsilon.")
