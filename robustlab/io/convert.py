"""Torch-free conversion of any image-like input to H×W×3 uint8 (used by perturbations and models alike)."""
from __future__ import annotations

import numpy as np
from PIL import Image


def to_uint8_rgb(img) -> np.ndarray:
    """Accept PIL images and arrays (gray, RGB, RGBA, 16-bit, float in [0,1]); return H×W×3 uint8.

    Arrays: H×W, H×W×1, H×W×3 or H×W×4 (RGBA is composited on white) of uint8, uint16 (scaled), finite floats
    (clipped to [0, 1], scaled), bool (0 / 255) or other integers (clipped to 0..255). Anything else -- another
    shape or channel count, NaN or infinite floats, a dtype that does not hold real numbers (complex, str, bytes,
    datetime, objects that are not numbers) -- is a ValueError with a one-line message."""
    if isinstance(img, Image.Image):
        if img.mode in ("I;16", "I;16B", "I;16L", "I"):
            arr = np.asarray(img).astype(np.float64)
            mx = 65535.0 if arr.max() > 255 else 255.0
            img = Image.fromarray(np.clip(arr / mx * 255.0 + 0.5, 0, 255).astype(np.uint8))
        img = img.convert("RGB")
        return np.asarray(img, dtype=np.uint8).copy()
    arr = np.asarray(img)
    if arr.dtype.kind not in "biufO":
        raise ValueError(f"an image array must hold numbers (bool, integer or float), got dtype {arr.dtype}")
    if arr.ndim == 2:
        arr = arr[..., None]
    if arr.ndim != 3:
        raise ValueError(f"an image must be H×W, H×W×1, H×W×3 or H×W×4, got shape {arr.shape}")
    if arr.dtype == np.uint16:
        arr = (arr.astype(np.float64) / 65535.0 * 255.0 + 0.5).astype(np.uint8)
    elif arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            bad = int((~np.isfinite(arr)).sum())
            raise ValueError(f"the image has {bad} NaN or infinite value(s) of {arr.size}: float images must be "
                             "finite, in [0, 1]")
        arr = (np.clip(arr, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    elif arr.dtype == bool:
        arr = arr.astype(np.uint8) * 255
    elif arr.dtype != np.uint8:
        try:
            arr = np.clip(arr, 0, 255).astype(np.uint8)
        except (TypeError, ValueError) as e:  # an object array of things that are not numbers
            raise ValueError(f"an image array must hold numbers (bool, integer or float), got dtype {arr.dtype} "
                             f"holding {type(arr.flat[0]).__name__ if arr.size else 'nothing'}") from e
    c = arr.shape[2]
    if c == 1:
        arr = np.repeat(arr, 3, axis=2)
    elif c == 4:
        a = arr[..., 3:4].astype(np.float32) / 255.0  # composite on white
        arr = (arr[..., :3] * a + 255.0 * (1 - a) + 0.5).astype(np.uint8)
    elif c != 3:
        raise ValueError(f"an image must have 1, 3 or 4 channels, got {c}")
    return np.ascontiguousarray(arr)
