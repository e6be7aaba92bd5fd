"""Noise perturbations of the full catalogue: speckle_noise (V05/V06).

Kept apart from ``noise.py`` only because the v1 listing order (the first six image perturbations) is part of
the tested interface; registration order is import order.
"""
from __future__ import annotations

import numpy as np

from robustlab.perturb.image._common import IMAGENET_C, P1, P2, table, to_float, to_uint8
from robustlab.perturb.registry import register


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
