"""robustlab dashboard: ``streamlit run app.py``.

The entry point: a global sidebar (model, dataset, device; ui.state.sidebar) and st.navigation over the views in
pages/ (one thin file per view: widgets → one robustlab call → figures).
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import RerunException  # a run cut short by a rerun (ui.state.end_run)

st.set_page_config(page_title="robustlab", page_icon="🧪", layout="wide")
_boot = st.empty()  # the first run of a fresh server imports PyTorch and robustlab (seconds): say so meanwhile
_boot.caption("Starting robustlab: loading PyTorch and the library…")

from robustlab.perturb.allocator import tune_allocator  # noqa: E402
import ui  # noqa: E402

from ui import operator  # noqa: E402

operator.config()  # the operator's configuration (robustlab.toml, ROBUSTLAB_* variables): read once, applied
_boot.empty()

HERE = Path(__file__).resolve().parent
tune_allocator()  # process-wide, once: keep freed NumPy temporaries (glibc) for the per-frame perturbations
# (file, title, icon): one thin file per view; Material icons (the font ships with Streamlit: no emoji font needed)
VIEWS = [
    ("pages/retrieval.py", "Retrieval", ":material/search:"),
    ("pages/grounding.py", "Grounding", ":material/my_location:"),
    ("pages/attention.py", "Attention", ":material/psychology:"),
    ("pages/clavi.py", "CLAVI", ":material/swap_horiz:"),
    ("pages/hubness.py", "Hubness", ":material/hub:"),
    ("pages/adaptation.py", "Adaptation", ":material/build:"),
    ("pages/embeddings.py", "Embeddings", ":material/scatter_plot:"),
    ("pages/perturb.py", "Perturb", ":material/science:"),
    ("pages/benchmark.py", "Benchmark", ":material/bar_chart:"),
    ("pages/export.py", "Export", ":material/inventory_2:"),
]
PAGES = [st.Page(f, title=t, icon=i, default=(f == "pages/retrieval.py")) for f, t, i in VIEWS if (HERE / f).exists()]

ui.state.begin_run()  # which widgets the last finished run drew: a remounted one gets its kept value sent again
try:
    with st.sidebar:
        ui.sidebar()
    st.navigation(PAGES).run()
except RerunException:
    raise  # cut short by a rerun: the browser may not keep what this run drew
except BaseException:
    ui.state.end_run()  # st.stop() or an error the page shows: the run ended, what it drew is what the browser keeps
    raise
else:
    ui.state.end_run()
