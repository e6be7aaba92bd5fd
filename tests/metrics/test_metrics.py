import numpy as np
import pytest

from robustlab.metrics import ranks, retrieval


def brute_rank(s, gts):
    best = max(s[g] for g in gts)
    return 1 + sum(1 for j, v in enumerate(s) if j not in gts and v > best)


def test_ranks_match_bruteforce_single_and_multi_gt():
    rng = np.random.default_rng(0)
    s = rng.normal(size=(40, 60)).astype(np.float32)
    gt = rng.integers(0, 60, 40)
    assert list(ranks(s, gt)) == [brute_rank(s[i], {gt[i]}) for i in range(40)]
    multi = [list(rng.choice(60, size=rng.integers(1, 4), replace=False)) for _ in range(40)]
    assert list(ranks(s, multi)) == [brute_rank(s[i], set(multi[i])) for i in range(40)]


def test_retrieval_values_on_a_constructed_case():
    s = np.array([[0.9, 0.1, 0.0], [0.8, 0.7, 0.0], [0.5, 0.6, 0.1]])
    r = retrieval(s, [0, 1, 2])
    assert r["R@1"] == pytest.approx(1 / 3)
    assert r["R@5"] == 1.0
    assert r["MdR"] == 2.0 and r["MnR"] == pytest.approx(2.0)


def test_ties_count_for_the_query():
    s = np.ones((2, 5))
    assert list(ranks(s, [0, 4])) == [1, 1]


def test_bad_inputs():
    with pytest.raises(ValueError):
        ranks(np.zeros(3), [0])
    with pytest.raises(ValueError):
        ranks(np.zeros((2, 3)), [0])
    with pytest.raises(ValueError):
        ranks(np.zeros((1, 3)), [5])
