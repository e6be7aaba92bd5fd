"""One registry for every perturbation (image, video, text), timm/AugLy style.

A perturbation is a pure function ``fn(x, params: dict, rng: np.random.Generator) -> output`` registered with
what says how it behaves; its card (metadata and a severity table per variant) is the ``[name]`` table of the data
file beside its module (:func:`robustlab.perturb.specs.register`)::

    @register("gaussian_noise", batched=True)        # image/noise.py; the card in image/noise.toml:
    def gaussian_noise(x, params, rng): ...          # [gaussian_noise.variants.imagenet_c] sigma = [0.08, ...]

or, without a data file, with the card as keywords: ``@register("mine", modality="image", category="noise",
source="...", severity_table={1: {"sigma": 0.08}, ...})``.

``perturb(x, name, severity, seed, variant)`` resolves the parameters, converts the input (images through
``robustlab.io.convert.to_uint8_rgb``), seeds ``np.random.default_rng(seed)`` (never the global RNG),
runs the function and returns ``PerturbResult(output, record)``. Severity 0 is a clean pass-through for
every perturbation. ``regenerate(record, x)`` re-runs a record and returns the same output bit for bit.

Image functions get an H×W×3 uint8 array (or, when registered with ``batched=True``, any ``...×H×W×3`` stack,
which is how videos are processed in one vectorised call) and must return the same shape, uint8.
A T×H×W×3 video given to an image perturbation is processed frame by frame with fresh randomness per frame:
frame t draws from its own generator, child t of the seeded one (:func:`frame_rng`), so frame t alone can be
perturbed exactly as in the whole clip (``robustlab.perturb.lazy``); the record says ``"frame_seeding":
"per-frame"``. Records without that field (robustlab 0.1) used chunk seeding and regenerate with it. The frames
are split into chunks of at most ``VIDEO_CHUNK_ELEMENTS`` elements (one frame at 224², several for small
frames: whole-stack float intermediates fall out of the CPU caches and run 2–5× slower than a frame loop; a spec's
``chunk_elements`` overrides it where per-call overhead dominates, e.g. fog's many small diamond-square steps; a
fixed function of the shape, never of the machine); deterministic ``batched`` functions get each chunk as one
vectorised ``k×H×W×3`` call, others one call per frame. Chunks run on ``VIDEO_THREADS`` threads (NumPy's large
operations and OpenCV release the GIL, Pillow's JPEG encoder hardly does; env ``ROBUSTLAB_THREADS``, default
min(CPUs, 8); clips under 2M elements and specs tagged "model" run in the calling thread); the output does not
depend on the number of threads.

Video functions (``modality="video"``) get a T×H×W×3 uint8 array and return a T'×H'×W'×3 uint8 one; T' and the
frame size may differ from the input's where the spec says so (``output_note``: temporal ops that shorten or
lengthen a clip, the 224-px crop of a Schiappa variant). A spec with ``applies_to=("image", "video")`` also takes
a single H×W×3 image, seen by the function as a 1-frame video. An image given to a video-only perturbation
raises ``InputKindError`` (a ``ValueError`` and a ``TypeError``).

Availability is decided when specs are listed: a spec is unavailable (``available=False`` with a ``reason``)
while a Python dependency (``requires``), another registered perturbation it calls
(``requires_perturbations``) or an asset checked by its ``check`` callable is missing.

The registry's data (:class:`PerturbationSpec`, :func:`register`, :func:`list_perturbations`,
:func:`get_perturbation`) is :mod:`robustlab.perturb.specs`, the frame plans and sources of lazy video perturbation
:mod:`robustlab.perturb.frames`; both are re-exported here. This module runs perturbations: :func:`perturb`,
:func:`perturb_sampled` (the frames a model samples, reading only those it needs; :mod:`robustlab.perturb.lazy`)
and :func:`regenerate` for both kinds of record.
"""
from __future__ import annotations

import concurrent.futures
import os
import warnings
from typing import Optional

import numpy as np

from robustlab.perturb import record as _rec
from robustlab.perturb import share as _share
from robustlab.perturb.frames import (IndexSpec, _as_source, _frame_shape, _resolve_indices, frame_call, frame_rng,
                                      index_plan, plan_for, whole_clip_reason)
from robustlab.perturb.specs import (  # noqa: F401  (re-exported: the registry's public names and _REGISTRY)
    _DEPS, _REGISTRY, MAX_SEVERITY, MIN_SEVERITY, MODALITIES, InputKindError, PerturbationSpec, PerturbResult,
    VersionMismatchWarning, _check_seed, _check_severity, _check_variant, get_perturbation, lazy_plan,
    list_perturbations, register, resolve_perturbation, split_variant)

VIDEO_CHUNK_ELEMENTS = 1 << 18  # image ops see videos in chunks of <= this many uint8 elements (1 frame at 224²)
VIDEO_THREADS = int(os.environ.get("ROBUSTLAB_THREADS", "0") or 0) or min(os.cpu_count() or 1, 8)


def _prepare_input(spec: PerturbationSpec, x):
    """-> (converted input, input_info). Images go through to_uint8_rgb; 4-D arrays (and ``Video`` objects, via
    their ``frames``) are videos."""
    if spec.modality == "text":
        if not isinstance(x, str):
            raise TypeError(f"text perturbation {spec.name!r} needs a str, got {type(x).__name__}")
        try:
            x.encode("utf-8")
        except UnicodeEncodeError as e:  # e.g. json.loads('"\\ud800"'): spaCy, tokenizers and UTF-8 files refuse it
            raise ValueError(f"text perturbation {spec.name!r} needs valid Unicode text: {x[e.start]!r} at position "
                             f"{e.start} is a lone surrogate (decode with errors='replace', or drop it)") from None
        return x, {"kind": "text", "chars": len(x)}
    if isinstance(x, str):
        raise TypeError(f"{spec.modality} perturbation {spec.name!r} needs an image or video array, got a str")
    if not hasattr(x, "convert") and isinstance(getattr(x, "frames", None), np.ndarray):
        x = x.frames  # robustlab.io.media.Video
    from robustlab.io.convert import to_uint8_rgb  # lazy: the engine imports torch

    is_video = not hasattr(x, "convert") and np.ndim(x) == 4
    if is_video:
        if "video" not in spec.applies_to:
            raise InputKindError(f"perturbation {spec.name!r} does not accept videos")
        a = np.asarray(x)
        if a.shape[0] < 1:
            raise ValueError("a video must have at least one frame")
        if a.dtype == np.uint8 and a.shape[-1] == 3:  # the common case: no per-frame conversion
            arr = np.ascontiguousarray(a)
        else:
            frames = [to_uint8_rgb(f) for f in a]
            if len({f.shape for f in frames}) != 1:
                raise ValueError("all video frames must have the same size")
            arr = np.stack(frames)
        kind = "video"
    else:
        if "image" not in spec.applies_to:
            shape = getattr(x, "size", None) if hasattr(x, "convert") else np.shape(x)
            raise InputKindError(
                f"perturbation {spec.name!r} is video-only: it needs a T×H×W×3 video, got a single image "
                f"{'(PIL, size ' + str(shape) + ')' if hasattr(x, 'convert') else 'of shape ' + str(tuple(shape))}; "
                "stack frames into a video or pick an image perturbation")
        arr = to_uint8_rgb(x)
        kind = "image"
    if arr.shape[-3] < 1 or arr.shape[-2] < 1:
        raise ValueError(f"an image must be at least 1×1, got shape {arr.shape}")
    return arr, {"kind": kind, "shape": list(arr.shape)}


def _chunks(n_frames: int, frame_elems: int, limit: int = 0):
    step = max(1, (limit or VIDEO_CHUNK_ELEMENTS) // max(frame_elems, 1))
    return [(i, min(i + step, n_frames)) for i in range(0, n_frames, step)]


FRAME_SEEDING = "per-frame"  # what a video record of an image perturbation names (``frame_seeding``)
LEGACY_FRAME_SEEDING = "chunked"  # records made before robustlab 0.2 (no ``frame_seeding`` field)

def _map_frames(spec: PerturbationSpec, x: np.ndarray, params: dict, rng: np.random.Generator,
                seeding: str = FRAME_SEEDING) -> np.ndarray:
    """An image perturbation over a T×H×W×3 video on threads, frames in fixed chunks.

    ``per-frame`` seeding (the default): frame t draws from :func:`frame_rng` ``(rng, t)``; deterministic batched
    functions (no randomness) still get each chunk in one vectorised call. ``chunked`` (records made before
    robustlab 0.2): chunk i draws from the i-th child of the seeded generator, advancing across its frames."""
    if seeding not in (FRAME_SEEDING, LEGACY_FRAME_SEEDING):
        raise ValueError(f"unknown frame seeding {seeding!r} in the record; this robustlab knows "
                         f"{FRAME_SEEDING!r} (0.2 and later) and {LEGACY_FRAME_SEEDING!r} (before 0.2, i.e. 0.1)")
    parts = _chunks(x.shape[0], int(np.prod(x.shape[1:])), spec.chunk_elements)
    legacy = seeding == LEGACY_FRAME_SEEDING
    gens = rng.spawn(len(parts)) if legacy else None
    whole_chunks = spec.batched and (legacy or "deterministic" in spec.tags)
    out = np.empty_like(x)

    def work(i: int) -> None:
        a, b = parts[i]
        if whole_chunks:
            res = np.asarray(spec.fn(x[a:b], dict(params), gens[i] if legacy else rng))
        elif legacy:
            res = np.stack([np.asarray(spec.fn(f, dict(params), gens[i])) for f in x[a:b]])
        else:
            res = np.stack([frame_call(spec, x[t], params, frame_rng(rng, t)) for t in range(a, b)])
        if res.shape != x[a:b].shape or res.dtype != np.uint8:
            raise RuntimeError(f"perturbation {spec.name!r} returned {res.dtype} {res.shape[1:]} frames, expected "
                               f"uint8 {x.shape[1:]}")
        out[a:b] = res

    workers = min(VIDEO_THREADS, len(parts))
    if workers <= 1 or "model" in spec.tags or x.size < (1 << 21):  # small clips: threads cost more than they save
        for i in range(len(parts)):
            work(i)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            for f in [ex.submit(work, i) for i in range(len(parts))]:
                f.result()
    return out


def _run(spec: PerturbationSpec, x, params: dict, rng: np.random.Generator, seeding: str = FRAME_SEEDING):
    if spec.modality == "text":
        out = spec.fn(x, dict(params), rng)
        if not isinstance(out, str):
            raise RuntimeError(f"perturbation {spec.name!r} returned {type(out).__name__}, expected str")
        return out
    if spec.modality == "video":
        v = x if x.ndim == 4 else x[None]  # an image (where accepted) is a 1-frame video
        out = np.asarray(spec.fn(v, dict(params), rng))
        if out.dtype != np.uint8 or out.ndim != 4 or out.shape[-1] != 3 or min(out.shape) < 1:
            raise RuntimeError(f"video perturbation {spec.name!r} returned {out.dtype} {out.shape}, expected a "
                               "T×H×W×3 uint8 video with at least one 1×1 frame")
        if not spec.output_note and out.shape != v.shape:
            raise RuntimeError(f"perturbation {spec.name!r} returned shape {out.shape}, expected {v.shape}")
        if x.ndim == 3:
            if out.shape[0] != 1:
                raise RuntimeError(f"perturbation {spec.name!r} turned an image into {out.shape[0]} frames")
            out = out[0]
        return np.ascontiguousarray(out)
    if x.ndim == 4:
        out = _map_frames(spec, x, params, rng, seeding)
    else:
        out = spec.fn(x, dict(params), rng)
    out = np.asarray(out)
    if out.shape != x.shape or out.dtype != np.uint8:
        raise RuntimeError(f"perturbation {spec.name!r} returned {out.dtype} {out.shape}, expected uint8 {x.shape}")
    return np.ascontiguousarray(out)


def _run_checked(spec: PerturbationSpec, x, params: dict, seed: int, seeding: str = FRAME_SEEDING):
    try:
        return _run(spec, x, params, np.random.default_rng(seed), seeding)
    except ImportError as e:  # a dependency found on disk but broken at import
        raise RuntimeError(f"perturbation {spec.name!r} is unavailable: {e}") from e


def _run_kept(spec: PerturbationSpec, clip: np.ndarray, params: dict, seed: int, idx: np.ndarray) -> np.ndarray:
    """A ``keep_frames`` op's output frames ``idx`` (its function returns only those)."""
    try:
        out = np.asarray(spec.fn(clip, dict(params), np.random.default_rng(seed), keep=idx))
    except ImportError as e:  # a dependency found on disk but broken at import
        raise RuntimeError(f"perturbation {spec.name!r} is unavailable: {e}") from e
    if out.dtype != np.uint8 or out.shape != (len(idx),) + clip.shape[1:]:
        raise RuntimeError(f"perturbation {spec.name!r} returned {out.dtype} {out.shape} for {len(idx)} kept frames, "
                           f"expected uint8 {(len(idx),) + clip.shape[1:]}")
    return np.ascontiguousarray(out)


def _checked(name: str, variant: str | None, severity, seed) -> tuple[PerturbationSpec, str, int, int]:
    """(spec, variant, severity, seed) of a call, each checked (one-line ValueError), the spec available."""
    spec = get_perturbation(name)
    v = _check_variant(spec, variant)
    s = _check_severity(severity)
    seed = _check_seed(seed)
    if not spec.available:
        raise RuntimeError(f"perturbation {name!r} is unavailable: {spec.reason}")
    return spec, v, s, seed


def perturb(x, name: str, severity: int, seed: int = 0, variant: str | None = None, *,
            frame_seeding: str | None = None, params: dict | None = None) -> PerturbResult:
    """Apply perturbation ``name`` (or ``name/variant``) at ``severity`` (0 = clean, 1..5) with ``seed``; see module
    docstring.

    ``frame_seeding`` (image perturbations on videos; normally left alone): ``"per-frame"`` (the default, what the
    record names) or ``"chunked"``, the scheme of records made before robustlab 0.2 (``regenerate`` picks it).
    ``params`` (severity 1..5 only): parameters replacing the severity table's (a refined breaking point between two
    severities, :mod:`robustlab.failures.refine`); the record keeps them with ``"params_override": true``."""
    name, variant = split_variant(name, variant)
    spec, v, s, seed = _checked(name, variant, severity, seed)
    arr, info = _prepare_input(spec, x)
    input_hash = _rec.hash_value(arr)
    note = ""
    if s == 0:
        params = {}
        out = arr if isinstance(arr, str) else arr.copy()
        note = "severity 0: clean pass-through (output == input)"
    else:
        params = dict(spec.variants[v][s]) if params is None else dict(params)
        if spec.modality == "text" and not arr.strip():
            out = arr
            note = "empty or whitespace-only text: returned unchanged"
        else:
            keyed = _share.output_key(spec, v, s, seed, input_hash) if info["kind"] == "video" and \
                params == spec.variants[v][s] else None
            out = _share.MEMO.get(keyed, s)  # a severity whose effective parameters another one computed
            if out is None:
                out = _run_checked(spec, arr, params, seed, frame_seeding or FRAME_SEEDING)
                if keyed is not None:
                    _share.MEMO.put(keyed, s, out.copy(), out.nbytes)
            else:
                out = out.copy()
            if spec.modality == "text" and out == arr:
                note = "no augmentable words (or nothing changed): returned unchanged"
    details = None
    if isinstance(out, str):
        details = getattr(out, "info", None)  # e.g. the semantic gate's similarity and attempts
        out = str(out)
    out_info = None if isinstance(out, str) else {"shape": list(out.shape)}
    record = _rec.build_record(name=spec.name, modality=spec.modality, variant=v, severity=s, seed=seed,
                               params=params, input_info=info, input_hash=input_hash,
                               output_hash=_rec.hash_value(out), note=note, output_info=out_info)
    if details:
        record["details"] = _rec.jsonable(details)
    if spec.modality == "image" and info["kind"] == "video":
        record["frame_seeding"] = frame_seeding or FRAME_SEEDING
    if s and params != spec.variants[v][s]:
        record["params_override"] = True
    return PerturbResult(out, record)


def perturb_sampled(source, name: str, severity: int, seed: int = 0, variant: Optional[str] = None, *,
                    indices: IndexSpec = None, params: dict | None = None) -> PerturbResult:
    """The frames ``indices(T')`` of the perturbed clip (T' its length), reading only the input frames they need.

    ``source``: a frame source (``n_frames``, ``read(indices)``: :class:`ArraySource`, a dataset's
    ``frame_source(i)``) or a T×H×W×3 array. ``indices``: the model's sampler ``T' -> output indices`` (e.g.
    :func:`robustlab.models.protocols.sample_frame_indices`), a fixed list, or None (every frame).
    ``params`` (severity 1..5 only): parameters replacing the severity table's, as :func:`perturb` takes them (an
    item's own, e.g. MLVP's main-object boxes or event donor, :mod:`robustlab.perturb.video.mlvp.context`); the
    plan is made from them, the record keeps them with ``"params_override": true`` and such an output is never
    shared with the table's (``share.MEMO``).
    Returns ``PerturbResult(len(indices)×H'×W'×3 uint8, record)``; :mod:`robustlab.perturb.lazy` describes the
    record."""
    spec, v, s, seed = _checked(name, variant, severity, seed)
    if "video" not in spec.applies_to:
        raise InputKindError(f"perturbation {spec.name!r} does not accept videos")
    src = _as_source(source)
    n = int(src.n_frames)
    if n < 1:
        raise ValueError("a video must have at least one frame")
    table = {} if s == 0 else spec.variants[v][s]
    params = dict(table) if s == 0 or params is None else dict(params)
    override = bool(s) and params != table
    plan = None
    if s == 0:
        plan = index_plan(np.arange(n))
    else:
        plan = plan_for(spec, (n,) + _frame_shape(src), params, seed)
    sampled: dict = {"lazy": plan is not None}
    note = "severity 0: clean pass-through (output == input)" if s == 0 else ""
    if plan is None:  # whole clip, then sample
        res = _whole_clip_sampled(spec, src, v, s, seed, params, indices, share=not override)
        if override:
            res.record["params_override"] = True
        return res
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
        record["frame_seeding"] = FRAME_SEEDING
    record["sampled"] = sampled
    if override:
        record["params_override"] = True
    return PerturbResult(out, record)


def _whole_clip_sampled(spec: PerturbationSpec, src, v: str, s: int, seed: int, params: dict,
                        indices: IndexSpec, share: bool = True) -> PerturbResult:
    """A whole-clip op's sampled frames: the clip read whole (once for the severities asked in turn,
    ``share.CLIPS``) and perturbed, then sampled; severities with equal effective parameters share the sampled
    output (``share.MEMO``, keyed by the source's identity and the indices), so a hit decodes and encodes nothing.
    ``share=False`` (parameters other than the table's): the output is neither looked up nor kept there."""
    n = int(src.n_frames)
    ident = _share.source_identity(src) if spec.effective or getattr(src, "identity", None) else None
    keyed = None
    # the output has the clip's length: the indices are known now
    if share and ident is not None and not spec.output_note:
        keyed = _share.output_key(spec, v, s, seed, ident, _resolve_indices(indices, n).tolist())
    got = _share.MEMO.get(keyed, s)
    if got is None:
        clip, input_hash = _share.CLIPS.read_whole(src, ident if ident and ident[0] == "source" else None)
        if spec.keep_frames and not spec.output_note:  # only the sampled frames come back (bit for bit)
            idx = _resolve_indices(indices, n)
            out = _run_kept(spec, clip, params, seed, idx)
            n_out = n
        else:
            whole = _run_checked(spec, clip, params, seed)
            n_out = int(whole.shape[0])
            idx = _resolve_indices(indices, n_out)
            out = np.ascontiguousarray(whole[idx])
        got = (input_hash, list(clip.shape), n_out, idx, out)
        _share.MEMO.put(keyed, s, got, got[-1].nbytes)
    input_hash, shape, n_out, idx, out = got
    out = out.copy()
    info = {"kind": "video", "shape": shape, "hash_of": "the whole clip"}
    record = _rec.build_record(name=spec.name, modality=spec.modality, variant=v, severity=s, seed=seed,
                               params=params, input_info=info, input_hash=input_hash,
                               output_hash=_rec.hash_value(out), note="", output_info={"shape": list(out.shape)})
    record["sampled"] = {"lazy": False, "why": whole_clip_reason(spec), "n_out": n_out, "indices": idx.tolist(),
                         "frames_read": n}
    return PerturbResult(out, record)


def regenerate_sampled(record: dict, x) -> np.ndarray:
    """Re-run a lazy record on the clean clip (array or frame source): the same sampled frames, bit for bit."""
    smp = record["sampled"]
    if record.get("frame_seeding", FRAME_SEEDING) != FRAME_SEEDING:
        raise ValueError(f"a lazy record needs per-frame seeding, this one says {record.get('frame_seeding')!r}")
    src = _as_source(x)
    shape = (record.get("input") or {}).get("shape")
    if shape and int(shape[0]) != int(src.n_frames):
        raise ValueError(f"the record was made from a clip of {shape[0]} frames; this one has {src.n_frames}")
    res = perturb_sampled(src, record["name"], record["severity"], seed=record["seed"], variant=record["variant"],
                          indices=smp["indices"],
                          params=record.get("params") if record.get("params_override") else None)
    if res.record["input_hash"] != record["input_hash"]:
        raise ValueError(f"input does not match the record's input_hash ({record['input_hash']}, of "
                         f"{(record.get('input') or {}).get('hash_of', 'the clip')}); regenerate needs the same "
                         "clean clip the record was made from")
    diff = _rec.version_differences(record.get("versions") or {}, ["robustlab", "numpy"])
    if diff:
        txt = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in diff.items())
        warnings.warn(f"regenerating {record['name']!r} with different library versions ({txt}); "
                      "the output may not match bit for bit", VersionMismatchWarning, stacklevel=3)
    if record.get("output_hash") and not _rec.matches(res.output, record["output_hash"]):
        warnings.warn(f"regenerated output of {record['name']!r} differs from the record's output_hash",
                      VersionMismatchWarning, stacklevel=3)
    return res.output


def regenerate(record: dict, x):
    """Re-run ``record`` on the clean input ``x``; returns the output, bit for bit the original one.

    Raises ValueError if ``x`` is not the input the record was made from (input_hash mismatch) or the record is
    malformed; warns (VersionMismatchWarning) if relevant library versions differ from the recorded ones, and
    if the regenerated output's hash differs from the recorded ``output_hash``.
    """
    if not isinstance(record, dict):
        raise ValueError(f"record must be a dict, got {type(record).__name__}")
    missing = [k for k in ("name", "variant", "severity", "seed", "input_hash") if k not in record]
    if missing:
        raise ValueError(f"record lacks {', '.join(missing)}")
    if record.get("schema", _rec.SCHEMA) != _rec.SCHEMA:
        raise ValueError(f"unsupported record schema {record.get('schema')!r}; this robustlab writes {_rec.SCHEMA}")
    spec = get_perturbation(record["name"])
    if isinstance(record.get("sampled"), dict):  # a lazy record: the sampled frames of the perturbed clip
        return regenerate_sampled(record, x)
    arr, info = _prepare_input(spec, x)
    if not _rec.matches(arr, record["input_hash"]):
        raise ValueError(f"input does not match the record's input_hash ({record['input_hash']}); "
                         "regenerate needs the same clean input the record was made from")
    keys = ["robustlab", "numpy"] + [_DEPS.get(d, (d, d))[1] for d in spec.requires]
    if "av" in spec.requires:
        keys.append("machine")  # FFmpeg/x264 SIMD paths are per architecture
    if spec.modality == "text":
        keys.append("python")  # text augmenters use Python's `random`
    diff = _rec.version_differences(record.get("versions") or {}, keys)
    if diff:
        txt = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in diff.items())
        warnings.warn(f"regenerating {spec.name!r} with different library versions ({txt}); "
                      "the output may not match bit for bit", VersionMismatchWarning, stacklevel=2)
    seeding = None
    if spec.modality == "image" and info["kind"] == "video":
        seeding = record.get("frame_seeding", LEGACY_FRAME_SEEDING)  # no field: made before robustlab 0.2
    res = perturb(x, record["name"], record["severity"], seed=record["seed"], variant=record["variant"],
                  frame_seeding=seeding, params=record.get("params") if record.get("params_override") else None)
    if record.get("output_hash") and not _rec.matches(res.output, record["output_hash"]):
        warnings.warn(f"regenerated output of {spec.name!r} differs from the record's output_hash",
                      VersionMismatchWarning, stacklevel=2)
    return res.output


__all__ = ["register", "list_perturbations", "get_perturbation", "resolve_perturbation", "perturb", "perturb_sampled",
           "regenerate", "regenerate_sampled", "lazy_plan", "frame_rng", "frame_call", "PerturbationSpec",
           "PerturbResult", "InputKindError", "VersionMismatchWarning", "MODALITIES", "MIN_SEVERITY", "MAX_SEVERITY",
           "VIDEO_CHUNK_ELEMENTS", "VIDEO_THREADS", "FRAME_SEEDING", "LEGACY_FRAME_SEEDING"]
