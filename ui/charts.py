"""Plotly figures built from robustlab's plain data (no widgets): k-occurrence histograms, similarity heatmaps."""
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
