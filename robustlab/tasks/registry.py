"""The task registry: one table of task names (:data:`TASKS`), ``list_tasks()``, ``get(name)``.

Each task is an entry ``name -> "module:attr"`` of :data:`TASKS`, naming the :class:`~robustlab.tasks.task.Task`
instance its module defines (``TASK = RetrievalTask()``); the module is imported at the first lookup of its name
(``get``) or of the whole table (``list_tasks``, ``names``), so what is listed never depends on what was imported
before. A task of a higher layer (PEELING, in the diagnostics layer) is declared in :data:`robustlab.ABOVE` and
listed with these. ``register_task`` adds a task object at run time (a notebook's, a test's). The CLI's task
choices, the pages and sweeps read them from here. ``list_tasks("ret*")`` takes a wildcard as timm's
``list_models`` does.
"""
from __future__ import annotations

import fnmatch

from robustlab.io import entries
from robustlab.tasks.task import Task

# every task of this layer: name -> its Task instance (a newcomer finds each here); listed in name order
TASKS = {
    "retrieval": "robustlab.tasks.retrieval:TASK",            # text<->image or text<->video
    "grounding": "robustlab.tasks.grounding:TASK",            # referring expression -> box
    "vqa": "robustlab.tasks.vqa:TASK",                        # visual question answering (images or videos)
    "itm": "robustlab.tasks.itm:TASK",                        # image/video-text matching
    "clavi": "robustlab.tasks.clavi:TASK",                    # CLAVI's 19 questions on a video and its complement
    "order-reversal": "robustlab.tasks.order_reversal:TASK",  # before/after on a video and its time reversal
    "entailment": "robustlab.tasks.entailment:TASK",          # SNLI-VE visual entailment (hub fusion models)
    "reasoning": "robustlab.tasks.reasoning:TASK",            # NLVR2 visual reasoning over two images
}

_REGISTRY: dict[str, Task] = {}  # the entries loaded so far, and the tasks registered at run time


def register_task(task: Task) -> Task:
    """Add (or replace) a task object at run time; a task of robustlab is an entry of :data:`TASKS` instead."""
    _REGISTRY[task.name] = task
    return task


def _table() -> dict[str, str]:
    return {**TASKS, **entries.above("tasks")}


def _load(name: str) -> Task | None:
    if name not in _REGISTRY and name in _table():
        task = entries.load(_table()[name])
        if task.name != name:
            raise RuntimeError(f"the task table's entry {name!r} names a task called {task.name!r}")
        _REGISTRY[name] = task
    return _REGISTRY.get(name)


def names() -> list[str]:
    """Every task's name (the table's and those registered at run time), in name order."""
    return sorted(set(_table()) | set(_REGISTRY))


def list_tasks(pattern: str | None = None) -> list[dict]:
    """The tasks (name order), those whose name matches the wildcard ``pattern`` (fnmatch, case-insensitive, as
    ``list_models``) when given."""
    out = []
    for name in names():
        if pattern and not fnmatch.fnmatchcase(name.lower(), pattern.lower()):
            continue
        t = _load(name)
        out.append({"name": t.name, "description": t.description, "needs": list(t.needs), "kinds": list(t.kinds),
                    "options": dict(t.options)})
    return out


def get(name: str) -> Task:
    task = _load(name) if isinstance(name, str) else None
    if task is None:
        raise ValueError(f"unknown task {name!r}; tasks: {', '.join(names())}")
    return task


__all__ = ["register_task", "list_tasks", "get", "names", "TASKS"]
