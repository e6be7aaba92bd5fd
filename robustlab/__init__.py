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
from robustlab.perturb.video.mlvp import set_event_clips  # noqa: E402


def _world_event_clip(seed: int, index: int, px: int):
    """A clip of mlvp_event_insertion's corpus: the synthetic world's event video ``(seed, index)`` at ``px`` pixels.
    Handed down to the perturbation, which sits below the datasets and so does not import them."""
    from robustlab.datasets.synthetic import world  # on first use: importing robustlab stays light (numpy only)

    return world.render_video(world.sample_video(seed, index), size=px)


set_event_clips(_world_event_clip)

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
