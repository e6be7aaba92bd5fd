"""The sweep runner: the grid, one Result per cell, resume after a kill, decode once, cancel, the CLI's one-line
errors."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from robustlab.bench import (Cell, DecodedOnce, SweepCancelled, SweepError, SweepSpec, condition_grid,
                                    parse_perturbations, parse_severities, pending, run_sweep)
from robustlab.perturb.condition import Condition

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "robustlab.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def _stable(path: Path) -> dict:
    d = json.loads(path.read_text())
    d["extra"].pop("seconds", None)
    return d


def _cells(out: Path) -> dict:
    return {p.name: _stable(p) for p in sorted((out / "cells").glob("*.json"))}


# ------------------------------------------------------------------------------------------------- the grid
def test_severities_and_perturbation_sets():
    assert parse_severities("1-5") == [1, 2, 3, 4, 5]
    assert parse_severities("1,3,5") == [1, 3, 5]
    assert parse_severities("2-3,5") == [2, 3, 5]
    for bad in ("0-2", "6", "3-1", "a", ""):
        with pytest.raises(SweepError):
            parse_severities(bad)
    noise = parse_perturbations("category:noise", "image")
    assert "gaussian_noise" in noise and all(n for n in noise)
    assert parse_perturbations("jumble,gaussian_noise", "video") == ["jumble", "gaussian_noise"]
    assert "jumble" in parse_perturbations("all", "video") and "jumble" not in parse_perturbations("all", "image")
    with pytest.raises(SweepError, match="did you mean 'gaussian_noise'"):
        parse_perturbations("gausian_noise", "image")
    with pytest.raises(SweepError, match="not one of images"):
        parse_perturbations("jumble", "image")
    with pytest.raises(SweepError, match="no text perturbation has category 'nope'"):
        parse_perturbations("category:nope", "text")


def test_condition_grid_is_clean_singles_then_pairs_at_severity_3():
    g = condition_grid(["gaussian_noise", "jumble"], [1, 3], ["keyboard"], [1, 3], seed=7)
    assert g[0] == {}
    singles = [c for c in g if len(c) == 1]
    assert len(singles) == 2 * 2 + 1 * 2
    pairs = [c for c in g if len(c) == 2]
    assert pairs == [{"visual": Condition("gaussian_noise", 3, 7), "text": Condition("keyboard", 3, 7)},
                     {"visual": Condition("jumble", 3, 7), "text": Condition("keyboard", 3, 7)}]
    assert len([c for c in condition_grid(["a"], [1, 2], ["b"], [1, 2], combine="all") if len(c) == 2]) == 4
    assert not [c for c in condition_grid(["a"], [1], ["b"], [1], combine="none") if len(c) == 2]


def test_cell_keys_are_unique_and_file_safe():
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "n": 4},
                     conditions=condition_grid(["gaussian_noise", "shot_noise"], [1, 2], ["keyboard"], [2]))
    keys = [c.key for c in spec.cells()]
    assert len(set(keys)) == len(keys)
    assert all("/" not in k and ":" not in k for k in keys)
    assert Cell("m", "retrieval", {}).key != Cell("m2", "retrieval", {}).key


# ------------------------------------------------------------------------------------------------ running
def _video_spec(**kw):
    return SweepSpec(models=["builtin:tiny-clip-video-meanp"], dataset={"name": "builtin-videos", "split": "test",
                                                                         "n": 10},
                     conditions=condition_grid(["gaussian_noise", "jumble"], [2], ["keyboard"], [3]), **kw)


def test_sweep_writes_one_result_per_cell_decodes_once_and_encodes_once(tmp_path, monkeypatch):
    import robustlab.bench.runner as sw  # where run_sweep looks DecodedOnce up

    seen = {}
    real = sw.DecodedOnce

    class Spy(real):
        def __init__(self, ds):
            super().__init__(ds)
            seen["ds"] = self
    monkeypatch.setattr(sw, "DecodedOnce", Spy)
    from robustlab.engine.cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path / "cache")
    encoded = []
    from robustlab.models import load_model

    orig = load_model

    def counting_load(spec, device=None, **kw):
        m = orig(spec, device=device, **kw)
        enc = m.encode_videos

        def encode_videos(videos, *a, **k):
            encoded.append(len(videos))
            return enc(videos, *a, **k)
        m.encode_videos = encode_videos
        return m
    monkeypatch.setattr("robustlab.models.load_model", counting_load)
    spec = _video_spec()
    st = run_sweep(spec, tmp_path / "run", cache=cache)
    assert st.done == st.total == 1 + 2 + 1 + 2 and st.skipped == 0
    assert seen["ds"].decodes == 1  # every cell read the same decoded clips
    files = sorted((tmp_path / "run" / "cells").glob("*.json"))
    assert len(files) == st.total
    r = json.loads(files[0].read_text())
    assert {"model", "model_fingerprint", "dataset", "task", "conditions", "metrics", "n", "extra"} <= set(r)
    # the clean clips and each perturbed set are encoded once (order metrics add the reversed clips once per
    # visual condition): clean, 2 visual perturbations -> 3 sets of 10 clips + 3 reversed sets
    assert sum(encoded) == 10 * 3 * 2
    worst = [w for p in files for w in json.loads(p.read_text())["extra"].get("worst", [])]
    assert worst and all(w["perturbed_rank"] > w["clean_rank"] for w in worst)
    for w in worst:
        assert (tmp_path / "run" / w["clean_thumb"]).is_file() and (tmp_path / "run" / w["thumb"]).is_file()
    sweep = json.loads((tmp_path / "run" / "sweep.json").read_text())
    assert sweep["dataset"]["name"] == "builtin-videos" and len(sweep["conditions"]) == len(spec.conditions)
    # a rerun does nothing
    st2 = run_sweep(spec, tmp_path / "run", cache=cache)
    assert st2.done == 0 and st2.skipped == st.total


def test_extending_a_sweep_and_refusing_another_dataset(tmp_path):
    base = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 8},
                     conditions=condition_grid(["gaussian_noise"], [1]))
    run_sweep(base, tmp_path / "r")
    more = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 8},
                     conditions=condition_grid(["gaussian_noise", "contrast"], [1]))
    st = run_sweep(more, tmp_path / "r")
    assert st.skipped == 2 and st.done == 1
    assert len(json.loads((tmp_path / "r" / "sweep.json").read_text())["conditions"]) == 3
    other = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 9})
    with pytest.raises(SweepError, match="another dataset"):
        run_sweep(other, tmp_path / "r")


def test_cancel_keeps_finished_cells_and_resume_completes(tmp_path):
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 8},
                     conditions=condition_grid(["gaussian_noise", "contrast", "shot_noise"], [1, 2]))
    ev = threading.Event()

    def progress(st):
        if st["done"] >= 2:
            ev.set()
    st = run_sweep(spec, tmp_path / "r", progress=progress, cancel=ev)
    assert st.cancelled and 2 <= st.done < st.total
    assert len(pending(spec, tmp_path / "r")) == st.total - st.done
    st2 = run_sweep(spec, tmp_path / "r")
    assert not st2.cancelled and st2.skipped == st.done and st2.done == st.total - st.done
    ref = tmp_path / "ref"
    run_sweep(spec, ref)
    assert _cells(tmp_path / "r") == _cells(ref)


def test_run_group_raises_cancelled_inside_a_cell(tmp_path):
    from robustlab.datasets import build
    from robustlab.bench import run_group
    from robustlab.models import load_model

    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "n": 6},
                     conditions=[{"visual": Condition("gaussian_noise", 2)}])
    ev = threading.Event()
    got, calls = [], []

    def progress(done, total):  # the first item of the only cell: cancel
        calls.append(done)
        ev.set()
    with pytest.raises(SweepCancelled):
        for o in run_group(spec, load_model("builtin:tiny-clip"), "retrieval", spec.cells(),
                           DecodedOnce(build("builtin", split="test", n=6)), cancel=ev, progress=progress):
            got.append(o)
    assert calls == [1] and got == []  # stopped at the next item, nothing half-done came out


# --------------------------------------------------------------------------- a killed process resumes exactly
@pytest.mark.slow
def test_a_killed_sweep_resumes_to_the_same_results(tmp_path):
    args = ["bench", "--models", "builtin:tiny-clip-video-meanp", "--dataset", "builtin-videos", "--n", "16",
            "--perturbations", "gaussian_noise,jumble,freeze,rotate", "--severities", "1,3", "--quiet"]
    killed = tmp_path / "killed"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "robustlab.cli", *args, "--out", str(killed)], env=env, cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and len(list((killed / "cells").glob("*.json"))) < 2 and p.poll() is None:
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    first = len(list((killed / "cells").glob("*.json")))
    assert 2 <= first < 9, "the sweep should have been killed part-way"
    r = _cli(*args, "--out", str(killed))
    assert r.returncode == 0, r.stderr
    assert f"{9 - first} cells run, {first} already there, 9 in the sweep" in r.stderr
    ref = tmp_path / "ref"
    assert _cli(*args, "--out", str(ref)).returncode == 0
    assert _cells(killed) == _cells(ref)
    def thumbs(out):
        return {str(p.relative_to(out)): p.read_bytes() for p in (out / "thumbs").rglob("*.jpg")}
    assert thumbs(killed) and thumbs(killed) == thumbs(ref)


# --------------------------------------------------------------------------------------------- CLI errors
@pytest.mark.parametrize("extra, message", [
    (["--models", "builtin:nope"], "no built-in model 'nope'"),
    (["--models", "builtin:tiny-clip", "--dataset", "nope"], "unknown dataset"),
    (["--models", "builtin:tiny-clip", "--perturbations", "gausian_noise"], "did you mean 'gaussian_noise'"),
    (["--models", "builtin:tiny-clip", "--severities", "0-7"], "severities must be in 1..5"),
    (["--models", "builtin:tiny-clip", "--perturbations", "jumble"], "not one of images"),
    (["--models", "builtin:tiny-clip", "--tasks", "nope"], "nope"),
    (["--models", "builtin:tiny-vilt", "--perturbations", "contrast"], "cannot encode images and texts into one space"),
])
@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_cli_errors_are_one_line(tmp_path, extra, message):
    r = _cli("bench", "--dataset", "builtin", "--n", "4", "--out", str(tmp_path / "o"), "--quiet",
             *extra)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("robustlab:")]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_frame_cache_decodes_each_sampled_frame_once_and_keeps_no_whole_clip():
    """A sweep's frame cache: frames a model samples are decoded once and served from memory afterwards; a whole-clip
    read (codecs) is decoded but not kept (it would push the sampled frames out); LRU eviction past the limit."""
    import numpy as np

    from robustlab.bench import CachedSource, FrameCache

    class Counting:
        n_frames = 300

        def __init__(self):
            self.reads = []

        def read(self, idx):
            self.reads.append(list(idx))
            return np.stack([np.full((4, 4, 3), t % 256, np.uint8) for t in idx])

    src, cache = Counting(), FrameCache(max_bytes=10 * 48)
    cs = CachedSource(src, cache, item=0)
    a = cs.read([3, 1, 3])
    assert [int(f[0, 0, 0]) for f in a] == [3, 1, 3] and src.reads == [[1, 3]]
    cs.read([1, 3, 5])
    assert src.reads[-1] == [5] and cache.decoded == 3
    whole = cs.read(range(300))
    assert whole.shape == (300, 4, 4, 3) and len(cache._d) == 3 and cache.evicted == 0
    assert [int(f[0, 0, 0]) for f in whole[:6]] == [0, 1, 2, 3, 4, 5]
    for t in range(20, 30):  # 10 more frames into a cache of 10: the oldest go
        cs.read([t])
    assert len(cache._d) == 10 and cache.evicted == 3 and cache.peak == 10 * 48


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_clavi_and_peeling_are_sweep_tasks_with_interventions(tmp_path):
    """Issue 13: CLAVI and PEELING run in sweeps like any task (an embedding cache is retrieval's only; the sweep
    used to hand it to every task, and PEELING refused it as an unknown option)."""
    from robustlab.bench.report import load_run, results_table
    from robustlab.models.interventions import as_condition

    for ds, task, metric in (("builtin-refs", "peeling", "acc_adv"), ("builtin-videos", "clavi", "acc")):
        spec = SweepSpec(models=["builtin:tiny-vilt"], dataset={"name": ds, "split": "test", "n": 12},
                         tasks=[task], conditions=[{}, {"intervention": as_condition("quag:crossmodal")}])
        st = run_sweep(spec, tmp_path / task)
        assert st.done == 2, st
        rows = results_table(load_run(tmp_path / task)).to_dict("records")
        assert {r["intervention"] for r in rows} == {"none", "quag:crossmodal"}
        assert all(r["task"] == task and r["metric"] == metric and 0 <= float(r["score"]) <= 1 for r in rows), rows
