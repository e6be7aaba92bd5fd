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

from robustlab.perturb.image._common import IMAGECORRUPTIONS, IMAGENET_C, P2, table, to_float, to_uint8
from robustlab.perturb.image import _filters as F
from robustlab.perturb.registry import register

# ------------------------------------------------------------------------------------------------ snow

_SNOW = [(0.1, 0.3, 3, 0.5, 10, 4, 0.8), (0.2, 0.3, 2, 0.5, 12, 4, 0.7), (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
         (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65), (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55)]
_SNOW_KEYS = ("loc", "scale", "zoom", "threshold", "radius", "sigma", "blend")


@register(
    "snow", modality="image", category="weather",
    source=f"{P2} [C2]; {IMAGENET_C}",
    severity_table={s: dict(zip(_SNOW_KEYS, row), angle_low=-135.0, angle_high=-45.0)
                    for s, row in enumerate(_SNOW, start=1)},
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "(loc, scale, zoom, threshold, radius, σ, blend) = (.1,.3,3,.5,10,4,.8)/"
                                 "(.2,.3,2,.5,12,4,.7)/(.55,.3,4,.9,12,8,.7)/(.55,.3,4.5,.85,12,8,.65)/"
                                 "(.55,.3,2.5,.85,12,12,.55); angle ~ U(-135°, -45°)"},
    description="Snow layer N(loc, scale²) on the H×W grid, centre-zoomed by `zoom` (clipped_zoom), values < "
                "threshold set to 0, clipped and quantised to 8 bits, motion-blurred (radius, σ, angle ~ "
                "U(-135°,-45°)) with motion_blur's kernel — our stand-in for ImageNet-C's ImageMagick "
                "MotionBlurImage — and rounded to 8 bits as the reference's PNG round trip; then "
                "x <- b·x + (1-b)·max(x, 1.5·gray(x) + 0.5) and out = clip(x + snow + rot180(snow)). "
                "Size-aware (the snow field has the image's size; radius in pixels).",
    tags=("p2", "imagenet-c", "random"), requires=("opencv",),
)
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
_FROST = [(1.0, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75)]


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
        return f"frost textures missing in {d}: {', '.join(missing)} (reinstall imagecorruptions==1.1.2)"
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


@register(
    "frost", modality="image", category="weather",
    source=f"{P2} [C2]; {IMAGENET_C}; textures from {IMAGECORRUPTIONS}",
    variants={
        "imagenet_c": {s: {"img_weight": a, "frost_weight": b, "crop": "random"}
                       for s, (a, b) in enumerate(_FROST, start=1)},
        "qiu_code": {s: {"img_weight": a, "frost_weight": b, "crop": "top_left"}
                     for s, (a, b) in enumerate(_FROST, start=1)},
    },
    default_variant="imagenet_c",
    variant_notes={
        "imagenet_c": "(a, b) = (1,.4)/(.8,.6)/(.7,.7)/(.65,.7)/(.6,.75); texture frost1–5 and crop offset drawn "
                      "from the seed (ImageNet-C)",
        "qiu_code": "same weights, texture crop frost[0:h, 0:w] (top-left, no random offset) as [P2]'s dataset "
                    "scripts [C2] (which fail where the image is larger than the texture; we enlarge it)",
    },
    description="clip(a·img + b·frost_crop, 0, 255) on the 0–255 scale, truncated to uint8 as ImageNet-C. The "
                "texture is one of ImageNet-C's frost1–frost5 (randint(5): frost6 is never used), in pixel units "
                "at its native size, cropped to the image (random offset); it is enlarged (bicubic) only when the "
                "image is larger than the texture. Needs the `imagecorruptions` package's texture files.",
    tags=("p2", "imagenet-c", "random"), requires=("opencv",), batched=True, check=lambda: frost_reason(),
)
def frost(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    h, w = img.shape[-3:-1]
    lead = img.shape[:-3]
    n = int(np.prod(lead)) if lead else 1
    crops = _frost_crops(n, h, w, params.get("crop", "random"), rng).reshape(img.shape)
    out = float(params["img_weight"]) * img.astype(np.float64) + float(params["frost_weight"]) * crops
    return np.clip(out, 0, 255).astype(np.uint8)


# ------------------------------------------------------------------------------------------------ fog

_FOG = [(1.5, 2.0), (2.0, 2.0), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4)]


@register(
    "fog", modality="image", category="weather",
    source=f"{P2} [C2]; {IMAGENET_C}; size-aware map as {IMAGECORRUPTIONS}",
    severity_table={s: {"strength": c, "wibble_decay": d} for s, (c, d) in enumerate(_FOG, start=1)},
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "(c, d) = (1.5,2)/(2,2)/(2.5,1.7)/(2.5,1.5)/(3,1.4)"},
    description="x + c·plasma[:h, :w] on x = img/255, rescaled by max(x)/(max(x) + c), clipped, quantised as "
                "ImageNet-C. The plasma is ImageNet-C's diamond-square map (wibble decay d) of side the smallest "
                "power of two >= max(h, w) (256 for 224 px, as ImageNet-C; [C2] uses a fixed 512/1024/8192 per "
                "dataset). One independent map per video frame, vectorised.",
    tags=("p2", "imagenet-c", "random"), batched=True,
    chunk_elements=1 << 20,  # 6 frames at 224²: the small diamond-square steps hold the GIL; bigger calls thread
)
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

@register(
    "brightness", modality="image", category="weather",
    source=f"{P2} [C2]; {IMAGENET_C}",
    severity_table=table("delta_v", [0.1, 0.2, 0.3, 0.4, 0.5]),
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "c = .1/.2/.3/.4/.5 added to HSV value"},
    description="skimage rgb2hsv -> V <- clip(V + c, 0, 1) -> hsv2rgb on x = img/255, in closed form: with hue "
                "and saturation fixed every channel scales by V'/V (black pixels become gray V'); clipped, "
                "quantised as ImageNet-C. Deterministic, vectorised over video frames.",
    tags=("p2", "imagenet-c", "deterministic"), batched=True,
)
def brightness(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    x = to_float(img)
    v = np.maximum(np.maximum(img[..., 0], img[..., 1]), img[..., 2])[..., None] / 255.0  # HSV value
    v_new = np.clip(v + float(params["delta_v"]), 0.0, 1.0)
    scale = np.divide(v_new, v, out=np.zeros_like(v), where=v > 0)
    out = np.where(v > 0, x * scale, v_new)
    return to_uint8(out)
