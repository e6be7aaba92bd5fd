"""CLAVI's complement-pair attention distance (Rawal et al. App. B.7): the linear-sum-assignment alignment on
hand-computable matrices, and the analysis over built-in CLAVI pairs with tiny-vilt."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from robustlab.diagnostics.clavi import ClaviError
from robustlab.diagnostics.clavi_distance import DistanceResult, align, complement_distances, dataset_distances


def test_identity_against_the_swap_is_two():
    """I vs J = [[0, 1], [1, 0]]: every node has the signature (1, 0 | 1, 0), any correspondence leaves J (J is
    symmetric under the swap), so the distance is ‖I − J‖_F = √(1 + 1 + 1 + 1) = 2."""
    r = align(np.eye(2), [[0, 1], [1, 0]])
    assert r["distance"] == pytest.approx(2.0) and r["cost"] == pytest.approx(0.0) and r["k"] == 2


def test_a_renumbered_graph_is_found_and_has_distance_zero():
    a = np.array([[0.9, 0.1], [0.3, 0.7]])
    b = a[np.ix_([1, 0], [1, 0])]  # [[0.7, 0.3], [0.1, 0.9]]: the same graph, nodes swapped
    r = align(a, b)
    assert r["perm"] == [1, 0] and r["distance"] == pytest.approx(0.0, abs=1e-12)
    assert align(a, a)["perm"] == [0, 1]
    rng = np.random.default_rng(0)
    m = rng.dirichlet(np.ones(6), size=6)  # a row-stochastic 6 × 6 "attention"
    p = rng.permutation(6)
    r = align(m, m[np.ix_(p, p)])
    assert r["distance"] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(np.asarray(p)[r["perm"]], np.arange(6))  # node i of m is node perm[i] of b


def test_uniform_against_identity_and_unequal_sizes():
    # [[.5, .5], [.5, .5]] vs I: every cell differs by .5, √(4 · .25) = 1 whatever the correspondence
    assert align(np.full((2, 2), 0.5), np.eye(2))["distance"] == pytest.approx(1.0)
    # 2 nodes vs 1: the one node padded with an isolated dummy -> [[1, 0], [0, 0]] (or renumbered); again 1
    r = align(np.full((2, 2), 0.5), [[1.0]])
    assert r["k"] == 2 and r["distance"] == pytest.approx(1.0)


def test_never_below_the_best_renumbering_and_exact_on_small_graphs():
    """The assignment is a relaxation of matching the whole graphs: its distance is never below the best over all
    renumberings (brute force on 4 nodes), and here it finds that best."""
    rng = np.random.default_rng(1)
    for _ in range(5):
        a, b = rng.dirichlet(np.ones(4), 4), rng.dirichlet(np.ones(4), 4)
        best = min(np.linalg.norm(a - b[np.ix_(p, p)]) for p in itertools.permutations(range(4)))
        assert align(a, b)["distance"] >= best - 1e-12


def test_same_modality_keeps_text_with_text():
    # two text nodes and one visual one; b renumbers so that a visual node would be the cheapest match for a text one
    a = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    free = align(a, a, ["text", "text", "visual"], ["visual", "text", "text"])
    assert free["distance"] == pytest.approx(0.0)  # the paper's unconstrained matching ignores modality
    kept = align(a, a, ["text", "text", "visual"], ["visual", "text", "text"], same_modality=True)
    mb = ["visual", "text", "text"]
    assert [mb[j] for j in kept["perm"]] == ["text", "text", "visual"]
    with pytest.raises(ClaviError, match="modality of every node"):
        align(a, a, same_modality=True)


def test_bad_matrices_are_one_line_errors():
    with pytest.raises(ClaviError, match="N × N"):
        align(np.ones((2, 3)), np.eye(2))
    with pytest.raises(ClaviError, match="non-finite"):
        align([[np.nan]], [[1.0]])


def test_table_16_and_fig_8_from_rows():
    rows = [{"kind": "video", "correct": True, "distance": d} for d in (0.6, 0.8)] + \
           [{"kind": "video", "correct": False, "distance": 0.5}] + [{"kind": "text", "correct": False,
                                                                      "distance": 0.4}]
    r = DistanceResult(rows=rows, qtypes=("BA",))
    t = {(x["kind"], x["outcome"]): x for x in r.table()}
    assert t["video", "correct"]["pairs"] == 2 and t["video", "correct"]["mean"] == pytest.approx(0.7)
    assert t["video", "correct"]["variance"] == pytest.approx(0.01)  # ((.1)² + (.1)²) / 2
    assert t["video", "incorrect"]["mean"] == pytest.approx(0.5) and t["video", "incorrect"]["variance"] == 0.0
    assert t["text", "correct"]["pairs"] == 0 and t["text", "correct"]["mean"] is None
    h = r.histogram("video", bins=3)
    np.testing.assert_allclose(h["edges"], [0.5, 0.6, 0.7, 0.8])
    assert h["correct"].tolist() == [0, 1, 1] and h["incorrect"].tolist() == [1, 0, 0]


class _FakeFusion:
    """A stand-in with a fusion model's forward_with_attention: attention drawn from the input's contents, and the
    answer "yes" exactly on the questions that mention "before" (plumbing only)."""

    model_id = "fake"

    def forward_with_attention(self, frames, question):
        from robustlab.models.attention import AttentionCapture, TokenLayout

        n = 3 + len(question.split()) % 3  # the token count follows the words: text complements may differ
        rng = np.random.default_rng(int(np.asarray(frames, np.int64).sum()) + len(question))
        att = rng.dirichlet(np.ones(n), size=(2, 2, n)).astype(np.float32)
        lay = TokenLayout(modality=np.array(["text"] * 2 + ["visual"] * (n - 2)), special=np.array([""] * n),
                          is_pad=np.zeros(n, bool), frame=np.zeros(n, int), patch=np.zeros((n, 2), int))
        return AttentionCapture(att, lay, {"answer": "yes" if " before " in f" {question} " else "no"})


def test_the_analysis_counts_pairs_and_outcomes():
    from robustlab.diagnostics import clavi as cl

    frames = np.random.default_rng(0).integers(0, 255, (12, 8, 8, 3), dtype=np.uint8)
    pair = cl.complement(frames, (1, 4), (7, 10), seed=0)
    qs = cl.questions(cl.Action("opening a door"), cl.Action("closing a door"), cl.Action("washing a car"))
    r = complement_distances(_FakeFusion(), [("p0", pair, qs)], qtypes=("BA", "BE"))
    ba = [q for q in qs if q.qtype == "BA"]
    assert len(ba) == 4 and [sum(x["kind"] == k for x in r.rows) for k in ("video", "text")] == [8, 8]
    for x in r.rows:  # "yes" only for "before": right on V and V′ iff the truth follows the word
        assert x["distance"] >= 0
        q = next(q for q in qs if x["a"].endswith(q.question))
        if x["kind"] == "video":
            want = all(("before" in q.question.split()) == (t == "yes") for t in (q.answer_v, q.answer_c))
            assert x["correct"] == want
    assert {x["outcome"] for x in r.table()} == {"correct", "incorrect"}
    itm = _FakeFusion()
    itm.supported_tasks = ("itm",)  # a fusion model whose head answers no questions (e.g. hf-vilt's ITM head)
    with pytest.raises(ClaviError, match="CLAVI needs a VQA model"):
        complement_distances(itm, [("p0", pair, qs)])


@pytest.mark.slow
def test_the_analysis_on_builtin_pairs_with_tiny_vilt():
    from robustlab.models.checkpoints import checkpoint_path
    from robustlab.models.tiny_vilt import CHECKPOINT

    if not checkpoint_path(CHECKPOINT).exists():
        pytest.skip("assets/tiny-vilt.safetensors missing")
    from robustlab.datasets import build
    from robustlab.models import load_model

    model = load_model("builtin:tiny-vilt", device="cpu")
    ds = build("builtin-videos", split="test", n=20)
    r = dataset_distances(model, ds, n=1, qtypes=["ba"])
    # BA: 4 questions per pair (2 Q, 2 Q′): 4 video complements, and 2 Q × (V, V′) = 4 text complements
    assert [sum(x["kind"] == k for x in r.rows) for k in ("video", "text")] == [4, 4]
    assert all(x["distance"] >= 0 and np.isfinite(x["distance"]) for x in r.rows)
    assert sum(t["pairs"] for t in r.table()) == len(r.rows) and r.qtypes == ("BA",)
    # "correct" is the model's own answers on both inputs of the pair
    pid, pair, qs = next((ds.item(i).id, *got) for i in range(len(ds))
                         if (got := ds.clavi(i, seed=0, method="swap")) is not None)
    row = r.rows[0]
    q = next(q for q in qs if q.qtype == "BA")
    assert row["id"] == pid and row["a"] == f"V · {q.question}"
    right = (model.vqa(pair.video, q.question)[0] == q.answer_v) and \
            (model.vqa(pair.complement, q.question)[0] == q.answer_c)
    assert row["correct"] == right
    with pytest.raises(ClaviError, match="complement pairs exist for BE, BA"):
        complement_distances(model, [], qtypes=["E"])
    with pytest.raises(ClaviError, match="needs a fusion model"):
        complement_distances(object(), [])
