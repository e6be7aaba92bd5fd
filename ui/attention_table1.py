"""The Attention page's "Table 1 over the dataset" section: Rawal et al.'s Table 1 (baseline, input ablations, QUAG
short circuits, QUAG-attention where the model has it) over built-in items, computed on demand and kept per model."""
from __future__ import annotations

import streamlit as st

from robustlab.bench.report import quag_table1 as table1
from robustlab.datasets import build
from robustlab.models.interventions import names as intervention_names
from ui.attention import MISSING, PP, table1_display
from ui.multiselect_state import kept_list
from ui.widget_state import initial, valid


def table1_section(model, spec) -> None:
    st.subheader("Table 1 over the dataset")
    d1, d2, d3 = st.columns([2, 1, 3])
    which = d1.radio("Items", ["builtin", "builtin-videos"], key="at_t1_ds", horizontal=True,
                     format_func=lambda d: "Built-in scenes" if d == "builtin" else "Built-in videos",
                     **valid("at_t1_ds", ["builtin", "builtin-videos"]))
    n = int(d2.number_input("Items", 10, 1000, step=10, key="at_t1_n", **initial("at_t1_n", value=100)))
    rows = [x for x in intervention_names() if x.startswith(("input:", "quag:"))
            or getattr(model, "supports_quag_attention", False)]
    ivs = d3.multiselect("Rows", rows, key="at_t1_iv", **kept_list(
        "at_t1_iv", rows, [x for x in intervention_names() if not x.startswith("quag-attention:")]))
    if st.button("Run Table 1", key="at_t1_run", type="primary", icon=":material/play_arrow:"):
        bar = st.progress(0.0, text="Table 1…")
        try:
            t = table1(model, build(which, split="test", n=n), n, ivs,
                       progress=lambda d, tot: bar.progress(min(d / max(tot, 1), 1.0), text=f"Table 1… {d}/{tot}"))
            st.session_state["at_t1"] = (spec, which, n, t)
        except (ValueError, RuntimeError) as e:
            st.error(f"Table 1 cannot run: {e}")
        finally:
            bar.empty()
    res = st.session_state.get("at_t1")
    if res and res[0] == spec:
        shown = table1_display(res[3])
        st.caption(f"{res[1]}, {res[2]} held-out items · accuracy in %, Δ in {PP} (pts) as Rawal et al. report them "
                   f"· ↓: a drop of at least 2 {PP} from the baseline · —: no item of that question type")
        st.dataframe(shown, hide_index=True, width="stretch", key="at_t1_table", placeholder=MISSING)
        st.download_button("Table 1 (CSV)", shown.to_csv(index=False), file_name="table1.csv", mime="text/csv",
                           key="at_t1_csv", icon=":material/download:")
