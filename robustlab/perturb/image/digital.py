"""Digital perturbations (ImageNet-C family): jpeg_compression, pixelate, contrast (V15), elastic_transform (V16).

Their listing order is declared in :mod:`robustlab.perturb.table`, not by this file's layout.
"""
from __future__ import annotations

import functools
import io

import numpy as np

from robustlab.perturb.image._common import IMAGENET_C, P1, P2, table, to_float, to_uint8
from robustlab.perturb.image import _filters as F
from robustlab.perturb.registry import register


@register(
    "jpeg_compression", modality="image", category="digital",
    source=f"{P2} and {P1} ('jpeg'); {IMAGENET_C}",
    severity_table=table("quality", [25, 18, 15, 10, 7]),
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "quality = 25/18/15/10/7 (identical in [P1] and [P2])"},
    description="PIL Image.save(format='JPEG', quality=q) with PIL's other defaults (4:2:0 subsampling), "
                "decoded again. Deterministic; the output depends on the libjpeg bundled with Pillow.",
    tags=("p1", "p2", "imagenet-c", "deterministic"), requires=("pillow",),
)
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


@register(
    "pixelate", modality="image", category="digital",
    source=f"{P2}; {IMAGENET_C} (size-aware, as the imagecorruptions package)",
    severity_table=table("scale", [0.6, 0.5, 0.4, 0.3, 0.25]),
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "c = .6/.5/.4/.3/.25; at 224×224 bit-identical to ImageNet-C (PIL BOX both ways)"},
    description="Downsample to (int(w·c), int(h·c)) (at least 1 px) with PIL BOX and back up to the original "
                "(w, h) with PIL BOX. Size-aware: [P2]'s code [C2] resizes every image to a fixed (224c)² square "
                "with cv2 INTER_AREA and back with swapped (h, w), which stretches non-square images; we do not.",
    tags=("p2", "imagenet-c", "deterministic"), requires=("pillow",),
)
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


@register(
    "contrast", modality="image", category="digital",
    source=f"{P2} [C2]; {IMAGENET_C}",
    severity_table=table("factor", [0.4, 0.3, 0.2, 0.1, 0.05]),
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "c = .4/.3/.2/.1/.05"},
    description="(x - μ)·c + μ on x = img/255 with μ the per-channel spatial mean (per frame for videos), "
                "clipped, quantised as ImageNet-C. Deterministic, vectorised over video frames.",
    tags=("p2", "imagenet-c", "deterministic"), requires=("opencv",), batched=True,
)
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


# ImageNet-C's constants, "244 should have been 224, but ultimately nothing is incorrect" (its own comment)
_ELASTIC = [(2, 0.7, 0.1), (2, 0.08, 0.2), (0.05, 0.01, 0.02), (0.07, 0.01, 0.02), (0.12, 0.01, 0.02)]
ELASTIC_REF_SIZE = 224  # the image size ImageNet-C's pixel constants are defined for


@register(
    "elastic_transform", modality="image", category="digital",
    source=f"{P2} [C2]; {IMAGENET_C} (make_imagenet_c.py, not the imagecorruptions variant)",
    severity_table={s: {"alpha": round(244 * a, 6), "sigma": round(244 * b, 6), "affine": round(244 * c, 6),
                        "ref_size": ELASTIC_REF_SIZE}
                    for s, (a, b, c) in enumerate(_ELASTIC, start=1)},
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "(α, σ, affine) = 244×(2,.7,.1)/(2,.08,.2)/(.05,.01,.02)/(.07,.01,.02)/"
                                 "(.12,.01,.02) px at 224 px (the 244 is ImageNet-C's own typo for 224, kept)"},
    description="Random affine (three points at the centre ± min(h,w)//3 jittered by U(-a, a), cv2.warpAffine "
                "with reflect-101 borders), then a displacement field: Gaussian-smoothed U(-1,1) noise (σ, "
                "reflect borders, truncate 3) × α for dx and dy, bilinear resampling with reflect borders; "
                "x = img/255, clipped, quantised as ImageNet-C. Size-aware: with k = min(h,w)/224 the pixel "
                "constants become σ·k, a·k and α·k² (smoothed white noise shrinks as 1/σ), so any size gets the "
                "224 px distortion stretched by k; exactly ImageNet-C at 224×224. Not monotone in severity "
                "(s1–s2 are large smooth warps, s3–s5 local ripples), as in ImageNet-C.",
    tags=("p2", "imagenet-c", "random"), requires=("opencv",),
)
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
