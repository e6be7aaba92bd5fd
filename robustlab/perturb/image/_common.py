"""Helpers shared by the ImageNet-C-family image perturbations."""
from __future__ import annotations

import numpy as np

IMAGENET_C = "Hendrycks & Dietterich 2019 (ImageNet-C)"
P1 = "Schiappa et al. 2022 [P1]"
P2 = "Qiu et al. 2022 [P2]"
IMAGECORRUPTIONS = "imagecorruptions 1.1.2 (bethgelab, Apache-2.0)"


def to_float(img: np.ndarray, dtype=np.float64) -> np.ndarray:
    """uint8 -> [0, 1] float, like ImageNet-C's ``np.array(x) / 255.``."""
    return img.astype(dtype) / dtype(255.0)


def to_uint8(x: np.ndarray) -> np.ndarray:
    """``np.uint8(np.clip(x, 0, 1) * 255)`` exactly as ImageNet-C quantises (truncation, not rounding)."""
    return (np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)


def table(key: str, values) -> dict:
    """{1..5: {key: value}} from five values."""
    return {s: {key: v} for s, v in enumerate(values, start=1)}
