"""Composite panels (widgets + a robustlab call + figures) that a page shows as one block: hubness reduction
before/after, the grounding severity sweep."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from robustlab.diagnostics import views
from ui.charts import occurrence_histogram
from ui.widgets import param_inputs


@st.cache_data(show_spinner=False, max_entries=12)
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
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="hub_reduction_table")
    for col, c in zip(st.columns(2), ("clean", "perturbed")):
        col.plotly_chart(occurrence_histogram({"before": red.nk[c]["before"], f"after {method}": red.nk[c]["after"]},
                                              log_y, label[c]), key=f"hub_red_hist_{c}")


def sweep_chart(rows: list[dict], names: dict, key: str) -> None:
    """IoU per severity (0–5), one line per condition ("image", "text", "both"), with the IoU 0.5 line."""
    df = pd.DataFrame(rows)
    fig = go.Figure()
    for cond, g in df.groupby("condition", sort=False):
        fig.add_trace(go.Scatter(x=g["severity"], y=g["iou"], mode="lines+markers", name=names[cond]))
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="IoU 0.5 (correct above)")
    fig.update_layout(xaxis_title="severity", yaxis_title=f"IoU to the {rows[0]['reference']}", height=300,
                      yaxis_range=[-0.02, 1.02], margin=dict(t=20, b=20))
    st.plotly_chart(fig, key=key)
    with st.expander("Sweep table"):
        st.dataframe(df, hide_index=True, key=f"{key}_table")
