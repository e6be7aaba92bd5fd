"""Noise perturbations (ImageNet-C family): gaussian_noise, shot_noise, impulse_noise and speckle_noise (V05/V06).

All four are element-wise, so they are registered ``batched=True``: a T×H×W×3 video is perturbed in one
vectorised call with fresh noise for every frame. Their listing order is declared in
:mod:`robustlab.perturb.table`, not by this file's layout.
"""
from __future__ import annotations

import numpy as np

from robustlab.perturb.image._common import IMAGENET_C, P1, P2, table, to_float, to_uint8
from robustlab.perturb.registry import register


@register(
    "gaussian_noise", modality="image", category="noise",
    source=f"{P2} and {P1}; {IMAGENET_C}",
    severity_table=table("sigma", [0.08, 0.12, 0.18, 0.26, 0.38]),
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "σ = .08/.12/.18/.26/.38 (identical in [P1] [C1] and [P2] [C2])"},
    description="x + N(0, σ²) i.i.d. per pixel and channel on x = img/255, clipped to [0,1], "
                "quantised as ImageNet-C (np.uint8 truncation).",
    tags=("p1", "p2", "imagenet-c", "random"), batched=True,
)
def gaussian_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    x = to_float(img, np.float32)
    x += rng.standard_normal(img.shape, dtype=np.float32) * np.float32(params["sigma"])
    return to_uint8(x)


@register(
    "shot_noise", modality="image", category="noise",
    source=f"{P2} [C2] (default) / {P1} [C1] (variant schiappa_video); {IMAGENET_C}",
    severity_table=table("lam", [60, 25, 12, 5, 3]),
    variants={"schiappa_video": table("lam", [250, 100, 50, 30, 15])},
    default_variant="imagenet_c",
    variant_notes={
        "imagenet_c": "λ = 60/25/12/5/3, [P2] image benchmark = ImageNet-C",
        "schiappa_video": "λ = 250/100/50/30/15, [P1] video benchmark code [C1] (much milder)",
    },
    description="Poisson(λ·x)/λ on x = img/255 (smaller λ = stronger noise), clipped, quantised as ImageNet-C.",
    tags=("p1", "p2", "imagenet-c", "random"), batched=True,
)
def shot_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    lam = float(params["lam"])
    return to_uint8(rng.poisson(to_float(img) * lam) / lam)


@register(
    "impulse_noise", modality="image", category="noise",
    source=f"{P2} and {P1}; {IMAGENET_C} (skimage random_noise 's&p')",
    severity_table=table("amount", [0.03, 0.06, 0.09, 0.17, 0.27]),
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "amount = .03/.06/.09/.17/.27 (identical in [P1] and [P2])"},
    description="Salt & pepper with skimage random_noise(mode='s&p', amount=a, salt_vs_pepper=0.5) semantics: "
                "every element of the H×W×3 array is independently replaced w.p. a, by 255 (salt) or 0 (pepper) "
                "with equal odds; other elements are unchanged. Pure numpy.",
    tags=("p1", "p2", "imagenet-c", "random"), batched=True,
)
def impulse_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    a = float(params["amount"])
    u = rng.random(img.shape)  # one uniform per element: [0, a/2) pepper, [a/2, a) salt
    out = img.copy()
    out[u < a * 0.5] = 0
    out[(u >= a * 0.5) & (u < a)] = 255
    return out


@register(
    "speckle_noise", modality="image", category="noise",
    source=f"{P2} [C2] (default) / {P1} [C1] (variant schiappa_video); {IMAGENET_C}",
    severity_table=table("sigma", [0.15, 0.20, 0.35, 0.45, 0.60]),
    variants={"schiappa_video": table("sigma", [0.15, 0.20, 0.25, 0.30, 0.35])},
    default_variant="imagenet_c",
    variant_notes={
        "imagenet_c": "σ = .15/.20/.35/.45/.60, [P2] image benchmark = ImageNet-C (digest V06)",
        "schiappa_video": "σ = .15/.20/.25/.30/.35, [P1] video benchmark code [C1] (milder from s3 on; V05)",
    },
    description="x + x·N(0, σ²) i.i.d. per pixel and channel on x = img/255 (noise grows with intensity), "
                "clipped to [0,1], quantised as ImageNet-C (np.uint8 truncation).",
    tags=("p1", "p2", "imagenet-c", "random"), batched=True,
)
def speckle_noise(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    x = to_float(img, np.float32)
    noise = rng.standard_normal(img.shape, dtype=np.float32)
    noise *= np.float32(params["sigma"])
    x += x * noise
    return to_uint8(x)
