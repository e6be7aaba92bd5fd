"""The benchmark scripts that resume from a results file keep one checkpoint and one render size per file:
benchmarks/bench_heldout_builtins.py runs a retrained model's rows again, and bench_heldout_builtins.py and
bench_adapt.py refuse a file of another size (bench_adapt.py also one of another checkpoint) instead of mixing
its runs with the old ones or silently skipping them as done."""
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str = "bench_heldout_builtins"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_retrained_checkpoint_runs_its_rows_again(tmp_path, monkeypatch):
    b = _bench()
    fp = "1" * 16  # the loaded model's fingerprint (Fingerprinted.fingerprint: its weights' identity)
    # stored rows of "m" from other weights, of "k" from these, of "u" from weights not recorded (a file older than
    # the fingerprints, as heldout_image.json was when tiny-vit-clip got its second stage): "m" and "u" run again
    out = tmp_path / "h.json"
    old = {"meta": {"kind": "image", "n": 4, "seed": 5, "dataset": "builtin", "severities": [1],
                    "unavailable": {}, "categories": {}},
           "checkpoints": {"m": "0" * 16, "k": fp},
           "models": {"m": {"clean": {"t2i_R@1": 0.1}}, "k": {"clean": {"t2i_R@1": 0.9}},
                      "u": {"clean": {"t2i_R@1": 0.2}}}, "seconds": {"m": 1.0}}
    out.write_text(json.dumps(old))
    seen = []

    class Task:
        def evaluate(self, model, ds, conds, bench=None):
            seen.append(model.spec)
            return [SimpleNamespace(flat=lambda: {"t2i_R@1": 0.5})]

    import robustlab.datasets
    import robustlab.models
    import robustlab.tasks.registry
    import robustlab.tasks.retrieval_bench

    monkeypatch.setattr(robustlab.models, "load_model",
                        lambda spec, device="cpu": SimpleNamespace(spec=spec, fingerprint=fp))
    monkeypatch.setattr(robustlab.datasets, "build", lambda *a, **k: None)
    monkeypatch.setattr(robustlab.tasks.registry, "get", lambda name: Task())
    monkeypatch.setattr(robustlab.tasks.retrieval_bench, "RetrievalBench", lambda *a, **k: None)
    args = SimpleNamespace(kind="image", models=["m", "k", "u"], n=4, seed=5, severities=[1], perturbations=[],
                           perturb_seed=0, threads=0, out=str(out), size=None)
    monkeypatch.setattr(b, "perturbations", lambda kind: [])
    monkeypatch.setattr(b, "unavailable", lambda kind: [])
    res = b.run(args)
    assert seen == ["m", "u"]  # k's clean row is kept: same weights
    assert res["models"]["m"]["clean"]["t2i_R@1"] == 0.5 and res["models"]["k"]["clean"]["t2i_R@1"] == 0.9
    assert res["models"]["u"]["clean"]["t2i_R@1"] == 0.5
    assert res["checkpoints"] == {"m": fp, "k": fp, "u": fp}
    assert json.loads(out.read_text())["models"]["m"]["clean"]["t2i_R@1"] == 0.5


def test_the_render_size_is_part_of_the_run(tmp_path, monkeypatch):
    """--size renders the world at that size (recorded in meta and the table); a file of another size is refused."""
    b = _bench()
    built = []

    class Task:
        def evaluate(self, model, ds, conds, bench=None):
            return [SimpleNamespace(flat=lambda: {"t2v_R@1": 0.5})]

    import robustlab.datasets
    import robustlab.models
    import robustlab.tasks.registry
    import robustlab.tasks.retrieval_bench

    monkeypatch.setattr(robustlab.models, "load_model",
                        lambda spec, device="cpu": SimpleNamespace(spec=spec, fingerprint="2" * 16))
    monkeypatch.setattr(robustlab.datasets, "build", lambda *a, **k: built.append(k))
    monkeypatch.setattr(robustlab.tasks.registry, "get", lambda name: Task())
    monkeypatch.setattr(robustlab.tasks.retrieval_bench, "RetrievalBench", lambda *a, **k: None)
    monkeypatch.setattr(b, "perturbations", lambda kind: [])
    monkeypatch.setattr(b, "unavailable", lambda kind: [])
    out = tmp_path / "v.json"
    args = SimpleNamespace(kind="video", models=["builtin:m"], n=4, seed=5, severities=[1], perturbations=[],
                           perturb_seed=0, threads=0, out=str(out), size=128)
    res = b.run(args)
    assert built[-1]["size"] == 128 and res["meta"]["size"] == 128
    assert "rendered at 128 px" in b.report(res, None, None)
    with pytest.raises(SystemExit, match="another run"):
        b.run(SimpleNamespace(**{**vars(args), "size": None}))


@pytest.fixture
def stored(tmp_path, monkeypatch):
    import torch

    import robustlab

    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # the test process keeps its threads
    built = []
    monkeypatch.setattr(robustlab, "load_model", lambda spec: SimpleNamespace(fingerprint="new0" * 4))
    monkeypatch.setattr(robustlab.datasets, "build", lambda *a, **k: built.append(k) or [])
    out = tmp_path / "adapt.json"
    row = {"model": "builtin:m", "direction": "v2t", "perturbation": "mlvp_fog", "severity": 5, "method": "none",
           "hubness": {}}
    out.write_text(json.dumps({"runs": [row], "checkpoints": {"builtin:m": "old0" * 4}}))
    return out, built


def test_runs_of_another_checkpoint_are_not_mixed(stored):
    out, built = stored
    with pytest.raises(SystemExit, match="another checkpoint of builtin:m"):
        _bench("bench_adapt").main(["--models", "builtin:m", "--only", "mlvp_fog", "--out", str(out), "--threads", "1"])
    assert built == [] and json.loads(out.read_text())["checkpoints"]["builtin:m"] == "old0" * 4


def test_runs_on_videos_of_another_size_are_not_mixed(stored):
    out, built = stored
    with pytest.raises(SystemExit, match="another size"):
        _bench("bench_adapt").main(["--models", "builtin:m", "--only", "mlvp_fog", "--out", str(out), "--size", "128",
                       "--threads", "1"])
    assert built == []
