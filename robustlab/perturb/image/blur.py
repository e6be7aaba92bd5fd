"""Blur perturbations (ImageNet-C family): defocus_blur."""
from __future__ import annotations

import functools

import numpy as np

from robustlab.perturb.image._common import IMAGENET_C, P1, P2, to_float, to_uint8
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


@register(
    "defocus_blur", modality="image", category="blur",
    source=f"{P2} and {P1}; {IMAGENET_C}",
    severity_table={s: {"radius": r, "alias_blur": a}
                    for s, (r, a) in enumerate([(3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)], start=1)},
    default_variant="imagenet_c",
    variant_notes={"imagenet_c": "(r, alias σ) = (3,.1)/(4,.5)/(6,.5)/(8,.5)/(10,.5) (identical in [P1] and [P2])"},
    description="Per-channel cv2.filter2D (default BORDER_REFLECT_101) of x = img/255 with the anti-aliased "
                "disk kernel of ImageNet-C, clipped, quantised as ImageNet-C. Radii are in pixels tuned for "
                "~224 px images (milder on larger inputs).",
    tags=("p1", "p2", "imagenet-c", "deterministic"), requires=("opencv",),
)
def defocus_blur(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    import cv2

    kernel = disk_kernel(int(params["radius"]), float(params["alias_blur"]))
    # filter2D applies the 2-D kernel to each channel independently == ImageNet-C's per-channel loop
    return to_uint8(cv2.filter2D(to_float(img), -1, kernel))
