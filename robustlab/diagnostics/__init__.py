"""Diagnostics: hubness (``hubness``), hubness reduction (``reduction``), embedding projections (``embedding``),
caption similarity (``text_similarity``), hubness of a model on a dataset (``hubness_eval``), the page-facing
views over a retrieval bench (``views``), QUAG (``quag``), its attention views (``attention_view``) and its
simulation study (``quag_simulation``), CLAVI (``clavi``) and its complement-pair attention distance
(``clavi_distance``), and PEELING (``peeling``).

Submodules load on first attribute access (``rl.diagnostics.hubness.k_occurrence(...)``), so ``import robustlab``
stays light. ``rl.analysis`` is this package under its older name (documented, kept working)."""
from __future__ import annotations

import importlib

_SUBMODULES = {"hubness", "reduction", "embedding", "text_similarity", "hubness_eval", "views", "quag",
               "attention_view", "clavi", "peeling", "quag_simulation", "clavi_distance"}


def __getattr__(name: str):
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"robustlab.diagnostics.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"robustlab.diagnostics.{name}":
                raise  # the submodule exists but one of its own imports is missing: say so
    raise AttributeError(f"module 'robustlab.diagnostics' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
