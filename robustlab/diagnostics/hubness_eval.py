"""Hubness of a model's retrieval on a dataset, clean vs perturbed (``robustlab hubness``).

Any retrieval dataset (:mod:`robustlab.datasets`: the built-in scenes or event videos, uploads, COCO, MSRVTT...)
through the one retrieval bench (:class:`robustlab.tasks.retrieval_bench.RetrievalBench`), so the scores, ground truth
and cache are the Retrieval task's. Direction ``t2i``/``t2v``: captions query visuals, N_k counts per image/video;
``i2t``/``v2t``: visuals query captions, N_k per caption. A perturbation is applied to the modality it belongs to (a
visual perturbation to every image/video, a text one to every caption; item i gets seed ``condition.seed + i``),
whatever the direction: perturbing the queries is HAT-VTR's query shift, perturbing the gallery its gallery shift.
"""
from __future__ import annotations

import numpy as np

from robustlab.diagnostics import hubness as H
from robustlab.diagnostics import reduction as R
from robustlab.metrics.retrieval import retrieval
from robustlab.perturb import get_perturbation
from robustlab.perturb.condition import Condition, check
from robustlab.tasks.result import model_identity
from robustlab.tasks.retrieval_bench import RetrievalBench

DIRECTIONS = ("t2i", "i2t")
VIDEO_DIRECTIONS = ("t2v", "v2t")


def _summary(scores: np.ndarray, k: int, ks, top: int, gt) -> dict:
    nk = H.k_occurrence(scores, k)
    out = {**retrieval(scores, gt, ks), **H.measures_from_nk(nk, k)}
    out["max_n_k"] = int(nk.max())
    out["top_hubs"] = [[int(i), int(nk[i])] for i in H.top_hubs(nk, top)]
    return out


def condition_axis(cond: Condition, kind: str) -> str:
    """"text" or "visual": where a perturbation applies (ValueError, one line, when to neither)."""
    if cond.clean:
        return "visual"
    try:
        spec = get_perturbation(cond.name)
    except KeyError as e:
        raise ValueError(str(e).strip("'\"")) from e
    if spec.modality == "text":
        check(cond, "text")
        return "text"
    check(cond, kind)
    return "visual"


def eval_hubness(model, dataset, direction: str | None = None, condition: Condition | str | None = None,
                 k: int = 15, reduce: str | None = None, reduce_params: dict | None = None, ks=(1, 5, 10),
                 top: int = 5, cache=None, progress=None) -> dict:
    """``{"clean": {R@K..., hubness indices, max_n_k, top_hubs}, "perturbed": {...}}`` (+ ``"<cond>_reduced"``
    with ``reduce``), plus the settings. ``condition``: a Condition or "name:severity" for either modality.
    ``progress(stage, done, total)`` reports perturbing/encoding."""
    cond = condition if isinstance(condition, Condition) else Condition.parse(condition)
    dirs = VIDEO_DIRECTIONS if dataset.kind == "video" else DIRECTIONS
    direction = direction or dirs[0]
    if direction not in dirs:
        raise ValueError(f"direction must be one of {', '.join(dirs)} for the {dataset.kind} dataset "
                         f"{dataset.name}, got {direction!r}")
    n = len(dataset)
    if n < 2:
        raise ValueError("the dataset needs at least 2 items")
    if not 1 <= int(k) <= n:
        raise ValueError(f"k must be between 1 and n = {n}, got {k}")
    if not cond.clean and not 1 <= int(cond.severity) <= 5:
        raise ValueError(f"severity must be 1..5, got {cond.severity}")
    axis = condition_axis(cond, dataset.kind)
    if reduce is not None and reduce not in R.METHODS:
        raise ValueError(f"unknown hubness reduction {reduce!r}; available: {', '.join(R.METHODS)}")
    if reduce is not None:
        R._check_params(R.METHODS[reduce], reduce_params or {})
    bench = RetrievalBench(model, dataset, cache=cache)
    stage = (lambda name: (lambda d, t: progress(name, d, t))) if progress else (lambda name: None)
    bench.visuals(Condition(), stage(f"encode {dataset.kind}s"))
    vc, tc = (cond, Condition()) if axis == "visual" else (Condition(), cond)
    conds = {"clean": bench.score_matrix(direction)}
    if not cond.clean:
        conds["perturbed"] = bench.score_matrix(direction, vc, tc, stage(cond.label()))
    text_q = direction[0] == "t"

    mid, fp = model_identity(model)
    out = {"model": mid, "model_fingerprint": fp, "dataset": dataset.name, "split": dataset.split, "n": n,
           **({"seed": dataset.params["seed"]} if "seed" in dataset.params else {}), "k": int(k),
           "direction": direction, "queries": "captions" if text_q else f"{dataset.kind}s",
           "gallery": f"{dataset.kind}s" if text_q else "captions"}
    if not cond.clean:
        out.update(perturb=cond.name, severity=int(cond.severity), perturbed_modality=dataset.kind
                   if axis == "visual" else "text", perturb_seed=int(cond.seed))
    for name, m in conds.items():
        out[name] = _summary(m.scores, int(k), ks, top, m.positives)
    if reduce:
        params = dict(reduce_params or {})
        out["reduce"] = reduce
        out["reduce_params"] = {p: v for p, v in R._check_params(R.METHODS[reduce], params).items()
                                if not isinstance(v, np.ndarray)}
        for name, m in conds.items():
            out[f"{name}_reduced"] = _summary(R.reduce(m.scores, reduce, **params), int(k), ks, top, m.positives)
    return out


__all__ = ["eval_hubness", "condition_axis", "DIRECTIONS", "VIDEO_DIRECTIONS"]
