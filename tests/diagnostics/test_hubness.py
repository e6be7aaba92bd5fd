"""k-occurrence and hubness indices against straightforward implementations of their formulas."""
import tracemalloc

import numpy as np
import pytest
from scipy import integrate, stats

import robustlab as rl
from robustlab.diagnostics import hubness as H


def full_matrix_nk(s, k):
    """Reference: sort every row completely, count the top-k."""
    nk = np.zeros(s.shape[1], dtype=np.int64)
    for row in s:
        for j in np.argsort(-row, kind="stable")[:k]:
            nk[j] += 1
    return nk


def ref_measures(nk, k, n_queries):
    x = nk.astype(float)
    n, mu = len(x), x.mean()
    # truncated-normal third moment by numerical integration (independent of scipy.stats.truncnorm)
    a = (0 - mu) / x.std(ddof=1)
    m3 = integrate.quad(lambda t: t ** 3 * stats.norm.pdf(t), a, np.inf)[0] / stats.norm.sf(a)
    gini = sum(abs(xi - xj) for xi in x for xj in x) / (2 * n * x.sum())
    return {
        "k_skewness": stats.skew(x),
        "k_skewness_truncnorm": m3,
        "atkinson": 1 - (sum(np.sqrt(v) for v in x) / n) ** 2 / mu,
        "robinhood": 0.5 * sum(abs(v - mu) for v in x) / x.sum(),
        "antihub_occurrence": sum(1 for v in x if v == 0) / n,
        "hub_occurrence": sum(v for v in x if v >= 2 * k) / (k * n_queries),
        "gini": gini,
    }


@pytest.mark.parametrize("seed,nq,ng,k", [(0, 80, 120, 5), (1, 150, 60, 10), (2, 50, 50, 15)])
def test_measures_match_reference_formulas(seed, nq, ng, k):
    rng = np.random.default_rng(seed)
    # heavy-tailed column popularity so that hubs and antihubs both occur
    s = rng.normal(size=(nq, ng)) + rng.exponential(1.5, size=ng)[None, :]
    nk = H.k_occurrence(s, k)
    assert np.array_equal(nk, full_matrix_nk(s, k))
    assert nk.sum() == k * nq and nk.dtype == np.int64 and nk.shape == (ng,)
    got = rl.analysis.hubness.measures(s, k=k)
    assert set(got) == {"k_skewness", "k_skewness_truncnorm", "atkinson", "robinhood", "antihub_occurrence",
                        "hub_occurrence", "gini"}
    ref = ref_measures(nk, k, nq)
    for key, v in ref.items():
        assert got[key] == pytest.approx(v, rel=1e-6, abs=1e-9), key
    assert got["antihub_occurrence"] > 0 and got["hub_occurrence"] > 0  # the data really has both
    assert H.measures(nk, k=k) == got  # N_k given directly


def test_one_item_retrieved_by_everyone():
    n = 40
    s = np.zeros((n, n))
    s[:, 7] = 1.0  # every query's top-1 is item 7
    nk = H.k_occurrence(s, 1)
    assert nk[7] == n and nk.sum() == n
    m = H.measures(s, k=1)
    assert m["antihub_occurrence"] == pytest.approx((n - 1) / n)
    assert m["hub_occurrence"] == 1.0
    assert m["robinhood"] == pytest.approx((n - 1) / n)
    assert m["gini"] == pytest.approx((n - 1) / n)
    assert m["atkinson"] == pytest.approx(1 - 1 / n)
    assert m["k_skewness"] == pytest.approx((n - 2) / np.sqrt(n - 1))  # skewness of a single spike
    assert list(H.top_hubs(nk, 3)) == [7, 0, 1]


def test_no_hubness_at_all():
    s = np.eye(30) + 0.01 * np.random.default_rng(0).random((30, 30))
    nk = H.k_occurrence(s, 1)
    assert (nk == 1).all()
    m = H.measures(s, k=1)
    for key in ("k_skewness", "k_skewness_truncnorm", "atkinson", "robinhood", "antihub_occurrence",
                "hub_occurrence", "gini"):
        assert m[key] == pytest.approx(0.0, abs=1e-12), key


def test_skew_grows_with_a_planted_hub():
    rng = np.random.default_rng(3)
    s = rng.normal(size=(200, 200))
    base = H.measures(s, k=10)
    s[:, :8] += 2.0  # eight items close to every query
    hubbed = H.measures(s, k=10)
    for key in ("k_skewness", "robinhood", "gini", "hub_occurrence", "antihub_occurrence", "atkinson"):
        assert hubbed[key] > base[key], key


@pytest.mark.parametrize("block", [1, 7, 64, 1000, None])
def test_blocked_equals_full_matrix(block):
    rng = np.random.default_rng(5)
    q, g = rng.normal(size=(97, 24)), rng.normal(size=(131, 24))
    s = q @ g.T
    ref = full_matrix_nk(s, 15)
    assert np.array_equal(H.k_occurrence(s, 15, block_size=block), ref)
    assert np.array_equal(H.k_occurrence((q, g), 15, block_size=block), ref)
    assert np.array_equal(H.k_occurrence(queries=q, gallery=g, k=15, block_size=block), ref)
    # g2q: the gallery items retrieve queries; one count per query
    back = H.k_occurrence(s, 15, direction="g2q", block_size=block)
    assert back.shape == (97,) and np.array_equal(back, full_matrix_nk(s.T, 15))
    assert np.array_equal(H.k_occurrence((q, g), 15, direction="g2q", block_size=block), back)


def test_blocks_bound_memory():
    rng = np.random.default_rng(6)
    q = rng.normal(size=(2000, 16)).astype(np.float32)
    g = rng.normal(size=(3000, 16)).astype(np.float32)
    tracemalloc.start()
    nk = H.k_occurrence((q, g), 15, max_block_bytes=2**20)  # ~1 MiB blocks: 21 query rows at a time
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert nk.sum() == 15 * 2000
    assert peak < 4 * 2**20, peak  # the full 2000 × 3000 float32 matrix alone would be 24 MB


def test_progress_reports_every_block():
    seen = []
    H.k_occurrence(np.random.default_rng(0).normal(size=(10, 20)), 3, block_size=4,
                   progress=lambda d, t: seen.append((d, t)))
    assert seen == [(4, 10), (8, 10), (10, 10)]


def test_faiss_equals_numpy():
    pytest.importorskip("faiss")
    rng = np.random.default_rng(7)
    # small integers: every inner product is exact in float32, so both backends see identical scores
    q = rng.integers(-1000, 1000, size=(300, 8)).astype(np.float32)
    g = rng.integers(-1000, 1000, size=(400, 8)).astype(np.float32)
    s = q.astype(np.float64) @ g.T.astype(np.float64)
    srt = np.sort(s, axis=1)
    assert (srt[:, -10] > srt[:, -11]).all()  # no tie at the k-th place: the top-10 sets are well defined
    ref = H.k_occurrence((q, g), 10)
    assert np.array_equal(H.k_occurrence((q, g), 10, backend="faiss"), ref)
    assert np.array_equal(H.k_occurrence((q, g), 10, backend="faiss", block_size=37), ref)
    assert np.array_equal(ref, full_matrix_nk(s, 10))


def test_k_equal_to_gallery_and_histogram():
    s = np.random.default_rng(0).normal(size=(5, 4))
    assert list(H.k_occurrence(s, 4)) == [5, 5, 5, 5]
    values, counts = H.histogram(np.array([0, 2, 2, 5]))
    assert list(values) == [0, 1, 2, 3, 4, 5] and list(counts) == [1, 0, 2, 0, 0, 1]


@pytest.mark.parametrize("call,msg", [
    (lambda: H.k_occurrence(np.zeros((3, 4)), 5), "larger than the gallery"),
    (lambda: H.k_occurrence(np.zeros((3, 4)), 0), "positive integer"),
    (lambda: H.k_occurrence(np.array([[0.0, np.nan]]), 1), "NaN"),
    (lambda: H.k_occurrence(np.zeros(4), 1), "2-D"),
    (lambda: H.k_occurrence(np.zeros((3, 4)), 1, direction="sideways"), "direction"),
    (lambda: H.k_occurrence(np.zeros((3, 4)), 1, backend="faiss"), "needs embeddings"),
    (lambda: H.k_occurrence(np.zeros((3, 4)), 1, backend="annoy"), "backend"),
    (lambda: H.k_occurrence((np.zeros((3, 4)), np.zeros((5, 3))), 1), "4-d but gallery"),
    (lambda: H.k_occurrence(None, 1), "scores matrix"),
    (lambda: H.k_occurrence(np.zeros((3, 4)), 1, block_size=0), "block_size"),
    (lambda: H.measures(np.array([1, -1, 2]), k=1), "non-negative"),
    (lambda: H.measures(np.array([0, 0]), k=1), "all zero"),
    (lambda: H.top_hubs(np.array([1, 2]), -1), "m must"),
])
def test_bad_input_is_a_clear_value_error(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_ties_at_the_kth_place_still_give_exactly_k_per_query():
    rng = np.random.default_rng(9)
    s = rng.integers(0, 4, size=(60, 40)).astype(np.float32)  # many ties everywhere
    nk = H.k_occurrence(s, 5, block_size=7)
    assert nk.sum() == 5 * 60
    # every query's chosen items are a valid top-5: none of its unchosen items scores higher than a chosen one
    for start, idx in H.iter_topk(s, 5, block_size=7):
        for i, row in enumerate(idx):
            row_s = s[start + i]
            assert len(set(row.tolist())) == 5
            rest = np.setdiff1d(np.arange(40), row)
            assert row_s[rest].max() <= row_s[row].min()
