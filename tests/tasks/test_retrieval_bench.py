import numpy as np
import pytest

from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.datasets.uploads import Gallery
from robustlab.engine import EmbeddingCache
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import RetrievalBench


@pytest.fixture(scope="module")
def bench(tiny_clip, tmp_path_factory):
    g = builtin_gallery(60, cache_dir=tmp_path_factory.mktemp("gal"))
    return RetrievalBench(tiny_clip, g, cache=EmbeddingCache(tmp_path_factory.mktemp("emb")))


def test_clean_compare_ranks_the_ground_truth(bench):
    c = bench.compare(Condition(), Condition(), query_index=3, k=5)
    assert c.gt_index == 3 and c.clean.gt_rank == c.perturbed.gt_rank
    assert c.query == c.perturbed_query and c.query_record is None
    assert len(c.clean.indices) == 5 and c.clean.scores == sorted(c.clean.scores, reverse=True)
    assert c.metrics["clean"] == c.metrics["both perturbed"]
    assert set(c.metrics) == {"clean", "image perturbed", "text perturbed", "both perturbed"}


def test_perturbed_compare_records_and_metrics(bench):
    ic, tc = Condition("gaussian_noise", 5, 0), Condition("keyboard", 5, 0)
    c = bench.compare(ic, tc, query_index=3, k=60)
    assert c.query_record["name"] == "keyboard" and c.perturbed_query != c.query
    imgs, recs, _ = bench.images(ic)
    assert recs[3]["seed"] == 3 and recs[3]["severity"] == 5
    assert not np.array_equal(imgs[3], bench.gallery.images[3])
    # every item is in the full ranked list, the ground truth at its reported rank
    assert c.perturbed.indices[c.perturbed.gt_rank - 1] == 3
    assert c.metrics["both perturbed"]["t2i"]["R@1"] <= c.metrics["clean"]["t2i"]["R@1"]
    # perturbed galleries are memoised: the same objects come back
    assert bench.images(ic)[0] is imgs


def test_typed_query_with_and_without_ground_truth(bench):
    c = bench.compare(Condition(), Condition("char_swap", 3), query_text="  a large red circle  ", k=3)
    assert c.query == "a large red circle" and c.clean.gt_rank is None and c.rank_change is None
    c2 = bench.compare(Condition(), Condition(), query_text=bench.gallery.captions[7], gt_index=7, k=3)
    assert c2.clean.gt_rank >= 1
    from robustlab.io.files import InputError

    with pytest.raises(InputError, match="empty"):
        bench.compare(Condition(), Condition(), query_text="   ")
    with pytest.raises(ValueError):
        bench.compare(Condition(), Condition(), query_index=999)


def test_uncaptioned_images_are_distractors(tiny_clip, bench):
    g = bench.gallery
    caps = list(g.captions)
    caps[0] = None
    b = RetrievalBench(tiny_clip, Gallery(g.images, caps, g.names, "upload"))
    assert 0 not in b.captioned
    m = b.metrics(Condition(), Condition())
    assert 0 < m["t2i"]["R@1"] <= 1
    with pytest.raises(ValueError, match="no caption"):
        b.compare(Condition(), Condition(), query_index=0)
    with pytest.raises(ValueError, match="no image in the dataset has a caption"):
        RetrievalBench(tiny_clip, Gallery(g.images[:2], [None, None], g.names[:2], "upload"))


# ---- one bench for images and videos, several captions per item, the task's Results ----------------------
@pytest.fixture(scope="module")
def video_model():
    from robustlab.models import load_model

    return load_model("builtin:tiny-clip-video-meanp", device="cpu")


def test_one_bench_for_videos_both_directions(video_model, tmp_path_factory):
    from robustlab.datasets import build

    ds = build("builtin-videos", n=24)
    b = RetrievalBench(video_model, ds, cache=EmbeddingCache(tmp_path_factory.mktemp("vemb")))
    assert b.kind == "video" and b.directions == ("t2v", "v2t")
    vc, tc = Condition("jumble", 3, 5), Condition("keyboard", 2, 5)
    c = b.compare(vc, tc, query_index=4, direction="t2v", k=24)
    # caption positives: every video with exactly the same caption is ground truth
    same = [i for i in range(len(ds)) if ds.captions[i] == ds.captions[4]]
    assert c.gt == same and c.perturbed.indices[c.perturbed.gt_rank - 1] in same
    assert set(c.metrics) == {"clean", "video perturbed", "text perturbed", "both perturbed"}
    vids, recs, _ = b.videos(vc)
    assert recs[4]["seed"] == 5 + 4 and recs[4]["name"] == "jumble"
    v = b.compare(vc, tc, query_index=4, direction="v2t", k=5)
    assert v.query == 4 and v.query_record == recs[4] and v.gt == same  # captions of item i are text i here
    with pytest.raises(ValueError, match="t2v or v2t"):
        b.compare(direction="t2i", query_index=0)
    with pytest.raises(ValueError, match="needs a dataset video"):
        b.compare(direction="v2t")
    # a typed query's positives are the videos with exactly that caption
    typed = b.compare(query_text=ds.captions[4], k=3)
    assert typed.gt == same
    # an image model cannot search videos... unless it encodes them; a video-less model is refused in one line
    class TextOnly:
        model_id = "text-only"

        def encode_texts(self, t):
            return np.zeros((len(t), 4), np.float32)
    with pytest.raises(ValueError, match="cannot encode videos and texts"):
        RetrievalBench(TextOnly(), ds)


def test_several_captions_per_image_and_i2t(tiny_clip, bench):
    from robustlab.datasets.base import InMemoryDataset
    from robustlab.tasks import get

    g = bench.gallery
    imgs = g.images[:12]
    caps = [[g.captions[i], g.captions[i].upper()] if i % 2 == 0 else g.captions[i] for i in range(12)]
    ds = InMemoryDataset(imgs, caps, name="multi")
    b = RetrievalBench(tiny_clip, ds)
    assert len(b.texts()[0]) == 18 and b.caption_of[2] == 3  # item 2's first caption follows item 0's two and item 1's
    m = b.score_matrix("i2t")
    assert m.scores.shape == (12, 18) and m.positives[0] == [0, 1] and m.gt[0] == 0
    c = b.compare(query_index=0, direction="i2t", k=18)
    assert c.gt == [0, 1] and {c.perturbed.indices[c.perturbed.gt_rank - 1]} <= {0, 1}
    r = get("retrieval").evaluate(tiny_clip, ds, [None, {"visual": "gaussian_noise:2"}])
    assert [x.conditions["visual"].get("name") for x in r] == [None, "gaussian_noise"]
    assert r[0].metrics["t2i"] == b.metrics()["t2i"] and r[0].extra["texts"] == 18


def test_task_results_are_plain_json_and_refuse_bad_input(tiny_clip, tmp_path):
    import json

    from robustlab.datasets import build
    from robustlab.tasks import Result, get, grid

    ds = build("builtin", n=20)
    conds = grid(visual=[None, "gaussian_noise:3"], text=[None, "keyboard:2"])
    assert len(conds) == 4 and conds[0] == {} and set(conds[3]) == {"visual", "text"}
    rs = get("retrieval").evaluate(tiny_clip, ds, conds)
    assert len(rs) == 4 and all(r.n == 20 and r.dataset == "builtin" and r.split == "test" for r in rs)
    r = rs[3]
    d = json.loads(json.dumps(r.to_json()))
    assert set(d) >= {"model", "model_fingerprint", "dataset", "split", "task", "conditions", "n", "metrics",
                      "versions"}
    assert d["conditions"]["text"] == {"name": "keyboard", "severity": 2, "seed": 0}
    p = r.save(tmp_path / "r.json")
    assert Result.load(p) == Result.from_json(d) and Result.load(p).metrics == r.metrics
    assert rs[0].metrics["t2i"]["R@1"] >= rs[1].metrics["t2i"]["R@1"]
    with pytest.raises(ValueError, match="not to texts|text perturbation"):
        get("retrieval").evaluate(tiny_clip, ds, {"text": "gaussian_noise:3"})
    with pytest.raises(ValueError, match="unknown condition axis"):
        get("retrieval").evaluate(tiny_clip, ds, {"audio": "gaussian_noise:3"})
    with pytest.raises(ValueError, match="cannot do grounding"):
        get("grounding").evaluate(tiny_clip, ds)
    with pytest.raises(ValueError, match="unknown task"):
        get("captioning")
    vids = build("builtin-videos", n=4)

    class Grounder:
        model_id = "grounder"

        def ground(self, image, expression):
            raise AssertionError("never called: the dataset is refused first")
    with pytest.raises(ValueError, match="runs on images"):
        get("grounding").evaluate(Grounder(), vids)
