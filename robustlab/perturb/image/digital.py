"""Digital perturbations (ImageNet-C family): jpeg_compression, pixelate, contrast (V15), elastic_transform (V16).

Their listing order is declared in :mod:`robustlab.perturb.table`, not by this file's layout.
"""
from __future__ import annotations

import functools
import io

import numpy as np

from robustlab.perturb.image._common import to_float, to_uint8
from robustlab.perturb.image import _filters as F
from robustlab.perturb.registry import register


@register("jpeg_compression", requires=("pillow",))
def jpeg_compression(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=int(params["quality"]))
    buf.seek(0)
    with Image.open(buf) as im:
        return np.asarray(im if im.mode == "RGB" else im.convert("RGB"), dtype=np.uint8).copy()


def pixelate_size(w: int, h: int, scale: float) -> tuple[int, int]:
    """Downsampled (w, h): int(w·c), int(h·c) like ImageNet-C's int(224·c) (and `imagecorruptions`), at least 1."""
    return max(1, int(w * scale + 1e-9)), max(1, int(h * scale + 1e-9))


@register("pixelate", requires=("pillow",))
def pixelate(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    from PIL import Image

    h, w = img.shape[:2]
    small = np.asarray(Image.fromarray(img).resize(pixelate_size(w, h, float(params["scale"])), Image.BOX))
    # PIL's BOX *upsampling* gives every output pixel weight 1 on exactly one input pixel, floor((i + ½)·in/out):
    # the same bytes as small.resize((w, h), BOX), as a gather (faster than PIL's resampler)
    sh, sw = small.shape[:2]
    # columns first, on the (rows, width·3) byte view; the row gather then copies whole rows
    wide = np.take(small.reshape(sh, sw * 3), _box_byte_columns(sw, w), axis=1)
    return np.take(wide, box_upsample_index(sh, h), axis=0).reshape(h, w, 3)


@functools.lru_cache(maxsize=64)
def box_upsample_index(n_in: int, n_out: int) -> np.ndarray:
    """Source index of each output pixel of PIL's BOX resize from n_in up to n_out >= n_in pixels."""
    idx = np.minimum(np.floor((np.arange(n_out) + 0.5) * (n_in / n_out)).astype(np.intp), n_in - 1)
    idx.setflags(write=False)
    return idx


@functools.lru_cache(maxsize=64)
def _box_byte_columns(n_in: int, n_out: int) -> np.ndarray:
    idx = (box_upsample_index(n_in, n_out)[:, None] * 3 + np.arange(3)).reshape(-1)
    idx.setflags(write=False)
    return idx


@register("contrast", requires=("opencv",), batched=True)
def contrast(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    import cv2

    c = float(params["factor"])
    frames = img.reshape((-1,) + img.shape[-3:])
    # per-frame channel means, accumulated in float64 by cv2.mean (numpy's strided reduction is ~200× slower)
    means = np.array([cv2.mean(f)[:3] for f in frames], dtype=np.float64).reshape(img.shape[:-3] + (1, 1, 3))
    means /= 255.0
    # (x - μ)·c + μ  ==  x·c + μ·(1 - c), with x = img/255 folded into the scale (float32 pass over the pixels)
    x = img.astype(np.float32)
    x *= np.float32(c / 255.0)
    x += (means * (1.0 - c)).astype(np.float32)
    return to_uint8(x)


ELASTIC_REF_SIZE = 224  # the image size ImageNet-C's pixel constants are defined for


@register("elastic_transform", requires=("opencv",))
def elastic_transform(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    import cv2

    h, w = img.shape[:2]
    k = min(h, w) / float(params.get("ref_size", ELASTIC_REF_SIZE))
    alpha, sigma, affine = float(params["alpha"]) * k * k, float(params["sigma"]) * k, float(params["affine"]) * k
    x = to_float(img, np.float32)

    # random affine (ImageNet-C: centre_square = shape//2, square_size = min(shape)//3; points as (x, y))
    cx, cy = w // 2, h // 2
    sq = max(min(h, w) // 3, 1)
    pts1 = np.float32([[cx + sq, cy + sq], [cx + sq, cy - sq], [cx - sq, cy - sq]])
    pts2 = pts1 + rng.uniform(-affine, affine, size=pts1.shape).astype(np.float32)
    m = cv2.getAffineTransform(pts1, pts2)
    x = cv2.warpAffine(x, m, (w, h), borderMode=cv2.BORDER_REFLECT_101).reshape(h, w, 3)

    dx = (F.gaussian_blur_reflect_2d(rng.uniform(-1, 1, size=(h, w)), sigma, 3.0) * alpha).astype(np.float32)
    dy = (F.gaussian_blur_reflect_2d(rng.uniform(-1, 1, size=(h, w)), sigma, 3.0) * alpha).astype(np.float32)
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    # scipy map_coordinates(order=1, mode='reflect') == bilinear remap with half-sample symmetric borders
    out = cv2.remap(x, gx + dx, gy + dy, interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return to_uint8(out.reshape(h, w, 3))
