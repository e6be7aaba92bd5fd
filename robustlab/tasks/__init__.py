"""Tasks: what a model is evaluated on. ``rl.tasks.get("retrieval").evaluate(model, dataset, conditions)`` returns
one plain-JSON :class:`Result` per condition set; ``rl.tasks.list()`` names them (retrieval, grounding, vqa, itm,
clavi...). Each task also gives the interactive bench the pages use
(``robustlab.tasks.retrieval_bench.RetrievalBench``), so a page and a sweep compute the same numbers the same way."""
from __future__ import annotations

from robustlab.perturb.condition import Condition
from robustlab.tasks.conditions import as_conditions, grid
from robustlab.tasks.result import Result
from robustlab.tasks.task import Task
from robustlab.tasks.registry import get, list_tasks, names, register_task


def list(pattern: str | None = None) -> list[dict]:  # noqa: A001 - rl.tasks.list() mirrors rl.datasets.list()
    return list_tasks(pattern)


__all__ = ["Result", "Task", "Condition", "grid", "as_conditions", "get", "list", "list_tasks", "names",
           "register_task"]
