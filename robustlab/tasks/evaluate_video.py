"""Text↔video retrieval on freshly generated held-out event videos (``robustlab eval video-retrieval``).

The gallery is ``n`` videos of the synthetic world (:func:`robustlab.datasets.synthetic.world.sample_video` with ``seed``,
rendered at 64 px), one caption each. Different videos can share a caption (the caption names only the objects
that take part in the two events), so the ground truth of a caption is *every* video with that exact caption, and
the ground truth of a video every identical caption (``robustlab.metrics.ranks`` counts the best-ranked one).

Optionally the videos get a video perturbation and the captions a text perturbation (registry names, severity
1–5, seeded per item with ``perturb_seed + i``). With ``order=True`` (default) the result also says how much the
model depends on the order of events, on the (possibly perturbed) gallery:

* ``t2v_R@1_reversed`` / ``v2t_R@1_reversed``: the same retrieval with every video played backwards (the captions
  are *not* reversed, so an order-sensitive model should lose recall here);
* ``order_acc``: the fraction of videos that score their caption above the caption of their time reversal
  (:func:`world.reverse_video_caption`), and ``order_acc_reversed`` the same for the reversed videos (whose right
  caption is the reversed one). 0.5 is chance. An order-invariant model (meanP) gives a video and its reversal
  (nearly) the same embedding, so it picks the same caption for both: it can score high on one of the two only
  by static cues (objects start at the centre of a layout cell, so where a moved object ends up says its
  direction), and the two accuracies then sum to about 1. An order-sensitive model can be right on both.
"""
from __future__ import annotations

import numpy as np

from robustlab.datasets.synthetic import world
from robustlab.metrics import retrieval


def heldout_videos(n: int, seed: int = world.HELDOUT_SEED, size: int = 64, progress=None):
    """(videos: list of T×size×size×3 uint8, captions, reversed captions, VideoScenes) of world ``seed``."""
    scenes = [world.sample_video(seed, i) for i in range(n)]
    vids = []
    for i, v in enumerate(scenes):
        vids.append(world.render_video(v, size))
        if progress and (i % 50 == 0 or i == n - 1):
            progress(i + 1, n)
    return vids, [v.caption for v in scenes], [world.reverse_video_caption(v) for v in scenes], scenes


def caption_groups(captions: list[str]) -> list[list[int]]:
    """For every caption, the indices of all items with exactly the same caption (itself included)."""
    where: dict[str, list[int]] = {}
    for i, c in enumerate(captions):
        where.setdefault(c, []).append(i)
    return [where[c] for c in captions]


def check_video_model(model) -> None:
    """ValueError (one line) when ``model`` cannot embed videos and texts into one space."""
    if not callable(getattr(model, "encode_videos", None)) or not callable(getattr(model, "encode_texts", None)):
        raise ValueError(f"model {getattr(model, 'model_id', model)!r} cannot encode videos and texts "
                         "(no encode_videos/encode_texts); use a video-retrieval or retrieval model, e.g. "
                         "builtin:tiny-clip-video-seqtransf")


def perturb_videos(videos, name: str, severity: int, perturb_seed: int = 0, progress=None):
    """Every video through a registry video perturbation -> (outputs, records). ValueError for a non-video name."""
    from robustlab.perturb import get_perturbation, perturb

    try:
        spec = get_perturbation(name)
    except KeyError as e:
        raise ValueError(str(e).strip("'\"")) from e
    if "video" not in spec.applies_to:
        raise ValueError(f"{name!r} is a {spec.modality} perturbation and does not apply to videos")
    outs, recs = [], []
    for i, v in enumerate(videos):
        r = perturb(v, name, severity, seed=perturb_seed + i)
        outs.append(r.output)
        recs.append(r.record)
        if progress:
            progress(i + 1, len(videos))
    return outs, recs


def perturb_texts(texts, name: str, severity: int, perturb_seed: int = 0):
    from robustlab.perturb import get_perturbation, perturb

    try:
        spec = get_perturbation(name)
    except KeyError as e:
        raise ValueError(str(e).strip("'\"")) from e
    if spec.modality != "text":
        raise ValueError(f"{name!r} is a {spec.modality} perturbation, not a text one")
    res = [perturb(c, name, severity, seed=perturb_seed + i) for i, c in enumerate(texts)]
    return [r.output for r in res], [r.record for r in res]


def _metrics(scores: np.ndarray, groups: list[list[int]], prefix: str) -> dict:
    r = retrieval(scores, groups)
    return {f"{prefix}_{k}": round(float(v), 4) for k, v in r.items()}


def eval_video_retrieval(model, n: int = 1000, seed: int = world.HELDOUT_SEED, perturb: str | None = None,
                         severity: int = 0, text_perturb: str | None = None, text_severity: int = 0,
                         perturb_seed: int = 0, progress=None, cache=None, size: int = 64,
                         order: bool = True) -> dict:
    """Text→video and video→text retrieval of ``n`` held-out event videos, optionally perturbed.

    Returns ``t2v_R@1/5/10, t2v_MdR, t2v_MnR``, the same for ``v2t_``, ``n``, ``seed``, ``model``, the
    perturbation fields when one ran and, with ``order``, ``t2v_R@1_reversed``, ``v2t_R@1_reversed`` and
    ``order_acc``, ``order_acc_reversed`` (see the module docstring).
    """
    from robustlab.engine.cache import EmbeddingCache, cached_encode_texts, cached_encode_videos

    check_video_model(model)
    if int(n) < 2:
        raise ValueError("n must be at least 2")
    cache = cache if cache is not None else EmbeddingCache(enabled=False)
    videos, caps, rcaps, _ = heldout_videos(n, seed, size)
    vid_records = txt_records = None
    if perturb and severity:
        videos, vid_records = perturb_videos(videos, perturb, severity, perturb_seed)
    if text_perturb and text_severity:
        caps, txt_records = perturb_texts(caps, text_perturb, text_severity, perturb_seed)
    try:
        ve = cached_encode_videos(model, videos, cache=cache, records=vid_records, progress=progress)
        te = cached_encode_texts(model, caps, cache=cache, records=txt_records)
    except NotImplementedError as e:  # a backend without the image/text hooks its encode_videos relies on
        raise ValueError(f"model {model.model_id!r} cannot encode videos and texts ({e or 'not implemented'})") from e
    clean_caps = [world.sample_video(seed, i).caption for i in range(n)] if txt_records else caps
    groups = caption_groups(clean_caps)
    s = te @ ve.T
    out = _metrics(s, groups, "t2v")
    out.update(_metrics(s.T, groups, "v2t"))
    if order:
        rev = [np.ascontiguousarray(np.asarray(v)[::-1]) for v in videos]
        re = cached_encode_videos(model, rev, cache=cache)
        sr = te @ re.T
        out["t2v_R@1_reversed"] = _metrics(sr, groups, "t2v")["t2v_R@1"]
        out["v2t_R@1_reversed"] = _metrics(sr.T, groups, "v2t")["v2t_R@1"]
        rte = cached_encode_texts(model, rcaps, cache=cache)
        differs = np.array([a != b for a, b in zip(clean_caps, rcaps)])
        right = np.einsum("nd,nd->n", ve, cached_encode_texts(model, clean_caps, cache=cache))
        wrong = np.einsum("nd,nd->n", ve, rte)
        out["order_acc"] = round(float(np.mean(right[differs] > wrong[differs])), 4) if differs.any() else None
        # the same test on the reversed videos, whose right caption is the reversed one
        r_right = np.einsum("nd,nd->n", re, rte)
        r_wrong = np.einsum("nd,nd->n", re, te if not txt_records else cached_encode_texts(model, clean_caps,
                                                                                           cache=cache))
        out["order_acc_reversed"] = (round(float(np.mean(r_right[differs] > r_wrong[differs])), 4)
                                     if differs.any() else None)
    out.update(n=int(n), seed=int(seed), model=model.model_id, frame_size=int(size))
    if perturb and severity:
        out.update(perturb=perturb, severity=int(severity))
    if text_perturb and text_severity:
        out.update(text_perturb=text_perturb, text_severity=int(text_severity))
    return out


__all__ = ["eval_video_retrieval", "heldout_videos", "caption_groups", "check_video_model", "perturb_videos",
           "perturb_texts"]
