"""AppTest of the Benchmark page's Protocol mode: the shipped protocols whose task runs on the sidebar's dataset are
offered, each with its paper, the perturbations it cannot run here and every condition set with its resolved
parameters; a protocol run (QUAG Table 1 on 8 built-in videos) finishes and its paper table is shown from the run's
results."""
import pytest
from streamlit.testing.v1 import AppTest

TIMEOUT = 180
PAGE = "pages/benchmark.py"


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(root))
    monkeypatch.setenv("ROBUSTLAB_SYNC_SWEEP", "1")
    return root


def page(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    at.radio(key="bench_mode").set_value("A paper's protocol").run()
    assert not at.exception, at.exception
    return at


def test_protocols_offered_for_the_dataset_with_their_cells(runs):
    at = page()
    offered = at.selectbox(key="bench_protocol").options
    assert any(o.startswith("qiu-image") for o in offered) and any(o.startswith("qiu-text") for o in offered)
    assert not any(o.startswith(("msrvtt-p", "quag-table1", "clavi")) for o in offered)  # video ones: not on images
    at.selectbox(key="bench_protocol").set_value("qiu-image").run()
    assert not at.exception, at.exception
    assert any("Qiu et al." in c.value and "RSUM" in c.value for c in at.caption)
    assert any("stylize/qiu_code" in i.value for i in at.info)  # named, with why, never dropped silently
    rows = next(d for d in at.dataframe if "parameters" in d.value.columns).value
    assert len(rows) == 1 + 16 * 5  # clean + the 16 runnable types x 5 severities
    shot = rows[rows["visual"] == "shot_noise s3"]
    assert "'lam': 12" in shot["parameters"].iloc[0]  # Qiu's image table, not Schiappa's video one
    # the protocol's own models: tiny-vit-clip and tiny-clip (issue 27)
    assert any(c.value.startswith("162 cells: 2 model(s) × 81 condition sets") for c in at.caption)


def test_a_protocol_run_shows_the_papers_table(runs):
    at = page(dataset="builtin-videos")
    at.selectbox(key="bench_protocol").set_value("quag-table1").run()
    at.number_input(key="bench_protocol_n").set_value(8)
    at.text_input(key="bench_protocol_run").set_value("quag-t1").run()
    assert not at.exception, at.exception
    at.button(key="bench_go").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    t1 = next(d for d in at.dataframe if "configuration" in d.value.columns).value
    # the baseline and 9 configurations, then the paper's "Δ multiplication ops" row for each of the 3
    # QUAG-attention modes, measured (issue 48)
    rows = list(t1["configuration"])
    assert rows[0] == "baseline" and len(rows) == 13
    assert [r for r in rows if r.startswith("Δ multiplication ops")] == [
        f"Δ multiplication ops, % decrease ({m})" for m in rows if m.startswith("quag-attention:")]
    assert set(t1["↓"]) <= {"", "↓"}
