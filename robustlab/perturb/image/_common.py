"""Helpers shared by the ImageNet-C-family image perturbations."""
from __future__ import annotations

import numpy as np


def to_float(img: np.ndarray, dtype=np.float64) -> np.ndarray:
    """uint8 -> [0, 1] float, like ImageNet-C's ``np.array(x) / 255.``."""
    return img.astype(dtype) / dtype(255.0)


def to_uint8(x: np.ndarray) -> np.ndarray:
    """``np.uint8(np.clip(x, 0, 1) * 255)`` exactly as ImageNet-C quantises (truncation, not rounding)."""
    return (np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)
