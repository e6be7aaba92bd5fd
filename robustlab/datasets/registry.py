"""The dataset registry: ``@register_dataset``, ``list_datasets()``, ``build(name, root=None, split=None, **kw)``.

A dataset module registers a builder (a Dataset subclass or a function returning one) with what it is and what it
needs; :func:`build` checks the split and the folder before calling it, so every loader fails the same way: one
line (:class:`DatasetError`) that says what is missing and what to pass. Wildcards as in timm (case-insensitive,
as ``list_models``): ``list_datasets("ms*")``, ``list_datasets(task="grounding")``.

The registration is the one place a dataset's metadata is declared: a registered Dataset class gets its ``name``,
``kind``, ``tasks`` and ``splits`` from it (:data:`CLASS_FIELDS`), so the class body does not repeat them.
"""
from __future__ import annotations

import fnmatch
import importlib
import inspect
import os
from pathlib import Path
from typing import Callable

from robustlab.datasets.base import Dataset, DatasetError
from robustlab.io.access import inside
from robustlab.io.confined import is_dir, shown_path

_REGISTRY: dict[str, dict] = {}

# modules whose import registers datasets (one per dataset family; a newcomer finds each here)
DATASET_MODULES = (
    "robustlab.datasets.synthetic.datasets",  # builtin, builtin-videos
    "robustlab.datasets.uploads",             # upload (images, videos, captions a user gives)
    "robustlab.datasets.coco",                # coco (Karpathy captions)
    "robustlab.datasets.flickr30k",           # flickr30k (Karpathy captions)
    "robustlab.datasets.msrvtt",              # msrvtt (1k-A test, full split)
    "robustlab.datasets.youcook2",            # youcook2 (segments cut when read)
    "robustlab.datasets.refcoco",             # refcoco, refcoco+, refcocog
    "robustlab.datasets.snli_ve",             # snli-ve (visual entailment)
    "robustlab.datasets.nlvr2",               # nlvr2 (visual reasoning, two images)
    "robustlab.datasets.msvd",                # msvd (1,200 / 100 / 670 split)
    "robustlab.datasets.didemo",              # didemo (paragraph-to-video)
    "robustlab.datasets.activitynet",         # activitynet (ActivityNet Captions, paragraph-to-video)
    "robustlab.datasets.lsmdc",               # lsmdc (1,000-clip test)
    "robustlab.datasets.video_qa",            # msrvtt-qa, activitynet-qa, next-qa (video QA)
)


# what a registered Dataset class gets from its registration (declared once, in register_dataset)
CLASS_FIELDS = ("name", "kind", "tasks", "splits")


def register_dataset(name: str, *, kind: str, tasks: tuple[str, ...], description: str, splits: tuple[str, ...],
                     default_split: str | None = None, needs_root: bool = True, needs: str = "",
                     paper: str = "", markers: tuple[str, ...] = (), convert_markers: tuple[str, ...] = (),
                     convert: str = "") -> Callable:
    """Register a dataset builder. ``needs`` says, in one line, which files the folder must hold; ``markers`` are
    the files (relative paths, ``*`` wildcards allowed in the last part) whose presence tells that a folder holds
    this dataset (:func:`discover`); ``"<media>"`` stands for image or video files in the folder itself.
    ``convert_markers`` are the files of a form the loader opens only after a conversion (RefCOCO's pickled
    ``refs(unc).p``) and ``convert`` the command that converts a folder (``FOLDER`` standing for it): a folder with
    one of them and none of ``markers`` needs that command first (:func:`needs_conversion`). A Dataset class gets
    ``name``, ``kind``, ``tasks`` and ``splits`` from here as class attributes (:data:`CLASS_FIELDS`)."""

    def deco(builder):
        entry = dict(name=name, builder=builder, kind=kind, tasks=tuple(tasks), description=description,
                     splits=tuple(splits), default_split=default_split or splits[0],
                     needs_root=needs_root, needs=needs, paper=paper, markers=tuple(markers),
                     convert_markers=tuple(convert_markers), convert=convert)
        if inspect.isclass(builder):
            for field in CLASS_FIELDS:
                setattr(builder, field, entry[field])
        _REGISTRY[name] = entry
        return builder
    return deco


def _ensure_loaded() -> None:
    for mod in DATASET_MODULES:
        importlib.import_module(mod)


def list_datasets(pattern: str | None = None, task: str | None = None, kind: str | None = None) -> list[dict]:
    """Registered datasets (name, kind, tasks, splits, what the folder needs), filtered by a wildcard pattern on the
    name (fnmatch, case-insensitive), a task and a kind."""
    _ensure_loaded()
    out = []
    for name, e in sorted(_REGISTRY.items()):
        if pattern and not fnmatch.fnmatchcase(name.lower(), pattern.lower()):
            continue
        if task and task not in e["tasks"]:
            continue
        if kind and e["kind"] not in (kind, "any"):
            continue
        out.append({k: (list(v) if isinstance(v, tuple) else v) for k, v in e.items() if k != "builder"})
    return out


def get_entry(name: str) -> dict:
    _ensure_loaded()
    if name not in _REGISTRY:
        raise DatasetError(f"unknown dataset {name!r}; datasets: {', '.join(sorted(_REGISTRY))} "
                           "(see `robustlab datasets`)")
    return _REGISTRY[name]


def options(name: str) -> set | None:
    """The keyword options dataset ``name``'s loader takes besides root and split (None: it passes any keyword on);
    an unknown name raises :class:`DatasetError` (one line naming the known ones)."""
    return _options(get_entry(name)["builder"])


def build(name: str, root: str | Path | None = None, split: str | None = None, **kw) -> Dataset:
    """Build a registered dataset. DatasetError (one line) for an unknown name or split, a missing folder, or
    anything the loader finds wrong with the files."""
    e = get_entry(name)
    split = e["default_split"] if split is None else str(split)
    if split not in e["splits"]:
        raise DatasetError(f"{name} has no split {split!r}; splits: {', '.join(e['splits'])}")
    if e["needs_root"]:
        if root is None:
            raise DatasetError(f"{name} reads a local copy: pass its folder (--root PATH / root=...); "
                               f"it needs {e['needs']}")
        p = Path(root).expanduser()
        if not is_dir(p):  # a name too long to look up is a missing folder, never an OSError naming the path
            raise DatasetError(f"{name}: folder {shown_path(p)!r} does not exist (it needs {e['needs']})")
        root = p
    takes = _options(e["builder"])
    unknown = sorted(k for k in kw if takes is not None and k not in takes)
    if unknown:
        raise DatasetError(f"{name} takes no option {', '.join(unknown)}"
                           + (f" (its options: {', '.join(sorted(takes))})" if takes else ""))
    try:
        return e["builder"](root=root, split=split, **kw) if e["needs_root"] else e["builder"](split=split, **kw)
    except TypeError as ex:  # an option the signature could not tell about
        raise DatasetError(f"{name}: {ex}") from ex


def _options(builder) -> set | None:
    """The keyword options a loader takes besides root and split (None: it passes on anything). For a class, the
    first ``__init__`` along its MRO that names its parameters (``__init__(self, *a, **kw)`` passes them up)."""
    funcs = [c.__dict__["__init__"] for c in builder.__mro__ if "__init__" in c.__dict__] \
        if inspect.isclass(builder) else [builder]
    for f in funcs:
        try:
            params = list(inspect.signature(f).parameters.values())
        except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
            return None
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return {p.name for p in params if p.name not in ("self", "root", "split")
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return None


MEDIA_MARKER = "<media>"


def _has_marker(folder: Path, marker: str, peek: int) -> bool:
    """Whether ``folder`` holds ``marker`` (at most ``peek`` directory entries looked at per wildcard/media test)."""
    from robustlab.io.files import MEDIA_SUFFIXES  # PIL: importing robustlab.datasets stays light

    if marker == MEDIA_MARKER or "*" in marker:
        sub, _, pat = marker.rpartition("/") if marker != MEDIA_MARKER else ("", "", "")
        try:
            with os.scandir(folder / sub if sub else folder) as it:
                for i, e in enumerate(it):
                    if i >= peek:
                        return False
                    name = e.name.lower()
                    hit = name.endswith(MEDIA_SUFFIXES) if marker == MEDIA_MARKER else fnmatch.fnmatch(e.name, pat)
                    if hit and e.is_file():
                        return True
        except OSError:
            return False
        return False
    try:
        return (folder / marker).is_file()
    except OSError:
        return False


def _conversion(e: dict, folder: Path, peek: int) -> str | None:
    """``e``'s conversion command when ``folder`` holds one of its ``convert_markers`` and none of its markers."""
    if not e.get("convert_markers") or any(_has_marker(folder, m, peek) for m in e["markers"]):
        return None
    return e["convert"] if any(_has_marker(folder, m, peek) for m in e["convert_markers"]) else None


def needs_conversion(name: str, folder: str | Path, peek: int = 500) -> str | None:
    """The command (``FOLDER`` standing for the folder) that makes ``folder`` readable as dataset ``name`` when it
    holds that dataset only in a form the loader does not open by default (RefCOCO's pickled ``refs(unc).p``),
    else None."""
    return _conversion(get_entry(name), Path(folder), peek)


def discover(roots, depth: int = 2, max_dirs: int = 2000, peek: int = 500, convertible: bool = False) -> list[dict]:
    """The registered datasets found in the folders under ``roots`` (each root and its sub-folders down to
    ``depth`` levels; hidden folders skipped; at most ``max_dirs`` folders looked at; a folder whose real path
    leaves its root is skipped): ``[{"name", "root", "folder", "rel"}]``, ``rel`` being the folder relative to its
    root ("" for the root itself). A folder can hold several formats (an upload folder of a COCO copy's images).
    ``convertible``: also the folders that hold a dataset only in a form that needs converting first (RefCOCO's
    pickled ``refs(unc).p``), each with ``"convert"``: the command (:func:`needs_conversion`)."""
    _ensure_loaded()
    entries = [e for e in _REGISTRY.values() if e["needs_root"] and (e["markers"] or
                                                                       (convertible and e["convert_markers"]))]
    out, seen = [], 0
    for root in roots:
        base = Path(os.path.realpath(Path(root).expanduser()))
        if not is_dir(base):
            continue
        level = [base]
        for d in range(depth + 1):
            nxt = []
            for folder in level:
                if seen >= max_dirs:
                    return out
                seen += 1
                real = Path(os.path.realpath(folder))
                if not inside(real, (base,)):
                    continue
                rel = "" if folder == base else folder.relative_to(base).as_posix()
                for e in entries:
                    if any(_has_marker(real, m, peek) for m in e["markers"]):
                        out.append(dict(name=e["name"], root=str(base), folder=str(real), rel=rel))
                    elif convertible and (cmd := _conversion(e, real, peek)):
                        out.append(dict(name=e["name"], root=str(base), folder=str(real), rel=rel, convert=cmd))
                if d < depth:
                    try:
                        with os.scandir(folder) as it:
                            subs = sorted((Path(x.path) for x in it if not x.name.startswith(".")
                                           and x.is_dir()), key=lambda p: p.name)
                    except OSError:
                        subs = []
                    nxt.extend(subs[:max_dirs])
            level = nxt
    return out


__all__ = ["register_dataset", "list_datasets", "get_entry", "build", "discover", "needs_conversion", "DATASET_MODULES",
           "MEDIA_MARKER", "CLASS_FIELDS"]
