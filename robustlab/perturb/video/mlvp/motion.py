"""MLVP's motion-aware blurs (7, 8): optical flow, the motion-blur and disk kernels, motion blur and defocus.
Part of :mod:`robustlab.perturb.video.mlvp`."""
from __future__ import annotations

import functools
import math

import numpy as np

from robustlab.perturb.registry import register
from robustlab.perturb.video._common import frames_of, parallel_map


# ------------------------------------------------------------------------------- 7, 8: motion-aware blurs

def optical_flows(v: np.ndarray) -> list[np.ndarray]:
    """Farnebäck flow from frame t−1 to frame t (MLVP's parameters), zero for frame 0. H×W×2 float32 each."""
    import cv2

    gray = [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in v]

    def flow(i: int) -> np.ndarray:
        if i == 0:
            return np.zeros(v.shape[1:3] + (2,), np.float32)
        return cv2.calcOpticalFlowFarneback(gray[i - 1], gray[i], None, pyr_scale=0.5, levels=3, winsize=15,
                                            iterations=3, poly_n=5, poly_sigma=1.2, flags=0)

    return parallel_map(flow, list(range(len(v))))


@functools.lru_cache(maxsize=256)
def linear_motion_kernel(angle: float, length: int) -> np.ndarray:
    """MLVP's PSF: a horizontal line through the centre row, rotated by ``angle`` degrees (cv2, counter-clockwise
    as displayed) about (length/2, length/2), normalised. Read-only float32."""
    import cv2

    k = np.zeros((length, length), np.float32)
    k[length // 2, :] = 1.0
    rot = cv2.getRotationMatrix2D((length / 2, length / 2), float(angle), 1.0)
    k = cv2.warpAffine(k, rot, (length, length))
    k /= k.sum()
    k.setflags(write=False)
    return k


@functools.lru_cache(maxsize=64)
def mlvp_disk_kernel(radius: int, alias_blur: float = 0.1) -> np.ndarray:
    """MLVP's ``_disk_kernel``: disk on the grid [−r..r] (not ImageNet-C's [−8..8]), normalised, then
    cv2.GaussianBlur with ksize 3 (r ≤ 8) or 5 and σ = 0.1. Read-only float32."""
    import cv2

    if radius <= 0:
        k = np.ones((1, 1), np.float32)
    else:
        grid = np.arange(-radius, radius + 1)
        xx, yy = np.meshgrid(grid, grid)
        k = ((xx ** 2 + yy ** 2) <= radius ** 2).astype(np.float32)
        k /= k.sum()
        ks = (3, 3) if radius <= 8 else (5, 5)
        k = cv2.GaussianBlur(k, ks, sigmaX=alias_blur)
    k.setflags(write=False)
    return k


def _motion_mask(flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mag = np.linalg.norm(flow, axis=-1)
    return mag, mag >= np.percentile(mag, 75)  # frame 0 (zero flow): everything counts as high motion, as MLVP


N_DIRECTIONS = 8  # local mode: flow directions quantised to 8 line orientations (22.5° apart, mod 180°)


def _motion_blur_frame(f: np.ndarray, flow: np.ndarray, short: int, long: int, local: bool) -> np.ndarray:
    import cv2

    _, high = _motion_mask(flow)
    if not local:  # [code] one direction per frame: the mean flow, angle as atan2(fy, fx) in degrees
        mean = flow.reshape(-1, 2).mean(axis=0)
        angle = math.degrees(math.atan2(float(mean[1]), float(mean[0]) + 1e-8))
        a = cv2.filter2D(f, -1, linear_motion_kernel(angle, short))
        b = cv2.filter2D(f, -1, linear_motion_kernel(angle, long))
        return np.where(high[..., None], b, a)
    # [paper] local motion vectors; screen angle of (fx, fy) with y pointing down is atan2(−fy, fx)
    ang = np.degrees(np.arctan2(-flow[..., 1], flow[..., 0])) % 180.0
    step = 180.0 / N_DIRECTIONS
    bins = np.rint(ang / step).astype(np.int64) % N_DIRECTIONS
    out = np.empty_like(f)
    for bi in np.unique(bins):
        sel = bins == bi
        for length, m in ((short, sel & ~high), (long, sel & high)):
            if m.any():
                out[m] = cv2.filter2D(f, -1, linear_motion_kernel(float(bi * step), length))[m]
    return out


@register("mlvp_motion_blur", requires=("opencv",))
def mlvp_motion_blur(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    local = params["direction"] == "local"
    flows = optical_flows(v)
    short, long = int(params["short"]), int(params["long"])
    return np.stack(parallel_map(lambda i: _motion_blur_frame(v[i], flows[i], short, long, local),
                                 list(range(len(v)))))


@register("mlvp_defocus", requires=("opencv",))
def mlvp_defocus(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    import cv2

    v = frames_of(x)
    r = int(params["radius"])
    k_small = mlvp_disk_kernel(r, float(params["alias_blur"]))
    k_large = mlvp_disk_kernel(r * int(params["motion_factor"]), float(params["alias_blur"]))
    flows = optical_flows(v)

    def one(i: int) -> np.ndarray:
        _, high = _motion_mask(flows[i])
        return np.where(high[..., None], cv2.filter2D(v[i], -1, k_large), cv2.filter2D(v[i], -1, k_small))

    return np.stack(parallel_map(one, list(range(len(v)))))
