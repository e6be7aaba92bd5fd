"""The model registry: one place for the built-in models and the backends, dispatching by spec prefix.

    builtin:NAME            robustlab's own models (assets/), trained offline on the synthetic world
    open_clip:ARCH/TAG      any open_clip architecture and pretrained tag (or open_clip:ARCH/path/to/ckpt.pt)
    hf:REPO_ID              transformers CLIP / SigLIP (a repo id or a local folder)
    hf-xclip:REPO_ID        X-CLIP text<->video retrieval
    hf-vilt:REPO_ID         ViLT fusion: VQA or image-text matching head, attention capture/replacement
    hf-grounding:REPO_ID    OWL-ViT / OWLv2 / Grounding DINO: best box for a referring expression
    /path/to/dir_or_file    a local transformers folder (routed by its config.json model_type) or open_clip files

Backends and built-in models register themselves in their own modules, as decorators: a backend module decorates
its loader with :func:`register_backend` (``@register_backend("hf", ...)``), a built-in model its class with
:func:`register_builtin`. The registry imports the modules of :data:`BACKEND_MODULES` and :data:`BUILTIN_MODULES`
by name at the first lookup and never a backend at import time (it sits below them: a backend imports it, not the
other way round); the backend modules import transformers or open_clip only when a spec is loaded, so importing
robustlab never does. A backend can also be registered from anywhere with a callable or a ``"module:attr"``
string (imported at its first load). :func:`list_models` lists both kinds, with timm-style wildcards and a task
filter (the task names of :data:`robustlab.models.protocols.TASKS`).
"""
from __future__ import annotations

import fnmatch
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Union

from robustlab.io.entries import absent
from robustlab.models.base import ModelUnavailable
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.hub import OFFLINE_ALTERNATIVES, offline_reason
from robustlab.models.protocols import TASKS, check_task

Loader = Union[str, Callable[..., Any]]  # "package.module:function" (imported lazily) or a callable
_PREFIX_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.+-]*$")


# ---- backends ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backend:
    """A spec prefix and how to load the rest of the spec: ``loader(rest, device=None, **kwargs) -> model``."""

    prefix: str
    loader: Loader
    description: str = ""
    tasks: tuple[str, ...] = ()
    example: str = ""
    requires: tuple[str, ...] = ()  # importable packages it needs (checked without importing them)
    model_types: tuple[str, ...] = ()  # transformers model_type values of local folders routed here
    listed: bool = True

    def resolve(self) -> Callable[..., Any]:
        if callable(self.loader):
            return self.loader
        mod, _, attr = str(self.loader).partition(":")
        return getattr(importlib.import_module(mod), attr)

    def missing(self) -> list[str]:
        """The required packages that are not installed here."""
        return absent(self.requires)


_BACKENDS: dict[str, Backend] = {}

# modules whose import registers backends (one per backend family; a newcomer finds each here). Their order is the
# order of the prefixes in messages and of the model_type routing of local folders.
BACKEND_MODULES = (
    "robustlab.models.open_clip_backend",  # open_clip: ARCH/TAG, and open_clip_path: a bare local open_clip path
    "robustlab.models.hf_backend",         # hf: transformers CLIP / SigLIP
    "robustlab.models.hf_video",           # hf-xclip: X-CLIP text<->video
    "robustlab.models.hf_fusion",          # hf-vilt: ViLT fusion heads
    "robustlab.models.hf_grounding",       # hf-grounding: OWL-ViT / OWLv2 / Grounding DINO
)
# what those modules (and this one) registered, with its place in that order: kept here so that a registry whose
# table was swapped (a test's scratch copy) still gets them back once their modules are imported
_SHIPPED: dict[str, tuple[tuple[int, int], Backend]] = {}


def _home(loader: Loader) -> str:
    """The module a loader lives in."""
    return str(loader).partition(":")[0] if isinstance(loader, str) else getattr(loader, "__module__", "")


def _ensure_backends() -> None:
    for mod in BACKEND_MODULES:
        importlib.import_module(mod)
    for p, (_, b) in _SHIPPED.items():
        _BACKENDS.setdefault(p, b)


def _ordered() -> list[Backend]:
    """The backends in :data:`BACKEND_MODULES` order, then the others as registered."""
    _ensure_backends()
    last = (len(BACKEND_MODULES) + 1, 0)
    return sorted(_BACKENDS.values(), key=lambda b: _SHIPPED[b.prefix][0] if b.prefix in _SHIPPED else last)


def register_backend(prefix: str, loader: Loader | None = None, *, description: str = "", tasks=(), example: str = "",
                     requires=(), model_types=(), listed: bool = True) -> "Backend | Callable":
    """Register (or replace) the backend for specs ``PREFIX:REST``; without ``loader``, a decorator of the loader
    (``@register_backend("hf", ...)`` over ``def load_spec(rest, device=None, **kwargs)``), which it returns.

    ``loader`` is a callable ``loader(rest, device=None, **kwargs)`` or a ``"module:attr"`` string naming one,
    imported at the first load (keep heavy imports out of import time). ``tasks`` are the task names its models
    can serve (:data:`robustlab.models.protocols.TASKS`), ``example`` a spec to show, ``requires`` the packages
    it needs, ``model_types`` the transformers ``model_type`` values of local folders that go to it. Returns the
    :class:`Backend` (the loader, as a decorator).
    """
    kw = dict(description=description, tasks=tasks, example=example, requires=requires, model_types=model_types,
              listed=listed)
    if loader is None:
        _check_prefix(prefix)

        def deco(fn):
            register_backend(prefix, fn, **kw)
            return fn
        return deco
    p = _check_prefix(prefix)
    if not (callable(loader) or (isinstance(loader, str) and ":" in loader)):
        raise ValueError(f"the loader of backend {p!r} must be a callable or a 'module:attr' string, got {loader!r}")
    b = Backend(prefix=p, loader=loader, description=description, tasks=tuple(check_task(t) for t in tasks),
                example=example or f"{p}:NAME", requires=tuple(requires), model_types=tuple(model_types),
                listed=bool(listed))
    home = _home(loader)
    if home == __name__ or home in BACKEND_MODULES:
        rank = -1 if home == __name__ else BACKEND_MODULES.index(home)
        _SHIPPED[p] = ((rank, len(_SHIPPED)), b)
    else:  # the shipped backends first, so that this one replaces theirs for good
        _ensure_backends()
    _BACKENDS[p] = b
    return b


def _check_prefix(prefix: str) -> str:
    p = str(prefix).strip()
    p = p[:-1] if p.endswith(":") else p
    if not _PREFIX_RE.match(p):
        raise ValueError(f"bad backend prefix {prefix!r} (letters, digits, _ . + -; starting with a letter)")
    return p


def get_backend(prefix: str) -> Backend:
    _ensure_backends()
    p = prefix[:-1] if prefix.endswith(":") else prefix
    if p not in _BACKENDS:
        raise ValueError(f"no backend {p!r}; backends: {', '.join(_prefixes())}")
    return _BACKENDS[p]


def _prefixes(listed_only: bool = True) -> list[str]:
    return [b.prefix for b in _ordered() if b.listed or not listed_only]


# ---- built-in models ---------------------------------------------------------------------------------------
_BUILTIN: dict[str, dict] = {}


def register_builtin(name: str, *, task: str, description: str, checkpoint: str | None = None,
                     tags: tuple[str, ...] = (), tasks: tuple[str, ...] | None = None) -> Callable:
    """Class decorator: the built-in model ``builtin:NAME``. ``task`` is its family (as listed so far),
    ``tasks`` the task names it serves (default ``(task,)``), ``checkpoint`` its file under ``assets/``. The class
    gets ``name`` and ``description`` from here (declared once: what ``list_models`` lists is what ``info()``
    says)."""
    served = tuple(check_task(t) for t in (tasks if tasks is not None else (task,)))

    def deco(cls):
        cls.name, cls.description = name, description
        _BUILTIN[name] = dict(name=name, cls=cls, task=task, tasks=served, description=description,
                              checkpoint=checkpoint, tags=tuple(tags))
        return cls
    return deco


# modules whose import registers built-in models (one per model family; a newcomer finds each model here)
BUILTIN_MODULES = (
    "robustlab.models.builtin",        # tiny-clip (image-text dual encoder)
    "robustlab.models.builtin_video",  # tiny-clip-video-meanp / -seqtransf (text-video retrieval)
    "robustlab.models.builtin_vit",    # tiny-vit-clip (+ -video-meanp / -seqtransf): the LayerNorm ViT family
    "robustlab.models.tiny_vilt",      # tiny-vilt (single-stream fusion: ITM, VQA, grounding)
)


def _ensure_loaded() -> None:
    for mod in BUILTIN_MODULES:
        importlib.import_module(mod)


def _recipe(e: dict) -> str:
    """The training recipe that makes a model's checkpoint: named after the checkpoint (one recipe can train
    several models, e.g. tiny-clip-video for both video variants)."""
    ck = e["checkpoint"] or e["name"]
    return ck[:-len(".safetensors")] if ck.endswith(".safetensors") else e["name"]


def _builtin_row(e: dict) -> dict:
    ck = checkpoint_path(e["checkpoint"]) if e["checkpoint"] else None
    ok = ck is None or ck.exists()
    return dict(spec=f"builtin:{e['name']}", name=e["name"], kind="builtin", task=e["task"], tasks=list(e["tasks"]),
                description=e["description"], tags=list(e["tags"]), available=ok,
                reason="" if ok else f"checkpoint {ck} missing; run `robustlab train {_recipe(e)}`",
                card=f"assets/{ck.with_suffix('.md').name}" if ck is not None and ck.with_suffix(".md").exists()
                else None)


def list_builtin() -> list[dict]:
    """Every built-in model, with whether its checkpoint is here (and how to make it when not)."""
    _ensure_loaded()
    return [_builtin_row(e) for _, e in sorted(_BUILTIN.items())]


def get_builtin(name: str):
    _ensure_loaded()
    if name not in _BUILTIN:
        raise ModelUnavailable(f"no built-in model {name!r}; built-in models: {', '.join(sorted(_BUILTIN)) or 'none'}")
    return _BUILTIN[name]["cls"]


def _load_builtin(rest: str, device=None, **kwargs):
    return get_builtin(rest)(device=device, **kwargs)


# ---- the built-in backend (the other backends register in their own modules: BACKEND_MODULES) -----------------
register_backend("builtin", _load_builtin, description="robustlab's own models (listed one by one)",
                 tasks=TASKS, example="builtin:tiny-clip", listed=False)


# ---- specs -------------------------------------------------------------------------------------------------
def _backend_of_folder(folder: Path) -> str:
    """The backend of a local transformers folder, by the ``model_type`` in its config.json (default ``hf``)."""
    try:
        model_type = json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        model_type = None
    for b in _ordered():
        if model_type and model_type in b.model_types:
            return b.prefix
    return "hf"


def _spec_help() -> str:
    shown = ", ".join(f"{p}:" for p in _prefixes())
    return f"use builtin:NAME, one of the prefixes {shown}, or a local path; {OFFLINE_ALTERNATIVES}"


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a model spec into (backend prefix, rest). A bare existing path is routed to its backend."""
    _ensure_backends()
    spec = str(spec).strip()
    if not spec:
        raise ValueError("empty model spec; try builtin:tiny-clip")
    head, sep, rest = spec.partition(":")
    if sep and head in _BACKENDS:
        rest = rest.strip()
        if not rest:
            raise ValueError(f"model spec {spec!r} names no model (e.g. {_BACKENDS[head].example})")
        return head, rest
    p = Path(spec).expanduser()
    if p.exists():
        if p.is_dir() and (p / "config.json").exists():
            return _backend_of_folder(p), str(p)
        return "open_clip_path", str(p)
    if sep and _PREFIX_RE.match(head):
        raise ValueError(f"unknown model spec {spec!r}: no backend is registered for the prefix '{head}:'; "
                         + _spec_help())
    raise ValueError(f"unknown model spec {spec!r}: " + _spec_help())


def load_model(spec: str = "builtin:tiny-clip", device: str | None = None, **kwargs):
    """Load a model from its spec. Raises ModelUnavailable with a one-line reason when it can't be had here,
    ValueError for a spec no backend takes."""
    prefix, rest = parse_spec(spec)
    b = _BACKENDS[prefix]
    missing = b.missing()
    if missing:
        raise ModelUnavailable(f"{spec} unavailable: the {prefix} backend needs {', '.join(missing)} "
                               f"(pip install it); {OFFLINE_ALTERNATIVES}")
    return b.resolve()(rest, device=device, **kwargs)


def _looks_local(rest: str) -> bool:
    """Whether a spec's rest can only be a local path, from its text alone (absolute, home, relative, ``..``)."""
    return rest.startswith(("/", "~", ".", "\\")) or "\\" in rest or ".." in rest.split("/")


def spec_source(spec: str, *, disk: bool = True) -> tuple[str, str | None]:
    """Where a spec's weights would come from, without loading anything or touching the network:
    ``("builtin", None)``, ``("local", path)`` (a checkpoint file or folder the spec names), ``("hub", None)`` (a
    hub repo or pretrained tag: a download unless cached) or ``("random", None)`` (an architecture alone). A
    dashboard checks it against its operator's rules before :func:`load_model` (ValueError for a bad spec).

    ``disk=False`` decides from the spec's text alone, never from what exists on this machine (a dashboard viewer
    must get the same answer whether or not a file of that name lies next to the server): a spec without a
    registered prefix is a local path; a transformers name (``hf:NAME``, ``hf:org/name``) is a hub repo id unless
    it can only be a path (absolute, ``~``, ``.``, ``..``, or more than one ``/``); a confined process loads it so
    (:func:`robustlab.models.hf_base.hf_source`). ``disk=True`` (the default: the library, the CLI) is what
    :func:`load_model` would do here, an existing local folder first."""
    if not disk:
        _ensure_backends()
        text = str(spec).strip()
        head, sep, _ = text.partition(":")
        if text and not (sep and head in _BACKENDS):
            if sep and _PREFIX_RE.match(head) and not _looks_local(text):
                raise ValueError(f"unknown model spec {text!r}: no backend is registered for the prefix '{head}:'; "
                                 + _spec_help())
            return "local", text  # a bare path (open_clip files or a transformers folder): checked where it points
    prefix, rest = parse_spec(spec)
    if prefix == "builtin":
        return "builtin", None
    if prefix == "open_clip_path":
        return "local", rest
    if prefix == "open_clip":
        arch, _, tag = rest.partition("/")
        if arch.startswith("local-dir:"):
            return "local", rest[len("local-dir:"):]
        if arch.startswith("hf-hub:"):
            return "hub", None
        if not tag.strip():
            return "random", None
        try:  # optional heavy dependency: the pretrained tags are open_clip's own table
            import open_clip

            tags = set(open_clip.list_pretrained_tags_by_model(arch.strip()))
        except Exception:  # noqa: BLE001 - open_clip missing or an unknown arch: no tag is known
            tags = set()
        return ("hub", None) if tag.strip() in tags or tag.strip().lower() in tags else ("local", tag.strip())
    if not disk:
        return ("local", rest) if _looks_local(rest) or rest.count("/") > 1 else ("hub", None)
    p = Path(rest).expanduser()
    if _looks_local(rest) or p.exists():  # transformers reads an existing local folder before the hub
        return "local", rest
    return "hub", None


# ---- listing -------------------------------------------------------------------------------------------------
def _backend_row(b: Backend) -> dict:
    missing = b.missing()
    return dict(spec=b.example, name=b.prefix, kind="backend", prefix=f"{b.prefix}:",
                task=b.tasks[0] if b.tasks else "", tasks=list(b.tasks), description=b.description, tags=[],
                available=not missing,
                reason=f"needs {', '.join(missing)} (pip install it)" if missing else "")


def list_backends() -> list[dict]:
    """The listed backends (prefixes), with whether their packages are installed (weights are checked at load)."""
    _ensure_backends()
    return [_backend_row(b) for p, b in sorted(_BACKENDS.items()) if b.listed]


def _matches(row: dict, pattern: str | None, task: str | None) -> bool:
    if task is not None and task not in row["tasks"]:
        return False
    if not pattern:
        return True
    pat = pattern.lower()
    names = (row["spec"], row["name"], row.get("prefix", ""))
    return any(n and fnmatch.fnmatchcase(n.lower(), pat) for n in names)


def list_models(pattern: str | None = None, task: str | None = None, *, backends: bool = False) -> list[dict]:
    """The built-in models (each with ``available`` and, when not, a one-line ``reason``), and with
    ``backends=True`` the backend prefixes too (``kind`` tells which).

    ``pattern`` is an fnmatch wildcard (timm-style, case-insensitive) on the spec or the name:
    ``list_models("tiny-clip*")``, ``list_models("builtin:*video*")``. ``task`` keeps what declares that task
    (one of :data:`robustlab.models.protocols.TASKS`): ``list_models(task="grounding", backends=True)``.
    """
    if task is not None:
        check_task(task)
    rows = list_builtin() + (list_backends() if backends else [])
    return [r for r in rows if _matches(r, pattern, task)]


# ---- the real hub models users know, per task, and whether they can be had here -------------------------------
# task -> hub specs: data (known_models.json beside this module), as the protocols of robustlab.bench are
KNOWN_MODELS: dict[str, list[str]] = json.loads((Path(__file__).with_name("known_models.json")).read_text())


def availability(spec: str) -> tuple[bool, str]:
    """Whether a hub-backend spec can be loaded here, and why not, without loading it (fast; for the UI).

    A local folder is available when it has a config.json; a hub repo when the hub is reachable or its config
    is in the HF cache (weights are checked at load time).
    """
    try:
        backend, rest = parse_spec(spec)
    except ValueError as e:
        return False, str(e)
    p = Path(rest).expanduser()
    if p.is_dir():
        return ((p / "config.json").exists(), "local folder" if (p / "config.json").exists()
                else f"{p} has no config.json")
    reason = offline_reason()
    if reason is None:
        return True, "hub reachable (downloaded on first use, then cached)"
    try:
        from huggingface_hub import try_to_load_from_cache  # optional heavy dependency (comes with transformers)

        hit = try_to_load_from_cache(rest, "config.json")
    except Exception:  # noqa: BLE001 - a malformed repo id, an unreadable cache: just not available
        hit = None
    if isinstance(hit, str):
        return True, "in the local HF cache"
    return False, f"{reason} and not in the local HF cache"


__all__ = ["Backend", "register_backend", "get_backend", "list_backends", "register_builtin", "list_builtin",
           "get_builtin", "BUILTIN_MODULES", "BACKEND_MODULES", "parse_spec", "load_model", "list_models",
           "KNOWN_MODELS", "availability", "spec_source", "OFFLINE_ALTERNATIVES"]
