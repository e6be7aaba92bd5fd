import numpy as np
import pytest

from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.datasets.uploads import Gallery
from robustlab.engine import EmbeddingCache
from robustlab.tasks.retrieval import Condition, RetrievalBench


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
    with pytest.raises(ValueError, match="no image in the gallery has a caption"):
        RetrievalBench(tiny_clip, Gallery(g.images[:2], [None, None], g.names[:2], "upload"))
