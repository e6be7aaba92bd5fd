"""The Ray engine gives the same files as the local engine, resumes the same way, and says in one line when Ray is
missing."""
import builtins
import json
from pathlib import Path

import pytest

from robustlab.bench import SweepError, SweepSpec, condition_grid, run_sweep

pytestmark = pytest.mark.slow


def _cells(out: Path) -> dict:
    res = {}
    for p in sorted((out / "cells").glob("*.json")):
        d = json.loads(p.read_text())
        d["extra"].pop("seconds", None)
        res[p.name] = d
    return res


def _thumbs(out: Path) -> dict:
    return {str(p.relative_to(out)): p.read_bytes() for p in (out / "thumbs").rglob("*.jpg")}


SPEC = dict(models=["builtin:tiny-clip-video-meanp", "builtin:tiny-clip-video-seqtransf"],
            dataset={"name": "builtin-videos", "split": "test", "n": 12},
            conditions=condition_grid(["gaussian_noise", "jumble"], [2], ["keyboard"], [3]))


def test_ray_and_local_write_identical_results_and_resume(tmp_path, ray_session):
    spec = SweepSpec(**SPEC)
    local = run_sweep(spec, tmp_path / "local")
    ray_st = run_sweep(spec, tmp_path / "ray", engine="ray")
    assert local.done == ray_st.done == len(spec.cells()) == 2 * 6
    assert ray_session.is_initialized()  # a Ray the engine did not start is left running
    a, b = _cells(tmp_path / "local"), _cells(tmp_path / "ray")
    assert a and a == b
    assert _thumbs(tmp_path / "local") and _thumbs(tmp_path / "local") == _thumbs(tmp_path / "ray")
    victim = sorted((tmp_path / "ray" / "cells").glob("*jumble*.json"))[0]
    victim.unlink()
    again = run_sweep(spec, tmp_path / "ray", engine="ray")
    assert again.done == 1 and again.skipped == len(spec.cells()) - 1
    assert _cells(tmp_path / "ray") == a


def test_missing_ray_is_one_line(tmp_path, monkeypatch):
    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "n": 4})
    with pytest.raises(SweepError, match=r"^the ray engine needs Ray: pip install 'robustlab\[ray\]'$"):
        run_sweep(spec, tmp_path / "r", engine="ray")


def test_a_protocol_run_resumes_and_ray_writes_the_same_files(tmp_path, ray_session):
    """A protocol (MSRVTT-P's shot noise and keyboard variants, one pair) is a sweep: resume and Ray as any other."""
    from robustlab.bench.protocol import load_protocol

    spec = load_protocol("msrvtt-p").build_spec(
        models=["builtin:tiny-clip-video-meanp"], dataset={"name": "builtin-videos", "n": 10},
        perturbations="shot_noise/schiappa_video,jumble/offline", text_perturbations="keyboard/schiappa_textflint",
        severities="3")
    assert not [c for c in spec.conditions if set(c) == {"visual", "text"}]  # keyboard is in none of the 66 pairs
    local = run_sweep(spec, tmp_path / "local")
    assert local.done == len(spec.cells()) == 1 + 2 + 1  # clean, two video, one text (keyboard is in no pair)
    again = run_sweep(spec, tmp_path / "local")
    assert again.done == 0 and again.skipped == len(spec.cells())
    run_sweep(spec, tmp_path / "ray", engine="ray")
    a, b = _cells(tmp_path / "local"), _cells(tmp_path / "ray")
    assert a and a == b
    sweep = json.loads((tmp_path / "local" / "sweep.json").read_text())
    assert sweep["protocol"]["name"] == "msrvtt-p" and sweep["report"]["headline"] == "R@5"
    assert any(c.get("visual", {}).get("variant") == "schiappa_video" for c in sweep["conditions"])
