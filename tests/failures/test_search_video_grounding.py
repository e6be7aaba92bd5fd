"""The search on video retrieval and grounding (issue 47, item 6), on a Dataset object, and cancelled: each found
change does break its example (checked by hand, outside the search), the results are ranked as documented, and the
exported suites regenerate bit for bit and re-score to the same rank / IoU."""
import threading

import numpy as np
import pytest

import robustlab.failures as F
from robustlab.cli import main
from robustlab.datasets import build
from robustlab.export.manifest import regenerate_export
from robustlab.metrics.retrieval import ranks as rank_of
from robustlab.models import load_model
from robustlab.perturb import perturb
from robustlab.tasks.grounding import ground_many
from robustlab.tasks.retrieval_bench import RetrievalBench

VIDEO_MODEL, N_VIDEOS = "builtin:tiny-clip-video-seqtransf", 8
GROUND_MODEL, N_REFS = "builtin:tiny-vilt", 8


@pytest.fixture(scope="module")
def video():
    return F.search(VIDEO_MODEL, "builtin-videos", n=N_VIDEOS, visual="jumble,gaussian_noise", text="none",
                    budget=200)


@pytest.fixture(scope="module")
def grounding():
    return F.search(GROUND_MODEL, "builtin-refs", task="grounding", n=N_REFS, visual="fog,gaussian_noise",
                    text="word_deletion", pair_max=1, budget=300)


def test_video_retrieval_breaks_and_the_change_does_break_it(video):
    assert video.task == "retrieval" and video.direction == "t2v" and video.visual == ["jumble", "gaussian_noise"]
    broken = video.broken()
    assert broken and video.evaluations <= video.budget
    model = load_model(VIDEO_MODEL, device="cpu")
    ds = build("builtin-videos", n=N_VIDEOS)
    bench = RetrievalBench(model, ds)
    V, T = bench.visuals()[2].copy(), bench.texts()[2]
    for r in broken:
        (c,) = r["change"]  # no text part: single visual changes only
        assert c["axis"] == "visual" and c["seed"] == r["item"]
        out = perturb(ds.visual(r["item"]), c["perturbation"], c["severity"], seed=r["item"]).output
        row = T[r["query"]] @ V.T
        assert int(rank_of(row[None, :], [bench.text_pos[r["query"]]])[0]) == r["clean_rank"] == 1
        row[r["item"]] = T[r["query"]] @ np.asarray(model.encode_videos([out]), np.float32)[0]
        assert int(rank_of(row[None, :], [bench.text_pos[r["query"]]])[0]) == r["rank"] > 1
        assert r["thief"] == int(np.argmax(row)) and r["thief_id"] == ds.item(r["thief"]).id
    keys = [(tuple(r["weakness"]), -r["rank"], r["item"]) for r in broken]
    assert keys == sorted(keys)


def test_a_video_suite_regenerates_bit_for_bit_and_rescores(video, tmp_path, capsys):
    out = F.export_suite(video, tmp_path / "vsuite", top=3)
    results = regenerate_export(out)
    assert len(results) == 3 and all(r.ok for r in results), [r.line() for r in results]
    assert main(["regenerate", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "3/3 example(s) regenerated bit for bit" in text
    assert "3/3 suite example(s) re-scored: the same rank, still broken" in text


def test_video_to_text(tmp_path):
    res = F.search(VIDEO_MODEL, "builtin-videos", n=6, direction="v2t", visual="gaussian_noise", text="none",
                   budget=50)
    assert res.direction == "v2t" and res.broken()
    r = res.broken()[0]
    ds = build("builtin-videos", n=6)
    assert r["thief_id"] == ds.item(r["thief"]).id and r["thief"] != r["item"]
    rows = F.rescore_suite(F.export_suite(res, tmp_path / "v2t", top=1))
    assert [(x["same"], x["breaks"]) for x in rows] == [(True, True)]


def test_grounding_breaks_and_the_change_does_break_it(grounding):
    assert grounding.task == "grounding" and grounding.k is None and grounding.direction is None
    broken = grounding.broken()
    assert broken and grounding.evaluations <= grounding.budget
    model = load_model(GROUND_MODEL, device="cpu")
    ds = build("builtin-refs", n=N_REFS)
    for r in broken:
        ref = ds.item(r["item"]).refs[r["ref"]]
        image, expr = ds.visual(r["item"]), ref.expression
        assert round(float(ground_many(model, [image], [expr])[0].iou(ref.box)), 6) == r["clean_iou"] > 0.5
        for c in r["change"]:
            assert c["seed"] == r["item"]  # the sweep's seed: image and expression of item i get seed i
            if c["axis"] == "visual":
                image = perturb(image, c["perturbation"], c["severity"], seed=c["seed"]).output
            else:
                expr = perturb(expr, c["perturbation"], c["severity"], seed=c["seed"]).output or "?"
        assert round(float(ground_many(model, [image], [expr])[0].iou(ref.box)), 6) == r["iou"] <= 0.5
    keys = [(tuple(r["weakness"]), r["iou"], r["item"]) for r in broken]
    assert keys == sorted(keys)
    assert {r["status"] for r in grounding.results} <= {"broken", "holds", "exhausted", "fails clean"}


def test_a_grounding_suite_regenerates_bit_for_bit_and_rescores(grounding, tmp_path, capsys):
    out = F.export_suite(grounding, tmp_path / "gsuite")
    n = len(grounding.broken())
    assert main(["regenerate", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert f"{n}/{n} example(s) regenerated bit for bit" in text
    assert f"{n}/{n} suite example(s) re-scored: the same IoU, still broken" in text


def test_a_dataset_object_searches_as_its_name_does(tmp_path):
    ds = build("builtin", n=10)
    by_object = F.search("builtin:tiny-clip", ds, visual="gaussian_noise,fog", text="none", budget=100)
    by_name = F.search("builtin:tiny-clip", "builtin", n=10, visual="gaussian_noise,fog", text="none", budget=100)
    assert by_object.results == by_name.results and by_object.dataset["object"] is True
    out = F.export_suite(by_object, tmp_path / "suite", top=2)
    assert all(r.ok for r in regenerate_export(out))
    with pytest.raises(F.FailureError, match="searched on a Dataset object"):
        F.rescore_suite(out)
    assert all(r["same"] and r["breaks"] for r in F.rescore_suite(out, dataset=ds))
    with pytest.raises(F.FailureError, match="a Dataset object is searched as it is"):
        F.search("builtin:tiny-clip", ds, n=5)


def test_a_cancelled_search_returns_what_it_found():
    cancel = threading.Event()
    seen = []

    def progress(p):
        seen.append(p)
        cancel.set()  # after the first candidate round
    res = F.search("builtin:tiny-clip", "builtin", n=10, visual="contrast,fog", text="none", budget=1000,
                   progress=progress, cancel=cancel)
    assert res.cancelled and not res.exhausted and len(seen) == 1 and res.candidates_tried == 1
    # the first round only: at most one evaluation per example
    assert res.evaluations == sum(r["evaluations"] for r in res.results) <= 10
    status = {r["status"] for r in res.results}
    assert "cancelled" in status and status <= {"broken", "cancelled", "fails clean"}
    assert res.to_json()["cancelled"] is True


def test_the_cli_searches_videos_and_grounding(tmp_path, capsys):
    import json

    assert main(["search", "--task", "grounding", "--model", GROUND_MODEL, "--n", "4", "--visual", "fog",
                 "--text", "none", "--budget", "40", "--quiet", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["task"] == "grounding" and d["metric"] == "iou" and d["threshold"] == 0.5 and d["direction"] is None
    assert d["dataset"]["name"] == "builtin-refs" and d["evaluations"] <= 40
    assert main(["search", "--model", VIDEO_MODEL, "--dataset", "builtin-videos", "--n", "6", "--direction", "v2t",
                 "--visual", "gaussian_noise", "--text", "none", "--budget", "30", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "examples broken" in err and " -> rank 1 -> " in out and "(thief video-" in out
