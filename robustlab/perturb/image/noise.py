"""Noise perturbations (ImageNet-C family): gaussian_noise, shot_noise, impulse_noise and speckle_noise (V05/V06).

All four are element-wise, so they are registered ``batched=True``: a T×H×W×3 video is perturbed in one
vectorised call with fresh noise for every frame. Their listing order is declared in
:mod:`robustlab.perturb.table`, not by this file's layout.
"""
from __future__ import annotations

import numpy as np

from robustlab.perturb.image._common import to_float, to_uint8
from robustlab.perturb.registry import register


@register("gaussian_noise", batched=True)
def gaussian_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    x = to_float(img, np.float32)
    x += rng.standard_normal(img.shape, dtype=np.float32) * np.float32(params["sigma"])
    return to_uint8(x)


@register("shot_noise", batched=True)
def shot_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    lam = float(params["lam"])
    return to_uint8(rng.poisson(to_float(img) * lam) / lam)


@register("impulse_noise", batched=True)
def impulse_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    a = float(params["amount"])
    u = rng.random(img.shape)  # one uniform per element: [0, a/2) pepper, [a/2, a) salt
    out = img.copy()
    out[u < a * 0.5] = 0
    out[(u >= a * 0.5) & (u < a)] = 255
    return out


@register("speckle_noise", batched=True)
def speckle_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    x = to_float(img, np.float32)
    noise = rng.standard_normal(img.shape, dtype=np.float32)
    noise *= np.float32(params["sigma"])
    x += x * noise
    return to_uint8(x)
