"""AppTest: the Benchmark page shows a run's 95 % bootstrap intervals and which differences hold (the same tables
as report.html), read from the run folder, never from widget state."""
import pytest
from streamlit.testing.v1 import AppTest

from robustlab.bench import SweepSpec, condition_grid, run_sweep

PAGE = "pages/benchmark.py"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 8},
                     conditions=condition_grid(["gaussian_noise"], [5], combine="none"))
    run_sweep(spec, root / "done")
    return root


def test_the_page_shows_the_intervals_and_the_paired_comparison(finished, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(finished))
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.switch_page(PAGE).run()
    at.radio(key="bench_mode").set_value("Open a run").run()
    assert not at.exception, at.exception
    box = next(e for e in at.expander if e.label.startswith("Confidence: 95 % intervals"))
    clean, held = (d.value for d in box.dataframe)  # AppTest exposes no keys of dataframes
    score = str(clean["score"].iloc[0])
    assert "[" in score and score.endswith("]")  # "v [lo, hi]"
    assert list(held["condition"]) == ["visual gaussian_noise s5"]
    assert held["holds"].iloc[0] in ("✓ holds", "—")
    assert "[" in str(held["Δ vs clean"].iloc[0])
