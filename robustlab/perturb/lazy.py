"""Lazy video perturbation: perturb only the frames a model will look at.

MSRVTT-P and MLVP perturb whole videos, write them to disk, and the models then sample 8–12 frames. Here a video
perturbation is a :class:`FramePlan` computed from the clip's shape, the parameters and the seeded generator,
before any pixel is decoded: which input frames output frame t needs (``needs(t)``) and how to render it from
them (``render(get, t)``), plus the output length T'. Then :func:`perturb_sampled` asks the model's sampler which
output frames it wants (``indices(T')``), reads only the input frames those need from a frame source (a video
file decoded on demand, or an array) and renders them:

* image perturbations (noise, blur, weather, …) on videos draw their randomness per frame index
  (:func:`robustlab.perturb.registry.frame_rng`): frame t alone is frame t of the whole perturbed clip;
* temporal perturbations (sampling, reverse_sampling, jumble, box_jumble, freeze, MLVP temporal scrambling) are
  index maps: nothing is decoded that the model will not see;
* camera motion (static_rotate, rotate, translate) and MLVP's fixed-pattern ops (noise, impulse, fog, elastic,
  style, snow's falling curtain, occlusion) compute frame t from input frame t; MLVP's motion-aware blurs from
  frames t−1 and t (the optical flow);
* codecs (codec1, codec2, mlvp_h264) and MLVP event insertion need the whole clip: the whole clip is read and
  perturbed, then sampled, and the record says so (``"sampled": {"lazy": false, "why": …}``).

The output is bit for bit the sampled frames of :func:`robustlab.perturb.perturb` on the whole clip (tested for
every video-capable perturbation). A lazy record is an ordinary record plus ``"sampled"``: the output indices, the
output length, the input frames read (its ``input_hash`` is theirs); ``regenerate(record, clip)`` returns the
same sampled frames.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Protocol, Sequence, Union

import numpy as np

from robustlab.perturb import record as _rec
from robustlab.perturb import registry as _reg


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
    from robustlab.io.convert import to_uint8_rgb

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


def lazy_plan(name: str):
    """Decorator: register ``fn(shape, params, rng) -> FramePlan`` as the lazy plan of video perturbation ``name``.
    ``rng`` is the seeded generator the whole-clip function gets; the plan must draw from it exactly as the
    function does (before touching pixels), so its frames equal the whole clip's."""

    def deco(fn):
        _reg._REGISTRY[name].plan = fn
        return fn

    return deco


def plan_for(spec: _reg.PerturbationSpec, shape: tuple, params: dict, seed: int) -> Optional[FramePlan]:
    """The spec's frame plan for a clip of ``shape`` (T, H, W, 3), or None when it needs the whole clip."""
    rng = np.random.default_rng(seed)
    if spec.modality == "image":
        return per_frame_plan(shape[0], lambda f, t: _reg.frame_call(spec, f, params, _reg.frame_rng(rng, t)))
    if spec.plan is None:
        return None
    return spec.plan(tuple(int(d) for d in shape), dict(params), rng)


def whole_clip_reason(spec: _reg.PerturbationSpec) -> str:
    if "codec" in spec.tags:
        return "a codec's frames depend on the whole encoded stream (motion prediction, rate control)"
    if spec.name == "mlvp_event_insertion":
        return "the inserted event is chosen by similarity to the whole clip and changes its length"
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


def perturb_sampled(source, name: str, severity: int, seed: int = 0, variant: Optional[str] = None, *,
                    indices: IndexSpec = None) -> _reg.PerturbResult:
    """The frames ``indices(T')`` of the perturbed clip (T' its length), reading only the input frames they need.

    ``source``: a frame source (``n_frames``, ``read(indices)``: :class:`ArraySource`, a dataset's
    ``frame_source(i)``) or a T×H×W×3 array. ``indices``: the model's sampler ``T' -> output indices`` (e.g.
    :func:`robustlab.models.protocols.sample_frame_indices`), a fixed list, or None (every frame).
    Returns ``PerturbResult(len(indices)×H'×W'×3 uint8, record)``; see the module docstring for the record."""
    spec = _reg.get_perturbation(name)
    v = _reg._check_variant(spec, variant)
    s = _reg._check_severity(severity)
    seed = _reg._check_seed(seed)
    if not spec.available:
        raise RuntimeError(f"perturbation {name!r} is unavailable: {spec.reason}")
    if "video" not in spec.applies_to:
        raise _reg.InputKindError(f"perturbation {spec.name!r} does not accept videos")
    src = _as_source(source)
    n = int(src.n_frames)
    if n < 1:
        raise ValueError("a video must have at least one frame")
    params = {} if s == 0 else dict(spec.variants[v][s])
    plan = None
    if s == 0:
        plan = index_plan(np.arange(n))
    else:
        plan = plan_for(spec, (n,) + _frame_shape(src), params, seed)
    sampled: dict = {"lazy": plan is not None}
    note = "severity 0: clean pass-through (output == input)" if s == 0 else ""
    if plan is None:  # whole clip, then sample
        clip = src.read(np.arange(n))
        res = _reg.perturb(clip, spec.name, s, seed=seed, variant=v)
        idx = _resolve_indices(indices, res.output.shape[0])
        out = np.ascontiguousarray(res.output[idx])
        sampled.update(why=whole_clip_reason(spec), n_out=int(res.output.shape[0]), indices=idx.tolist(),
                       frames_read=n)
        record = dict(res.record, output_hash=_rec.hash_value(out), output={"shape": list(out.shape)})
        record["input"] = dict(record["input"], hash_of="the whole clip")
        record["sampled"] = sampled
        return _reg.PerturbResult(out, record)
    idx = _resolve_indices(indices, plan.n_out)
    need = sorted({int(i) for t in idx for i in plan.needs(int(t))})
    if need and (need[0] < 0 or need[-1] >= n):
        raise RuntimeError(f"perturbation {spec.name!r}'s plan asked for frames outside 0..{n - 1}")
    frames = src.read(need)
    got = {i: frames[k] for k, i in enumerate(need)}
    out = np.stack([np.asarray(plan.render(got.__getitem__, int(t))) for t in idx])
    if out.dtype != np.uint8 or out.ndim != 4 or out.shape[-1] != 3:
        raise RuntimeError(f"perturbation {spec.name!r}'s plan rendered {out.dtype} {out.shape}, expected uint8 "
                           "frames")
    sampled.update(n_out=int(plan.n_out), indices=idx.tolist(), frames_read=need)
    info = {"kind": "video", "shape": [n] + list(frames.shape[1:]), "hash_of": "the frames read"}
    record = _rec.build_record(name=spec.name, modality=spec.modality, variant=v, severity=s, seed=seed,
                               params=params, input_info=info, input_hash=_rec.hash_value(frames),
                               output_hash=_rec.hash_value(out), note=note, output_info={"shape": list(out.shape)})
    if spec.modality == "image":
        record["frame_seeding"] = _reg.FRAME_SEEDING
    record["sampled"] = sampled
    return _reg.PerturbResult(out, record)


def regenerate_sampled(record: dict, x) -> np.ndarray:
    """Re-run a lazy record on the clean clip (array or frame source): the same sampled frames, bit for bit."""
    import warnings

    smp = record["sampled"]
    if record.get("frame_seeding", _reg.FRAME_SEEDING) != _reg.FRAME_SEEDING:
        raise ValueError(f"a lazy record needs per-frame seeding, this one says {record.get('frame_seeding')!r}")
    src = _as_source(x)
    shape = (record.get("input") or {}).get("shape")
    if shape and int(shape[0]) != int(src.n_frames):
        raise ValueError(f"the record was made from a clip of {shape[0]} frames; this one has {src.n_frames}")
    res = perturb_sampled(src, record["name"], record["severity"], seed=record["seed"], variant=record["variant"],
                          indices=smp["indices"])
    if res.record["input_hash"] != record["input_hash"]:
        raise ValueError(f"input does not match the record's input_hash ({record['input_hash']}, of "
                         f"{(record.get('input') or {}).get('hash_of', 'the clip')}); regenerate needs the same clean clip "
                         "the record was made from")
    diff = _rec.version_differences(record.get("versions") or {}, ["robustlab", "numpy"])
    if diff:
        txt = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in diff.items())
        warnings.warn(f"regenerating {record['name']!r} with different library versions ({txt}); "
                      "the output may not match bit for bit", _reg.VersionMismatchWarning, stacklevel=3)
    if record.get("output_hash") and not _rec.matches(res.output, record["output_hash"]):
        warnings.warn(f"regenerated output of {record['name']!r} differs from the record's output_hash",
                      _reg.VersionMismatchWarning, stacklevel=3)
    return res.output


__all__ = ["FrameSource", "ArraySource", "FramePlan", "index_plan", "per_frame_plan", "lazy_plan", "plan_for",
           "perturb_sampled", "regenerate_sampled"]
