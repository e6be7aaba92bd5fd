"""Issue 45 (polish 1): the Local folder picker's boxes (dataset found, data root, folder, format, split) are drawn
with their kept value, as item 9 made every other sidebar box: a fresh server gives the sidebar's widgets new ids
on the run a viewer's first change starts, and a widget that declared its first option showed that option again
(the first pick dropped; tests/browser/test_browser_baseline.py shows the mechanism in a real browser)."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from ui.folders import ANOTHER


def _folders_only():
    import streamlit as st

    import ui.folders
    import ui.widget_state

    ui.widget_state.begin_run()
    st.session_state.setdefault("dataset", "folder")
    with st.sidebar:
        ui.folders.sidebar_section()
    ui.widget_state.end_run()


@pytest.fixture
def roots(tmp_path, monkeypatch):
    """Two data roots, each with an upload folder the picker finds."""
    got = []
    for name in ("alpha", "beta"):
        root = tmp_path / name
        (root / "shapes").mkdir(parents=True)
        for i in range(2):
            Image.fromarray(np.full((16, 16, 3), 60 * i, np.uint8)).save(root / "shapes" / f"s{i}.png")
        (root / "shapes" / "captions.txt").write_text("a\nb\n")
        got.append(str(root))
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", ":".join(got))
    return got


def _declared(box):
    """The label of the option a box declares as its default (what a widget the browser mounts afresh shows)."""
    if box.proto.default is None:
        return None
    return box.options[box.proto.default]


def test_the_first_pick_in_each_folder_box_is_its_declared_default(roots):
    at = AppTest.from_function(_folders_only, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="folder_pick")
    found = [o for o in picker.options if o != ANOTHER]
    assert len(found) == 2 and picker.options[-1] == ANOTHER
    picker.set_value(found[1]).run()  # the first pick: the second dataset found
    assert not at.exception
    picker = at.selectbox(key="folder_pick")
    assert picker.value == found[1] and _declared(picker) == found[1]
    splits = at.selectbox(key="folder_split")
    if len(splits.options) > 1:
        other = [o for o in splits.options if o != splits.value][0]
        splits.set_value(other).run()
        assert _declared(at.selectbox(key="folder_split")) == other

    at.selectbox(key="folder_pick").set_value(ANOTHER).run()
    at.selectbox(key="folder_base").set_value(roots[1])
    at.text_input(key="folder_sub").set_value("shapes")
    fmt = at.selectbox(key="folder_fmt")
    choice = fmt.options[-1] if fmt.options[-1] != fmt.value else fmt.options[0]
    fmt.set_value(choice).run()
    assert not at.exception, at.exception
    base, sub, fmt = at.selectbox(key="folder_base"), at.text_input(key="folder_sub"), at.selectbox(key="folder_fmt")
    assert base.value == roots[1] and _declared(base) == "beta"  # shown by the root's name, never its path
    assert fmt.value == choice and _declared(fmt) == choice
    assert sub.value == "shapes" and sub.proto.default == "shapes"
    assert _declared(at.selectbox(key="folder_pick")) == ANOTHER
