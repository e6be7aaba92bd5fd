"""The data diversity of the tiny ViT CLIP family's recipes: the kind natural images and videos have and the
benchmark's perturbations are not (a perturbation the model was trained on is no test). Textured backgrounds that
keep the caption's background tone, a smooth lighting field, and per image (or per video: the same for all its
frames) a random resized crop and colour jitter; and, for the video meanP's last stage, a lens's vignetting (chosen
after measuring that rotations' black corners broke meanP: docs/models.md#meanp-camera). No noise, blur,
compression, weather, rotation or camera motion. Used by ``robustlab train tiny-vit-clip`` (images) and
``tiny-vit-clip-video`` (the frames of a video)."""
from __future__ import annotations

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from robustlab.datasets.synthetic import world


def textured_background(tone: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """The world's background of ``tone`` (its colour and gradient) with a faint texture on top, float H×W×3."""
    img = world._background(tone, size, rng)
    kind = int(rng.integers(4))
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    if kind == 1:  # smooth blobs
        tex = cv2.resize(rng.normal(size=(6, 6)).astype(np.float32), (size, size),
                         interpolation=cv2.INTER_CUBIC) * rng.uniform(8, 20)
    elif kind == 2:  # faint stripes at a random angle and period
        a, f = rng.uniform(0, np.pi), rng.uniform(3, 10)
        tex = np.sin(2 * np.pi * f * (np.cos(a) * xx + np.sin(a) * yy)) * rng.uniform(6, 14)
    elif kind == 3:  # soft checks
        f = rng.uniform(3, 8)
        tex = np.sign(np.sin(2 * np.pi * f * xx) * np.sin(2 * np.pi * f * yy)) * rng.uniform(4, 10)
        tex = cv2.GaussianBlur(tex.astype(np.float32), (0, 0), size / 60)
    else:  # plain, as the world draws it
        tex = np.zeros((size, size), np.float32)
    tint = 1 + rng.uniform(-0.15, 0.15, 3).astype(np.float32)
    return np.clip(img + tex[..., None].astype(np.float32) * tint, 0, 255)


def lighting_gain(size: int, rng: np.random.Generator) -> np.ndarray:
    """A smooth lighting field: gain 1 ± up to 0.2 along a random direction across the image, float32 H×W."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / (size - 1)
    a = rng.uniform(0, 2 * np.pi)
    return 1 + rng.uniform(0, 0.2) * (np.cos(a) * (xx - .5) + np.sin(a) * (yy - .5)) * 2


VIGNETTE_RANGES = dict(strength=(0.8, 1.0), start=(0.5, 0.9), power=(0.5, 2.5))  # the lens fields' draws
VIGNETTE = ("a lens's vignetting (one field per video, gain 1 - s*t^p, t = (r - r0)/(1 - r0) clipped to 0..1, r the "
            "distance from the centre, 1 at the corners; %s)"
            % ", ".join(f"{k} {a:g}-{b:g}" for k, (a, b) in VIGNETTE_RANGES.items()))  # as a recipe records it


def vignette_gain(size: int, rng: np.random.Generator) -> np.ndarray:
    """A lens's vignetting, float32 H×W: gain 1 - s·t^p, t = (r - r0) / (1 - r0) clipped to 0..1, r the distance
    from the centre (1 at the corners); s, r0, p drawn from :data:`VIGNETTE_RANGES`, from soft optical falloff to
    the near-black corners of mechanical vignetting (a hood or filter cutting the corners of a wide lens)."""
    lo = {k: rng.uniform(*v) for k, v in VIGNETTE_RANGES.items()}
    yy, xx = (np.mgrid[0:size, 0:size].astype(np.float32) - (size - 1) / 2) / ((size - 1) / 2)
    t = np.clip((np.sqrt((xx ** 2 + yy ** 2) / 2) - lo["start"]) / (1 - lo["start"]), 0, 1)
    return (1 - lo["strength"] * t ** lo["power"]).astype(np.float32)


def augment(x: torch.Tensor, g: torch.Generator, low_res: int = 64, low_res_frac: float = 0.25,
            group: int = 1) -> torch.Tensor:
    """Per-image random resized crop, colour jitter and (for ``low_res_frac`` of the batch) a ``low_res`` view
    upsampled back; ``x``: B×3×H×W in [0, 1]. ``group`` > 1: every run of ``group`` consecutive images (the frames
    of one video) gets the same crop and jitter, as one camera's settings would give it (a static framing, no
    camera motion)."""
    B, _, H, W = x.shape
    n = B // group
    if n * group != B:
        raise ValueError(f"a batch of {B} images is not whole groups of {group}")

    def per_image(t: torch.Tensor) -> torch.Tensor:
        return t.repeat_interleave(group, 0) if group > 1 else t

    s = torch.empty(n).uniform_(0.80, 1.0, generator=g)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = theta[:, 1, 1] = s
    theta[:, 0, 2] = (torch.rand(n, generator=g) * 2 - 1) * (1 - s)
    theta[:, 1, 2] = (torch.rand(n, generator=g) * 2 - 1) * (1 - s)
    grid = F.affine_grid(per_image(theta), list(x.shape), align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    k = int(round(B * low_res_frac))
    if k:
        small = F.interpolate(x[:k], size=(low_res, low_res), mode="area")
        x = torch.cat([F.interpolate(small, size=(H, W), mode="bilinear", align_corners=False), x[k:]])
    jitter = per_image(torch.rand(n, 6, generator=g) * 2 - 1)
    br, ct, sat = (1 + 0.25 * jitter[:, i].view(B, 1, 1, 1) for i in range(3))
    wb = 1 + 0.05 * jitter[:, 3:6].view(B, 3, 1, 1)
    m = x.mean((1, 2, 3), keepdim=True)
    x = (x - m) * ct + m
    gray = x.mean(1, keepdim=True)
    x = (x - gray) * sat + gray
    return (x * br * wb).clamp(0, 1)


__all__ = ["augment", "lighting_gain", "textured_background", "vignette_gain", "VIGNETTE", "VIGNETTE_RANGES"]
