"""What the MLVP perturbations share: the source line, float chunking, MLVP's truncating quantisation and the tags.
Part of :mod:`robustlab.perturb.video.mlvp`."""
from __future__ import annotations

import numpy as np

from robustlab.perturb.video._common import MLVP, MLVP_CODE

SRC = f"{MLVP}; {MLVP_CODE}"
CHUNK = 1 << 22  # frames are processed in float chunks of at most this many elements


def _chunks(v: np.ndarray):
    step = max(1, CHUNK // max(int(np.prod(v.shape[1:])), 1))
    for a in range(0, len(v), step):
        yield a, min(a + step, len(v))


def _to_uint8(x: np.ndarray) -> np.ndarray:
    """MLVP / ImageNet-C quantisation: (clip(x, 0, 1) · 255).astype(uint8), i.e. truncation."""
    return (np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)


def _tags(level: str, *more) -> tuple:
    return ("mlvp", f"mlvp-{level}", "video-only") + more
