"""MLVP's appearance shifts, one pattern per video: Gaussian and impulse noise (1, 2), the ImageNet-C operators
fog, elastic and style with a fixed pattern (3, 5, 10), snow (4) and H.264 at MLVP's bitrate ladder (6). Part of
:mod:`robustlab.perturb.video.mlvp`."""
from __future__ import annotations

import numpy as np

from robustlab.perturb.image import _filters as F
from robustlab.perturb.registry import register, resolve_perturbation
from robustlab.perturb.video._common import fixed_pattern, frames_of, sub_seed
from robustlab.perturb.video.mlvp.common import _chunks, _to_uint8


# ---------------------------------------------------------------------------------------- 1, 2: noise

@register("mlvp_gaussian_noise")
def mlvp_gaussian_noise(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    noise = rng.standard_normal(v.shape[1:], dtype=np.float32) * np.float32(params["sigma"])
    out = np.empty_like(v)
    for a, b in _chunks(v):
        out[a:b] = _to_uint8(v[a:b].astype(np.float32) / np.float32(255.0) + noise)
    return out


@register("mlvp_impulse_noise")
def mlvp_impulse_noise(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    c = float(params["amount"])
    u = rng.random(v.shape[1:3])
    out = v.copy()
    out[:, u >= 1.0 - c / 2.0] = 255
    out[:, u < c / 2.0] = 0
    return out


# ------------------------------------------------------------------- 3, 5, 10: image operators, fixed pattern

def _numbers(obj) -> list[float]:
    if isinstance(obj, dict):
        return [n for k in sorted(obj) for n in _numbers(obj[k])]
    if isinstance(obj, (list, tuple)):
        return [n for o in obj for n in _numbers(o)]
    if isinstance(obj, (int, float, np.integer, np.floating)) and not isinstance(obj, bool):
        return [float(obj)]
    return []


def _contains(got: list[float], want: list[float]) -> bool:
    pool = list(got)
    for x in want:
        j = next((i for i, g in enumerate(pool) if abs(g - x) <= 1e-6 * max(1.0, abs(x))), None)
        if j is None:
            return False
        pool.pop(j)
    return True


def image_op_params(spec, severity: int, expected: list[float]) -> tuple[str, dict]:
    """(variant, params) of an image perturbation at ``severity``: the first variant (default first) whose
    parameters contain MLVP's numbers ``expected``, else the default variant."""
    for v in spec.variants:
        if _contains(_numbers(spec.variants[v][severity]), [float(e) for e in expected]):
            return v, dict(spec.variants[v][severity])
    return spec.default_variant, dict(spec.variants[spec.default_variant][severity])


def _fixed_image_op(names, x, params, rng):
    spec = resolve_perturbation(names)
    _, p = image_op_params(spec, int(params["image_severity"]), params["mlvp"])
    return fixed_pattern(spec.fn, frames_of(x), p, sub_seed(rng))


FOG_OPS = ("fog",)
ELASTIC_OPS = ("elastic_transform", "elastic")
STYLE_OPS = ("stylize", "style_transfer", "adain")


@register("mlvp_fog", requires_perturbations=(FOG_OPS,))
def mlvp_fog(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    return _fixed_image_op(FOG_OPS, x, params, rng)


@register("mlvp_elastic", requires_perturbations=(ELASTIC_OPS,))
def mlvp_elastic(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    return _fixed_image_op(ELASTIC_OPS, x, params, rng)


@register("mlvp_style", requires_perturbations=(STYLE_OPS,))
def mlvp_style(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    return _fixed_image_op(STYLE_OPS, x, params, rng)


# ------------------------------------------------------------------------------------------------ 4: snow

@register("mlvp_snow", requires=("opencv",))
def mlvp_snow(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    t, h, w, _ = v.shape
    curtain = _snow_curtain(t, h, w, params, rng)
    out = np.empty_like(v)
    for a, b in _chunks(v):
        out[a:b] = _snow_frames(v[a:b], np.arange(a, b), curtain, params)
    return out


def _snow_curtain(t: int, h: int, w: int, params: dict, rng: np.random.Generator) -> np.ndarray:
    """The falling curtain ((H + (T−1)·speed) × W float32 in [0, 1]); drawn from ``rng``, no pixels needed."""
    speed = int(params["fall_speed"])
    canvas_h = h + (t - 1) * speed
    canvas = rng.normal(float(params["loc"]), float(params["scale"]), size=(canvas_h, w, 1))
    canvas = F.clipped_zoom(canvas, float(params["zoom"]))[..., 0]
    canvas[canvas < float(params["threshold"])] = 0
    angle = float(rng.uniform(-135, -45))
    u8 = (np.clip(canvas, 0, 1) * 255).astype(np.uint8)  # MLVP goes through an 8-bit PNG
    taps = F.motion_taps(int(params["blur_radius"]), float(params["blur_sigma"]), angle, canvas_h, w)
    blurred = F.apply_taps(u8.astype(np.float32), taps)
    return (np.round(np.clip(blurred, 0, 255)) / np.float32(255)).astype(np.float32)


def _snow_frames(frames: np.ndarray, ts: np.ndarray, curtain: np.ndarray, params: dict) -> np.ndarray:
    """Frames (k×H×W×3 uint8) at clip positions ``ts`` under the curtain."""
    h = frames.shape[1]
    speed = int(params["fall_speed"])
    blend = np.float32(params["blend"])
    gw = np.array([0.299, 0.587, 0.114], np.float32)
    xf = frames.astype(np.float32) / np.float32(255.0)
    gray = (xf @ gw)[..., None]
    bright = blend * xf + (1 - blend) * np.maximum(xf, gray * np.float32(1.5) + np.float32(0.5))
    rows = (np.asarray(ts) * speed)[:, None] + np.arange(h)
    layer = curtain[rows]  # k×H×W
    snow = (layer + layer[:, ::-1, ::-1])[..., None]
    return _to_uint8(bright + snow)


# ------------------------------------------------------------------------------------------------ 6: H.264

@register("mlvp_h264", requires=("av",), keep_frames=True)
def mlvp_h264(x: np.ndarray, params: dict, rng: np.random.Generator, keep=None) -> np.ndarray:
    # imported here, not at the top: robustlab.io.media loads PIL and the file readers, and importing the video
    # perturbations loads numpy only (PyAV itself loads in encode_decode)
    from robustlab.io.media import encode_decode  # start-up: PIL and the file readers, only for this one

    return encode_decode(frames_of(x), params["codec"], bitrate=int(params["bitrate"]), fps=float(params["fps"]),
                         preset=params["preset"], keep=keep)
