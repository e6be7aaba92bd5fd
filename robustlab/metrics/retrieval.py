"""Retrieval metrics: ranks of the ground truth, R@K, median and mean rank, RSUM.

The rank of a query is the position of its best-ranked ground-truth item (Schiappa/Qiu, digest §3.1):
``r_i = 1 + |{g ∉ G_i : s(q_i, g) > max_{g* ∈ G_i} s(q_i, g*)}|`` — ties count in the query's favour.

Direction is only a matter of which axis holds the queries: for text→image pass ``scores`` as captions × images
and ``gt[i]`` = the image of caption i; for image→text pass ``scores.T`` and ``invert_gt(gt, n_images)`` (every
image's list of captions — the multi-caption case, e.g. 5 captions per image in Flickr30K/COCO). The same holds for
text↔video. R@K values are fractions in [0, 1] (multiply by 100 for the papers' percentages).
"""
from __future__ import annotations

import sys
import types
from typing import Sequence

import numpy as np

#: the cut-offs the papers report: P1/P2 use 1, 5, 10; HAT-VTR adds 50 and 100
ALL_KS = (1, 5, 10, 50, 100)
DEFAULT_KS = (1, 5, 10)
#: median-rank conventions: "median" the ordinary median (mean of the two middle ranks for an even count; numpy,
#: CLIP4Clip's ``compute_metrics``, robustlab's default); "lower" the lower of the two middle ranks (``torch.median``,
#: as HAT-VTR's released ``tta_main.py`` computes MedR: ``ranks.median()``)
MDR_CONVENTIONS = ("median", "lower")


def median_rank(r, mdr: str = "median") -> float:
    """The median of the ranks ``r`` under the convention ``mdr`` (:data:`MDR_CONVENTIONS`); NaN when empty.
    They differ only for an even count whose two middle ranks differ: ranks 1, 2, 3, 4 give 2.5 ("median") or 2
    ("lower")."""
    if mdr not in MDR_CONVENTIONS:
        raise ValueError(f"mdr must be one of {', '.join(MDR_CONVENTIONS)}, got {mdr!r}")
    r = np.asarray(r)
    if not len(r):
        return float("nan")
    if mdr == "lower":
        return float(np.sort(r, axis=None)[(r.size - 1) // 2])
    return float(np.median(r))


def _check_scores(scores) -> np.ndarray:
    s = np.asarray(scores)
    if not np.issubdtype(s.dtype, np.number):
        raise ValueError(f"scores must be numbers, got dtype {s.dtype}")
    # float64 stays float64 (rounding to float32 could create ties, which count in the query's favour)
    s = s.astype(np.float64 if s.dtype == np.float64 else np.float32, copy=False)
    if s.ndim != 2:
        raise ValueError(f"scores must be queries × gallery, got shape {s.shape}")
    if s.size and not np.isfinite(s).all():
        raise ValueError("scores contain NaN or infinite values")
    return s


def ranks(scores: np.ndarray, gt) -> np.ndarray:
    """1-based rank of the ground truth for every query. ``gt``: gallery index per query, or a list of indices."""
    s = _check_scores(scores)
    nq, ng = s.shape
    if len(gt) != nq:
        raise ValueError(f"{len(gt)} ground-truth entries for {nq} queries")
    if all(np.isscalar(g) for g in gt):
        g = np.asarray(gt, dtype=np.int64)
        if g.size and (g.min() < 0 or g.max() >= ng):
            raise ValueError("ground-truth index outside the gallery")
        best = s[np.arange(nq), g]
        # the ground truth itself is never counted: it is not > itself
        return 1 + (s > best[:, None]).sum(1)
    best = np.empty(nq, s.dtype)
    mask = np.zeros_like(s, dtype=bool)
    for i, gi in enumerate(gt):
        gi = np.atleast_1d(np.asarray(gi, dtype=np.int64))
        if gi.size == 0:
            raise ValueError(f"query {i} has no ground truth")
        if gi.min() < 0 or gi.max() >= ng:
            raise ValueError(f"ground-truth index of query {i} outside the gallery")
        best[i] = s[i, gi].max()
        mask[i, gi] = True
    better = (s > best[:, None]) & ~mask
    return 1 + better.sum(1)


def summarize_ranks(r, ks: Sequence[int] = DEFAULT_KS, mdr: str = "median") -> dict:
    """``{"R@k"...,"MdR","MnR"}`` from 1-based ranks; ``mdr``: the median-rank convention (:func:`median_rank`)."""
    r = np.asarray(r)
    ks = _check_ks(ks)
    out = {f"R@{k}": float(np.mean(r <= k)) if len(r) else float("nan") for k in ks}
    out["MdR"] = median_rank(r, mdr)
    out["MnR"] = float(np.mean(r)) if len(r) else float("nan")
    return out


def _check_ks(ks) -> tuple:
    try:
        ks = tuple(int(k) for k in ks)
    except (TypeError, ValueError):
        raise ValueError(f"ks must be positive integers, got {ks!r}") from None
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive integers, got {ks!r}")
    return ks


def retrieval(scores: np.ndarray, gt, ks: Sequence[int] = DEFAULT_KS, mdr: str = "median") -> dict:
    """``{"R@1", "R@5", "R@10", "MdR", "MnR"}`` with R@K as fractions in [0, 1]; ``ks=ALL_KS`` adds R@50, R@100;
    ``mdr``: the median-rank convention, "median" or "lower" (HAT-VTR's released code; :func:`median_rank`)."""
    ks = _check_ks(ks)
    median_rank((), mdr)  # a wrong convention: one line before any work
    return summarize_ranks(ranks(scores, gt), ks, mdr)


def caption_groups(captions: Sequence[str]) -> list[list[int]]:
    """For every caption, the indices of all items with exactly the same caption (itself included): the ground
    truth when several items can share a caption."""
    where: dict[str, list[int]] = {}
    for i, c in enumerate(captions):
        where.setdefault(c, []).append(i)
    return [where[c] for c in captions]


def invert_gt(gt, n_gallery: int | None = None) -> list[list[int]]:
    """The ground truth of the other direction: ``gt[i]`` is the gallery item (or items) of query i; returns for
    every gallery item the list of queries whose ground truth it is (e.g. image → its captions for i2t when
    captions → images is t2i). ``n_gallery`` defaults to ``max(gt) + 1``; an item nobody points to gets ``[]``
    (which :func:`ranks` rejects: drop such items from the i2t queries)."""
    items = [np.atleast_1d(np.asarray(g, dtype=np.int64)) for g in gt]
    top = max((int(g.max()) for g in items if g.size), default=-1)
    n = top + 1 if n_gallery is None else int(n_gallery)
    if top >= n:
        raise ValueError(f"ground-truth index {top} outside a gallery of {n}")
    if any(g.size and g.min() < 0 for g in items):
        raise ValueError("negative ground-truth index")
    out: list[list[int]] = [[] for _ in range(n)]
    for q, g in enumerate(items):
        for j in g:
            out[int(j)].append(q)
    return out


def both_directions(scores: np.ndarray, gt, ks: Sequence[int] = DEFAULT_KS, mdr: str = "median") -> dict:
    """``{"t2i": ..., "i2t": ...}`` from one captions × images matrix (``gt``: image of each caption, one or more
    captions per image); for video the same function gives t2v / v2t. Images without a caption are distractors
    for t2i and are not queries for i2t."""
    s = _check_scores(scores)
    inv = invert_gt(gt, s.shape[1])
    keep = [j for j, c in enumerate(inv) if c]
    return {"t2i": retrieval(s, gt, ks, mdr), "i2t": retrieval(s[:, keep].T, [inv[j] for j in keep], ks, mdr)}


def rsum(t2i: dict, i2t: dict, ks: Sequence[int] = DEFAULT_KS, percent: bool = True) -> float:
    """RSUM = Σ_k (t2i R@k + i2t R@k) (Qiu et al.; 0–600 in percent with k ∈ {1, 5, 10})."""
    scale = 100.0 if percent else 1.0
    try:
        return float(sum(scale * (t2i[f"R@{k}"] + i2t[f"R@{k}"]) for k in _check_ks(ks)))
    except KeyError as e:
        raise ValueError(f"RSUM needs {e.args[0]} in both directions") from None


def mean_recall(res: dict, ks: Sequence[int] = DEFAULT_KS) -> float:
    """Qiu et al.'s per-direction "Mean" = (R@1 + R@5 + R@10) / 3 (fraction)."""
    return float(np.mean([res[f"R@{k}"] for k in _check_ks(ks)]))


class _CallableModule(types.ModuleType):
    """Calling this module calls :func:`retrieval`: its package exposes the module under that name, so that both
    ``rl.metrics.retrieval(scores, gt)`` and ``import robustlab.metrics.retrieval as R`` work (issue 46)."""

    def __call__(self, *args, **kwargs):
        return retrieval(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
