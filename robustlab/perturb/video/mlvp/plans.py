"""MLVP's lazy frame plans (frame t of the perturbed clip from the input frames it needs). Part of
:mod:`robustlab.perturb.video.mlvp`."""
from __future__ import annotations

import numpy as np

from robustlab.perturb.lazy import FramePlan, index_plan, lazy_plan, per_frame_plan
from robustlab.perturb.registry import resolve_perturbation
from robustlab.perturb.video._common import fixed_pattern, sub_seed
from robustlab.perturb.video.mlvp.appearance import (
    ELASTIC_OPS, FOG_OPS, STYLE_OPS, _snow_curtain, _snow_frames, image_op_params,
)
from robustlab.perturb.video.mlvp.common import _to_uint8
from robustlab.perturb.video.mlvp.content import _blacken, occluder_rects, occlusion_boxes, scramble_indices
from robustlab.perturb.video.mlvp.motion import _motion_blur_frame, _motion_mask, mlvp_disk_kernel

# ---------------------------------------------------------------------------------------------- lazy plans
# Frame t from input frame t (fixed patterns, the curtain, the occluders: drawn before any pixel) or from frames
# t−1 and t (the motion-aware blurs' optical flow). H.264 and event insertion need the whole clip: no plan.


@lazy_plan("mlvp_gaussian_noise")
def _gaussian_plan(shape, params, rng):
    noise = rng.standard_normal(shape[1:], dtype=np.float32) * np.float32(params["sigma"])
    return per_frame_plan(shape[0], lambda f, t: _to_uint8(f.astype(np.float32) / np.float32(255.0) + noise))


@lazy_plan("mlvp_impulse_noise")
def _impulse_plan(shape, params, rng):
    c = float(params["amount"])
    u = rng.random(shape[1:3])
    hi, lo = u >= 1.0 - c / 2.0, u < c / 2.0

    def one(f, t):
        o = f.copy()
        o[hi] = 255
        o[lo] = 0
        return o

    return per_frame_plan(shape[0], one)


def _fixed_plan(names):
    def plan(shape, params, rng):
        spec = resolve_perturbation(names)
        _, p = image_op_params(spec, int(params["image_severity"]), params["mlvp"])
        seed = sub_seed(rng)
        return per_frame_plan(shape[0], lambda f, t: fixed_pattern(spec.fn, f[None], p, seed)[0])

    return plan


lazy_plan("mlvp_fog")(_fixed_plan(FOG_OPS))
lazy_plan("mlvp_elastic")(_fixed_plan(ELASTIC_OPS))
lazy_plan("mlvp_style")(_fixed_plan(STYLE_OPS))


@lazy_plan("mlvp_snow")
def _snow_plan(shape, params, rng):
    curtain = _snow_curtain(shape[0], shape[1], shape[2], params, rng)
    return per_frame_plan(shape[0], lambda f, t: _snow_frames(f[None], np.array([t]), curtain, params)[0])


@lazy_plan("mlvp_occlusion")
def _occlusion_plan(shape, params, rng):
    t, h, w = shape[:3]
    rects = occluder_rects(t, h, w, occlusion_boxes(t, h, w, params), float(params["ratio"]), rng)
    return per_frame_plan(t, lambda f, i: _blacken(f.copy(), rects[i]))


def _flow(get, t: int) -> np.ndarray:
    import cv2

    f = get(t)
    if t == 0:
        return np.zeros(f.shape[:2] + (2,), np.float32)
    g0, g1 = (cv2.cvtColor(get(i), cv2.COLOR_RGB2GRAY) for i in (t - 1, t))
    return cv2.calcOpticalFlowFarneback(g0, g1, None, pyr_scale=0.5, levels=3, winsize=15, iterations=3, poly_n=5,
                                        poly_sigma=1.2, flags=0)


def _neighbours(t: int):
    return (t - 1, t) if t > 0 else (0,)


@lazy_plan("mlvp_motion_blur")
def _motion_blur_plan(shape, params, rng):
    local = params["direction"] == "local"
    short, long = int(params["short"]), int(params["long"])
    return FramePlan(shape[0], _neighbours,
                     lambda get, t: _motion_blur_frame(get(t), _flow(get, t), short, long, local))


@lazy_plan("mlvp_defocus")
def _defocus_plan(shape, params, rng):
    import cv2

    r = int(params["radius"])
    k_small = mlvp_disk_kernel(r, float(params["alias_blur"]))
    k_large = mlvp_disk_kernel(r * int(params["motion_factor"]), float(params["alias_blur"]))

    def one(get, t):
        f = get(t)
        _, high = _motion_mask(_flow(get, t))
        return np.where(high[..., None], cv2.filter2D(f, -1, k_large), cv2.filter2D(f, -1, k_small))

    return FramePlan(shape[0], _neighbours, one)


@lazy_plan("mlvp_temporal_scrambling")
def _scrambling_plan(shape, params, rng):
    return index_plan(scramble_indices(shape[0], params, params["scramble"], rng))
