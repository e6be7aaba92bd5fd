"""MLVP's appearance shifts, one pattern per video: Gaussian and impulse noise (1, 2), the ImageNet-C operators
fog, elastic and style with a fixed pattern (3, 5, 10), snow (4) and H.264 at MLVP's bitrate ladder (6). Part of
:mod:`robustlab.perturb.video.mlvp`."""
from __future__ import annotations

import numpy as np

from robustlab.perturb.image import _filters as F
from robustlab.perturb.registry import register, resolve_perturbation
from robustlab.perturb.video._common import fixed_pattern, frames_of, sub_seed
from robustlab.perturb.video.mlvp.common import SRC, _chunks, _tags, _to_uint8


# ---------------------------------------------------------------------------------------- 1, 2: noise

_SIGMAS = [0.08, 0.12, 0.18, 0.26, 0.38]


@register(
    "mlvp_gaussian_noise", modality="video", category="noise", source=SRC,
    severity_table={s: {"sigma": v} for s, v in enumerate(_SIGMAS, 1)}, default_variant="mlvp",
    variant_notes={"mlvp": "σ = .08/.12/.18/.26/.38 (Table 37 #1 = Qiu et al.); one pattern per video"},
    description="Temporally fixed Gaussian noise: ONE N(0, σ²) tensor of shape H×W×3 is drawn per video and added "
                "to every frame (x = frame/255), clipped, quantised by truncation. Frame t equals the image "
                "perturbation gaussian_noise on frame t with the same seed (same draws); the per-frame-fresh "
                "version is gaussian_noise applied to the video.",
    tags=_tags("low", "random", "fixed-pattern"),
)
def mlvp_gaussian_noise(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    noise = rng.standard_normal(v.shape[1:], dtype=np.float32) * np.float32(params["sigma"])
    out = np.empty_like(v)
    for a, b in _chunks(v):
        out[a:b] = _to_uint8(v[a:b].astype(np.float32) / np.float32(255.0) + noise)
    return out


@register(
    "mlvp_impulse_noise", modality="video", category="noise", source=SRC,
    severity_table={s: {"amount": v} for s, v in enumerate([0.03, 0.06, 0.09, 0.17, 0.27], 1)},
    default_variant="mlvp",
    variant_notes={"mlvp": "fraction of pixels c = .03/.06/.09/.17/.27; one mask per video"},
    description="Temporally fixed salt & pepper: one mask u ~ U(0,1) of shape H×W per video; pixels with "
                "u ≥ 1 − c/2 become white, u < c/2 black, all three channels, on every frame (unlike the image "
                "impulse_noise, which flips channels independently and redraws per frame).",
    tags=_tags("low", "random", "fixed-pattern"),
)
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


def _mlvp_table(values) -> dict:
    return {s: {"mlvp": list(v), "image_severity": s} for s, v in enumerate(values, 1)}


FOG_OPS = ("fog",)
ELASTIC_OPS = ("elastic_transform", "elastic")
STYLE_OPS = ("stylize", "style_transfer", "adain")


@register(
    "mlvp_fog", modality="video", category="weather", source=SRC,
    severity_table=_mlvp_table([(1.5, 2), (2, 2), (2.5, 1.7), (2.5, 1.5), (3, 1.4)]), default_variant="mlvp",
    variant_notes={"mlvp": "(fog intensity c, wibble decay d) = (1.5,2)/(2,2)/(2.5,1.7)/(2.5,1.5)/(3,1.4); one "
                           "plasma fractal per video"},
    description="Temporally fixed fog: the registered image perturbation 'fog' (diamond-square plasma fractal, "
                "x·max/(max+c) rescale with the per-frame max) on every frame with the SAME fractal (identically "
                "seeded generator per frame). Params: MLVP's (c, d) and the image op's severity that has them.",
    tags=_tags("low", "random", "fixed-pattern"), requires_perturbations=(FOG_OPS,),
)
def mlvp_fog(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    return _fixed_image_op(FOG_OPS, x, params, rng)


_ELASTIC = [(244 * 2, 244 * 0.7, 244 * 0.1), (244 * 2, 244 * 0.08, 244 * 0.2), (244 * 0.05, 244 * 0.01, 244 * 0.02),
            (244 * 0.07, 244 * 0.01, 244 * 0.02), (244 * 0.12, 244 * 0.01, 244 * 0.02)]


@register(
    "mlvp_elastic", modality="video", category="digital", source=SRC,
    severity_table=_mlvp_table(_ELASTIC), default_variant="mlvp",
    variant_notes={"mlvp": "(alpha, sigma, affine) = 244×(2,.7,.1)/(2,.08,.2)/(.05,.01,.02)/(.07,.01,.02)/"
                           "(.12,.01,.02) ('244' as in paper and code); one affine + one displacement field per "
                           "video. Severities 1–2 have far larger alpha than 3–5: difficulty is not monotonic"},
    description="Temporally fixed elastic distortion: the registered image perturbation 'elastic_transform' (random "
                "affine, then a Gaussian-smoothed U(−1,1) displacement field × alpha, bilinear, reflect) on every "
                "frame with the SAME affine warp and field. Pixel constants as the image op: MLVP's raw values at "
                "224 px (MLVP applies them unscaled at native resolution; the image op scales them with "
                "min(H, W)/224 so a severity looks the same at any size).",
    tags=_tags("low", "random", "fixed-pattern"), requires_perturbations=(ELASTIC_OPS,),
)
def mlvp_elastic(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    return _fixed_image_op(ELASTIC_OPS, x, params, rng)


@register(
    "mlvp_style", modality="video", category="stylize", source=SRC,
    severity_table=_mlvp_table([(0.2,), (0.4,), (0.6,), (0.8,), (1.0,)]), default_variant="mlvp",
    variant_notes={"mlvp": "AdaIN alpha = .2/.4/.6/.8/1.0; ONE random style image per video"},
    description="AdaIN style transfer (VGG-normalised encoder to relu4_1 + decoder) with one style image for the "
                "whole video: the registered image perturbation 'stylize' on every frame with an identically "
                "seeded generator (same style image). Needs the AdaIN weights and style images of that op.",
    tags=_tags("high", "random", "fixed-pattern", "needs-weights"), requires_perturbations=(STYLE_OPS,),
)
def mlvp_style(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    return _fixed_image_op(STYLE_OPS, x, params, rng)


# ------------------------------------------------------------------------------------------------ 4: snow

_SNOW = [(0.1, 0.3, 3, 0.5, 10, 4, 0.8), (0.2, 0.3, 2, 0.5, 12, 4, 0.7), (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
         (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65), (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55)]
_SNOW_KEYS = ("loc", "scale", "zoom", "threshold", "blur_radius", "blur_sigma", "blend")


@register(
    "mlvp_snow", modality="video", category="weather", source=SRC,
    severity_table={s: dict(zip(_SNOW_KEYS, v), fall_speed=3) for s, v in enumerate(_SNOW, 1)},
    default_variant="mlvp",
    variant_notes={"mlvp": "(loc, scale, zoom, threshold, blur radius, blur sigma, blend) = Qiu et al.'s snow "
                           "table; curtain falls 3 px per frame; one blur angle per video"},
    description="Falling snow: one snow curtain of height H + 3(T−1) per video (N(loc, scale) noise, clipped zoom, "
                "values < threshold set to 0, 8-bit, motion-blurred along one angle ~ U(−135°, −45°) with the "
                "image 'snow' op's kernel, imagecorruptions' stand-in for ImageMagick's MotionBlur, rounded to 8 "
                "bits); frame t shows rows [3t, 3t+H) plus their 180° rotation over blend·x + (1−blend)·max(x, "
                "1.5·gray(x) + 0.5). The curtain is built here with the image module's filters (the image 'snow' "
                "op draws an H×W layer per call, which cannot scroll).",
    tags=_tags("low", "random", "temporal-pattern"), requires=("opencv",),
)
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

@register(
    "mlvp_h264", modality="video", category="digital", source=SRC,
    severity_table={s: {"codec": "libx264", "bitrate": b, "preset": "fast", "fps": 30}
                    for s, b in enumerate([500_000, 250_000, 100_000, 50_000, 25_000], 1)},
    default_variant="mlvp",
    variant_notes={"mlvp": "target bitrate 500k/250k/100k/50k/25k bps, libx264 -preset fast (Algorithm 1)"},
    description="Real H.264: the clip encoded with libx264 (one-pass ABR at the target bitrate, preset fast, "
                "frames assumed at 30 fps, which sets the bits per frame) and decoded again, in memory via PyAV. "
                "MLVP encodes the full-length source video and then samples 12 frames; here the given frames are "
                "the stream. Deterministic (one x264 thread, SIMD pinned; see robustlab.io.media).",
    tags=_tags("low", "codec", "deterministic"), requires=("av",), keep_frames=True,
)
def mlvp_h264(x: np.ndarray, params: dict, rng: np.random.Generator, keep=None) -> np.ndarray:
    # imported here, not at the top: robustlab.io.media loads PIL and the file readers, and importing the video
    # perturbations loads numpy only (PyAV itself loads in encode_decode)
    from robustlab.io.media import encode_decode  # start-up: PIL and the file readers, only for this one

    return encode_decode(frames_of(x), params["codec"], bitrate=int(params["bitrate"]), fps=float(params["fps"]),
                         preset=params["preset"], keep=keep)
