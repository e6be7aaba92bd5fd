"""t-SNE (openTSNE) and PCA projections: determinism, shapes, structure, clear errors."""
import numpy as np
import pytest

from robustlab.diagnostics import embedding as E


def blobs(n_per=40, d=16, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 6, size=(3, d))
    x = np.concatenate([c + rng.normal(size=(n_per, d)) for c in centres])
    return x, np.repeat(np.arange(3), n_per)


def test_tsne_is_seeded_and_keeps_clusters():
    x, lab = blobs()
    a = E.tsne(x, perplexity=10, seed=3)
    b = E.tsne(x, perplexity=10, seed=3)
    assert a.shape == (120, 2) and a.dtype == np.float64
    assert np.array_equal(a, b)
    # each point's nearest neighbour in the map is from its own blob
    d = ((a[:, None, :] - a[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    assert (lab[d.argmin(1)] == lab).mean() > 0.95
    assert np.array_equal(E.project(x, "tsne", perplexity=10, seed=3), a)


def test_tsne_neighbors_and_fft_grid_settings_reach_opentsne(monkeypatch):
    import openTSNE

    seen = []

    class Recorder:
        def __init__(self, **kw):
            seen.append(kw)

        def fit(self, a):
            return np.zeros((len(a), 2))

    monkeypatch.setattr(openTSNE, "TSNE", Recorder)
    x, _ = blobs()
    E.tsne(x, perplexity=10)  # robustlab's defaults: exact neighbours (small set), 2-unit FFT grid cells
    E.tsne(x, perplexity=10, neighbors="annoy", ints_in_interval=1, min_num_intervals=50)  # openTSNE's own choices
    monkeypatch.setattr(E, "EXACT_NEIGHBORS_MAX", 100)  # above the limit "auto" means Annoy
    E.tsne(x, perplexity=10)
    assert [(k["neighbors"], k["ints_in_interval"], k["min_num_intervals"]) for k in seen] == [
        ("exact", 2.0, 40), ("annoy", 1.0, 50), ("annoy", 2.0, 40)]


def test_tsne_approximate_neighbors_still_keep_clusters():
    x, lab = blobs()
    a = E.tsne(x, perplexity=10, seed=3, neighbors="annoy")
    d = ((a[:, None, :] - a[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    assert (lab[d.argmin(1)] == lab).mean() > 0.95


def test_pca_matches_sklearn_up_to_sign():
    from sklearn.decomposition import PCA

    x, _ = blobs(seed=1)
    p = E.pca(x)
    ref = PCA(2).fit_transform(x)
    assert p.shape == (120, 2)
    for j in range(2):
        assert np.allclose(np.abs(p[:, j]), np.abs(ref[:, j]), atol=1e-8)
    assert np.array_equal(E.project(x, "pca"), p)
    # more features than points goes through the SVD branch and agrees too
    wide = np.random.default_rng(2).normal(size=(10, 50))
    assert np.allclose(np.abs(E.pca(wide, n=3)), np.abs(PCA(3).fit_transform(wide)), atol=1e-8)


@pytest.mark.parametrize("call,msg", [
    (lambda: E.tsne(np.zeros((20, 3)), perplexity=30), "needs more than 91 points"),
    (lambda: E.tsne(np.array([[0.0, np.nan]] * 50), perplexity=5), "NaN"),
    (lambda: E.tsne(np.zeros(10), perplexity=5), "2-D"),
    (lambda: E.tsne(np.zeros((50, 3)), perplexity=0), "positive"),
    (lambda: E.tsne(np.zeros((50, 3)), perplexity=5, metric="manhattan"), "metric"),
    (lambda: E.tsne(np.zeros((50, 3)), perplexity=5, gradient="exact"), "gradient"),
    (lambda: E.tsne(np.array([["a"]] * 5)), "numbers"),
    (lambda: E.tsne(np.zeros((50, 3)), perplexity=5, neighbors="kd"), "neighbors must be"),
    (lambda: E.tsne(np.zeros((50, 3)), perplexity=5, ints_in_interval=0), "ints_in_interval must be positive"),
    (lambda: E.tsne(np.zeros((50, 3)), perplexity=5, ints_in_interval="x"), "ints_in_interval must be a number"),
    (lambda: E.tsne(np.zeros((50, 3)), perplexity=5, min_num_intervals=0), "min_num_intervals must be"),
    (lambda: E.pca(np.zeros((1, 3))), "at least 2 points"),
    (lambda: E.pca(np.zeros((5, 3)), n=4), "between 1 and"),
    (lambda: E.project(np.zeros((5, 3)), "umap"), "unknown projection"),
])
def test_bad_input_is_a_clear_value_error(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()
