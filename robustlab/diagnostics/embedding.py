"""2-D projections of embeddings for plots (HAT-VTR Fig. 5(c): t-SNE of corrupted query embeddings).

* :func:`tsne` — openTSNE (FFT-accelerated interpolation, Linderman et al. 2019, for large sets; Barnes-Hut for
  small ones, openTSNE's "auto"; PCA initialisation; seeded; exact neighbours up to 20,000 points and a coarser FFT
  grid than openTSNE's by default — both faster than openTSNE's defaults, see its docstring);
  the paper gives no t-SNE settings, so perplexity and seed are exposed. Fitting queries and gallery together
  (stack them, split the rows after) puts both in one map.
* :func:`pca` — exact PCA (covariance eigendecomposition), instant; a fallback for large sets or a first look.
* :func:`project` — either, by name.

Results are float64 arrays of shape (n, 2) (or (n, n_components)); the same input, parameters and seed give the
same map.
"""
from __future__ import annotations

import numpy as np

METHODS = ("tsne", "pca")


def _points(X, min_points: int = 2) -> np.ndarray:
    a = np.asarray(X)
    if a.ndim != 2:
        raise ValueError(f"expected a 2-D array (points × features), got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"expected numbers, got dtype {a.dtype}")
    if a.shape[0] < min_points:
        raise ValueError(f"need at least {min_points} points to project, got {a.shape[0]}")
    if a.shape[1] < 1:
        raise ValueError("the points have no features")
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        bad = int((~np.isfinite(a)).any(axis=1).sum())
        raise ValueError(f"{bad} point(s) contain NaN or infinite values; drop or fix them first")
    return a


def default_jobs() -> int:
    """1: on a shared 2-core machine openTSNE with 2 threads was 3–9× *slower* than with 1 (measured under load);
    pass ``n_jobs`` explicitly on an idle multi-core machine."""
    return 1


def pca(X, n: int = 2) -> np.ndarray:
    """Coordinates on the first ``n`` principal components (signs fixed: each axis' largest loading positive)."""
    a = _points(X, min_points=2)
    n = int(n)
    if not 1 <= n <= a.shape[1]:
        raise ValueError(f"n must be between 1 and the number of features ({a.shape[1]}), got {n}")
    a = a - a.mean(axis=0)
    if a.shape[1] <= a.shape[0]:
        vals, vecs = np.linalg.eigh(a.T @ a)
        comp = vecs[:, ::-1][:, :n]
    else:  # fewer points than features: SVD of the data is smaller
        _, _, vt = np.linalg.svd(a, full_matrices=False)
        comp = np.zeros((a.shape[1], n))
        comp[:, :min(n, vt.shape[0])] = vt[:n].T
    idx = np.argmax(np.abs(comp), axis=0)
    comp = comp * np.where(comp[idx, np.arange(comp.shape[1])] < 0, -1.0, 1.0)
    return a @ comp


#: Up to this many points ``neighbors="auto"`` finds the exact nearest neighbours (a brute-force search: 1.1 s
#: for 10,000 × 64 on one core, 3× faster than openTSNE's Annoy index and exact); above it, openTSNE's Annoy.
EXACT_NEIGHBORS_MAX = 20_000
NEIGHBORS = ("auto", "exact", "annoy", "pynndescent")


def tsne(X, perplexity: float = 30.0, seed: int = 0, n_jobs: int | None = None, metric: str = "euclidean",
         n_iter: int = 500, n_components: int = 2, gradient: str = "auto", neighbors: str = "auto",
         ints_in_interval: float = 2.0, min_num_intervals: int = 40) -> np.ndarray:
    """openTSNE t-SNE of the rows of ``X`` (PCA initialisation, ``seed`` fixes the map).

    ``gradient``: ``"fft"`` (FFT-accelerated interpolation), ``"bh"`` (Barnes-Hut) or ``"auto"`` (openTSNE picks:
    Barnes-Hut for small sets, where the FFT grid costs more than it saves; FFT for large ones).
    Needs more than 3 × perplexity points (each point's neighbourhood has ~3·perplexity neighbours).
    ``n_jobs`` defaults to 1 (see :func:`default_jobs`).

    ``neighbors``: how the 3·perplexity nearest neighbours behind the affinities are found — ``"auto"`` (robustlab's
    rule: ``"exact"`` up to :data:`EXACT_NEIGHBORS_MAX` points, where a brute-force search is faster than building
    an approximate index, ``"annoy"`` above), ``"exact"``, ``"annoy"`` or ``"pynndescent"`` (needs that package).

    ``ints_in_interval`` and ``min_num_intervals`` (FFT gradient only): the interpolation grid has cells
    ``ints_in_interval`` map units wide but at least ``min_num_intervals`` cells a side (3 interpolation points
    each). robustlab's defaults are 2.0 and 40 (openTSNE's: 1.0 and 50). On 10,000 points the map spans ~85 units,
    so openTSNE's grid grows to ~85 cells a side and its FFTs dominate the run; robustlab's stays at 40–43 and the
    whole fit is ~40% faster, with a map as good as scikit-learn's Barnes-Hut by 10-NN cluster agreement,
    trustworthiness and 10-NN preservation (``benchmarks/bench_tsne.py``; a coarser grid, e.g. 30 or 20 cells,
    measurably lowers the 10-NN preservation). Pass ``ints_in_interval=1.0, min_num_intervals=50`` for openTSNE's
    finer grid."""
    try:
        perplexity = float(perplexity)
    except (TypeError, ValueError):
        raise ValueError(f"perplexity must be a number, got {perplexity!r}") from None
    if not np.isfinite(perplexity) or perplexity <= 0:
        raise ValueError(f"perplexity must be positive, got {perplexity}")
    a = _points(X, min_points=4)
    n = a.shape[0]
    if 3 * perplexity > n - 1:
        raise ValueError(f"t-SNE with perplexity {perplexity:g} needs more than {int(3 * perplexity) + 1} points "
                         f"(got {n}); lower the perplexity below {(n - 1) / 3:.1f} or use PCA")
    if int(n_iter) < 1:
        raise ValueError(f"n_iter must be positive, got {n_iter}")
    if gradient not in ("auto", "fft", "bh"):
        raise ValueError(f"gradient must be 'auto', 'fft' or 'bh', got {gradient!r}")
    if neighbors not in NEIGHBORS:
        raise ValueError(f"neighbors must be one of {', '.join(repr(m) for m in NEIGHBORS)}, got {neighbors!r}")
    try:
        ints_in_interval = float(ints_in_interval)
    except (TypeError, ValueError):
        raise ValueError(f"ints_in_interval must be a number, got {ints_in_interval!r}") from None
    if not np.isfinite(ints_in_interval) or ints_in_interval <= 0:
        raise ValueError(f"ints_in_interval must be positive, got {ints_in_interval}")
    if isinstance(min_num_intervals, bool) or not isinstance(min_num_intervals, (int, np.integer)) \
            or min_num_intervals < 1:
        raise ValueError(f"min_num_intervals must be a positive integer, got {min_num_intervals!r}")
    if metric not in ("euclidean", "cosine"):
        raise ValueError(f"metric must be 'euclidean' or 'cosine', got {metric!r}")
    if metric == "cosine" and (np.linalg.norm(a, axis=1) == 0).any():
        raise ValueError("cosine distance is undefined for all-zero points")
    try:
        from openTSNE import TSNE
    except ImportError:
        raise ValueError("t-SNE needs the openTSNE package (pip install openTSNE); PCA works without it") from None
    model = TSNE(n_components=int(n_components), perplexity=perplexity, metric=metric,
                 n_jobs=default_jobs() if n_jobs is None else int(n_jobs), random_state=int(seed),
                 negative_gradient_method=gradient, initialization="pca", n_iter=int(n_iter), verbose=False,
                 neighbors=("exact" if n <= EXACT_NEIGHBORS_MAX else "annoy") if neighbors == "auto" else neighbors,
                 ints_in_interval=ints_in_interval, min_num_intervals=min_num_intervals)
    return np.asarray(model.fit(a), dtype=np.float64).copy()


def project(X, method: str = "tsne", **kw) -> np.ndarray:
    """``method="tsne"`` (keywords of :func:`tsne`) or ``"pca"`` (keyword ``n``)."""
    if method == "tsne":
        return tsne(X, **kw)
    if method == "pca":
        return pca(X, **kw)
    raise ValueError(f"unknown projection {method!r}; use one of {', '.join(METHODS)}")
