"""Registry entries named as text: ``"package.module:attr"`` (or a bare module), imported at their first use.

Every registry of robustlab is a table of such names, declared once in the registry's own module (the task table in
:mod:`robustlab.tasks.registry`, the perturbation table in :mod:`robustlab.perturb.table`, the dataset, built-in
model and backend tables in their registries), so what a registry lists and gets does not depend on what was
imported before. A registry cannot name an entry that lives in a layer above it (a lower layer never imports a
higher one, by name neither): those entries are declared in :data:`robustlab.ABOVE`, the facade's table on top of
every layer, which ``import robustlab`` (the first thing any ``import robustlab.x`` runs) hands down here as names.
Nothing is imported until a registry looks an entry up.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Iterable, Mapping

_ABOVE: dict[str, dict[str, str]] = {}


def load(ref: str) -> Any:
    """The object ``"package.module:attr"`` names (the module itself for ``"package.module"``)."""
    mod, _, attr = str(ref).partition(":")
    module = importlib.import_module(mod)
    return getattr(module, attr) if attr else module


def declare_above(registry: str, entries: Mapping[str, str]) -> None:
    """Declare ``entries`` (name -> ``"module:attr"``) of ``registry`` that live in a layer above it."""
    _ABOVE.setdefault(registry, {}).update({str(k): str(v) for k, v in entries.items()})


def above(registry: str) -> dict[str, str]:
    """The entries of ``registry`` declared from above (name -> ``"module:attr"``), in their declared order."""
    return dict(_ABOVE.get(registry, {}))


def absent(modules: Iterable[str]) -> list[str]:
    """The modules of ``modules`` that are not installed here (found without importing them): what a backend's
    ``requires`` and a perturbation's dependencies are checked with."""
    out = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(module)
    return out


__all__ = ["load", "declare_above", "above", "absent"]
