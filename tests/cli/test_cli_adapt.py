"""``robustlab adapt``: the methods with their parameters, one small run (text and JSON), one-line errors."""
import json

import pytest

from robustlab.cli import main

MODEL = "builtin:tiny-clip-video-meanp"


def test_list_prints_every_method_with_its_parameters(capsys):
    from robustlab.adapt import list_methods

    assert main(["adapt", "--list"]) == 0
    out = capsys.readouterr().out
    for m in list_methods():
        assert m["name"] in out and m["label"] in out
    assert "--param steps=  default 3" in out and "--param lr=  default by method and direction" in out
    assert main(["adapt", "--list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == list_methods()


def test_one_small_run(tmp_path, capsys):
    path = tmp_path / "sub" / "run.json"
    args = ["adapt", "--model", MODEL, "--n", "16", "--direction", "t2v", "--perturb", "keyboard", "--severity", "3",
            "--method", "tent", "--param", "steps=1", "--param", "batch_size=8"]
    assert main(args + ["--json", "--out", str(path)]) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    assert res["method"] == "tent" and res["direction"] == "t2v" and res["model"] == MODEL and res["n"] == 16
    assert res["condition"] == {"name": "keyboard", "severity": 3, "seed": 0}
    assert res["params"]["steps"] == 1 and res["params"]["batch_size"] == 8 and res["params"]["lr"] == 3e-5
    assert set(res["metrics"]) == {"clean", "shifted", "adapted"}
    assert all(set(m) >= {"R@1", "R@5", "R@10"} for m in res["metrics"].values())
    assert res["seconds"]["per_1000_queries"] > 0 and len(res["losses"]) == 2  # 16 queries, batches of 8, 1 step
    assert json.loads(path.read_text()) == res and f"wrote {path}" in cap.err
    # the table: clean / shifted / adapted and the time
    assert main(["adapt", "--model", MODEL, "--n", "16", "--direction", "v2t", "--perturb", "gaussian_noise",
                 "--method", "none"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("none (No adaptation) · " + MODEL) and "v2t" in lines[0]
    assert lines[1].split() == ["R@1", "R@5", "R@10", "MdR", "MnR"]
    assert [ln.split()[0] for ln in lines[2:5]] == ["clean", "shifted", "adapted"]
    assert lines[3].split()[1:] == lines[4].split()[1:]  # no adaptation: adapted = shifted
    assert "s per 1,000 queries" in out


@pytest.mark.parametrize("extra, message", [
    (["--method", "bogus"], "unknown adaptation method 'bogus'"),
    (["--param", "stepz=1"], "has no parameter stepz"),
    (["--param", "steps=many"], "steps must be an integer"),
    (["--param", "steps"], "use KEY=VALUE"),
    (["--direction", "x2y"], "--direction must be one of"),
    (["--dataset", "builtin-videos", "--direction", "t2i"], "does not go with the video dataset"),
    (["--direction", "t2v", "--perturb", "gaussian_noise"], "t2v shifts the text queries"),
])
def test_errors_are_one_line(extra, message, capsys):
    base = ["adapt", "--model", MODEL, "--n", "8", "--perturb", "keyboard", "--method", "tent"]
    assert main(base + extra) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("robustlab:")]
    assert len(lines) == 1 and message in lines[0], err
    assert "Traceback" not in err
