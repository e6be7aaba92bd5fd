"""Diagnostics: hubness (``hubness``), hubness reduction (``reduction``), embedding projections (``embedding``);
QUAG, CLAVI, PEELING land here in later issues. Submodules load on first attribute access
(``rl.analysis.hubness.k_occurrence(...)``), so ``import robustlab`` stays light."""
from __future__ import annotations

import importlib

_SUBMODULES = {"hubness", "reduction", "embedding", "text_similarity"}


def __getattr__(name: str):
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"robustlab.analysis.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"robustlab.analysis.{name}":
                raise  # the submodule exists but one of its own imports is missing: say so
    raise AttributeError(f"module 'robustlab.analysis' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
