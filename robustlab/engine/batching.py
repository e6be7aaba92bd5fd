"""Batching for every backend: images or texts in, L2-normalised float32 embeddings out.

Runs under ``torch.inference_mode``, moves each batch to the model's device and dtype (half on GPU),
and reports progress as ``progress(done, total)``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from robustlab.data.convert import to_uint8_rgb  # noqa: F401  (re-exported)


def _normalise(x: torch.Tensor) -> np.ndarray:
    x = x.float()
    x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return x.cpu().numpy().astype(np.float32)


def encode_images(model, images: Sequence, batch_size: int | None = None, progress=None) -> np.ndarray:
    n = len(images)
    bs = int(batch_size or model.default_image_batch)
    out = []
    with torch.inference_mode():
        for i in range(0, n, bs):
            batch = [to_uint8_rgb(im) for im in images[i : i + bs]]
            pix = model.preprocess_images(batch).to(model.device, dtype=model.dtype, non_blocking=True)
            out.append(_normalise(model._image_features(pix)))
            if progress:
                progress(min(i + bs, n), n)
    if not out:
        return np.zeros((0, model.embed_dim), np.float32)
    return np.concatenate(out)


def encode_texts(model, texts: Sequence[str], batch_size: int | None = None, progress=None) -> np.ndarray:
    texts = [str(t) for t in texts]
    n = len(texts)
    bs = int(batch_size or model.default_text_batch)
    out = []
    with torch.inference_mode():
        for i in range(0, n, bs):
            out.append(_normalise(model._text_features(texts[i : i + bs])))
            if progress:
                progress(min(i + bs, n), n)
    if not out:
        return np.zeros((0, model.embed_dim), np.float32)
    return np.concatenate(out)
