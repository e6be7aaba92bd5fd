"""Bootstrap confidence intervals of retrieval metrics over queries, and the paired bootstrap between two runs on the
same queries (numpy only, no UI).

Everything starts from the 1-based rank of each query's ground truth (:func:`robustlab.metrics.retrieval.ranks`),
from which any R@K, MdR, MnR and RSUM can be recomputed. The method (none of the papers reports intervals):

* **resamples**: ``n_boot`` (default 1,000) draws of ``n`` query indices with replacement, from
  ``numpy.random.default_rng(SeedSequence(seed, spawn_key=(n,)))`` — a function of (seed, n) only, so every cell
  with the same queries uses the *same* resamples (the CI of a cell is reproducible, and two cells are compared on
  the same draws);
* **interval**: the percentile method, the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles (default 2.5 % and
  97.5 %) of the metric over the resamples (numpy's linear interpolation);
* **RSUM** needs both directions, whose queries differ (texts vs visuals): each direction is resampled on its own
  (its own n, and its own stream of draws, so equal counts do not share indices) and the replicates are summed;
* **paired bootstrap** (:func:`paired`): the same query indices for both rank lists in every resample; the
  difference a − b of the metric per resample gives its interval, and a difference **holds** when that interval
  excludes 0. The rank lists must be of the same queries in the same order (same length).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Mapping, Optional, Sequence

import numpy as np

N_BOOT = 1000
LEVEL = 0.95
SEED = 0
METRICS = ("R@1", "R@5", "R@10", "MdR", "MnR")
_CHUNK = 4_000_000  # resampled ranks held at once (rows × queries), so a 25k-query set stays a few tens of MB
_RK = re.compile(r"R@(\d+)$")


_CACHED = 5_000_000  # index matrices up to this size (20 MB) are kept: the cells of a sweep share them


@lru_cache(maxsize=8)
def _cached(n: int, n_boot: int, seed: int, stream: int = 0) -> np.ndarray:
    return _draw(n, n_boot, seed, stream)


def _draw(n: int, n_boot: int, seed: int, stream: int = 0) -> np.ndarray:
    key = (int(n),) if not stream else (int(n), int(stream))  # stream 0: the draws every cell has always used
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=key))
    idx = rng.integers(0, n, size=(n_boot, n), dtype=np.int32 if n < 2**31 else np.int64)
    idx.setflags(write=False)
    return idx


def resample_indices(n: int, n_boot: int = N_BOOT, seed: int = SEED, stream: int = 0) -> np.ndarray:
    """``n_boot`` × ``n`` query indices drawn with replacement; a function of (n, n_boot, seed, stream) only
    (read-only). ``stream`` > 0 gives an independent set of draws for the same n (RSUM's second direction)."""
    if n < 1:
        raise ValueError("the bootstrap needs at least one query")
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1")
    n, n_boot, seed, stream = int(n), int(n_boot), int(seed), int(stream)
    return _cached(n, n_boot, seed, stream) if n * n_boot <= _CACHED else _draw(n, n_boot, seed, stream)


def _check_metric(metric: str) -> str:
    if metric in ("MdR", "MnR") or _RK.match(metric):
        return metric
    raise ValueError(f"unknown rank metric {metric!r}: R@K, MdR or MnR")


def from_ranks(r, metric: str, axis: int = -1):
    """One metric of 1-based ranks (along ``axis``): R@K as a fraction, MdR (ordinary median), MnR."""
    r = np.asarray(r)
    metric = _check_metric(metric)
    if metric == "MdR":
        return np.median(r, axis=axis)
    if metric == "MnR":
        return np.mean(r, axis=axis)
    return np.mean(r <= int(_RK.match(metric).group(1)), axis=axis)


def _as_ranks(r) -> np.ndarray:
    a = np.asarray(r)
    if a.ndim != 1 or a.size == 0:
        raise ValueError("ranks must be a non-empty list of 1-based ranks")
    if not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ValueError("ranks must be integers")
        a = a.astype(np.int64)
    if a.min() < 1:
        raise ValueError("ranks are 1-based")
    return a


def replicates(r, metrics: Sequence[str] = METRICS, n_boot: int = N_BOOT, seed: int = SEED,
               other=None, stream: int = 0) -> dict:
    """``{metric: array of n_boot values}`` of the metrics over the resamples of ``r``'s queries; with ``other``
    (ranks of the same queries), the replicates of ``metric(r) − metric(other)`` on the same resamples."""
    a = _as_ranks(r)
    b = None if other is None else _as_ranks(other)
    if b is not None and len(b) != len(a):
        raise ValueError(f"paired bootstrap: {len(a)} vs {len(b)} queries (they must be the same queries)")
    metrics = [_check_metric(m) for m in metrics]
    idx = resample_indices(len(a), n_boot, seed, stream)
    out = {m: np.empty(len(idx)) for m in metrics}
    step = max(1, _CHUNK // len(a))
    for s in range(0, len(idx), step):
        ra = a[idx[s:s + step]]
        rb = b[idx[s:s + step]] if b is not None else None
        for m in metrics:
            v = from_ranks(ra, m, axis=1)
            out[m][s:s + step] = v - from_ranks(rb, m, axis=1) if rb is not None else v
    return out


def interval(values, level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates."""
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    lo, hi = np.quantile(np.asarray(values, dtype=float), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def ci(r, metrics: Sequence[str] = METRICS, n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL) -> dict:
    """``{metric: (lo, hi)}``: the 95 % (``level``) percentile bootstrap interval of each metric over the queries."""
    return {m: interval(v, level) for m, v in replicates(r, metrics, n_boot, seed).items()}


def rsum_replicates(ranks_by_direction: Mapping[str, Sequence[int]], ks: Sequence[int] = (1, 5, 10),
                    n_boot: int = N_BOOT, seed: int = SEED, other: Optional[Mapping] = None) -> np.ndarray:
    """Replicates of RSUM (fractions, 0..2·len(ks)) over both directions, each resampled on its own queries with
    its own draws (the directions in name order take streams 0 and 1, so two directions of equal size are not
    resampled with the same indices); with ``other`` (the same directions and queries), of RSUM(ranks) −
    RSUM(other) on the same resamples."""
    if len(ranks_by_direction) != 2:
        raise ValueError(f"RSUM needs two directions, got {sorted(ranks_by_direction)}")
    tot = np.zeros(int(n_boot))
    names = [f"R@{int(k)}" for k in ks]
    for stream, d in enumerate(sorted(ranks_by_direction)):
        o = None if other is None else other[d]
        reps = replicates(ranks_by_direction[d], names, n_boot, seed, other=o, stream=stream)
        tot += sum(reps[m] for m in names)
    return tot


def rsum_ci(ranks_by_direction: Mapping[str, Sequence[int]], ks: Sequence[int] = (1, 5, 10), n_boot: int = N_BOOT,
            seed: int = SEED, level: float = LEVEL) -> tuple[float, float]:
    """The percentile bootstrap interval of RSUM (fractions: ×100 for the papers' 0..600)."""
    return interval(rsum_replicates(ranks_by_direction, ks, n_boot, seed), level)


def paired(a, b, metric: str = "R@1", n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL) -> dict:
    """Paired bootstrap of ``metric(a) − metric(b)`` where ``a`` and ``b`` are the ranks of the same queries (two
    conditions, or two models): ``{"diff", "lo", "hi", "holds"}``; ``holds``: the interval excludes 0. For RSUM
    pass ``metric="RSUM"`` and ``{direction: ranks}`` dicts for ``a`` and ``b``."""
    if metric == "RSUM":
        if not isinstance(a, Mapping) or not isinstance(b, Mapping) or set(a) != set(b):
            raise ValueError("paired RSUM needs {direction: ranks} for both, with the same directions")
        reps = rsum_replicates(a, n_boot=n_boot, seed=seed, other=b)
        diff = float(sum(from_ranks(_as_ranks(a[d]), f"R@{k}") - from_ranks(_as_ranks(b[d]), f"R@{k}")
                         for d in a for k in (1, 5, 10)))
    else:
        reps = replicates(a, [metric], n_boot, seed, other=b)[metric]
        diff = float(from_ranks(_as_ranks(a), metric) - from_ranks(_as_ranks(b), metric))
    lo, hi = interval(reps, level)
    return {"diff": diff, "lo": lo, "hi": hi, "holds": bool(lo > 0 or hi < 0)}


__all__ = ["N_BOOT", "LEVEL", "SEED", "METRICS", "resample_indices", "from_ranks", "replicates", "interval", "ci",
           "rsum_replicates", "rsum_ci", "paired"]
