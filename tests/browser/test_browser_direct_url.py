"""Real browser: a page URL opened first on a freshly started server runs through app.py.

Streamlit (1.67) treats an app with a ``pages/`` folder beside its main script as a v1 multipage app until some run
calls ``st.navigation``: its first PagesManager sets the process-wide flag ``PagesManager.uses_pages_directory``, and
while it is set every script run builds a navigation from the folder and runs the requested page alone. Only app.py's
``st.navigation`` cleared it, so on a fresh server the first visits straight to ``/adaptation`` or ``/failures``
(before anyone loaded ``/``) got Streamlit's own navigation ("app", "adaptation", …), no sidebar, and a page run
without app.py: no model or dataset choice, none of app.py's setup. app.py now clears the flag when the server
imports it (:func:`ui.entry.serve_through_app`), before any viewer connects.

One fresh server, and nobody opens ``/``: each page below is a viewer's first visit, straight to its URL. Each must
show the dashboard's navigation (app.VIEWS' titles), the global sidebar with the operator's default model
(``ROBUSTLAB_DEFAULT_MODEL``: app.py's sidebar reads the operator's configuration), and the page asked for.
"""
from __future__ import annotations

import pytest

from browser_helpers import settle
from conftest import ROOT, run_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

T = 240_000  # ms: a cold page (PyTorch and robustlab imported by the first run) on a loaded 2-core machine
OPERATOR_MODEL = "builtin:tiny-clip"  # not the dashboard's default (builtin:tiny-vit-clip): only the config says so
# (URL path, what the page's header starts with)
FIRST_VISITS = [("adaptation", "Adaptation — test-time adaptation"), ("failures", "Failures — where each example")]


def view_titles() -> list[str]:
    """app.VIEWS' titles, in order (read from app.py's source: importing app here is not what is tested)."""
    import ast

    tree = ast.parse((ROOT / "app.py").read_text())
    views = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "VIEWS")
    return [ast.literal_eval(t)[1] for t in views.elts if (ROOT / ast.literal_eval(t)[0]).exists()]


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    """A server of its own (no other test's visit to ``/`` before these), without the warm-up (no run of app.py
    before the first viewer's), and an operator default model the sidebar must show."""
    yield from run_server(tmp_path_factory, env={"ROBUSTLAB_WARM_UP": "0", "ROBUSTLAB_DEFAULT_MODEL": OPERATOR_MODEL})


def test_page_url_opened_first_runs_through_app(fresh_server, browser):
    titles = view_titles()
    assert "Adaptation" in titles and "Failures" in titles, titles
    for path, header in FIRST_VISITS:
        page = browser.new_page(viewport={"width": 1500, "height": 1800})
        page.set_default_timeout(T)
        page.goto(f"{fresh_server}/{path}")
        page.get_by_text(header).first.wait_for()  # the page asked for ran (not Retrieval, the default page)
        settle(page)
        assert page.url.rstrip("/").endswith("/" + path), page.url
        # each link's text: its icon (a Material ligature name, "search") and, on the last line, its label
        nav = [t.strip().splitlines()[-1] for t in page.get_by_test_id("stSidebarNavLink").all_inner_texts()]
        assert nav == titles, f"/{path}: navigation {nav}, not app.py's {titles}"  # not "app", "adaptation", …
        side = page.get_by_test_id("stSidebar")
        model = side.locator(".st-key-model_choice")  # the sidebar's Model selector (ui.sidebar_panel)
        assert model.count() == 1, f"/{path}: no model selector in the sidebar: app.py did not run"
        shown = model.inner_text() + " " + model.locator("input").first.input_value()
        assert OPERATOR_MODEL in shown, shown  # the operator's configuration, read by app.py's sidebar
        assert side.get_by_text("Dataset", exact=True).count() == 1
        page.close()
