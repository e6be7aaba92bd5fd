"""Issue 45 (polish 6): the Adaptation page logged Streamlit's "The widget with key ... was created with a default
value but also had its value set via the Session State API." with a stack trace. Streamlit checks that only where
a runtime exists (a real server; AppTest has none): the check is switched on here, and the page is opened, run,
left and opened again, as a viewer does."""
from __future__ import annotations

import logging

import pytest

from apptest_helpers import fresh as app

PAGE = "pages/adaptation.py"


@pytest.fixture
def duplication_check(monkeypatch, caplog):
    """Streamlit's widget-state duplication warning, as a real server runs it (each time, not once a process)."""
    from streamlit.elements.lib import policies

    monkeypatch.setattr(policies.runtime, "exists", lambda: True)
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    caplog.set_level(logging.WARNING, logger=policies.__name__)

    def warned() -> list[str]:
        monkeypatch.setattr(policies, "_shown_default_value_warning", False)
        return [r.getMessage() for r in caplog.records if "Session State API" in r.getMessage()]
    return warned


def test_the_adaptation_page_sets_no_widget_twice(duplication_check):
    at = app(PAGE, model_choice="builtin:tiny-clip", ad_method="tent")
    assert duplication_check() == []
    at.button(key="ad_run").click().run()
    assert not at.exception
    assert duplication_check() == []
    at.switch_page("pages/retrieval.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert duplication_check() == []
    at.run()
    assert duplication_check() == []
    at.session_state["dataset"] = "builtin-videos"  # the direction t2i is no option there: set again (t2v)
    at.run()
    assert not at.exception
    assert at.radio(key="ad_direction").value == "t2v"
    assert duplication_check() == []
