"""Retrieval metrics: ranks of the ground truth, R@K, median and mean rank.

The rank of a query is the position of its best-ranked ground-truth item (Schiappa/Qiu, digest §3.1):
``r_i = 1 + |{g ∉ G_i : s(q_i, g) > max_{g* ∈ G_i} s(q_i, g*)}|`` — ties count in the query's favour.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def ranks(scores: np.ndarray, gt) -> np.ndarray:
    """1-based rank of the ground truth for every query. ``gt``: gallery index per query, or a list of indices."""
    s = np.asarray(scores, dtype=np.float32)
    if s.ndim != 2:
        raise ValueError(f"scores must be queries × gallery, got shape {s.shape}")
    nq, ng = s.shape
    if len(gt) != nq:
        raise ValueError(f"{len(gt)} ground-truth entries for {nq} queries")
    if all(np.isscalar(g) for g in gt):
        g = np.asarray(gt, dtype=np.int64)
        if g.size and (g.min() < 0 or g.max() >= ng):
            raise ValueError("ground-truth index outside the gallery")
        best = s[np.arange(nq), g]
        mask = np.zeros_like(s, dtype=bool)
        mask[np.arange(nq), g] = True
    else:
        best = np.empty(nq, np.float32)
        mask = np.zeros_like(s, dtype=bool)
        for i, gi in enumerate(gt):
            gi = np.atleast_1d(np.asarray(gi, dtype=np.int64))
            if gi.size == 0:
                raise ValueError(f"query {i} has no ground truth")
            best[i] = s[i, gi].max()
            mask[i, gi] = True
    better = (s > best[:, None]) & ~mask
    return 1 + better.sum(1)


def retrieval(scores: np.ndarray, gt, ks: Sequence[int] = (1, 5, 10)) -> dict:
    """``{"R@1", "R@5", "R@10", "MdR", "MnR"}`` with R@K as fractions in [0, 1]."""
    r = ranks(scores, gt)
    out = {f"R@{k}": float(np.mean(r <= k)) if len(r) else float("nan") for k in ks}
    out["MdR"] = float(np.median(r)) if len(r) else float("nan")
    out["MnR"] = float(np.mean(r)) if len(r) else float("nan")
    return out
