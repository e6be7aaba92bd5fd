"""What the MLVP perturbations share: float chunking and MLVP's truncating quantisation (their cards, source line
and tags included, are data: ``appearance.toml``, ``motion.toml``, ``content.toml``). Part of
:mod:`robustlab.perturb.video.mlvp`."""
from __future__ import annotations

import numpy as np

CHUNK = 1 << 22  # frames are processed in float chunks of at most this many elements


def _chunks(v: np.ndarray):
    step = max(1, CHUNK // max(int(np.prod(v.shape[1:])), 1))
    for a in range(0, len(v), step):
        yield a, min(a + step, len(v))


def _to_uint8(x: np.ndarray) -> np.ndarray:
    """MLVP / ImageNet-C quantisation: (clip(x, 0, 1) · 255).astype(uint8), i.e. truncation."""
    return (np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)

