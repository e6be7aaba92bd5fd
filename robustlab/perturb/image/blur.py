"""Blur perturbations (ImageNet-C family): defocus_blur, glass_blur (V10), motion_blur (V08), zoom_blur (V09).

Pixel-unit parameters (defocus radius, glass displacement, motion radius) are the papers' values for ~224 px
images and are applied unchanged at any size (digest D05); zoom factors are relative by definition. Their listing
order is declared in :mod:`robustlab.perturb.table`, not by this file's layout.
"""
from __future__ import annotations

import functools

import numpy as np

from robustlab.perturb.image._common import to_float, to_uint8
from robustlab.perturb.image import _filters as F
from robustlab.perturb.registry import register


@functools.lru_cache(maxsize=16)
def disk_kernel(radius: int, alias_blur: float) -> np.ndarray:
    """ImageNet-C's anti-aliased disk: grid [-8..8] if r <= 8 else [-r..r], normalised to sum 1, then
    cv2.GaussianBlur with ksize (3,3) if r <= 8 else (5,5) and sigmaX = alias_blur. float32, read-only."""
    import cv2

    if radius <= 8:
        grid, ksize = np.arange(-8, 8 + 1), (3, 3)
    else:
        grid, ksize = np.arange(-radius, radius + 1), (5, 5)
    xx, yy = np.meshgrid(grid, grid)
    disk = np.array((xx ** 2 + yy ** 2) <= radius ** 2, dtype=np.float32)
    disk /= np.sum(disk)
    k = cv2.GaussianBlur(disk, ksize=ksize, sigmaX=alias_blur)
    k.setflags(write=False)
    return k


@register("defocus_blur", requires=("opencv",))
def defocus_blur(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    import cv2

    kernel = disk_kernel(int(params["radius"]), float(params["alias_blur"]))
    # filter2D applies the 2-D kernel to each channel independently == ImageNet-C's per-channel loop
    return to_uint8(cv2.filter2D(to_float(img), -1, kernel))


# ------------------------------------------------------------------------------------------------ glass blur

def glass_scan(h: int, w: int, delta: int, scan: str = "full") -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns visited by one pass of ImageNet-C's loop, in visit order:
    ``for h in range(H - δ, δ, -1): for w in range(W - δ, δ, -1)``.

    ``scan="c2_first_row"`` reproduces [C2]'s released loop (``for h in range(min(h,224) - δ, δ, -1): for w in
    range(min(w,224) - δ, δ, -1)``): the loop variables shadow the image size, so only the first visited row
    is shuffled, in the first iteration only (the callers pass iterations=1 for that case).
    """
    if scan == "full":
        return np.arange(h - delta, delta, -1), np.arange(w - delta, delta, -1)
    if scan == "c2_first_row":
        rows = np.arange(min(h, 224) - delta, delta, -1)[:1]
        cols = np.arange(min(w, 224) - delta, delta, -1)
        return (rows, cols) if len(cols) else (rows[:0], cols)
    raise ValueError(f"unknown glass_blur scan {scan!r}")


def glass_pass_indices(h: int, w: int, rows: np.ndarray, cols: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Exact vectorised equivalent of one pass of ImageNet-C's pixel "swap" loop, as a gather.

    ``offsets`` is ``N×len(rows)×len(cols)×2`` holding (dx, dy) for every visit, in visit order (the values
    ``np.random.randint(-δ, δ, size=(2,))`` returns inside the loop). Returns ``N×(H·W)`` flat indices ``idx``
    with ``out.reshape(N, H·W, C)[n] = img.reshape(N, H·W, C)[n][idx[n]]``.

    The reference statement ``x[h, w], x[h', w'] = x[h', w'], x[h, w]`` operates on numpy *views*: the right-hand
    side holds views, so after ``x[h, w]`` is overwritten the second assignment writes x[h', w'] back onto
    itself. The loop therefore *copies* ``x[h, w] <- x[h', w']`` in visit order (it does not swap). Each pixel is
    written once per pass, at its visit, so the value it copies is the source's **final** value when the source
    was visited earlier in the pass, and the source's value at the start of the pass otherwise. That defines a
    forest of "copies from an earlier-visited pixel" links, which we resolve by pointer jumping (O(log depth)
    vectorised rounds) instead of 50 000 Python iterations per pass at 224×224.
    """
    n = offsets.shape[0]
    nh, nw = len(rows), len(cols)
    it = np.int32 if n * h * w < 2 ** 31 else np.int64
    ident = np.broadcast_to(np.arange(h * w, dtype=it), (n, h * w)).copy()
    if nh == 0 or nw == 0:
        return ident
    dx = offsets[..., 0].astype(it)
    dy = offsets[..., 1].astype(it)
    # visit number t = i·nw + j of position (rows[i], cols[j]); rows/cols are contiguous descending ranges, so the
    # source (rows[i] + dy, cols[j] + dx) is visited iff 0 <= i - dy < nh and 0 <= j - dx < nw, at t - (dy·nw + dx)
    i = np.arange(nh, dtype=it)[:, None]
    j = np.arange(nw, dtype=it)[None, :]
    ri = i - dy
    cj = j - dx
    step = dy * it(nw) + dx
    chained = (step > 0) & (ri >= 0) & (ri < nh) & (cj >= 0) & (cj < nw)  # copies a value written this pass
    t = (np.arange(n, dtype=it) * it(nh * nw))[:, None, None] + (i * it(nw) + j)
    dest = (rows.astype(it)[:, None] * it(w) + cols.astype(it)[None, :])
    par = np.where(chained, t - step, -1).reshape(-1)
    val = np.where(chained, -1, dest + dy * it(w) + dx).reshape(-1)
    todo = np.flatnonzero(par >= 0)
    while todo.size:  # pointer jumping: resolve every chain to the pass-start pixel it finally copies
        p = par[todo]
        gp = par[p]  # snapshot: all updates of this round read the previous round's links
        done = gp < 0
        val[todo[done]] = val[p[done]]
        par[todo] = np.where(done, -1, gp)
        todo = todo[~done]
    ident[:, dest.reshape(-1)] = val.reshape(n, nh * nw)
    return ident


def glass_shuffle(img: np.ndarray, delta: int, iterations: int, rng: np.random.Generator,
                  scan: str = "full") -> np.ndarray:
    """The reference's local pixel shuffling of a uint8 ``...×H×W×C`` stack (fresh offsets per frame)."""
    h, w, c = img.shape[-3:]
    frames = img.reshape(-1, h * w, c)
    n = frames.shape[0]
    rows, cols = glass_scan(h, w, delta, scan)
    if len(rows) == 0 or len(cols) == 0:
        return img.copy()
    total = None
    for _ in range(iterations):
        offsets = rng.integers(-delta, delta, size=(n, len(rows), len(cols), 2), dtype=np.int8)
        res = glass_pass_indices(h, w, rows, cols, offsets)
        total = res if total is None else np.take_along_axis(total, res, axis=1)  # pass k+1 reads pass k's output
    out = np.take_along_axis(frames, total[..., None], axis=1)
    return out.reshape(img.shape)


@register("glass_blur", requires=("opencv",), batched=True)
def glass_blur(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    sigma, delta = float(params["sigma"]), int(params["max_delta"])
    x = (F.gaussian_blur_nearest(to_float(img, np.float32), sigma) * np.float32(255)).astype(np.uint8)
    x = glass_shuffle(x, delta, int(params["iterations"]), rng, params.get("scan", "full"))
    return to_uint8(F.gaussian_blur_nearest(to_float(x, np.float32), sigma))


# ------------------------------------------------------------------------------------------------ motion blur

def motion_blur_uint8(img: np.ndarray, radius: int, sigma: float, angle: float) -> np.ndarray:
    """One H×W×C uint8 image blurred along ``angle`` degrees (the imagecorruptions kernel), 0..255 scale,
    clipped and truncated to uint8 like the reference's ``np.uint8(np.clip(x, 0, 255))``."""
    taps = F.motion_taps(radius, sigma, angle, img.shape[0], img.shape[1])
    out = F.apply_taps(img.astype(np.float32), taps)
    return np.clip(out, 0, 255).astype(np.uint8)


@register("motion_blur", requires=("opencv",))
def motion_blur(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    angle = rng.uniform(float(params["angle_low"]), float(params["angle_high"]))
    return motion_blur_uint8(img, int(params["radius"]), float(params["sigma"]), angle)


# ------------------------------------------------------------------------------------------------ zoom blur

def zoom_factors(params: dict) -> np.ndarray:
    """``np.arange(start, stop, step)`` exactly as ImageNet-C builds the factor sets (float quirks included)."""
    return np.arange(float(params["zoom_start"]), float(params["zoom_stop"]), float(params["zoom_step"]))


@register("zoom_blur", batched=True)
def zoom_blur(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    x = to_float(img, np.float32)
    out = x.copy()
    factors = zoom_factors(params)
    for z in factors:
        out += F.clipped_zoom(x, float(z))
    out /= np.float32(len(factors) + 1)
    return to_uint8(out)
