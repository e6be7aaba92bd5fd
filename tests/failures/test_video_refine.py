"""``--refine`` on videos (issue 47, item 1): a video example is bisected to its breaking parameter value like an
image one; at ``params`` it fails and at ``params_pass`` it holds (checked by hand: the whole gallery perturbed at
those parameters, each video with its own seed, encoded by the model), and the record regenerates bit for bit."""
import numpy as np
import pytest

import robustlab.failures as F
from robustlab.datasets import build
from robustlab.metrics.retrieval import ranks as rank_of
from robustlab.models import load_model
from robustlab.perturb import perturb, regenerate
from robustlab.perturb.record import hash_value
from robustlab.tasks.retrieval_bench import RetrievalBench

MODEL, N = "builtin:tiny-clip-video-seqtransf", 8


@pytest.fixture(scope="module")
def refined():
    return F.failures(MODEL, "builtin-videos", n=N, perturbations="static_rotate", slices=False, refine=True)


def _rank(it: dict, params: dict) -> int:
    """The t2v rank of the example's caption with every video rotated at ``params`` (video j: seed j)."""
    model, ds = load_model(MODEL, device="cpu"), build("builtin-videos", n=N)
    bench = RetrievalBench(model, ds)
    videos = [perturb(ds.visual(j), it["perturbation"], it["breaks_at"], seed=j, params=params).output
              for j in range(N)]
    row = bench.texts()[2][it["caption"]] @ np.asarray(model.encode_videos(videos), np.float32).T
    return int(rank_of(row[None, :], [bench.text_pos[it["caption"]]])[0])


def test_a_video_example_is_refined(refined):
    assert refined.direction == "t2v" and refined.refine_steps == 6
    done = [it for it in refined.items if (it.get("refined") or {}).get("refinable")]
    assert done, [it.get("refined") for it in refined.items]
    for it in refined.items:
        r = it.get("refined")
        if it["breaks_at"] in (None, 0):
            assert r is None
        elif it["breaks_at"] == 1:
            assert r["refinable"] is False and "lowest swept severity" in r["why"]
    it = next(i for i in done if i["refined"]["t"] < 1)
    r = it["refined"]
    assert r["changed"] == ["angle"] and r["from_severity"] < r["to_severity"] == it["breaks_at"]
    assert r["t"] - r["t_pass"] == 2 ** -6
    assert _rank(it, r["params"]) == r["value"] > 1  # fails at the breaking parameters
    assert _rank(it, r["params_pass"]) == 1  # holds just below them


def test_the_refined_video_record_regenerates_bit_for_bit(refined):
    it = next(i for i in refined.items if (i.get("refined") or {}).get("refinable"))
    rec = it["refined"]["record"]
    assert rec["params_override"] is True and rec["params"] == it["refined"]["params"]
    clean = build("builtin-videos", n=N).visual(it["item"])
    again = regenerate(rec, clean)
    assert hash_value(again) == rec["output_hash"]
