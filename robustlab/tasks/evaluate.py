"""Evaluation on freshly generated held-out splits of the synthetic world (``robustlab eval``)."""
from __future__ import annotations

import numpy as np

from robustlab.datasets.synthetic import world
from robustlab.metrics import ranks, retrieval


def heldout_gallery(n: int, seed: int = world.HELDOUT_SEED, size: int = 128, progress=None):
    scenes = world.make_scenes(n, seed)
    return world.render_scenes(scenes, size, progress=progress), [s.caption for s in scenes], scenes


def eval_retrieval(model, n: int = 1000, seed: int = world.HELDOUT_SEED, image_perturb: str | None = None,
                   image_severity: int = 0, text_perturb: str | None = None, text_severity: int = 0,
                   perturb_seed: int = 0, cache=None, progress=None) -> dict:
    """Text→image and image→text retrieval of ``n`` held-out scenes (one caption each), optionally perturbed."""
    from robustlab.engine.cache import cached_encode_images, cached_encode_texts, EmbeddingCache

    cache = cache if cache is not None else EmbeddingCache(enabled=False)
    imgs, caps, _ = heldout_gallery(n, seed)
    img_records = txt_records = None
    if image_perturb and image_severity:
        from robustlab.perturb import perturb

        res = [perturb(im, image_perturb, image_severity, seed=perturb_seed + i) for i, im in enumerate(imgs)]
        imgs = np.stack([r.output for r in res])
        img_records = [r.record for r in res]
    if text_perturb and text_severity:
        from robustlab.perturb import perturb

        res = [perturb(c, text_perturb, text_severity, seed=perturb_seed + i) for i, c in enumerate(caps)]
        caps = [r.output for r in res]
        txt_records = [r.record for r in res]
    ie = cached_encode_images(model, list(imgs), cache=cache, records=img_records, progress=progress)
    te = cached_encode_texts(model, caps, cache=cache, records=txt_records)
    s = te @ ie.T
    gt = np.arange(n)
    t2i = retrieval(s, gt)
    i2t = retrieval(s.T, gt)
    out = {f"t2i_{k}": round(v, 4) for k, v in t2i.items()}
    out.update({f"i2t_{k}": round(v, 4) for k, v in i2t.items()})
    out.update(n=n, seed=seed, model=model.model_id)
    if image_perturb and image_severity:
        out.update(image_perturb=image_perturb, image_severity=image_severity)
    if text_perturb and text_severity:
        out.update(text_perturb=text_perturb, text_severity=text_severity)
    return out
