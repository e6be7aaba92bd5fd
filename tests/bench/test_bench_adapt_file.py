"""benchmarks/bench_adapt.py keeps one checkpoint and one render size per results file: a retrained model or videos
of another size go to another file instead of being mixed with (or silently skipped as) the old runs."""
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_adapt", ROOT / "benchmarks" / "bench_adapt.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
        _bench().main(["--models", "builtin:m", "--only", "mlvp_fog", "--out", str(out), "--threads", "1"])
    assert built == [] and json.loads(out.read_text())["checkpoints"]["builtin:m"] == "old0" * 4


def test_runs_on_videos_of_another_size_are_not_mixed(stored):
    out, built = stored
    with pytest.raises(SystemExit, match="another size"):
        _bench().main(["--models", "builtin:m", "--only", "mlvp_fog", "--out", str(out), "--size", "128",
                       "--threads", "1"])
    assert built == []
