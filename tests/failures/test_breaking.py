"""Breaking points (issue 47, item 1): what ``robustlab.failures`` computes equals what the per-severity ranks (IoUs)
give by hand, the thief is the item ranked first, the map is a sweep of the same cells (resumed, reused, on Ray),
and its JSON follows the documented schema. Small n and the tiny built-in models throughout."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import robustlab.failures as F
from robustlab.datasets import build
from robustlab.engine.cache import EmbeddingCache
from robustlab.failures.breaking import _breaks
from robustlab.models import load_model
from robustlab.perturb import perturb
from robustlab.perturb.condition import Condition
from robustlab.tasks.registry import get as get_task
from robustlab.tasks.retrieval_bench import RetrievalBench

ROOT = Path(__file__).resolve().parents[2]
N = 12
SEVS = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def image_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("failures") / "run"
    fmap = F.failures("builtin:tiny-clip", "builtin", n=N, perturbations="gaussian_noise,keyboard", out=out,
                      slices=False)  # the slices: tests/failures/test_failure_slices.py
    return fmap, out


@pytest.fixture(scope="module")
def by_hand():
    """Per severity (0 = clean), the t2i ranks and the first-ranked item of every caption query, straight from a
    retrieval bench of the same model and dataset."""
    model = load_model("builtin:tiny-clip", device="cpu")
    ds = build("builtin", n=N)
    bench = RetrievalBench(model, ds, cache=EmbeddingCache(enabled=False))
    out = {}
    for axis, name in (("visual", "gaussian_noise"), ("text", "keyboard")):
        for s in [0] + SEVS:
            c = Condition(name, s, 0) if s else Condition()
            vc, tc = (c, Condition()) if axis == "visual" else (Condition(), c)
            sm = bench.score_matrix("t2i", vc, tc)
            out[name, s] = (bench.ranks(vc, tc)["t2i"], np.argmax(sm.scores, axis=1))
    return out


def _hand_breaks(ranks: dict, k: int):
    sev = sorted(ranks)
    bad = [s for s in sev if ranks[s] > k]
    return bad[0] if bad else None


def test_breaking_points_equal_the_hand_computation(image_run, by_hand):
    fmap, _ = image_run
    assert fmap.examples == N and len(fmap.items) == 2 * N and fmap.slices == []
    for it in fmap.items:
        q, name = it["caption"], it["perturbation"]
        ranks = {s: int(by_hand[name, s][0][q]) for s in [0] + SEVS}
        assert it["ranks"] == {str(s): r for s, r in ranks.items()}
        assert it["breaks_at"] == _hand_breaks(ranks, 1)
        assert it["axis"] == ("visual" if name == "gaussian_noise" else "text")
        assert it["seed"] == (it["item"] if it["axis"] == "visual" else q)  # perturb seed 0 + item / caption
    assert any(it["breaks_at"] for it in fmap.items), "nothing broke: the test would show nothing"


def test_the_thief_is_the_item_ranked_first_at_the_breaking_severity(image_run, by_hand):
    fmap, _ = image_run
    broken = [it for it in fmap.items if it["breaks_at"] is not None]
    assert broken
    for it in broken:
        top = by_hand[it["perturbation"], it["breaks_at"]][1]
        assert it["thief"] == int(top[it["caption"]]) and it["thief"] != it["item"]
        n1 = int(np.sum(top == it["thief"]))  # how many queries of that cell ranked it first
        assert it["thief_k_occurrence"] == n1
        assert it["thief_is_hub"] == (n1 >= F.HUB_SIZE * len(top) / N)
    for it in fmap.items:
        if it["breaks_at"] is None:
            assert it["thief"] is None and it["thief_k_occurrence"] is None


def test_monotone_and_not_monotone_examples():
    # a rank path that breaks at 2, recovers at 3 and breaks again: the lowest failing severity, not monotone
    assert _breaks({0: 1, 1: 1, 2: 3, 3: 1, 4: 5, 5: 6}, lambda r: r > 1) == (2, False)
    assert _breaks({0: 1, 1: 1, 2: 1, 3: 2, 4: 5, 5: 9}, lambda r: r > 1) == (3, True)
    assert _breaks({0: 4, 1: 4, 2: 9}, lambda r: r > 1) == (0, True)  # fails clean already: 0
    assert _breaks({0: 1, 1: 2, 2: 2}, lambda r: r > 2) == (None, True)  # holds in the top 2 at every severity
    assert _breaks({0: 0.8, 1: 0.5, 2: 0.7}, lambda v: not v > 0.5) == (1, False)  # grounding: IoU 0.5 is no hit


def test_monotone_flags_follow_the_ranks(image_run):
    fmap, _ = image_run
    for it in fmap.items:
        if it["breaks_at"] is not None:
            after = [r for s, r in it["ranks"].items() if int(s) >= it["breaks_at"]]
            assert it["monotone"] == all(r > 1 for r in after)


def test_the_json_follows_the_schema_and_the_file_is_written(image_run):
    fmap, out = image_run
    d = fmap.to_json()
    jsonschema.validate(d, F.schema())
    assert json.loads((out / "failures.json").read_text()) == json.loads(json.dumps(d))
    assert d["schema"] == 1 and d["k"] == 1 and d["direction"] == "t2i" and d["severities"] == SEVS
    assert d["perturbations"] == [{"perturbation": "gaussian_noise", "axis": "visual"},
                                  {"perturbation": "keyboard", "axis": "text"}]
    again = F.FailureMap.load(out)
    assert again.items == fmap.items and again.summary == fmap.summary
    # the run folder is a sweep folder: sweep.json and one checksummed cell per (clean, perturbation x severity)
    assert json.loads((out / "sweep.json").read_text())["models"] == ["builtin:tiny-clip"]
    assert len(list((out / "cells").glob("*.json"))) == 1 + 2 * len(SEVS)


def test_a_second_map_reuses_every_cell_and_k_changes_only_the_reading(image_run, by_hand):
    _, out = image_run
    fmap = F.failures("builtin:tiny-clip", "builtin", n=N, perturbations="gaussian_noise", k=2, out=out)
    assert fmap.status.done == 0 and fmap.status.skipped == fmap.status.total == 1 + len(SEVS)
    for it in fmap.items:
        ranks = {s: int(by_hand["gaussian_noise", s][0][it["caption"]]) for s in [0] + SEVS}
        assert it["breaks_at"] == _hand_breaks(ranks, 2)


def test_the_regenerated_example_is_the_perturbed_input(image_run):
    fmap, _ = image_run
    it = next(i for i in fmap.items if i["breaks_at"] and i["axis"] == "visual")
    ds = build("builtin", n=N)
    a = perturb(ds.visual(it["item"]), it["perturbation"], it["breaks_at"], seed=it["seed"]).output
    b = perturb(ds.visual(it["item"]), it["perturbation"], it["breaks_at"], seed=it["seed"]).output
    assert np.array_equal(a, b) and not np.array_equal(a, ds.visual(it["item"]))


def test_the_slices_hook_fills_slices(tmp_path):
    seen = {}

    def finder(fmap, dataset, model):
        seen["n"] = len(dataset)
        seen["model"] = model.model_id
        return [{"perturbation": None, "members": [0], "description": "all", "failure_rate": 1.0, "rest_rate": 0.0,
                 "ci": [0.5, 1.0]}]
    fmap = F.failures("builtin:tiny-clip", "builtin", n=6, perturbations="gaussian_noise", severities="5",
                      out=tmp_path / "o", slices=finder)
    assert seen == {"n": 6, "model": "builtin:tiny-clip"} and fmap.slices[0]["description"] == "all"
    jsonschema.validate(fmap.to_json(), F.schema())


def test_baseline_says_which_model_breaks(tmp_path):
    fmap = F.failures("builtin:tiny-clip", "builtin", n=8, perturbations="gaussian_noise", severities="1,3",
                      baseline="builtin:tiny-vit-clip", out=tmp_path / "o")
    jsonschema.validate(fmap.to_json(), F.schema())
    assert fmap.baseline == "builtin:tiny-vit-clip"
    for it in fmap.items:
        mine, theirs = it["breaks_at"] is not None, it["baseline"]["breaks_at"] is not None
        assert it["breaks_for"] == {(1, 1): "both", (1, 0): "model", (0, 1): "baseline", (0, 0): "neither"}[
            (int(mine), int(theirs))]
    assert sum(fmap.summary[0]["breaks_for"].values()) == 8


def test_callable_package_and_bad_inputs_are_one_line(tmp_path):
    with pytest.raises(F.FailureError, match="k must be a positive integer"):
        F("builtin:tiny-clip", "builtin", n=4, perturbations="gaussian_noise", k=0, out=tmp_path / "a")
    with pytest.raises(F.FailureError, match="did you mean 'gaussian_noise'"):
        F.failures("builtin:tiny-clip", "builtin", n=4, perturbations="gausian_noise", out=tmp_path / "a")
    with pytest.raises(F.FailureError, match="larger than the gallery"):
        F.failures("builtin:tiny-clip", "builtin", n=4, perturbations="gaussian_noise", k=5, out=tmp_path / "a")
    with pytest.raises(F.FailureError, match="cannot do vqa"):
        F.failures("builtin:tiny-clip", "builtin", n=4, task="vqa", perturbations="gaussian_noise", out=tmp_path / "a")
    with pytest.raises(F.FailureError, match="refine_steps must be an integer in 1..20"):
        F.failures("builtin:tiny-clip", "builtin", n=4, perturbations="gaussian_noise", refine=True, refine_steps=0,
                   out=tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_perturbation_forms():
    got = F.resolve_perturbations("gaussian_noise,keyboard,shot_noise/schiappa_video", "image")
    assert got == [("visual", "gaussian_noise"), ("text", "keyboard"), ("visual", "shot_noise/schiappa_video")]
    noise = F.resolve_perturbations("category:noise", "image")
    assert ("visual", "gaussian_noise") in noise and all(a == "visual" for a, _ in noise)
    assert ("visual", "jumble") in F.resolve_perturbations("jumble", "video")
    with pytest.raises(F.FailureError, match="not one of images or texts"):
        F.resolve_perturbations("jumble", "image")


# ------------------------------------------------------------------------------------------ video and grounding
def test_video_retrieval_on_the_builtin_videos(tmp_path):
    fmap = F.failures("builtin:tiny-clip-video-seqtransf", "builtin-videos", n=6, perturbations="gaussian_noise",
                      severities="3,5", direction="v2t", out=tmp_path / "v")
    d = fmap.to_json()
    jsonschema.validate(d, F.schema())
    assert d["direction"] == "v2t" and fmap.examples == 6
    ds = build("builtin-videos", n=6)
    cells = {}
    for p in (tmp_path / "v" / "cells").glob("*.json"):
        cell = json.loads(p.read_text())
        cells[cell["conditions"]["visual"].get("severity") or 0] = cell  # clean: {"name": None}
    for it in fmap.items:
        q = it["item"]  # v2t: every captioned video queries the captions, in item order
        ranks = {s: cells[s]["extra"]["ranks"]["v2t"][q] for s in (0, 3, 5)}
        assert it["ranks"] == {str(s): r for s, r in ranks.items()} and it["breaks_at"] == _hand_breaks(ranks, 1)
        if it["thief"] is not None:
            cap = cells[it["breaks_at"]]["extra"]["top1"]["v2t"][q]
            assert it["thief_caption"] == cap and it["thief"] == ds.text_items()[cap]


def test_grounding_on_the_builtin_refs(tmp_path):
    fmap = F.failures("builtin:tiny-vilt", "builtin-refs", task="grounding", n=6, perturbations="gaussian_noise",
                      severities="1,5", out=tmp_path / "g")
    d = fmap.to_json()
    jsonschema.validate(d, F.schema())
    assert d["metric"] == "iou" and d["k"] is None and d["direction"] is None and d["threshold"] == 0.5
    model = load_model("builtin:tiny-vilt", device="cpu")
    ds = build("builtin-refs", n=6)
    task = get_task("grounding")
    ious = {s: task.evaluate(model, ds, {"visual": Condition("gaussian_noise", s, 0)} if s else None)[0]
            .extra["ious"] for s in (0, 1, 5)}
    assert len(fmap.items) == len(ious[0])
    for e, it in enumerate(fmap.items):
        scores = {s: ious[s][e] for s in (0, 1, 5)}
        assert it["scores"] == {str(s): v for s, v in scores.items()} and it["thief"] is None
        bad = [s for s in (0, 1, 5) if not scores[s] > 0.5]
        assert it["breaks_at"] == (bad[0] if bad else None)


def _video(path: Path, n: int = 8, size=(24, 32), shade: int = 0) -> None:
    from robustlab.io.media import write_video

    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(shade)
    write_video(rng.integers(0, 255, (n, *size, 3), dtype=np.uint8), path, fps=8.0)


def test_an_msrvtt_format_folder(tmp_path):
    root = tmp_path / "msrvtt"
    root.mkdir()
    rows = [("ret0", "msr7", "video7", "a girl puts a sweater on a dog"), ("ret1", "msr8", "video8", "a man cooks"),
            ("ret2", "msr9", "video9", "cars race on a track")]
    with open(root / "MSRVTT_JSFUSION_test.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "vid_key", "video_id", "sentence"])
        w.writerows(rows)
    (root / "MSRVTT_data.json").write_text(json.dumps({"videos": [], "sentences": []}))
    for k in (7, 8, 9):
        _video(root / "videos" / f"video{k}.mp4", shade=k)
    fmap = F.failures("builtin:tiny-clip-video-seqtransf", "msrvtt", root=root, perturbations="gaussian_noise",
                      severities="5", out=tmp_path / "m")
    jsonschema.validate(fmap.to_json(), F.schema())
    assert [it["id"] for it in fmap.items] == ["video7", "video8", "video9"] and fmap.direction == "t2v"
    with pytest.raises(F.FailureError, match="larger than the gallery"):
        F.failures("builtin:tiny-clip-video-seqtransf", "msrvtt", root=root, perturbations="jumble", k=4)


def test_a_refcoco_format_folder(tmp_path):
    from PIL import Image

    root = tmp_path / "refer"
    (root / "refcoco").mkdir(parents=True)
    instances = {"images": [{"id": 1, "file_name": "COCO_train2014_000000000001.jpg", "height": 64, "width": 96}],
                 "annotations": [{"id": 10, "image_id": 1, "bbox": [4, 8, 30, 40], "category_id": 1}],
                 "categories": [{"id": 1, "name": "person"}]}
    refs = [{"ref_id": 0, "ann_id": 10, "image_id": 1, "split": "val", "category_id": 1,
             "sentences": [{"sent": "man on the left", "sent_id": 0}, {"sent": "left guy", "sent_id": 1}]}]
    (root / "refcoco" / "instances.json").write_text(json.dumps(instances))
    (root / "refcoco" / "refs(unc).json").write_text(json.dumps(refs))
    img = root / "images" / "mscoco" / "images" / "train2014" / "COCO_train2014_000000000001.jpg"
    img.parent.mkdir(parents=True)
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 96, 3), dtype=np.uint8)).save(img)
    fmap = F.failures("builtin:tiny-vilt", "refcoco", task="grounding", root=root, split="val",
                      perturbations="gaussian_noise,word_deletion", severities="3", out=tmp_path / "r")
    jsonschema.validate(fmap.to_json(), F.schema())
    assert [(it["id"], it["ref"], it["perturbation"]) for it in fmap.items] == [
        ("1", 0, "gaussian_noise"), ("1", 1, "gaussian_noise"), ("1", 0, "word_deletion"), ("1", 1, "word_deletion")]


def test_a_folder_without_ground_truth_is_one_line_and_writes_nothing(tmp_path):
    from PIL import Image

    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(3):
        Image.fromarray(np.full((16, 16, 3), 40 * i, np.uint8)).save(folder / f"{i}.png")
    with pytest.raises(F.FailureError, match="no ground truth for retrieval"):
        F.failures("builtin:tiny-clip", "upload", root=folder, perturbations="gaussian_noise", out=tmp_path / "o")
    with pytest.raises(F.FailureError, match="nothing for grounding"):
        F.failures("builtin:tiny-vilt", "upload", task="grounding", root=folder, perturbations="gaussian_noise",
                   out=tmp_path / "o")
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------ resume and Ray
def _cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "robustlab.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.slow
def test_a_killed_failure_map_resumes_to_the_same_map(tmp_path):
    args = ["failures", "--model", "builtin:tiny-clip-video-meanp", "--dataset", "builtin-videos", "--n", "16",
            "--perturbations", "gaussian_noise,jumble", "--severities", "1,3,5", "--quiet"]
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
    assert 2 <= first < 7 and not (killed / "failures.json").exists(), "the map should have been killed part-way"
    r = _cli(*args, "--out", str(killed))
    assert r.returncode == 0, r.stderr
    assert f"{7 - first} cells run, {first} already there, 7 in the sweep" in r.stderr
    ref = tmp_path / "ref"
    assert _cli(*args, "--out", str(ref)).returncode == 0

    def stable(out):
        d = json.loads((out / "failures.json").read_text())
        d.pop("out")
        return d
    assert stable(killed) == stable(ref)


@pytest.mark.slow
def test_ray_gives_the_same_map(tmp_path, ray_session):
    kw = dict(n=8, perturbations="gaussian_noise,keyboard", severities="2,4")
    local = F.failures("builtin:tiny-clip", "builtin", out=tmp_path / "local", **kw)
    on_ray = F.failures("builtin:tiny-clip", "builtin", out=tmp_path / "ray", engine="ray", **kw)
    assert on_ray.status.engine == "ray" and on_ray.status.done == on_ray.status.total
    assert on_ray.items == local.items and on_ray.summary == local.summary


def test_queries_a_text_perturbation_dropped_are_put_back_as_none():
    from robustlab.failures.breaking import _retrieval_arrays

    cell = {"extra": {"cell": "x", "ranks": {"t2i": [1, 4, 2], "i2t": [1, 1, 1, 1, 1]},
                      "top1": {"t2i": [0, 3, 2], "i2t": [0, 1, 2, 3, 4]},
                      "dropped": {"n": 2, "of": 5, "queries": [1, 3]}}}
    assert _retrieval_arrays(cell, "t2i", 5) == ([1, None, 4, None, 2], [0, None, 3, None, 2])
    assert _retrieval_arrays(cell, "i2t", 5) == ([1, 1, 1, 1, 1], [0, 1, 2, 3, 4])  # images query every caption
    with pytest.raises(F.FailureError, match="a cell of another dataset"):
        _retrieval_arrays(cell, "t2i", 6)
    assert _breaks({0: 1, 1: None, 2: 3}, lambda r: r > 1) == (2, True)  # a dropped query is no failure
