"""Every URL runs through app.py (ui.entry): what the fix relies on, checked without a browser.

tests/browser/test_browser_direct_url.py shows it end to end (a fresh server's first visit straight to /adaptation).
Here, in fresh interpreters: ``streamlit run app.py`` imports app.py as a module (it serves app.py's ``st.App``), that
import turns Streamlit's ``pages/`` auto-discovery off before any session's PagesManager decides it, and without it
Streamlit would decide it on (a ``pages/`` folder sits beside app.py).
"""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

FLAG_AFTER_FIRST_SESSION = """
import sys
sys.path.insert(0, {root!r})
{before}
from streamlit.runtime.pages_manager import PagesManager
PagesManager({app!r})  # what a session's first PagesManager decides
print("FLAG", PagesManager.uses_pages_directory)
"""


def flag_after_first_session(before: str) -> str:
    code = FLAG_AFTER_FIRST_SESSION.format(root=str(ROOT), app=str(ROOT / "app.py"), before=before)
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("FLAG ")]
    assert p.returncode == 0 and lines, p.stdout[-2000:] + p.stderr[-3000:]
    return lines[-1].split()[1]


def test_the_server_imports_app_py_as_a_module():
    """``streamlit run app.py`` finds app.py's ``st.App`` and serves it under uvicorn: app.py is imported (its module
    branch runs) before the server accepts a connection."""
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app", found


def test_importing_app_turns_pages_discovery_off_for_every_session():
    assert flag_after_first_session("") == "True"  # Streamlit's own choice: pages/ beside app.py, v1 navigation
    assert flag_after_first_session("import app") == "False"  # the server's import of app.py: app.py runs every URL


def test_streamlit_still_reads_the_flag_where_the_fix_expects():
    """The script runner chooses between app.py and its own ``pages/`` navigation by this flag (Streamlit 1.67's
    ``_mpa_v1``); if a Streamlit release moves that choice elsewhere, ui.entry must follow it."""
    import inspect

    from streamlit.runtime.scriptrunner import script_runner

    src = inspect.getsource(script_runner.ScriptRunner)
    assert "PagesManager.uses_pages_directory" in src and "_mpa_v1(" in src
