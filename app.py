"""robustlab dashboard: ``streamlit run app.py``.

The entry point: a global sidebar (model, dataset, device; ui.state.sidebar) and st.navigation over the views in
pages/ (one thin file per view: widgets → one robustlab call → figures).

One file, two roles. Streamlit runs it as the script (``__name__ == "__main__"``) on every rerun of every session:
:func:`dashboard`. ``streamlit run app.py`` first imports it as a module to find the server it serves, ``app``
(``st.App``): the same dashboard, whose lifespan starts :func:`ui.warmup.warm_up` in a thread as the server comes
up, so the default page's model and gallery are being computed while a viewer's browser loads. That import also
turns off Streamlit's own discovery of pages/ (:func:`ui.entry.serve_through_app`): a fresh server's first visit
straight to a page's URL runs this script too, its sidebar and setup, and st.navigation serves the page.
"""
from __future__ import annotations

import threading
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
# (file, title, icon): one thin file per view; Material icons (the font ships with Streamlit: no emoji font needed)
VIEWS = [
    ("pages/retrieval.py", "Retrieval", ":material/search:"),
    ("pages/grounding.py", "Grounding", ":material/my_location:"),
    ("pages/failures.py", "Failures", ":material/broken_image:"),
    ("pages/attention.py", "Attention", ":material/psychology:"),
    ("pages/clavi.py", "CLAVI", ":material/swap_horiz:"),
    ("pages/hubness.py", "Hubness", ":material/hub:"),
    ("pages/adaptation.py", "Adaptation", ":material/build:"),
    ("pages/embeddings.py", "Embeddings", ":material/scatter_plot:"),
    ("pages/perturb.py", "Perturb", ":material/science:"),
    ("pages/benchmark.py", "Benchmark", ":material/bar_chart:"),
    ("pages/export.py", "Export", ":material/inventory_2:"),
]


def dashboard() -> None:
    """One run of the dashboard script."""
    from streamlit.runtime.scriptrunner import RerunException  # a run cut short by a rerun (ui.state.end_run)

    st.set_page_config(page_title="robustlab", page_icon="🧪", layout="wide")
    boot = st.empty()  # the first run of a fresh server imports PyTorch and robustlab (seconds): say so meanwhile
    boot.caption("Starting robustlab: loading PyTorch and the library…")

    from ui.server_guard import install

    install()  # the server's first run at the latest (idempotent): clear_cache from a viewer is refused
    from robustlab.perturb.allocator import tune_allocator
    import ui.state  # PyTorch and robustlab: the seconds the caption above is for (binds ``ui`` too)
    from ui import operator

    operator.config()  # the operator's configuration (robustlab.toml, ROBUSTLAB_* variables): read once, applied
    boot.empty()
    tune_allocator()  # process-wide, once: keep freed NumPy temporaries (glibc) for the per-frame perturbations
    pages = [st.Page(f, title=t, icon=i, default=(f == "pages/retrieval.py"))
             for f, t, i in VIEWS if (HERE / f).exists()]

    ui.state.begin_run()  # which widgets the last finished run drew: a remounted one gets its kept value sent again
    try:
        with st.sidebar:
            ui.sidebar()
        st.navigation(pages).run()
    except RerunException:
        raise  # cut short by a rerun: the browser may not keep what this run drew
    except BaseException:
        ui.state.end_run()  # st.stop() or an error the page shows: the run ended, what it drew is what the browser
        raise  # keeps
    else:
        ui.state.end_run()


@asynccontextmanager
async def warm_up_lifespan(_app):
    """The server's lifespan: start the warm-up (ui.warmup) in a thread and return at once. The import of ``ui``
    (PyTorch) happens in that thread: the server answers meanwhile."""
    def run():
        from ui.warmup import warm_up

        warm_up()

    threading.Thread(target=run, name="robustlab-warm-up", daemon=True).start()  # (ui.warmup.THREAD)
    yield


if __name__ == "__main__":  # a run of the script
    dashboard()
else:  # imported by `streamlit run app.py` (or an ASGI server: uvicorn app:app) to serve the dashboard
    from ui.entry import serve_through_app
    from ui.server_guard import install  # light (Streamlit only): no viewer message may clear what all share

    serve_through_app()  # before any session: every URL runs this script (not Streamlit's own pages/ navigation)
    install()
    app = st.App(__file__, lifespan=warm_up_lifespan)
