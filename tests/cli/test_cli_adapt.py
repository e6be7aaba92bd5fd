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


def test_hat_vtr_analyses_from_the_cli(tmp_path, capsys):
    """--mdr lower, the time breakdown and the Reliable Memory's accuracy in the table, --query's top-k before and
    after, --heatmap in the JSON; each as the library computes it."""
    base = ["adapt", "--model", MODEL, "--n", "16", "--direction", "v2t", "--perturb", "gaussian_noise",
            "--method", "hat-vtr", "--param", "steps=1", "--param", "batch_size=8"]
    assert main(base + ["--mdr", "lower", "--query", "3", "--top-k", "4", "--heatmap", "5", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["mdr"] == "lower" and res["params"]["na_over"] == "batch"
    assert set(res["timing"]["per_1000_queries"]) == {"prepare", "forward", "loss", "hsm", "memory", "backward"}
    assert [m["batch"] for m in res["memory"]] == [0, 1] and all(0 <= m["accuracy"] <= 1 for m in res["memory"])
    t = res["top_k"]
    assert t["query"] == 3 and len(t["before"]["items"]) == len(t["after"]["items"]) == 4
    assert [x["rank"] for x in t["after"]["items"]] == [1, 2, 3, 4]
    h = res["heatmap"]
    assert h["queries"] == [0, 1, 2, 3, 4] and len(h["adapted"]) == 5 and len(h["adapted"][0]) == len(h["items"])
    assert main(base + ["--query", "3", "--top-k", "2", "--param", "na_over=gallery"]) == 0
    out = capsys.readouterr().out
    assert "time per 1,000 queries: forward " in out and " backward " in out and " hsm " in out
    assert "Reliable Memory: pseudo-label accuracy" in out and "na_over=gallery" in out
    assert "query 3 (video query); true items [3]" in out and out.count("caption ") >= 4  # two rows, two sides


def test_severity_curve_from_the_cli(tmp_path, capsys):
    path = tmp_path / "curve.json"
    args = ["adapt", "--model", MODEL, "--n", "16", "--direction", "t2v", "--perturb", "keyboard", "--method", "tent",
            "--param", "steps=1", "--severities", "1,5", "--out", str(path)]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["severity", "clean", "R@1", "before", "after", "change"]
    assert [ln.split()[0] for ln in out[2:4]] == ["1", "5"]
    curve = json.loads(path.read_text())["severity_curve"]
    assert [r["severity"] for r in curve["rows"]] == [1, 5] and curve["perturbation"] == "keyboard"
    for ln, r in zip(out[2:4], curve["rows"]):
        assert float(ln.split()[2]) == pytest.approx(r["shifted"]["R@1"], abs=6e-4)
        assert float(ln.split()[3]) == pytest.approx(r["adapted"]["R@1"], abs=6e-4)


@pytest.mark.parametrize("extra, message", [
    (["--severities", "0,3"], "--severities must be integers 1..5"),
    (["--severities", "a"], "--severities must be integers 1..5"),
    (["--severities", "1,2", "--query", "0"], "leave out --severities"),
    (["--query", "-1"], "--query must be at least 0"),
    (["--heatmap", "0"], "--heatmap must be at least 1"),
    (["--query", "99"], "query must be in 0..7"),
    (["--param", "na_over=all"], "na_over"),
])
def test_analysis_errors_are_one_line(extra, message, capsys):
    base = ["adapt", "--model", MODEL, "--n", "8", "--perturb", "keyboard", "--method", "hat-vtr", "--param",
            "steps=1"]
    assert main(base + extra) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("robustlab:")]
    assert len(lines) == 1 and message in lines[0], err
    assert "Traceback" not in err
