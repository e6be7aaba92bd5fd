"""`robustlab quag-sim` and `robustlab clavi-distance` (Rawal et al.: the simulation study, the complement-pair
attention distance): their output and their one-line errors."""
from __future__ import annotations

import json

import pytest

from robustlab.cli import main


def test_quag_sim_json_and_file(tmp_path, capsys):
    out = tmp_path / "sim.json"
    rc = main(["quag-sim", "--alphas", "0.1,0.3", "--epochs", "1", "--samples", "60", "--threads", "1",
               "--shortcircuits", "crossmodal,unimodal", "--json", "--out", str(out)])
    assert rc == 0
    got = json.loads(capsys.readouterr().out)
    assert [r["alpha"] for r in got["rows"]] == [0.1, 0.3] and got["config"]["epochs"] == 1
    assert got["shortcircuits"] == ["crossmodal", "unimodal"] and "increase_unimodal_pct" in got["rows"][0]
    assert json.loads(out.read_text()) == got


@pytest.mark.parametrize("argv, message", [
    (["quag-sim", "--alphas", "0.5"], "α must be in [0, 0.5)"),
    (["quag-sim", "--alphas", "low"], "--alphas must be numbers"),
    (["quag-sim", "--alphas", "0.1", "--shortcircuits", "XX"], "unknown quadrant"),
    (["clavi-distance", "--qtypes", "E-NC", "--n", "3"], "complement pairs exist for BE, BA"),
    (["clavi-distance", "--pairs", "0"], "--pairs must be at least 1"),
    (["clavi-distance", "--model", "builtin:tiny-clip", "--n", "3"], "needs a fusion model"),
])
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("robustlab: ")


@pytest.mark.slow
def test_clavi_distance_prints_table_16(capsys):
    assert main(["clavi-distance", "--pairs", "1", "--n", "20"]) == 0
    out = capsys.readouterr().out
    assert "Table 16" in out and "video" in out and "text" in out and "incorrect" in out
