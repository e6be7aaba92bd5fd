"""Hubness of a model's retrieval on the synthetic world, clean vs perturbed (``robustlab hubness``).

The gallery is ``n`` freshly generated held-out scenes (``dataset="builtin"``, world seed ``seed``, as
``robustlab eval retrieval``) or the first ``n`` scenes of the dashboard's demo gallery (``dataset="demo"``).
Embeddings go through the on-disk embedding cache. Direction ``t2i``: captions query images, N_k counts per image;
``i2t``: images query captions, N_k per caption. A perturbation is applied to the modality it belongs to (an image
perturbation to every image, a text perturbation to every caption; item i gets seed ``perturb_seed + i``), whatever
the direction: perturbing the queries is HAT-VTR's query shift, perturbing the gallery its gallery shift.

``dataset="videos"``: ``n`` freshly generated held-out event videos (world seed ``seed``, as ``robustlab eval
video-retrieval``) with directions ``t2v`` (captions query videos, N_k per video) and ``v2t`` (videos query
captions); a perturbation is a video perturbation (any that applies to videos, per-frame ones included) or a text
one. Identical captions are all ground truth (several videos can share a caption).
"""
from __future__ import annotations

import numpy as np

from robustlab.diagnostics import hubness as H
from robustlab.diagnostics import reduction as R
from robustlab.metrics.retrieval import retrieval

DIRECTIONS = ("t2i", "i2t")
VIDEO_DIRECTIONS = ("t2v", "v2t")
DATASETS = ("builtin", "demo", "videos")
DEMO_SIZE = 300  # scenes in the dashboard's demo gallery (robustlab.datasets.synthetic.datasets.builtin_gallery)


def _summary(scores: np.ndarray, k: int, ks, top: int, gt=None) -> dict:
    n = scores.shape[0]
    nk = H.k_occurrence(scores, k)
    out = {**retrieval(scores, np.arange(n) if gt is None else gt, ks), **H.measures_from_nk(nk, k)}
    out["max_n_k"] = int(nk.max())
    out["top_hubs"] = [[int(i), int(nk[i])] for i in H.top_hubs(nk, top)]
    return out


def _perturb_modality(name: str, visual: str = "image") -> str:
    """"text", or ``visual`` ("image" / "video") when the perturbation applies to it; ValueError otherwise."""
    from robustlab.perturb import get_perturbation

    spec = get_perturbation(name)  # ValueError with the valid names for an unknown one
    if not spec.available:
        raise ValueError(f"perturbation {name!r} is unavailable here: {spec.reason}")
    if spec.modality == "text":
        return "text"
    if spec.modality == visual or visual in getattr(spec, "applies_to", ()):
        return visual
    raise ValueError(f"perturbation {name!r} works on {spec.modality}s; hubness here uses {visual}s and captions")


def eval_hubness(model, n: int = 1000, seed: int | None = None, k: int = 15, direction: str = "t2i",
                 perturb: str | None = None, severity: int = 3, reduce: str | None = None,
                 reduce_params: dict | None = None, dataset: str = "builtin", perturb_seed: int = 0,
                 ks=(1, 5, 10), top: int = 5, cache=None, progress=None) -> dict:
    """``{"clean": {R@K..., hubness indices, top_hubs}, "perturbed": {...}}`` (+ ``"<cond>_reduced"`` with
    ``reduce``), plus the settings. ``progress(stage, done, total)`` reports encoding/perturbing."""
    from robustlab.datasets.synthetic import world
    from robustlab.engine.cache import EmbeddingCache, cached_encode_images, cached_encode_texts

    if dataset not in DATASETS:
        raise ValueError(f"dataset {dataset!r} is not supported; use one of {', '.join(DATASETS)}")
    video = dataset == "videos"
    dirs = VIDEO_DIRECTIONS if video else DIRECTIONS
    if direction not in dirs:
        raise ValueError(f"direction must be one of {', '.join(dirs)} for the {dataset} dataset, got {direction!r}")
    n = int(n)
    if n < 2:
        raise ValueError("n must be at least 2")
    if not 1 <= int(k) <= n:
        raise ValueError(f"k must be between 1 and n = {n}, got {k}")
    modality = None
    if perturb:
        if not 1 <= int(severity) <= 5:
            raise ValueError(f"severity must be 1..5, got {severity}")
        modality = _perturb_modality(perturb, "video" if video else "image")
    if reduce is not None and reduce not in R.METHODS:
        raise ValueError(f"unknown hubness reduction {reduce!r}; available: {', '.join(R.METHODS)}")
    if reduce is not None:
        R._check_params(R.METHODS[reduce], reduce_params or {})

    def stage(name):
        return (lambda done, total: progress(name, done, total)) if progress else None

    if video:
        return _eval_video_hubness(model, n, seed, int(k), direction, perturb, int(severity), modality, reduce,
                                   reduce_params, perturb_seed, ks, top, cache, stage)
    if dataset == "builtin":
        from robustlab.tasks.evaluate import heldout_gallery

        seed = world.HELDOUT_SEED if seed is None else int(seed)
        imgs, caps, _ = heldout_gallery(n, seed, progress=stage("render"))
        imgs = list(imgs)
    else:
        from robustlab.datasets.synthetic.datasets import builtin_gallery

        seed = world.DEMO_SEED if seed is None else int(seed)
        if n > DEMO_SIZE:
            raise ValueError(f"the demo gallery has {DEMO_SIZE} scenes; use --n {DEMO_SIZE} or fewer")
        g = builtin_gallery(DEMO_SIZE, seed=seed, progress=stage("render"))
        imgs, caps = list(g.images[:n]), list(g.captions[:n])
    cache = cache if cache is not None else EmbeddingCache()
    ie = cached_encode_images(model, imgs, cache=cache, progress=stage("encode images"))
    te = cached_encode_texts(model, caps, cache=cache)

    if perturb:
        from robustlab.perturb import perturb as apply

        items = imgs if modality == "image" else caps
        cb = stage(f"{perturb} s{severity}")
        res = []
        for i, x in enumerate(items):
            res.append(apply(x, perturb, int(severity), seed=perturb_seed + i))
            if cb:
                cb(i + 1, len(items))
        outs, recs = [r.output for r in res], [r.record for r in res]
        if modality == "image":
            ie_p, te_p = cached_encode_images(model, outs, cache=cache, records=recs,
                                              progress=stage("encode perturbed")), te
        else:
            ie_p, te_p = ie, cached_encode_texts(model, outs, cache=cache, records=recs)

    conds = {"clean": _oriented(te, ie, direction == "t2i")}
    if perturb:
        conds["perturbed"] = _oriented(te_p, ie_p, direction == "t2i")
    out = {"model": getattr(model, "model_id", str(model)), "dataset": dataset, "n": n, "seed": seed, "k": int(k),
           "direction": direction, "queries": "captions" if direction == "t2i" else "images",
           "gallery": "images" if direction == "t2i" else "captions"}
    return _report(out, conds, None, int(k), perturb, severity, modality, perturb_seed, reduce, reduce_params, ks,
                   top)


def _oriented(text_emb, visual_emb, text_queries: bool) -> np.ndarray:
    """Scores queries × gallery: captions × visual items (caption i belongs to item i), or its transpose."""
    s = np.asarray(text_emb, np.float32) @ np.asarray(visual_emb, np.float32).T
    return s if text_queries else np.ascontiguousarray(s.T)


def _report(out: dict, conds: dict, gt, k: int, perturb, severity, modality, perturb_seed, reduce, reduce_params,
            ks, top) -> dict:
    """Add the settings and, per condition (and reduced, with ``reduce``), R@K, hubness indices and top hubs."""
    if perturb:
        out.update(perturb=perturb, severity=int(severity), perturbed_modality=modality, perturb_seed=perturb_seed)
    for name, s in conds.items():
        out[name] = _summary(s, k, ks, top, gt)
    if reduce:
        params = dict(reduce_params or {})
        out["reduce"] = reduce
        out["reduce_params"] = {p: v for p, v in R._check_params(R.METHODS[reduce], params).items()
                                if not isinstance(v, np.ndarray)}
        for name, s in conds.items():
            out[f"{name}_reduced"] = _summary(R.reduce(s, reduce, **params), k, ks, top, gt)
    return out


def _eval_video_hubness(model, n, seed, k, direction, perturb, severity, modality, reduce, reduce_params,
                        perturb_seed, ks, top, cache, stage) -> dict:
    from robustlab.datasets.synthetic import world
    from robustlab.engine.cache import EmbeddingCache, cached_encode_texts, cached_encode_videos
    from robustlab.tasks.evaluate_video import caption_groups, check_video_model, heldout_videos, perturb_texts, \
        perturb_videos

    check_video_model(model)
    seed = world.HELDOUT_SEED if seed is None else int(seed)
    vids, caps, _, _ = heldout_videos(n, seed, progress=stage("render"))
    cache = cache if cache is not None else EmbeddingCache()
    ve = cached_encode_videos(model, vids, cache=cache, progress=stage("encode videos"))
    te = cached_encode_texts(model, caps, cache=cache)
    ve_p, te_p = ve, te
    if perturb and modality == "video":
        outs, recs = perturb_videos(vids, perturb, severity, perturb_seed, progress=stage(f"{perturb} s{severity}"))
        ve_p = cached_encode_videos(model, outs, cache=cache, records=recs, progress=stage("encode perturbed"))
    elif perturb:
        outs, recs = perturb_texts(caps, perturb, severity, perturb_seed)
        te_p = cached_encode_texts(model, outs, cache=cache, records=recs)

    conds = {"clean": _oriented(te, ve, direction == "t2v")}
    if perturb:
        conds["perturbed"] = _oriented(te_p, ve_p, direction == "t2v")
    out = {"model": getattr(model, "model_id", str(model)), "dataset": "videos", "n": n, "seed": seed, "k": k,
           "direction": direction, "queries": "captions" if direction == "t2v" else "videos",
           "gallery": "videos" if direction == "t2v" else "captions"}
    return _report(out, conds, caption_groups(caps), k, perturb, severity, modality, perturb_seed, reduce,
                   reduce_params, ks, top)
