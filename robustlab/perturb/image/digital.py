"""Digital perturbations (ImageNet-C family): jpeg_compression, pixelate."""
from __future__ import annotations

import functools
import io

import numpy as np

from robustlab.perturb.image._common import IMAGENET_C, P1, P2, table
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
