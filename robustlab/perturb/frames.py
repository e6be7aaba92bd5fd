"""Frames on demand and frame plans: the pieces lazy video perturbation is built from (numpy only).

A video perturbation's :class:`FramePlan` says, from the clip's shape, the parameters and the seeded generator and
before any pixel is decoded, which input frames output frame t needs and how to render it from them; a
:class:`FrameSource` reads only those frames. :func:`frame_rng` gives frame t of an image perturbation on a video
its own generator, so frame t alone is frame t of the whole perturbed clip.
:func:`robustlab.perturb.registry.perturb_sampled` puts them together (see :mod:`robustlab.perturb.lazy`); video
ops attach their plans with :func:`robustlab.perturb.specs.lazy_plan`.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Protocol, Sequence, Union

import numpy as np

from robustlab.perturb.specs import PerturbationSpec


class FrameSource(Protocol):
    """Frames on demand: ``n_frames`` and ``read(indices) -> len(indices)×H×W×3 uint8`` (any order, repeats)."""

    n_frames: int

    def read(self, indices: Sequence[int]) -> np.ndarray: ...


class ArraySource:
    """A decoded T×H×W×3 clip as a frame source (counts the frames read)."""

    def __init__(self, frames: np.ndarray):
        a = np.asarray(getattr(frames, "frames", frames))
        if a.ndim != 4 or a.shape[0] < 1 or a.shape[-1] != 3:
            raise ValueError(f"a video must be T×H×W×3 with at least one frame, got shape {a.shape}")
        self.frames = a if a.dtype == np.uint8 else np.stack([_to_u8(f) for f in a])
        self.n_frames = int(a.shape[0])
        self.frame_shape = tuple(int(d) for d in a.shape[1:])
        self.frames_read = 0

    def read(self, indices) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64)
        self.frames_read += len(idx)
        return self.frames[idx]


def _to_u8(f):
    from robustlab.io.convert import to_uint8_rgb  # PIL: importing robustlab.perturb stays numpy-only

    return to_uint8_rgb(f)


Getter = Callable[[int], np.ndarray]


@dataclasses.dataclass
class FramePlan:
    """Output frame t of a perturbed clip of ``n_out`` frames is ``render(get, t)``, where ``get(i)`` returns
    input frame i for each i in ``needs(t)``."""

    n_out: int
    needs: Callable[[int], Sequence[int]]
    render: Callable[[Getter, int], np.ndarray]


def index_plan(index) -> FramePlan:
    """A pure re-indexing (temporal perturbations): output frame t is input frame ``index[t]``."""
    idx = np.asarray(index, dtype=np.int64)
    return FramePlan(len(idx), lambda t: (int(idx[t]),), lambda get, t: get(int(idx[t])))


def per_frame_plan(n: int, fn: Callable[[np.ndarray, int], np.ndarray]) -> FramePlan:
    """Output frame t is ``fn(input frame t, t)``."""
    return FramePlan(int(n), lambda t: (int(t),), lambda get, t: fn(get(int(t)), int(t)))


def frame_rng(rng: np.random.Generator, t: int) -> np.random.Generator:
    """Frame ``t``'s generator: child ``t`` of the seeded one's SeedSequence (``SeedSequence(seed,
    spawn_key=(t,))`` for ``default_rng(seed)``), so frame t's randomness depends only on (seed, t), never on
    the other frames: perturbing frame t alone gives frame t of the whole perturbed clip."""
    ss = rng.bit_generator.seed_seq
    return np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (int(t),),
                                                        pool_size=ss.pool_size))


def frame_call(spec: PerturbationSpec, frame: np.ndarray, params: dict, gen: np.random.Generator) -> np.ndarray:
    """An image perturbation on one H×W×3 video frame, as the per-frame video path calls it."""
    res = spec.fn(frame[None], dict(params), gen)[0] if spec.batched else spec.fn(frame, dict(params), gen)
    return np.asarray(res)


def plan_for(spec: PerturbationSpec, shape: tuple, params: dict, seed: int) -> Optional[FramePlan]:
    """The spec's frame plan for a clip of ``shape`` (T, H, W, 3), or None when it needs the whole clip."""
    rng = np.random.default_rng(seed)
    if spec.modality == "image":
        return per_frame_plan(shape[0], lambda f, t: frame_call(spec, f, params, frame_rng(rng, t)))
    if spec.plan is None:
        return None
    return spec.plan(tuple(int(d) for d in shape), dict(params), rng)


def whole_clip_reason(spec: PerturbationSpec) -> str:
    if "codec" in spec.tags:
        return "a codec's frames depend on the whole encoded stream (motion prediction, rate control)"
    if spec.name == "mlvp_event_insertion":
        return ("the inserted clip is chosen by similarity to the whole clip and the kept frames are resampled over "
                "all of it")
    return "this perturbation has no per-frame plan: it is applied to the whole clip"


def _as_source(x) -> FrameSource:
    if hasattr(x, "read") and hasattr(x, "n_frames"):
        return x
    return ArraySource(np.asarray(getattr(x, "frames", x)))


def _frame_shape(src) -> tuple:
    fs = getattr(src, "frame_shape", None)
    if fs is None:
        fs = tuple(int(d) for d in src.read([0])[0].shape)
    return tuple(fs)


IndexSpec = Union[None, Sequence[int], Callable[[int], Sequence[int]]]


def _resolve_indices(indices: IndexSpec, n_out: int) -> np.ndarray:
    idx = np.arange(n_out) if indices is None else np.asarray(indices(n_out) if callable(indices) else indices,
                                                             dtype=np.int64)
    if idx.ndim != 1 or len(idx) == 0:
        raise ValueError("sample at least one frame")
    if idx.min() < 0 or idx.max() >= n_out:
        raise ValueError(f"frame indices must lie in 0..{n_out - 1} (the perturbed clip has {n_out} frames), "
                         f"got {idx.min()}..{idx.max()}")
    return idx


__all__ = ["FrameSource", "ArraySource", "FramePlan", "Getter", "IndexSpec", "index_plan", "per_frame_plan",
           "frame_rng", "frame_call", "plan_for", "whole_clip_reason"]
