"""Registry of built-in models (decorator-registered, listable, with availability)."""
from __future__ import annotations

from typing import Callable

from robustlab.models.base import ModelUnavailable

_BUILTIN: dict[str, dict] = {}


def register_builtin(name: str, *, task: str, description: str, checkpoint: str | None = None,
                     tags: tuple[str, ...] = ()) -> Callable:
    def deco(cls):
        _BUILTIN[name] = dict(name=name, cls=cls, task=task, description=description, checkpoint=checkpoint,
                              tags=tuple(tags))
        return cls
    return deco


# modules whose import registers built-in models (one per model family; a newcomer finds each model here)
BUILTIN_MODULES = (
    "robustlab.models.builtin",        # tiny-clip (image-text dual encoder)
    "robustlab.models.builtin_video",  # tiny-clip-video-meanp / -seqtransf (text-video retrieval)
    "robustlab.models.tiny_vilt",      # tiny-vilt (single-stream fusion: ITM, VQA, grounding)
)


def _ensure_loaded() -> None:
    import importlib

    for mod in BUILTIN_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:  # a family not built yet in this checkout; never hide other errors
            if e.name != mod:
                raise


def list_builtin() -> list[dict]:
    _ensure_loaded()
    from robustlab.models.builtin import checkpoint_path

    out = []
    for name, e in sorted(_BUILTIN.items()):
        ck = checkpoint_path(e["checkpoint"]) if e["checkpoint"] else None
        ok = ck is None or ck.exists()
        out.append(dict(spec=f"builtin:{name}", task=e["task"], description=e["description"], tags=list(e["tags"]),
                        available=ok,
                        reason="" if ok else f"checkpoint {ck} missing; run `robustlab train {_recipe(e)}`"))
    return out


def _recipe(e: dict) -> str:
    """The training recipe that makes a model's checkpoint: named after the checkpoint (one recipe can train
    several models, e.g. tiny-clip-video for both video variants)."""
    ck = e["checkpoint"] or e["name"]
    return ck[:-len(".safetensors")] if ck.endswith(".safetensors") else e["name"]


def get_builtin(name: str):
    _ensure_loaded()
    if name not in _BUILTIN:
        raise ModelUnavailable(f"no built-in model {name!r}; built-in models: {', '.join(sorted(_BUILTIN)) or 'none'}")
    return _BUILTIN[name]["cls"]
