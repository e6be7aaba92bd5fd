"""Retrieval under a gated text query shift: a query the similarity gate drops (Qiu et al.'s paper, App. 5.3: the
``qiu_gated`` variants) is left out of the text-query metrics and counted in the Result; MLVP's variants keep the
last attempt (its code; its paper does not say) and drop nothing."""
from __future__ import annotations

import numpy as np

from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.engine import EmbeddingCache
from robustlab.perturb.text import resources as R
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval import RetrievalTask
from robustlab.tasks.retrieval_bench import RetrievalBench


def _words(t: str) -> tuple:
    return tuple(w for w in t.split() if w not in set(".,!?;:"))


def _fake_encoder(fail_for: set):
    """A caption in ``fail_for`` with punctuation marks inserted has cosine 0 to it; anything else 1."""
    bags = {_words(t) for t in fail_for}

    def encode(texts):
        return np.array([[0.0, 1.0] if t not in fail_for and _words(t) in bags else [1.0, 0.0] for t in texts],
                        np.float32)
    return encode


def test_dropped_text_queries_are_left_out_and_counted(tiny_clip, tmp_path, monkeypatch):
    g = builtin_gallery(12, cache_dir=tmp_path / "gal")
    bench = RetrievalBench(tiny_clip, g, cache=EmbeddingCache(tmp_path / "emb"))
    caps = bench.caption_texts
    fail = set(caps[:3])  # insert_punctuation always inserts a mark: no attempt on these can pass
    want = [j for j, c in enumerate(caps) if c in fail]
    assert want
    monkeypatch.setattr(R, "encode_sentences", _fake_encoder(fail))
    cond = Condition("insert_punctuation", 3, 0, "qiu_gated")
    assert bench.dropped_texts(cond) == want
    assert bench.dropped_texts(Condition("insert_punctuation", 3, 0, "mlvp")) == []  # kept: the last attempt
    rk = bench.ranks(Condition(), cond)
    clean = bench.ranks(Condition(), Condition())
    assert len(rk["t2i"]) == len(caps) - len(want)  # text queries: the dropped ones left out
    assert len(rk["i2t"]) == len(clean["i2t"])  # images still query every text (dropped ones: last attempt)
    res = RetrievalTask().evaluate(tiny_clip, g, [{"text": cond}], bench=bench, keep_ranks=True, order=False)[0]
    assert res.extra["dropped"]["n"] == len(want) and res.extra["dropped"]["queries"] == want
    assert res.extra["dropped"]["of"] == len(caps) and "similarity gate" in res.extra["dropped"]["why"]
    assert len(res.extra["ranks"]["t2i"]) == len(caps) - len(want)
    # a clean run records nothing dropped
    assert "dropped" not in RetrievalTask().evaluate(tiny_clip, g, [{}], bench=bench, order=False)[0].extra
