"""Failures: for every example of the sidebar's dataset and every chosen perturbation, the lowest severity at which
it breaks (robustlab.failures, on the sweep engine); the map sorted by fragility, one cell in detail with its thief,
the slices that break together, the baseline, and the basket."""
from __future__ import annotations

import streamlit as st

from ui import failures_detail as detail, failures_run as run, failures_search as search, failures_view as view

st.header("Failures — where each example breaks")
st.caption("Pick perturbations and severities, then Run: each example's breaking severity, the item that took its "
           "place, and the groups of examples that break together. Nothing runs until you press Run.")

req = view.form()
job = st.session_state.get(run.JOB)
busy = job is not None and job.running
if st.button("Run", type="primary", key="fail_go", disabled=busy or req is None):
    why = run.start(req)
    if why:
        st.error(why)
view.job_panel()

out = st.session_state.get(run.RESULT)
if out is None:
    st.info("No failure map yet: choose above and press Run.")
else:
    df = view.map_view(out)
    ranked = view.order(df, st.session_state.get("fail_sort", "fragility"))
    detail.detail(out, ranked)
    detail.slices_view(out)
    detail.baseline_view(out)
    detail.send_all(out)
search.panel(req)
