"""Bootstrap intervals and the paired bootstrap (robustlab.metrics.bootstrap) on hand-checkable rank lists."""
import numpy as np
import pytest

from robustlab.metrics import bootstrap as bs
from robustlab.metrics.retrieval import rsum, summarize_ranks


def test_all_ranks_one_gives_a_point_interval():
    r = [1] * 50
    got = bs.ci(r)
    assert got["R@1"] == (1.0, 1.0)
    assert got["R@5"] == (1.0, 1.0)
    assert got["MdR"] == (1.0, 1.0)
    assert got["MnR"] == (1.0, 1.0)
    assert bs.rsum_ci({"t2v": r, "v2t": [1] * 30}) == (6.0, 6.0)


def test_metrics_from_ranks_equal_the_retrieval_metrics():
    rng = np.random.default_rng(3)
    r = rng.integers(1, 40, size=101)
    want = summarize_ranks(r, (1, 5, 10))
    for m, v in want.items():
        assert bs.from_ranks(r, m) == pytest.approx(v)


def test_half_hits_interval_by_hand():
    # R@1 of 200 queries, half at rank 1: the bootstrap SD of a proportion is sqrt(.25/200) = 0.0354, so the 95 %
    # percentile interval is close to 0.5 ± 1.96 · 0.0354 = [0.431, 0.569]
    r = [1] * 100 + [7] * 100
    lo, hi = bs.ci(r, ["R@1"])["R@1"]
    assert lo < 0.5 < hi
    assert lo == pytest.approx(0.431, abs=0.02) and hi == pytest.approx(0.569, abs=0.02)
    # R@10 holds every query: [1, 1]; MdR of ranks 1 and 7 stays within them
    assert bs.ci(r, ["R@10"])["R@10"] == (1.0, 1.0)
    lo, hi = bs.ci(r, ["MdR"])["MdR"]
    assert 1 <= lo <= 4 <= hi <= 7


def test_seeded_reproducible_and_seed_matters():
    rng = np.random.default_rng(0)
    r = rng.integers(1, 20, size=80)
    a, b = bs.ci(r, seed=5), bs.ci(list(r), seed=5)
    assert a == b
    assert bs.ci(r, seed=6) != a
    # the same (n, seed) draws the same query indices whatever the ranks are (cells are compared on the same draws)
    assert np.array_equal(bs.resample_indices(80, 1000, 5), bs.resample_indices(80, 1000, 5))
    assert bs.resample_indices(80, 1000, 5).shape == (1000, 80)


def test_paired_bootstrap_detects_a_real_difference():
    rng = np.random.default_rng(1)
    clean = rng.integers(1, 4, size=300)  # most queries in the top 3
    worse = clean + rng.integers(0, 6, size=300)  # the same queries, pushed down
    p = bs.paired(clean, worse, "R@1")
    assert p["diff"] == pytest.approx(np.mean(clean <= 1) - np.mean(worse <= 1))
    assert p["diff"] > 0 and p["lo"] > 0 and p["holds"]
    p = bs.paired(clean, worse, "MnR")
    assert p["hi"] < 0 and p["holds"]


def test_paired_bootstrap_does_not_flag_a_null_difference():
    rng = np.random.default_rng(2)
    a = rng.integers(1, 10, size=300)
    b = a.copy()
    swap = rng.permutation(300)[:40]  # shuffle the ranks of 40 queries among themselves: same distribution
    b[swap] = a[rng.permutation(swap)]
    p = bs.paired(a, b, "R@1")
    assert p["lo"] <= 0 <= p["hi"] and not p["holds"]
    same = bs.paired(a, a, "R@5")
    assert same == {"diff": 0.0, "lo": 0.0, "hi": 0.0, "holds": False}


def test_paired_rsum_and_its_point_value():
    rng = np.random.default_rng(4)
    a = {"t2v": rng.integers(1, 12, size=60), "v2t": rng.integers(1, 12, size=40)}
    b = {d: r + 3 for d, r in a.items()}
    p = bs.paired(a, b, "RSUM")
    ma, mb = ({d: summarize_ranks(r) for d, r in x.items()} for x in (a, b))
    assert p["diff"] == pytest.approx(rsum(ma["t2v"], ma["v2t"], percent=False)
                                      - rsum(mb["t2v"], mb["v2t"], percent=False))
    assert p["holds"] and p["lo"] > 0


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(ValueError, match="same queries"):
        bs.paired([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="1-based"):
        bs.ci([0, 1])
    with pytest.raises(ValueError, match="unknown rank metric"):
        bs.ci([1, 2], ["acc"])
    with pytest.raises(ValueError, match="non-empty"):
        bs.ci([])


def test_rsum_resamples_the_two_directions_independently():
    # Issue 48: with equal query counts both directions used to draw the same indices, so RSUM of two identical
    # rank lists moved in lockstep (its replicates were exactly twice one direction's). Now each direction has its
    # own draws: the sum is no longer twice one direction, and its spread is narrower (independent halves).
    r = [1] * 50 + [20] * 50
    one = sum(bs.replicates(r, ["R@1", "R@5", "R@10"])[m] for m in ("R@1", "R@5", "R@10"))
    both = bs.rsum_replicates({"t2v": r, "v2t": r})
    assert not np.allclose(both, 2 * one)
    assert both.std() < 2 * one.std() * 0.85  # independent: sqrt(2)·sd ≈ 0.71 of the lockstep 2·sd
    # the first direction (name order) keeps the draws every single-direction CI uses; the order of the dict doesn't
    assert np.array_equal(bs.rsum_replicates({"v2t": r, "t2v": r}), both)
    assert np.array_equal(bs.resample_indices(100), bs.resample_indices(100, stream=0))
    assert not np.array_equal(bs.resample_indices(100), bs.resample_indices(100, stream=1))
