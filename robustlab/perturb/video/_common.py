"""Helpers shared by the video perturbations."""
from __future__ import annotations

import concurrent.futures

import numpy as np

from robustlab.perturb import registry


def frames_of(x: np.ndarray) -> np.ndarray:
    """Check the registry's contract: T×H×W×3 uint8 with T >= 1."""
    if x.ndim != 4 or x.shape[-1] != 3 or x.dtype != np.uint8 or x.shape[0] < 1:
        raise ValueError(f"expected a T×H×W×3 uint8 video, got {x.dtype} {x.shape}")
    return x


def take(frames: np.ndarray, idx) -> np.ndarray:
    """frames[idx] as a fresh contiguous array (idx: integer frame indices)."""
    return np.ascontiguousarray(frames[np.asarray(idx, dtype=np.int64)])


def sub_seed(rng: np.random.Generator) -> int:
    """One draw from ``rng`` that seeds a fixed random pattern (the same for every frame of a video)."""
    return int(rng.integers(0, 2**63 - 1))


def parallel_map(fn, items: list, min_items: int = 8) -> list:
    """``[fn(i) for i in items]`` on the registry's ``VIDEO_THREADS`` threads (OpenCV releases the GIL); the order
    and the results do not depend on the number of threads."""
    workers = min(registry.VIDEO_THREADS, len(items))
    if workers <= 1 or len(items) < min_items:
        return [fn(i) for i in items]
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(fn, items))


def fixed_pattern(fn, frames: np.ndarray, params: dict, seed: int) -> np.ndarray:
    """Apply the image perturbation ``fn`` to every frame with a generator seeded identically for each frame.

    ImageNet-C style functions draw their randomness (noise, plasma fractal, displacement field, style choice)
    from the generator independently of the pixel values, so every frame gets the *same* realisation: MLVP's
    "temporal consistency" (one pattern / field / style per video). Deterministic functions are unaffected.
    """
    return np.stack([np.asarray(fn(f, dict(params), np.random.default_rng(seed)), dtype=np.uint8) for f in frames])
