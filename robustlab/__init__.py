"""robustlab: explore how vision-language models break under real-world perturbations.

Public interface (see README):

    import robustlab as rl
    rl.list_perturbations(modality=None)     # specs with category, modality, source, severity table, availability
    rl.perturb(x, name, severity, seed=0, variant=None)   # -> result with .output and .record
    rl.regenerate(record, x)                 # -> the same output, bit for bit
    rl.load_model("builtin:tiny-clip")       # also "open_clip:ARCH/TAG", "hf:REPO_ID", a local path
    rl.list_models("tiny-clip*", task=None)  # built-ins (and backends=True: backend prefixes), wildcards, task filter
    rl.metrics.retrieval(scores, gt)         # R@K, MdR, MnR;  rl.metrics.robustness(clean, perturbed): γᵃ, γʳ, MMI
    rl.analysis.hubness.measures(scores, k=15)   # k-occurrence hubness indices (also .k_occurrence)

Heavy modules (torch, models) are imported on first use, so perturbation-only use stays light.

The layers, lowest first; a layer imports only from those below it, with no cycles (tests/test_layers.py checks
every import, inside functions too; docs/architecture.md says where to add what)::

    io, metrics -> engine -> perturb -> models, datasets -> tasks -> adapt, diagnostics, training
        -> bench, export -> cli

This module is the facade on top: it imports perturb now and every other layer on first use.
"""
from __future__ import annotations

import importlib

__version__ = "0.2.0"  # pyproject.toml reads it (setuptools dynamic version)

# imported eagerly (importing robustlab.perturb is light: numpy only). ``rl.perturb`` is the package, which is
# callable: ``rl.perturb(x, name, severity)`` is robustlab.perturb.perturb, and ``import robustlab.perturb.registry
# as R`` works (a function of that name here would hide the package from that import; issue 46)
from robustlab import perturb  # noqa: E402
from robustlab.perturb import list_perturbations, regenerate, get_perturbation  # noqa: E402
from robustlab.io.entries import declare_above  # noqa: E402

# The entries of a registry that live in a layer above it, which its own table cannot name (a lower layer never
# imports a higher one): declared here, on top of every layer, and handed down as names. ``import robustlab`` runs
# before any ``import robustlab.x``, so these registries list and get the same whatever was imported first; each
# entry is imported at its first lookup (importing robustlab stays NumPy-only).
ABOVE = {
    # the task registry (robustlab.tasks.registry): PEELING runs over grounding and VQA in the diagnostics layer
    "tasks": {"peeling": "robustlab.diagnostics.peeling:TASK"},
    # the adapt axis of the task layer (robustlab.tasks.conditions.adaptation): the methods of robustlab.adapt
    "adaptation": {"methods": "robustlab.adapt"},
    # mlvp_event_insertion's corpus of event clips (robustlab.perturb.video.mlvp.content): the synthetic world's
    "event_clips": {"world": "robustlab.datasets.synthetic.datasets:event_clip"},
    # where mlvp_event_insertion's records find their donor video again, by dataset name: the built-in videos
    # render any of theirs from its id (other datasets' donors come from the bench that used them)
    "event_donors": {"builtin-videos": "robustlab.datasets.synthetic.datasets:event_donor"},
}
for _registry, _entries in ABOVE.items():
    declare_above(_registry, _entries)

_LAZY = {
    "load_model": ("robustlab.models", "load_model"),
    "list_models": ("robustlab.models", "list_models"),
    "ModelUnavailable": ("robustlab.models.base", "ModelUnavailable"),
    "InputError": ("robustlab.io.files", "InputError"),
    "builtin_gallery": ("robustlab.datasets.synthetic.datasets", "builtin_gallery"),
    "eval_retrieval": ("robustlab.tasks.retrieval", "eval_retrieval"),
}
_SUBMODULES = {"models", "datasets", "io", "tasks", "diagnostics", "engine", "metrics", "export", "training", "cli",
               "adapt", "failures"}
_ALIASES = {"analysis": "diagnostics"}  # older names the README documented


def __getattr__(name: str):
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod), attr)
        globals()[name] = value
        return value
    if name in _SUBMODULES or name in _ALIASES:
        return importlib.import_module(f"robustlab.{_ALIASES.get(name, name)}")
    raise AttributeError(f"module 'robustlab' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY) + list(_SUBMODULES))


__all__ = ["__version__", "list_perturbations", "perturb", "regenerate", "get_perturbation", *_LAZY]
