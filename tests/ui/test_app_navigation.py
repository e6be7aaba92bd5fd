"""Issue 45 (polish 5): navigation keeps state. "Open on Retrieval" (a Benchmark report's worst example) keeps the
sidebar's "Compare with (baseline)"; back on Benchmark, the form and the report it showed are as they were."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from apptest_helpers import fresh as app

VIT, CLIP, VIDEO = "builtin:tiny-vit-clip", "builtin:tiny-clip", "builtin:tiny-clip-video-meanp"


def _sidebar_and_open():
    """The sidebar, and a button that opens a sweep's example as the report's "Open on Retrieval" does."""
    import streamlit as st

    import ui.state

    ui.state.begin_run()
    with st.sidebar:
        ui.state.sidebar()
    st.button("Open on Retrieval", key="open", on_click=ui.state.preset_retrieval,
              args=(st.session_state["_example_model"], {"name": "gaussian_noise", "severity": 3, "seed": 0},
                    None, 4, "t2i", {"name": "builtin", "n": 300}))
    ui.state.end_run()


def _declared(box):
    return box.options[box.proto.default]


def _opened(baseline: str, main: str, example: str):
    at = AppTest.from_function(_sidebar_and_open, default_timeout=120)
    at.session_state["_example_model"] = example
    at.run()
    at.selectbox(key="model_choice").set_value(main).run()
    at.selectbox(key="baseline").set_value(baseline).run()
    assert not at.exception
    at.button(key="open").click().run()
    assert not at.exception
    return at


def test_open_on_retrieval_keeps_the_baseline():
    at = _opened(VIDEO, CLIP, VIT)
    assert at.selectbox(key="model_choice").value == VIT  # the example's model
    box = at.selectbox(key="baseline")
    assert box.value == VIDEO and _declared(box) == VIDEO


def test_open_on_retrieval_of_the_baselines_own_model_swaps_the_two():
    """The example is the baseline model's: it becomes the page's model, and the comparison stays, reversed."""
    at = _opened(VIT, CLIP, VIT)
    assert at.selectbox(key="model_choice").value == VIT
    assert at.selectbox(key="baseline").value == CLIP  # (set through the Session State API: the browser is told)
    at.run()
    box = at.selectbox(key="baseline")
    assert box.value == CLIP and _declared(box) == CLIP


def test_back_on_benchmark_the_form_is_as_it_was():
    at = app("pages/benchmark.py")
    at.radio(key="bench_pmode").set_value("none").run()
    at.text_input(key="bench_name").set_value("my-run").run()
    at.multiselect(key="bench_sev").set_value([2, 4]).run()
    assert not at.exception
    at.switch_page("pages/retrieval.py").run()
    assert not at.exception
    at.switch_page("pages/benchmark.py").run()
    assert not at.exception
    assert at.radio(key="bench_pmode").value == "none"
    assert at.text_input(key="bench_name").value == "my-run"
    assert at.multiselect(key="bench_sev").value == [2, 4]


def test_back_on_benchmark_an_opened_run_is_still_open(tmp_path, monkeypatch):
    """"Open a run" and its folder are kept: the report it showed is shown again."""
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(tmp_path))
    for name in ("a-run", "b-run"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "sweep.json").write_text("{}")
    at = app("pages/benchmark.py")
    at.radio(key="bench_mode").set_value("Open a run").run()
    assert sorted(at.selectbox(key="bench_open").options) == ["a-run", "b-run"]
    at.selectbox(key="bench_open").set_value(at.selectbox(key="bench_open").options[1]).run()
    chosen = at.selectbox(key="bench_open").value
    at.switch_page("pages/hubness.py").run()
    at.switch_page("pages/benchmark.py").run()
    assert not at.exception
    assert at.radio(key="bench_mode").value == "Open a run" and at.selectbox(key="bench_open").value == chosen
