"""The task registry: ``@register_task``, ``list_tasks()``, ``get(name)``.

A task module registers a :class:`~robustlab.tasks.base.Task` instance; the CLI's task choices, the pages and
sweeps read them from here. ``list_tasks("ret*")`` takes a wildcard as timm's ``list_models`` does.
"""
from __future__ import annotations

import fnmatch
import importlib

from robustlab.tasks.base import Task

_REGISTRY: dict[str, Task] = {}

# modules whose import registers tasks (one per task; a newcomer finds each here)
TASK_MODULES = (
    "robustlab.tasks.retrieval",    # retrieval: text<->image or text<->video
    "robustlab.tasks.grounding",    # grounding: referring expression -> box
    "robustlab.tasks.vqa",          # vqa: visual question answering (images or videos)
    "robustlab.tasks.itm",          # itm: image/video-text matching
    "robustlab.tasks.clavi",        # clavi: CLAVI's 19 questions on a video and its action-swapped complement
    "robustlab.tasks.order_reversal",  # order-reversal: before/after on a video and its time reversal
    "robustlab.tasks.entailment",   # entailment: SNLI-VE visual entailment (hub fusion models)
    "robustlab.tasks.reasoning",    # reasoning: NLVR2 visual reasoning over two images (hub fusion models)
)
# Tasks of a higher layer register themselves when imported, as every registry here is filled: PEELING
# (robustlab.diagnostics.peeling, the diagnostics layer: it runs PEELING over grounding and VQA). The sweeps, the CLI
# and the dashboard import it; so does a notebook that uses PEELING (import robustlab.diagnostics.peeling).


def register_task(task: Task) -> Task:
    _REGISTRY[task.name] = task
    return task


def _ensure_loaded() -> None:
    for mod in TASK_MODULES:
        importlib.import_module(mod)


def list_tasks(pattern: str | None = None) -> list[dict]:
    """The registered tasks (name order), those whose name matches the wildcard ``pattern`` (fnmatch,
    case-insensitive, as ``list_models``) when given."""
    _ensure_loaded()
    return [{"name": t.name, "description": t.description, "needs": list(t.needs), "kinds": list(t.kinds),
             "options": dict(t.options)}
            for name, t in sorted(_REGISTRY.items())
            if not pattern or fnmatch.fnmatchcase(name.lower(), pattern.lower())]


def get(name: str) -> Task:
    _ensure_loaded()
    if name not in _REGISTRY:
        raise ValueError(f"unknown task {name!r}; tasks: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def names() -> list[str]:
    _ensure_loaded()
    return sorted(_REGISTRY)


__all__ = ["register_task", "list_tasks", "get", "names", "TASK_MODULES"]
