"""Plotly figures built from robustlab's plain data (no widgets): k-occurrence histograms, similarity heatmaps,
the embedding map."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from robustlab.diagnostics import views


def occurrence_histogram(series: dict, log_y: bool, title: str) -> go.Figure:
    """Overlaid k-occurrence histograms with integer bins (series: name -> N_k array)."""
    bins, counts = views.occurrence_counts(*series.values())
    fig = go.Figure()
    for name, c in zip(series, counts):
        fig.add_bar(x=bins, y=c, name=name, opacity=0.6)
    fig.update_layout(barmode="overlay", bargap=0, xaxis_title="N_k (queries with the item in their top k)",
                      yaxis_title="gallery items", yaxis_type="log" if log_y else "linear", height=340,
                      title=title, margin=dict(t=40, b=20), legend=dict(orientation="h", y=1.02, x=1,
                                                                         xanchor="right", yanchor="bottom"))
    return fig


def similarity_heatmaps(view: views.HubnessView, what: str) -> tuple[go.Figure, int]:
    """Sampled queries × their ground-truth targets, clean and perturbed side by side, on one colour scale;
    and how many queries are shown."""
    hm_c, rows_idx, cols_idx = views.heatmap(view, "clean")
    hm_p, _, _ = views.heatmap(view, "perturbed")
    lo, hi = float(min(hm_c.min(), hm_p.min())), float(max(hm_c.max(), hm_p.max()))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("clean", f"perturbed ({view.label})"),
                        horizontal_spacing=0.06)
    for c, hm in ((1, hm_c), (2, hm_p)):
        fig.add_trace(go.Heatmap(z=hm, zmin=lo, zmax=hi, colorscale="Viridis", showscale=c == 2,
                                 customdata=np.broadcast_to(view.targets[cols_idx][None, :], hm.shape),
                                 hovertemplate="query %{y} · item %{customdata}<br>cosine %{z:.3f}<extra></extra>"),
                      row=1, col=c)
    fig.update_yaxes(autorange="reversed", title_text="query (sampled)", col=1)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=f"ground-truth {what[:-1]} of the query")
    fig.update_layout(height=420, margin=dict(t=40, b=20))
    return fig, len(rows_idx)


SYMBOLS = {("image", "clean"): "circle", ("image", "perturbed"): "circle-open",
           ("video", "clean"): "square", ("video", "perturbed"): "square-open",
           ("text", "clean"): "diamond", ("text", "perturbed"): "diamond-open"}
COLORS = {"clean": "#1f77b4", "perturbed": "#d62728", "image": "#2ca02c", "video": "#ff7f0e", "text": "#9467bd"}


def embedding_scatter(pts: views.EmbeddingPoints, color_by: str) -> tuple[go.Figure, list]:
    """The 2-D map: one trace per (modality, condition) group (or one trace coloured by N_k), each point's row in
    its customdata, and the clean→perturbed lines underneath (not selectable). -> (figure, rows of each trace)."""
    fig = go.Figure()
    trace_rows: list = []
    lx, ly = views.pair_lines(pts)
    if lx:
        fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", line=dict(color="rgba(120,120,120,0.35)", width=1),
                                 hoverinfo="skip", name="clean → perturbed", showlegend=True))
        trace_rows.append(None)
    rows_all = np.arange(len(pts))
    hover = [f"item {int(i)} · {m} · {c}<br>N_k = {int(n)}<br>{_short(t)}"
             for i, m, c, n, t in zip(pts.item, pts.modality, pts.condition, pts.k_occurrence, pts.text)]
    if color_by == "k-occurrence":
        fig.add_trace(go.Scatter(
            x=pts.xy[:, 0], y=pts.xy[:, 1], mode="markers", name="points", customdata=rows_all.tolist(),
            text=hover, hovertemplate="%{text}<extra></extra>",
            marker=dict(color=pts.k_occurrence, colorscale="Viridis", showscale=True, size=8,
                        colorbar=dict(title=f"N_{pts.k}"),
                        symbol=[SYMBOLS[(m, c)] for m, c in zip(pts.modality, pts.condition)])))
        trace_rows.append(list(rows_all))
    else:
        for (m, c), sym in SYMBOLS.items():
            sel = np.flatnonzero((pts.modality == m) & (pts.condition == c))
            if not len(sel):
                continue
            color = COLORS[c] if color_by == "condition" else COLORS[m]
            fig.add_trace(go.Scatter(
                x=pts.xy[sel, 0], y=pts.xy[sel, 1], mode="markers", name=f"{m} · {c}", customdata=sel.tolist(),
                text=[hover[r] for r in sel], hovertemplate="%{text}<extra></extra>",
                marker=dict(color=color, symbol=sym, size=8, line=dict(width=1.5, color=color))))
            trace_rows.append(list(sel))
    fig.update_layout(dragmode="select", height=620, margin=dict(t=20, b=20), xaxis_title=f"{pts.method} 1",
                      yaxis_title=f"{pts.method} 2", legend=dict(orientation="h", y=1.02, x=0, xanchor="left",
                                                                  yanchor="bottom"))
    return fig, trace_rows


def _short(t: str, n: int = 80) -> str:
    """A hover line: at most ``n`` characters, angle brackets defused (Plotly hovers render HTML)."""
    t = (t or "").replace("<", "‹").replace(">", "›")
    return t if len(t) <= n else t[: n - 1] + "…"
