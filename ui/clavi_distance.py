"""The CLAVI page's representation-sensitivity section (Rawal et al. App. B.7): the complement-pair attention distance
over built-in CLAVI pairs — Table 16 (mean and variance, correct vs wrong pairs) and Fig. 8 (histograms), both drawn
from the :class:`robustlab.diagnostics.clavi_distance.DistanceResult` kept in the session, never from the widgets."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from robustlab.diagnostics import clavi_distance as cd
from robustlab.diagnostics.clavi import COMPLEMENT, ClaviError
from ui.multiselect_state import kept_list
from ui.widget_state import initial

KEY = "cv_dist"
COLOURS = {"correct": "#2ca02c", "incorrect": "#d62728"}  # Fig. 8: green consistently correct, red at least one wrong


def table(res: cd.DistanceResult) -> pd.DataFrame:
    """Table 16: complement kind × outcome, pairs, mean and variance (NaN where no pair: shown as —)."""
    return pd.DataFrame([{"complement": res.labels[t["kind"]], "outcome": res.labels[t["outcome"]],
                          "pairs": t["pairs"],
                          "mean L2 distance": float("nan") if t["mean"] is None else round(t["mean"], 4),
                          "variance": float("nan") if t["variance"] is None else round(t["variance"], 4)}
                         for t in res.table()])


def figure(res: cd.DistanceResult, bins: int = 15) -> go.Figure:
    """Fig. 8: one panel per complement kind, the histograms of correct and wrong pairs on shared bins."""
    fig = make_subplots(1, 2, subplot_titles=[res.labels[k] for k in cd.KINDS], horizontal_spacing=0.08)
    for col, kind in enumerate(cd.KINDS, start=1):
        h = res.histogram(kind, bins)
        mids = (h["edges"][:-1] + h["edges"][1:]) / 2
        for oc in cd.OUTCOMES:
            fig.add_bar(x=mids.tolist(), y=h[oc].tolist(), width=float(h["edges"][1] - h["edges"][0]),
                        name=res.labels[oc], marker_color=COLOURS[oc], opacity=0.6, showlegend=col == 1, row=1, col=col)
        fig.update_xaxes(title_text=res.labels["x"], row=1, col=col)
    fig.update_yaxes(title_text=res.labels["y"], row=1, col=1)
    fig.update_layout(barmode="overlay", title=res.labels["title"], height=360, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", y=1.12, x=1, xanchor="right", yanchor="bottom"))
    return fig


def distance_section(model, spec: str, build_videos) -> None:
    """Settings -> ``dataset_distances`` on a button -> the result's Table 16, Fig. 8 and per-pair CSV.
    ``build_videos(n)``: the built-in event videos to draw pairs from."""
    import streamlit as st

    st.subheader("Representation sensitivity: attention distance of complement pairs")
    st.caption("Rawal et al. App. B.7: a fusion model's attention on V vs V′ (video complement) and on Q vs Q′ (text "
               "complement), the tokens put in correspondence by a linear sum assignment (scipy's modified "
               "Jonker–Volgenant), L2 distance averaged over layers and heads. The paper finds correctly answered "
               "pairs further apart (FrozenBiLM, BA questions: video 0.70 vs 0.50, text 0.55 vs 0.38).")
    if not callable(getattr(model, "forward_with_attention", None)):
        st.info(f"{spec} exposes no fusion attention: pick builtin:tiny-vilt or an hf-vilt model for this analysis.")
        return
    c1, c2, c3 = st.columns([1, 2, 2])
    n = int(c1.number_input("Pairs", 1, 500, key="cv_dist_n", **initial("cv_dist_n", value=10)))
    qtypes = c2.multiselect("Question types", list(COMPLEMENT), key="cv_dist_q",
                            **kept_list("cv_dist_q", list(COMPLEMENT), ["BA"]))
    same = c3.checkbox("Match text only with text (not in the paper)", key="cv_dist_same",
                       **initial("cv_dist_same", value=False))
    if st.button("Measure the distances", key="cv_dist_run", icon=":material/play_arrow:", disabled=not qtypes):
        bar = st.progress(0.0, text="Attention of each complement pair…")
        try:
            st.session_state[KEY] = (spec, cd.dataset_distances(
                model, build_videos(max(30, 3 * n)), n, qtypes=qtypes, same_modality=same,
                progress=lambda d, tot: bar.progress(min(d / max(tot, 1), 1.0), text=f"Pairs… {d}/{tot}")))
        except (ClaviError, ValueError, RuntimeError) as e:
            st.error(f"Cannot measure: {e}")
        finally:
            bar.empty()
    got = st.session_state.get(KEY)
    if not got or got[0] != spec:
        return
    res = got[1]
    st.caption(f"{len({r['id'] for r in res.rows})} pairs of built-in event videos · question types "
               f"{', '.join(res.qtypes)} · {res.method} complements"
               + (" · text matched only with text" if res.same_modality else ""))
    st.dataframe(table(res), hide_index=True, width="stretch", key="cv_dist_table", placeholder="—")
    st.plotly_chart(figure(res), key="cv_dist_chart", width="stretch")
    st.download_button("Every pair (CSV)", pd.DataFrame(res.rows).to_csv(index=False), file_name="clavi_distance.csv",
                       mime="text/csv", key="cv_dist_csv", icon=":material/download:")
