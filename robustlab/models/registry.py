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


def _ensure_loaded() -> None:
    import robustlab.models.builtin  # noqa: F401  (registers the built-in models)


def list_builtin() -> list[dict]:
    _ensure_loaded()
    from robustlab.models.builtin import checkpoint_path

    out = []
    for name, e in sorted(_BUILTIN.items()):
        ck = checkpoint_path(e["checkpoint"]) if e["checkpoint"] else None
        ok = ck is None or ck.exists()
        out.append(dict(spec=f"builtin:{name}", task=e["task"], description=e["description"], tags=list(e["tags"]),
                        available=ok, reason="" if ok else f"checkpoint {ck} missing; run `robustlab train {name}`"))
    return out


def get_builtin(name: str):
    _ensure_loaded()
    if name not in _BUILTIN:
        raise ModelUnavailable(f"no built-in model {name!r}; built-in models: {', '.join(sorted(_BUILTIN)) or 'none'}")
    return _BUILTIN[name]["cls"]
