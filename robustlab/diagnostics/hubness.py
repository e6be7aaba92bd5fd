"""Hubness of a retrieval gallery: k-occurrence N_k and the standard hubness indices.

``N_k(g)`` = how many queries have gallery item ``g`` among their top-k (HAT-VTR, Fig. 2: k = 15). Its histogram
over the gallery is balanced on clean data and grows a heavy right tail ("hubs") under query shift; items that no
query retrieves (N_k = 0) are "antihubs". Σ_g N_k(g) = k·|Q| always, so mean N_k = k·|Q|/|G|.

Direction: ``direction="q2g"`` (default) counts, for every gallery item, the queries that retrieve it — the rows of
``scores`` are the queries, the result has one entry per *column* (gallery item). ``"g2q"`` swaps the roles (each
gallery item retrieves its top-k queries; one entry per row). For text→image retrieval with captions × images
scores, q2g gives the image hubs of t2i, g2q the caption hubs of i2t.

The top-k search is blocked: query blocks are scored and partitioned one at a time (per block: ``np.partition``
for each row's k-th largest score, then the entries at or above it; ``np.argpartition`` for rows with a tie at
the k-th place), so at most one block × gallery of scores exists at any time; from embeddings, 100k × 100k never
needs the full matrix. ``backend="faiss"`` uses faiss's exact inner-product index (``IndexFlatIP``) instead.
Ties at the k-th place are broken arbitrarily, as in any top-k search.

The indices (:func:`measures`) follow scikit-hubness 0.21 (``skhubness/analysis/estimation.py``, Feldbauer et al.),
re-implemented from their formulas, with μ = mean N_k, n = |G|:

* ``k_skewness``: E[(N_k − μ)³] / σ³ with population moments (Radovanović et al. 2010);
* ``k_skewness_truncnorm``: the third moment of the standard normal truncated at a = (0 − μ)/s, b = ∞, with s the
  sample SD (ddof = 1) — scikit-hubness's "skewness of a truncated normal" (Tomašev 2014 motivates it);
* ``atkinson``: 1 − (mean(N_k^{1−ε}))^{1/(1−ε)} / μ with ε = 0.5;
* ``robinhood``: ½ Σ|N_k − μ| / Σ N_k (Robin Hood / Hoover index, Feldbauer et al. 2018): the share of
  k-occurrences that would have to move for all items to be retrieved equally often;
* ``antihub_occurrence``: |{g : N_k(g) = 0}| / n;
* ``hub_occurrence``: Σ_{g hub} N_k(g) / (k·|Q|), the share of all top-k slots held by hubs; a hub has
  N_k ≥ hub_size·k (hub_size = 2). scikit-hubness's docstring says "> hub_size·k" but its code uses ≥; we follow
  the code;
* ``gini``: Σ_i Σ_j |N_k(i) − N_k(j)| / (2 n Σ N_k) (computed in O(n log n) from the sorted values).

A constant N_k (no hubness at all) has zero variance; both skewness indices are reported as 0 there.
HAT-VTR's Table 13 gives no formulas, no k and values outside these indices' ranges (trunc 5.05, hub 10.25), so
numbers here are not comparable to that table.
"""
from __future__ import annotations

import math

import numpy as np

MEASURES = {
    "k_skewness": "skewness of the N_k distribution (population moments); 0 = symmetric, large = hubs",
    "k_skewness_truncnorm": "third moment of a normal truncated at N_k = 0 fitted to N_k (scikit-hubness)",
    "atkinson": "Atkinson inequality index of N_k (ε = 0.5); 0 = all items retrieved equally often",
    "robinhood": "Robin Hood (Hoover) index: share of top-k slots that must move to equalise N_k",
    "antihub_occurrence": "share of gallery items that no query retrieves in its top-k (N_k = 0)",
    "hub_occurrence": "share of all top-k slots held by hubs (N_k ≥ hub_size·k)",
    "gini": "Gini index of N_k; 0 = equal, → 1 = a few items take every slot",
}

#: bytes one block may take (float32 score, its partitioned copy, the mask: budgeted as 12 bytes per cell)
DEFAULT_BLOCK_BYTES = 128 * 2**20


def _as_2d(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    return a


def _check_k(k, n_gallery: int) -> int:
    try:
        k = int(k)
    except (TypeError, ValueError):
        raise ValueError(f"k must be a positive integer, got {k!r}") from None
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if n_gallery < 1:
        raise ValueError("the gallery is empty")
    if k > n_gallery:
        raise ValueError(f"k = {k} is larger than the gallery ({n_gallery} items)")
    return k


def _inputs(scores, queries, gallery, direction):
    """-> (kind, A, B): kind "scores" with A the (oriented) matrix, or "emb" with A queries, B gallery."""
    if direction not in ("q2g", "g2q"):
        raise ValueError(f"direction must be 'q2g' (queries retrieve gallery items) or 'g2q', got {direction!r}")
    if isinstance(scores, tuple):
        if queries is not None or gallery is not None:
            raise ValueError("pass either (query_emb, gallery_emb) or queries=/gallery=, not both")
        if len(scores) != 2:
            raise ValueError("embeddings must be a pair (query_emb, gallery_emb)")
        queries, gallery = scores
        scores = None
    if scores is not None:
        if queries is not None or gallery is not None:
            raise ValueError("pass either a scores matrix or embeddings, not both")
        s = _as_2d(scores, "scores")
        return "scores", (s if direction == "q2g" else s.T), None
    if queries is None or gallery is None:
        raise ValueError("pass a scores matrix (queries × gallery) or both query and gallery embeddings")
    q = _as_2d(queries, "query embeddings")
    g = _as_2d(gallery, "gallery embeddings")
    if q.shape[1] != g.shape[1]:
        raise ValueError(f"query embeddings are {q.shape[1]}-d but gallery embeddings are {g.shape[1]}-d")
    if direction == "g2q":
        q, g = g, q
    return "emb", q, g


def _block_rows(n_cols: int, block_size, max_block_bytes: int) -> int:
    if block_size is not None:
        try:
            b = int(block_size)
        except (TypeError, ValueError):
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}") from None
        if b < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size}")
        return b
    return max(1, int(max_block_bytes) // (12 * max(n_cols, 1)))


def _topk_block(s: np.ndarray, k: int) -> np.ndarray:
    """Indices (unordered) of the k largest entries of every row of one block."""
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or infinite values")
    n = s.shape[1]
    if k == n:
        return np.broadcast_to(np.arange(n), s.shape)
    # The k-th largest value of every row (np.partition moves float32 values only), then the entries at or above
    # it: the same top-k sets as np.argpartition, about 3× faster (argpartition also moves an int64 index per
    # entry). Rows with a tie at the k-th value have more than k such entries; those rows use argpartition.
    thr = np.partition(s, n - k, axis=1)[:, n - k]
    mask = s >= thr[:, None]
    per_row = mask.sum(axis=1)
    if (per_row == k).all():
        return np.nonzero(mask)[1].reshape(-1, k)
    out = np.empty((s.shape[0], k), dtype=np.int64)
    ok = per_row == k
    out[ok] = np.nonzero(mask[ok])[1].reshape(-1, k)
    out[~ok] = np.argpartition(s[~ok], n - k, axis=1)[:, n - k:]
    return out


def iter_topk(scores=None, k: int = 15, *, queries=None, gallery=None, direction: str = "q2g",
              block_size: int | None = None, backend: str = "numpy", max_block_bytes: int = DEFAULT_BLOCK_BYTES,
              progress=None):
    """Yield ``(start, idx)`` per query block: ``idx[i]`` are the (unordered) top-k gallery indices of query
    ``start + i``. Arguments as :func:`k_occurrence`."""
    kind, a, b = _inputs(scores, queries, gallery, direction)
    n_q = a.shape[0]
    n_g = a.shape[1] if kind == "scores" else b.shape[0]
    k = _check_k(k, n_g)
    if backend not in ("numpy", "faiss"):
        raise ValueError(f"backend must be 'numpy' or 'faiss', got {backend!r}")
    if backend == "faiss":
        if kind != "emb":
            raise ValueError("backend='faiss' needs embeddings (query_emb, gallery_emb), not a scores matrix")
        yield from _faiss_topk(a, b, k, block_size, progress)
        return
    # float64 scores (e.g. after a hubness reduction) stay float64, so that no ties are created by rounding
    dtype = np.float64 if a.dtype == np.float64 and kind == "scores" else np.float32
    rows = _block_rows(n_g, block_size, max_block_bytes * 12 // (2 * np.dtype(dtype).itemsize + 4))
    if kind == "emb":
        gt = np.ascontiguousarray(b, dtype=np.float32).T
        if not np.isfinite(gt).all():
            raise ValueError("gallery embeddings contain NaN or infinite values")
    for start in range(0, n_q, rows):
        if kind == "scores":
            block = np.asarray(a[start:start + rows], dtype=dtype)
        else:
            block = np.asarray(a[start:start + rows], dtype=np.float32) @ gt
        yield start, _topk_block(block, k)
        del block
        if progress is not None:
            progress(min(start + rows, n_q), n_q)


def _faiss_topk(q: np.ndarray, g: np.ndarray, k: int, block_size, progress):
    try:
        import faiss
    except ImportError:
        raise ValueError("backend='faiss' needs the faiss package (pip install faiss-cpu); "
                         "or use backend='numpy'") from None
    q = np.ascontiguousarray(q, dtype=np.float32)
    g = np.ascontiguousarray(g, dtype=np.float32)
    if not (np.isfinite(q).all() and np.isfinite(g).all()):
        raise ValueError("embeddings contain NaN or infinite values")
    index = faiss.IndexFlatIP(g.shape[1])  # exact inner product (= cosine for L2-normalised embeddings)
    index.add(g)
    rows = int(block_size) if block_size else 16384
    n_q = q.shape[0]
    for start in range(0, n_q, rows):
        _, idx = index.search(q[start:start + rows], k)
        yield start, idx
        if progress is not None:
            progress(min(start + rows, n_q), n_q)


def k_occurrence(scores=None, k: int = 15, *, queries=None, gallery=None, direction: str = "q2g",
                 block_size: int | None = None, backend: str = "numpy",
                 max_block_bytes: int = DEFAULT_BLOCK_BYTES, progress=None) -> np.ndarray:
    """N_k per gallery item (int64, length = gallery size; with ``direction="g2q"``, per query).

    ``scores``: a queries × gallery similarity matrix (higher = closer), or a pair ``(query_emb, gallery_emb)``
    (also ``queries=``, ``gallery=``) scored by inner product block by block. ``block_size``: query rows per block
    (default: as many as fit in ``max_block_bytes``, 128 MiB). ``backend="faiss"``: exact faiss IndexFlatIP search
    (embeddings only). ``progress(done, total)`` is called after every block.
    """
    kind, a, b = _inputs(scores, queries, gallery, direction)
    n_g = a.shape[1] if kind == "scores" else b.shape[0]
    counts = np.zeros(n_g, dtype=np.int64)
    for _, idx in iter_topk(scores, k, queries=queries, gallery=gallery, direction=direction,
                            block_size=block_size, backend=backend, max_block_bytes=max_block_bytes,
                            progress=progress):
        idx = np.asarray(idx).ravel()
        if idx.size and idx.min() < 0:  # faiss pads with -1 only when the gallery has fewer than k items
            raise ValueError("the search returned fewer than k neighbours")
        counts += np.bincount(idx, minlength=n_g)
    return counts


def _as_nk(n_k) -> np.ndarray:
    nk = np.asarray(n_k)
    if nk.ndim != 1 or nk.size == 0:
        raise ValueError(f"N_k must be a non-empty 1-D array, got shape {nk.shape}")
    if not np.issubdtype(nk.dtype, np.number) or not np.isfinite(nk).all():
        raise ValueError("N_k must be finite numbers")
    if nk.min() < 0 or not np.array_equal(nk, np.round(nk)):
        raise ValueError("N_k must be non-negative integer counts")
    return nk.astype(np.int64)


def skewness(n_k) -> float:
    x = _as_nk(n_k).astype(np.float64)
    d = x - x.mean()
    m2 = np.mean(d * d)
    if m2 <= 0:
        return 0.0
    return float(np.mean(d ** 3) / m2 ** 1.5)


def skewness_truncnorm(n_k) -> float:
    """Third (raw) moment of the standard normal truncated to [a, ∞), a = −mean/sd (scikit-hubness's
    ``stats.truncnorm(a, b).moment(3)``), in closed form: E[X³] = 2·E[X] + a²·φ(a)/Z = (2 + a²)·φ(a)/(1 − Φ(a))
    (the moment recurrence of the truncated normal). a ≤ 0 always (N_k ≥ 0), so 1 − Φ(a) ≥ ½: no underflow."""
    x = _as_nk(n_k).astype(np.float64)
    if x.size < 2:
        return 0.0
    sd = x.std(ddof=1)
    if sd <= 0:
        return 0.0
    a = (0.0 - x.mean()) / sd
    pdf = math.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)
    sf = 0.5 * math.erfc(a / math.sqrt(2.0))
    return float((2.0 + a * a) * pdf / sf)


def atkinson(n_k, eps: float = 0.5) -> float:
    x = _as_nk(n_k).astype(np.float64)
    mu = x.mean()
    if eps == 1:
        with np.errstate(divide="ignore"):
            term = float(np.exp(np.mean(np.log(x)))) if (x > 0).all() else 0.0
    else:
        term = np.mean(x ** (1.0 - eps)) ** (1.0 / (1.0 - eps))
    return float(1.0 - term / mu)


def robinhood(n_k) -> float:
    x = _as_nk(n_k).astype(np.float64)
    return float(0.5 * np.abs(x - x.mean()).sum() / x.sum())


def gini(n_k) -> float:
    x = np.sort(_as_nk(n_k).astype(np.float64))
    n = x.size
    # Σ_i Σ_j |x_i − x_j| = 2 Σ_i (2i − n − 1) x_(i) with 1-based i over the sorted values
    i = np.arange(1, n + 1, dtype=np.float64)
    return float(np.sum((2 * i - n - 1) * x) / (n * x.sum()))


def antihubs(n_k) -> np.ndarray:
    return np.flatnonzero(_as_nk(n_k) == 0)


def hubs(n_k, k: int, hub_size: float = 2.0) -> np.ndarray:
    return np.flatnonzero(_as_nk(n_k) >= hub_size * k)


def top_hubs(n_k, m: int = 10) -> np.ndarray:
    """Indices of the ``m`` items with the largest N_k, largest first (ties: lower index first)."""
    nk = _as_nk(n_k)
    m = int(m)
    if m < 0:
        raise ValueError(f"m must be ≥ 0, got {m}")
    order = np.lexsort((np.arange(nk.size), -nk))
    return order[:m]


def histogram(n_k) -> tuple[np.ndarray, np.ndarray]:
    """(values 0..max N_k, number of items with each value): the HAT-VTR Fig. 2 histogram with integer bins."""
    nk = _as_nk(n_k)
    counts = np.bincount(nk)
    return np.arange(counts.size), counts


def measures_from_nk(n_k, k: int, n_queries: int | None = None, hub_size: float = 2.0) -> dict:
    """The indices of :data:`MEASURES` from precomputed N_k. ``n_queries`` defaults to Σ N_k / k."""
    nk = _as_nk(n_k)
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if nk.sum() == 0:
        raise ValueError("N_k is all zero: no query retrieved anything")
    nq = nk.sum() / k if n_queries is None else int(n_queries)
    if nq <= 0:
        raise ValueError("n_queries must be positive")
    return {
        "k_skewness": skewness(nk),
        "k_skewness_truncnorm": skewness_truncnorm(nk),
        "atkinson": atkinson(nk, 0.5),
        "robinhood": robinhood(nk),
        "antihub_occurrence": float(np.mean(nk == 0)),
        "hub_occurrence": float(nk[nk >= hub_size * k].sum() / (k * nq)),
        "gini": gini(nk),
    }


def measures(scores=None, k: int = 15, *, hub_size: float = 2.0, n_k=None, **kw) -> dict:
    """Hubness indices of the top-k retrieval ``scores`` (queries × gallery; or a pair of embeddings, or
    ``n_k=`` precomputed N_k; a 1-D ``scores`` is read as N_k). Keys: k_skewness, k_skewness_truncnorm,
    atkinson, robinhood, antihub_occurrence, hub_occurrence, gini. Extra keywords go to :func:`k_occurrence`."""
    if n_k is None and scores is not None and not isinstance(scores, tuple) and np.ndim(scores) == 1:
        n_k = scores
        scores = None
    if n_k is not None:
        if scores is not None:
            raise ValueError("pass scores/embeddings or n_k, not both")
        return measures_from_nk(n_k, k, hub_size=hub_size)
    nk = k_occurrence(scores, k, **kw)
    return measures_from_nk(nk, k, hub_size=hub_size)
