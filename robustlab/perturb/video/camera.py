"""[P1] Schiappa et al. camera perturbations: static_rotate, rotate (per-frame wobble), translate (camera shake).

They are spatial, so they also accept a single image (a 1-frame video: one rotation, one crop).

Rotation is PIL's ``Image.rotate(deg)`` as in [C1]: counter-clockwise about the centre, nearest neighbour, same
canvas, black corners. It is vectorised exactly: PIL rotates a 32-bit *index image* once per distinct angle and
every frame is gathered through that map, which is bit-identical to rotating each frame with PIL (tested).
"""
from __future__ import annotations

import functools

import numpy as np

from robustlab.perturb.registry import register
from robustlab.perturb.video._common import frames_of

@functools.lru_cache(maxsize=64)
def rotation_map(h: int, w: int, angle: float) -> np.ndarray:
    """Flat source index + 1 for every output pixel of PIL ``rotate(angle)`` (0 = outside: black). Read-only."""
    from PIL import Image

    idx = (np.arange(h * w, dtype=np.int32) + 1).reshape(h, w)
    out = np.asarray(Image.fromarray(idx, mode="I").rotate(float(angle)), dtype=np.int64)
    out.setflags(write=False)
    return out


def rotate_frames(frames: np.ndarray, angles) -> np.ndarray:
    """Rotate frame t by angles[t] degrees (PIL semantics); one PIL call per distinct angle."""
    t, h, w, _ = frames.shape
    angles = np.broadcast_to(np.asarray(angles, dtype=np.float64), (t,))
    out = np.empty_like(frames)
    flat = frames.reshape(t, h * w, 3)
    for a in np.unique(angles):
        sel = np.nonzero(angles == a)[0]
        m = rotation_map(h, w, float(a))
        src = flat[:, np.maximum(m - 1, 0).ravel()] if len(sel) == t else flat[sel][:, np.maximum(m - 1, 0).ravel()]
        src = src.reshape(len(sel), h, w, 3)
        src[:, m == 0] = 0
        out[sel] = src
    return out


@register("static_rotate", applies_to=("image", "video"), requires=("pillow",))
def static_rotate(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    return rotate_frames(frames_of(x), float(params["angle"]))


@register("rotate", applies_to=("image", "video"), requires=("pillow",))
def rotate(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    m = int(params["max_angle"])
    return rotate_frames(v, rng.integers(-m, m + 1, size=len(v)))


# ------------------------------------------------------------------------------------------------ translate

def _resize_frames(frames: np.ndarray, h: int, w: int) -> np.ndarray:
    import cv2

    if frames.shape[1:3] == (h, w):
        return frames
    return np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_LINEAR) for f in frames])


def crop_frames(frames: np.ndarray, dy, dx, out_h: int, out_w: int) -> np.ndarray:
    """out[t] = frames[t, dy[t]:dy[t]+out_h, dx[t]:dx[t]+out_w], black where the window leaves the frame."""
    t, h, w, _ = frames.shape
    dy = np.broadcast_to(np.asarray(dy, dtype=np.int64), (t,))
    dx = np.broadcast_to(np.asarray(dx, dtype=np.int64), (t,))
    ph = max(0, int(dy.max()) + out_h - h)
    pw = max(0, int(dx.max()) + out_w - w)
    src = np.pad(frames, ((0, 0), (0, ph), (0, pw), (0, 0))) if (ph or pw) else frames
    rows = dy[:, None] + np.arange(out_h)
    cols = dx[:, None] + np.arange(out_w)
    return np.ascontiguousarray(src[np.arange(t)[:, None, None], rows[:, :, None], cols[:, None, :]])


_SCALE = 256 / 224


@register("translate", output_note="size_aware and on_the_fly keep T×H×W; schiappa_offline returns T×224×224",
          applies_to=("image", "video"), requires=("opencv",))
def translate(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    t, h, w, _ = v.shape
    m = int(params["max_offset"])
    mode = params["mode"]
    if mode == "crop224":
        nh, nw = (256, int(w * 256 / h)) if w > h else (int(h * 256 / w), 256)
        off = rng.integers(0, m + 1, size=(t, 2))  # [C1]: x = randint(0, 8s) rows, then y cols, per frame
        return crop_frames(_resize_frames(v, nh, nw), off[:, 0], off[:, 1], 224, 224)
    unit = min(h, w) / 224.0
    if mode == "clip_shift":
        off = rng.integers(0, m + 1, size=2)
        dy, dx = (np.round(off * unit).astype(np.int64))
        return crop_frames(v, dy, dx, h, w)
    off = np.round(rng.integers(0, m + 1, size=(t, 2)) * unit).astype(np.int64)
    nh, nw = max(h, int(round(h * _SCALE))), max(w, int(round(w * _SCALE)))
    return crop_frames(_resize_frames(v, nh, nw), off[:, 0], off[:, 1], h, w)


# --------------------------------------------------------------- lazy plans: frame t from input frame t alone

from robustlab.perturb.lazy import per_frame_plan, lazy_plan  # noqa: E402


@lazy_plan("static_rotate")
def _static_rotate_plan(shape, params, rng):
    a = float(params["angle"])
    return per_frame_plan(shape[0], lambda f, t: rotate_frames(f[None], a)[0])


@lazy_plan("rotate")
def _rotate_plan(shape, params, rng):
    m = int(params["max_angle"])
    angles = rng.integers(-m, m + 1, size=shape[0])
    return per_frame_plan(shape[0], lambda f, t: rotate_frames(f[None], angles[t])[0])


@lazy_plan("translate")
def _translate_plan(shape, params, rng):
    t, h, w = shape[:3]
    m = int(params["max_offset"])
    mode = params["mode"]
    if mode == "crop224":
        nh, nw = (256, int(w * 256 / h)) if w > h else (int(h * 256 / w), 256)
        off = rng.integers(0, m + 1, size=(t, 2))
        return per_frame_plan(t, lambda f, i: crop_frames(_resize_frames(f[None], nh, nw), off[i, 0], off[i, 1],
                                                          224, 224)[0])
    unit = min(h, w) / 224.0
    if mode == "clip_shift":
        dy, dx = np.round(rng.integers(0, m + 1, size=2) * unit).astype(np.int64)
        return per_frame_plan(t, lambda f, i: crop_frames(f[None], dy, dx, h, w)[0])
    off = np.round(rng.integers(0, m + 1, size=(t, 2)) * unit).astype(np.int64)
    nh, nw = max(h, int(round(h * _SCALE))), max(w, int(round(w * _SCALE)))
    return per_frame_plan(t, lambda f, i: crop_frames(_resize_frames(f[None], nh, nw), off[i, 0], off[i, 1],
                                                      h, w)[0])
