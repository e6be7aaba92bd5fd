"""The Attention page's simulation-study section (Rawal et al. §3, Fig. 2): the settings, the run, and the chart and
table of the :class:`robustlab.diagnostics.quag_simulation.SimulationResult` kept in the session (what is drawn
comes from the result object — its α, its numbers, its labels —, never from the widgets)."""
from __future__ import annotations

import plotly.graph_objects as go

from robustlab.diagnostics import quag_simulation as qs
from robustlab.diagnostics.quag import PRESETS
from ui.multiselect_state import kept_list
from ui.widget_state import initial

KEY = "at_sim"


def figure(res: qs.SimulationResult) -> go.Figure:
    """% increase in test MSE after each short-circuit vs α (the paper's Fig. 2 plots the crossmodal one)."""
    fig = go.Figure()
    for sc in res.shortcircuits:
        fig.add_scatter(x=res.alphas.tolist(), y=res.increase[sc].tolist(), mode="lines+markers",
                        name=res.labels["series"][sc], hovertemplate="α %{x:.3g}<br>%{y:.1f} %<extra></extra>")
    fig.update_layout(title=res.labels["title"], xaxis_title=res.labels["x"], yaxis_title=res.labels["y"],
                      height=360, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig


def table(res: qs.SimulationResult):
    import pandas as pd

    rows = []
    for r in res.rows():
        row = {"α": r["alpha"], "test MSE": round(r["mse"], 5)}
        for sc in res.shortcircuits:
            row[f"test MSE, {sc} short-circuit"] = round(r[f"mse_{sc}"], 5)
            row[f"increase, {sc} (%)"] = round(r[f"increase_{sc}_pct"], 1)
        row["best epoch"] = r["best_epoch"]
        rows.append(row)
    return pd.DataFrame(rows)


def simulation_section() -> None:
    """Settings -> ``simulate`` on a button -> the result's chart, table and settings line."""
    import streamlit as st

    with st.expander("Simulation study: does QUAG detect fusion where it is known to be needed? (Rawal et al. §3, "
                     "Fig. 2)"):
        st.caption("Two modalities whose tokens are mixed with a known crossmodal coupling α: t = (1−α)·m₁ − α·m₂, "
                   "v = (1−α)·m₂ − α·m₁. A small transformer learns a per-token target of m₁ and m₂ for each α; "
                   "the crossmodal short-circuit should hurt more as α grows. The quick setting is smaller than "
                   "the paper's (App. A.5: 15 tokens × 100 features, 4 layers, 40,000 samples, 2,000 epochs).")
        c1, c2, c3, c4 = st.columns([3, 1, 1, 2])
        alphas = c1.text_input("α values (in [0, 0.5))", key="at_sim_alphas",
                               **initial("at_sim_alphas", value=", ".join(f"{a:g}" for a in qs.DEFAULT_ALPHAS)))
        epochs = int(c2.number_input("Epochs", 1, 2000, key="at_sim_epochs",
                                     **initial("at_sim_epochs", value=qs.QUICK.epochs)))
        seed = int(c3.number_input("Seed", 0, 10_000, key="at_sim_seed", **initial("at_sim_seed", value=0)))
        scs = c4.multiselect("Short-circuits", list(PRESETS), key="at_sim_sc",
                             **kept_list("at_sim_sc", list(PRESETS), ["crossmodal"]))
        if st.button("Run the simulation", key="at_sim_run", icon=":material/play_arrow:", disabled=not scs):
            bar = st.progress(0.0, text="Training one model per α…")
            try:
                vals = [qs.check_alpha(a.strip()) for a in alphas.replace(";", ",").split(",") if a.strip()]
                st.session_state[KEY] = qs.simulate(vals, "quick", seed=seed, shortcircuits=scs, epochs=epochs,
                                                    threads=1, progress=lambda d, n: bar.progress(
                                                        d / n, text=f"Training one model per α… {d}/{n}"))
            except ValueError as e:
                st.error(f"Cannot run the simulation: {e}")
            finally:
                bar.empty()
        res = st.session_state.get(KEY)
        if res is None:
            return
        st.plotly_chart(figure(res), key="at_sim_chart", width="stretch")
        st.dataframe(table(res), hide_index=True, width="stretch", key="at_sim_table")
        c = res.config
        st.caption(f"Seed {res.seed} · {c.tokens} tokens × {c.dim} features per modality · {c.layers} layers of "
                   f"width {c.width} · {c.samples} samples ({c.split[0]:.0%} train) · {c.epochs} epochs · "
                   f"{res.seconds:.0f} s. Increase = 100 · (MSE after the short-circuit − MSE) / MSE on the test "
                   "split; the weights of the best validation epoch.")
