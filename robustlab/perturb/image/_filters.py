"""Numeric building blocks shared by the ImageNet-C catalogue (numpy + OpenCV, imported lazily).

Every helper works on an H×W×C array or on a stack ``...×H×W×C`` (frames of a video), so the operations that
use them can be registered ``batched=True``. Where a helper re-implements a scipy/skimage/ImageMagick call of
the reference code, its docstring names the call and the semantics it reproduces.
"""
from __future__ import annotations

import functools
import math

import numpy as np

_CV_MAX_CHANNELS = 384  # OpenCV filters accept at most 511 interleaved channels; stacks are filtered in chunks


# ----------------------------------------------------------------------------------------------- gaussian blur

@functools.lru_cache(maxsize=64)
def gaussian_weights(sigma: float, truncate: float) -> np.ndarray:
    """scipy.ndimage's 1-D Gaussian: radius ``int(truncate·σ + 0.5)``, exp(-x²/2σ²) normalised (float64)."""
    radius = int(truncate * float(sigma) + 0.5)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 / (float(sigma) ** 2) * x ** 2)
    w /= w.sum()
    w.setflags(write=False)
    return w


def _as_frames(x: np.ndarray) -> np.ndarray:
    """...×H×W×C -> N×H×W×C view/copy."""
    return x.reshape((-1,) + x.shape[-3:])


def sep_filter(x: np.ndarray, kx: np.ndarray, ky: np.ndarray, border: int) -> np.ndarray:
    """cv2.sepFilter2D over the two spatial axes of an ``...×H×W×C`` float array (channels independent).

    Stacks are folded into the channel axis (H×W×(N·C), in chunks) so one OpenCV call filters many frames.
    """
    import cv2

    kx = np.asarray(kx, dtype=x.dtype)
    ky = np.asarray(ky, dtype=x.dtype)
    if x.ndim == 3:
        out = cv2.sepFilter2D(np.ascontiguousarray(x), -1, kx, ky, borderType=border)
        return out.reshape(x.shape)
    frames = _as_frames(x)
    n, h, w, c = frames.shape
    per = max(1, _CV_MAX_CHANNELS // c)
    out = np.empty_like(frames)
    for i in range(0, n, per):
        chunk = frames[i:i + per]
        k = chunk.shape[0]
        folded = np.ascontiguousarray(chunk.transpose(1, 2, 0, 3).reshape(h, w, k * c))
        res = cv2.sepFilter2D(folded, -1, kx, ky, borderType=border).reshape(h, w, k, c)
        out[i:i + k] = res.transpose(2, 0, 1, 3)
    return out.reshape(x.shape)


def gaussian_blur_nearest(x: np.ndarray, sigma: float) -> np.ndarray:
    """skimage.filters.gaussian(x, sigma, multichannel=True) as ImageNet-C calls it: scipy gaussian_filter with
    σ on the two spatial axes only, mode='nearest' (edge replication), truncate=4.0."""
    import cv2

    w = gaussian_weights(float(sigma), 4.0)
    return sep_filter(x, w, w, cv2.BORDER_REPLICATE)


@functools.lru_cache(maxsize=16)
def reflect_blur_matrix(n: int, sigma: float, truncate: float) -> np.ndarray:
    """The n×n matrix A with ``A @ v == scipy.ndimage.gaussian_filter1d(v, σ, mode='reflect', truncate=t)``.

    The half-sample-symmetric extension is 2n-periodic, so the (possibly much longer than n) truncated kernel
    folds exactly onto one period: A[i, j] = g[(j - i) mod 2n] + g[(2n - 1 - j - i) mod 2n], with g the kernel
    summed modulo 2n. Exact for any σ (ImageNet-C's elastic uses σ up to 170.8 px on 224 px images).
    """
    w = gaussian_weights(float(sigma), float(truncate))
    r = (len(w) - 1) // 2
    period = 2 * n
    g = np.bincount((np.arange(-r, r + 1) % period), weights=w, minlength=period)
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    a = g[(j - i) % period] + g[(period - 1 - j - i) % period]
    a.setflags(write=False)
    return a


def gaussian_blur_reflect_2d(field: np.ndarray, sigma: float, truncate: float = 3.0) -> np.ndarray:
    """skimage.filters.gaussian(field, σ, mode='reflect', truncate=t) for one 2-D float64 field.

    Long kernels (longer than a quarter of an axis) go through the exact folded matrices above (two small
    matmuls); short ones through cv2.sepFilter2D with BORDER_REFLECT (== scipy 'reflect')."""
    import cv2

    h, w = field.shape
    k = len(gaussian_weights(float(sigma), float(truncate)))
    if 4 * k > min(h, w):
        return reflect_blur_matrix(h, float(sigma), float(truncate)) @ field @ \
            reflect_blur_matrix(w, float(sigma), float(truncate)).T
    wts = gaussian_weights(float(sigma), float(truncate))
    return cv2.sepFilter2D(np.ascontiguousarray(field, dtype=np.float64), -1, wts, wts,
                           borderType=cv2.BORDER_REFLECT)


# ----------------------------------------------------------------------------------------------- motion blur

def motion_taps(radius: int, sigma: float, angle: float, h: int, w: int) -> list[tuple[int, int, float]]:
    """The (dy, dx, weight) taps of the `imagecorruptions` package's ``_motion_blur`` (its stand-in for
    ImageMagick's MotionBlurImage): width = 2·radius + 1 one-sided Gaussian weights exp(-i²/2σ²) (i = 0..width-1)
    normalised to sum 1, tap i displaced by ``-ceil(i·sin(a) - 0.5)`` rows and ``-ceil(i·cos(a) - 0.5)`` columns.
    Like the reference, the taps stop at the first displacement that is not smaller than the image (so on tiny
    images the remaining weights are dropped and the image darkens, as in the reference)."""
    width = 2 * int(radius) + 1
    k = np.exp(-np.arange(width, dtype=np.float64) ** 2 / (2 * float(sigma) ** 2)) / (np.sqrt(2 * np.pi) * sigma)
    k /= k.sum()
    point = (width * np.sin(np.deg2rad(angle)), width * np.cos(np.deg2rad(angle)))
    hypot = math.hypot(point[0], point[1])
    taps: dict[tuple[int, int], float] = {}
    for i in range(width):
        dy = -math.ceil(((i * point[0]) / hypot) - 0.5)
        dx = -math.ceil(((i * point[1]) / hypot) - 0.5)
        if abs(dy) >= h or abs(dx) >= w:
            break
        taps[(dy, dx)] = taps.get((dy, dx), 0.0) + float(k[i])  # merge coincident taps (same sum)
    return [(dy, dx, wt) for (dy, dx), wt in taps.items()]


def apply_taps(x: np.ndarray, taps, dtype=np.float32) -> np.ndarray:
    """Σ weight · shift(x, dx, dy) over the spatial axes (-3, -2) of ``...×H×W×C`` or (-2, -1) of ``H×W``, with
    the reference ``shift``'s edge replication: out[y, x] = in[clamp(y - dy), clamp(x - dx)]. One cv2.filter2D call
    (BORDER_REPLICATE) with the taps laid out as a sparse 2-D correlation kernel."""
    import cv2

    py = max((abs(dy) for dy, _, _ in taps), default=0)
    px = max((abs(dx) for _, dx, _ in taps), default=0)
    kernel = np.zeros((2 * py + 1, 2 * px + 1), dtype=dtype)
    for dy, dx, wt in taps:
        kernel[py - dy, px - dx] += wt  # correlation: dst(y,x) = Σ K[i,j] src(y + i - py, x + j - px)
    src = np.ascontiguousarray(x, dtype=dtype)
    if src.ndim == 2 or src.ndim == 3:
        return cv2.filter2D(src, -1, kernel, borderType=cv2.BORDER_REPLICATE).reshape(src.shape)
    frames = _as_frames(src)
    return np.stack([cv2.filter2D(f, -1, kernel, borderType=cv2.BORDER_REPLICATE).reshape(f.shape)
                     for f in frames]).reshape(src.shape)


# ----------------------------------------------------------------------------------------------- zoom

@functools.lru_cache(maxsize=256)
def zoom_axis(n: int, z: float, centre_trim: bool = True):
    """Source coordinates of ImageNet-C's ``clipped_zoom`` along one axis of length n.

    Centre crop ``ch = ceil(n / z)`` at ``top = (n - ch) // 2``, scipy.ndimage.zoom(order=1) to
    ``out = round(ch·z)`` samples (output o reads input ``o·(ch-1)/(out-1)``, scipy's default grid), then trim
    back to n: centred (``(out - n) // 2``, ImageNet-C) or from the start (the imagecorruptions package).
    Returns (i0, i1, frac) with ``value = (1-frac)·v[i0] + frac·v[i1]``.
    """
    ch = int(np.ceil(n / float(z)))
    top = (n - ch) // 2
    out = int(round(ch * float(z)))
    scale = (ch - 1) / (out - 1) if out > 1 else 1.0
    trim = (out - n) // 2 if centre_trim else 0
    o = np.arange(trim, trim + n, dtype=np.float64)
    coord = np.minimum(o * scale, ch - 1)  # o <= out-1 always when out >= n; clamp guards float noise
    i0 = np.floor(coord).astype(np.intp)
    frac = coord - i0
    i1 = np.minimum(i0 + 1, ch - 1)
    res = (i0 + top, i1 + top, frac)
    for a in res:
        a.setflags(write=False)
    return res


def clipped_zoom(x: np.ndarray, z: float, spatial=(-3, -2), centre_trim: bool = True) -> np.ndarray:
    """ImageNet-C ``clipped_zoom(x, z)`` (bilinear, scipy coordinates) over the given spatial axes of a float
    array; separable gathers, so it vectorises over leading (frame) axes."""
    ay, ax = (a % x.ndim for a in spatial)
    i0, i1, f = zoom_axis(x.shape[ay], float(z), centre_trim)
    shape = [1] * x.ndim
    shape[ay] = -1
    f = f.astype(x.dtype).reshape(shape)
    t = np.take(x, i0, axis=ay)
    t += (np.take(x, i1, axis=ay) - t) * f
    j0, j1, g = zoom_axis(x.shape[ax], float(z), centre_trim)
    shape = [1] * x.ndim
    shape[ax] = -1
    g = g.astype(x.dtype).reshape(shape)
    u = np.take(t, j0, axis=ax)
    u += (np.take(t, j1, axis=ax) - u) * g
    return u


# ----------------------------------------------------------------------------------------------- plasma (fog)

def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 2 ** (int(n) - 1).bit_length()


def plasma_fractal(mapsize: int, wibbledecay: float, rng: np.random.Generator, lead: tuple = (),
                   dtype=np.float64) -> np.ndarray:
    """ImageNet-C's diamond-square height map (``plasma_fractal``) in [0, 1], ``lead + (mapsize, mapsize)``.

    Same recurrence as the reference (including its ``wibble·U(-wibble, wibble)`` perturbation and the wrap-around
    ``np.roll`` neighbours); the uniforms come from ``rng``, one independent map per leading index (frame).
    ``mapsize`` must be a power of two >= 2.
    """
    assert mapsize >= 2 and mapsize & (mapsize - 1) == 0, mapsize
    m = np.zeros(tuple(lead) + (mapsize, mapsize), dtype=dtype)
    step = mapsize
    wibble = 100.0

    def wibbled_mean(a):
        u = rng.random(a.shape, dtype=dtype)
        return a / 4 + wibble * (u * (2 * wibble) - wibble)

    while step >= 2:
        half = step // 2
        # squares
        corner = m[..., 0:mapsize:step, 0:mapsize:step]
        acc = corner + np.roll(corner, shift=-1, axis=-2)
        acc += np.roll(acc, shift=-1, axis=-1)
        m[..., half:mapsize:step, half:mapsize:step] = wibbled_mean(acc)
        # diamonds
        dr = m[..., half:mapsize:step, half:mapsize:step]
        ul = m[..., 0:mapsize:step, 0:mapsize:step]
        lt = dr + np.roll(dr, 1, axis=-2) + ul + np.roll(ul, -1, axis=-1)
        m[..., 0:mapsize:step, half:mapsize:step] = wibbled_mean(lt)
        tt = dr + np.roll(dr, 1, axis=-1) + ul + np.roll(ul, -1, axis=-2)
        m[..., half:mapsize:step, 0:mapsize:step] = wibbled_mean(tt)
        step //= 2
        wibble /= wibbledecay
    axes = (-2, -1)
    m -= m.min(axis=axes, keepdims=True)
    mx = m.max(axis=axes, keepdims=True)
    return np.divide(m, mx, out=np.zeros_like(m), where=mx > 0)
