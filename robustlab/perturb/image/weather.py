"""Weather perturbations (ImageNet-C family, [P2]): snow (V11), frost (V12), fog (V13), brightness (V14).

Frost needs ImageNet-C's frost textures. They ship inside the PyPI package ``imagecorruptions`` (1.1.2,
Apache-2.0, ``imagecorruptions/frost/frost{1..6}.{png,jpg}``); we locate its package directory without
importing it (its modules fail to import on NumPy 2 / without scikit-image) and read the images with OpenCV.
Without the package, ``frost`` is listed as unavailable with the reason (the registry's ``check`` hook,
re-evaluated whenever specs are listed).
"""
from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np

from robustlab.perturb.image._common import to_float, to_uint8
from robustlab.perturb.image import _filters as F
from robustlab.perturb.registry import register

# ------------------------------------------------------------------------------------------------ snow


@register("snow", requires=("opencv",))
def snow(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    h, w = img.shape[:2]
    x = to_float(img, np.float32)
    layer = rng.normal(float(params["loc"]), float(params["scale"]), size=(h, w, 1))
    layer = F.clipped_zoom(layer, float(params["zoom"]))[..., 0]
    layer[layer < float(params["threshold"])] = 0
    layer = (np.clip(layer, 0, 1) * 255).astype(np.uint8)  # PIL 'L' image fed to ImageMagick
    angle = rng.uniform(float(params["angle_low"]), float(params["angle_high"]))
    taps = F.motion_taps(int(params["radius"]), float(params["sigma"]), angle, h, w)
    blurred = F.apply_taps(layer.astype(np.float32), taps)
    layer = (np.round(np.clip(blurred, 0, 255)) / np.float32(255)).astype(np.float32)[..., None]
    b = np.float32(params["blend"])
    gray = (x @ np.array([0.299, 0.587, 0.114], dtype=np.float32))[..., None]  # cv2 RGB2GRAY weights
    x = b * x + (np.float32(1) - b) * np.maximum(x, gray * np.float32(1.5) + np.float32(0.5))
    return to_uint8(x + layer + layer[::-1, ::-1])


# ------------------------------------------------------------------------------------------------ frost

FROST_FILES = ("frost1.png", "frost2.png", "frost3.png", "frost4.jpg", "frost5.jpg", "frost6.jpg")


def frost_texture_dir() -> str | None:
    """``<site-packages>/imagecorruptions/frost`` if the package is installed (found, never imported)."""
    try:
        spec = importlib.util.find_spec("imagecorruptions")
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec else []:
        d = os.path.join(base, "frost")
        if os.path.isdir(d):
            return d
    return None


def frost_reason() -> str:
    d = frost_texture_dir()
    if d is None:
        return ("frost textures not found: install the `imagecorruptions` package, which ships ImageNet-C's frost "
                "images (pip install imagecorruptions==1.1.2 --no-deps)")
    missing = [f for f in FROST_FILES[:5] if not os.path.isfile(os.path.join(d, f))]
    if missing:
        return (f"frost textures missing in the imagecorruptions package's frost/ folder: {', '.join(missing)} "
                "(reinstall imagecorruptions==1.1.2)")
    return ""


@functools.lru_cache(maxsize=8)
def frost_texture(idx: int) -> np.ndarray:
    """Texture ``frost{idx+1}`` as RGB uint8 (cv2.imread BGR, reversed like the reference's [..., [2, 1, 0]])."""
    import cv2

    d = frost_texture_dir()
    if d is None:
        raise RuntimeError(frost_reason())
    path = os.path.join(d, FROST_FILES[idx])
    tex = cv2.imread(path, cv2.IMREAD_COLOR)
    if tex is None:
        raise RuntimeError(f"cannot read frost texture {path}")
    tex = np.ascontiguousarray(tex[..., ::-1])
    tex.setflags(write=False)
    return tex


@functools.lru_cache(maxsize=32)
def _covering_texture(idx: int, h: int, w: int) -> np.ndarray:
    """The texture, enlarged (cv2 INTER_CUBIC, like imagecorruptions) only if the image does not fit in it
    with at least one spare row and column (ImageNet-C's crop offset is randint(0, size - 224))."""
    import cv2

    tex = frost_texture(idx)
    th, tw = tex.shape[:2]
    if th > h and tw > w:
        return tex
    scale = max((h + 1) / th, (w + 1) / tw)
    size = (int(np.ceil(tw * scale)), int(np.ceil(th * scale)))
    big = cv2.resize(tex, size, interpolation=cv2.INTER_CUBIC)
    big.setflags(write=False)
    return big


def _frost_crops(n: int, h: int, w: int, crop: str, rng: np.random.Generator) -> np.ndarray:
    crops = np.empty((n, h, w, 3), dtype=np.uint8)
    for i in range(n):
        idx = int(rng.integers(5))  # ImageNet-C: np.random.randint(5), so frost6 is never used
        tex = _covering_texture(idx, h, w)
        th, tw = tex.shape[:2]
        if crop == "random":
            y0 = int(rng.integers(0, max(th - h, 1)))
            x0 = int(rng.integers(0, max(tw - w, 1)))
        else:  # "top_left"
            y0 = x0 = 0
        crops[i] = tex[y0:y0 + h, x0:x0 + w]
    return crops


@register("frost", requires=("opencv",), batched=True, check=lambda: frost_reason())
def frost(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    h, w = img.shape[-3:-1]
    lead = img.shape[:-3]
    n = int(np.prod(lead)) if lead else 1
    crops = _frost_crops(n, h, w, params.get("crop", "random"), rng).reshape(img.shape)
    out = float(params["img_weight"]) * img.astype(np.float64) + float(params["frost_weight"]) * crops
    return np.clip(out, 0, 255).astype(np.uint8)


# ------------------------------------------------------------------------------------------------ fog


@register("fog", batched=True, chunk_elements=1 << 20)
def fog(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    h, w = img.shape[-3:-1]
    lead = img.shape[:-3]
    c = float(params["strength"])
    size = max(2, F.next_power_of_2(max(h, w)))
    # the maps of all frames at once (the diamond-square's many small steps cost per call, not per frame) ...
    plasma = F.plasma_fractal(size, float(params["wibble_decay"]), rng, lead=lead, dtype=np.float32)
    if not lead:
        return _fog_frame(img, plasma, c)
    # ... and the per-pixel blend frame by frame, whose float intermediates then stay in the CPU cache
    frames = img.reshape((-1, h, w, 3))
    maps = plasma.reshape((-1, size, size))
    out = np.empty_like(frames)
    for i in range(len(frames)):
        out[i] = _fog_frame(frames[i], maps[i], c)
    return out.reshape(img.shape)


def _fog_frame(img: np.ndarray, plasma: np.ndarray, c: float) -> np.ndarray:
    h, w = img.shape[:2]
    x = to_float(img, np.float32)
    max_val = float(img.max()) / 255.0
    x += np.float32(c) * plasma[:h, :w, None]
    x *= np.float32(max_val / (max_val + c))
    return to_uint8(x)


# ------------------------------------------------------------------------------------------------ brightness

@register("brightness", batched=True)
def brightness(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    x = to_float(img)
    v = np.maximum(np.maximum(img[..., 0], img[..., 1]), img[..., 2])[..., None] / 255.0  # HSV value
    v_new = np.clip(v + float(params["delta_v"]), 0.0, 1.0)
    scale = np.divide(v_new, v, out=np.zeros_like(v), where=v > 0)
    out = np.where(v > 0, x * scale, v_new)
    return to_uint8(out)
