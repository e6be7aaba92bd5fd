"""Every script run goes through app.py, from a fresh server's very first request. Light: imports Streamlit only.

Streamlit (1.67) still honours its first multipage scheme: when a ``pages/`` folder sits beside the main script,
its first ``PagesManager`` sets the process-wide flag ``PagesManager.uses_pages_directory``, and while that flag is
set the script runner does not run app.py: it builds a navigation of its own from the folder ("app", "adaptation",
…) and runs the requested page alone (``_mpa_v1`` in ``streamlit/runtime/scriptrunner/script_runner.py``). Only
``st.navigation`` clears the flag, so until some viewer had loaded ``/`` (app.py's ``st.navigation``), a visit straight
to ``/adaptation`` ran that page without the sidebar's model and dataset and without app.py's setup.

:func:`serve_through_app` clears the flag when the server imports app.py to find its ``st.App`` (``streamlit run
app.py``, or ``uvicorn app:app``), before any session exists: every run of every session then executes app.py, whose
``st.navigation`` serves the page the URL names. The ``pages/`` folder keeps its name (one thin file per view).
``streamlit.testing.v1.AppTest`` resets the flag before each of its runs and does not import app.py as a module:
AppTest-based tests are unaffected.
"""
from __future__ import annotations

from streamlit.runtime.pages_manager import PagesManager


def serve_through_app() -> None:
    """Turn Streamlit's ``pages/`` auto-discovery off for this process (idempotent): app.py runs for every URL."""
    PagesManager.uses_pages_directory = False
