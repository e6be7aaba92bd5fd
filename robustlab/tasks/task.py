"""The Task protocol: what a model needs, which datasets it runs on, and ``evaluate``, which checks everything
first and then runs :meth:`Task.run` once per condition set (:mod:`robustlab.tasks.conditions`), each giving one
:class:`~robustlab.tasks.result.Result`.

A task also gives the interactive bench the pages use (``Task.bench(model, dataset)``): the same object computes a
page's clean-vs-perturbed view and the task's metrics, so there is one implementation of each.
"""
from __future__ import annotations

from typing import Callable, Optional

from robustlab.io.params import check_finite
from robustlab.models import interventions as iv
from robustlab.perturb.condition import Condition
from robustlab.tasks.conditions import ADAPT, INTERVENTION, as_conditions, check_conditions
from robustlab.tasks.result import Result, make_result

ProgressFn = Optional[Callable[[int, int], None]]


def chunks(n: int, size: int):
    for s in range(0, n, size):
        yield range(s, min(s + size, n))


def limit(dataset, n) -> int:
    """How many items to evaluate: all of them, or the first ``n``."""
    if n is None:
        return len(dataset)
    if int(n) < 1:
        raise ValueError("n must be at least 1")
    return min(int(n), len(dataset))


class Task:
    """Base of every task: ``name``, what a model needs (``needs``: method names), which dataset kinds and item
    fields it uses, and ``evaluate``. A task module defines one instance (``TASK = MyTask()``), named in the task
    table :data:`robustlab.tasks.registry.TASKS`."""
    name: str = ""
    description: str = ""
    needs: tuple[str, ...] = ()  # model methods, e.g. ("encode_images", "encode_texts")
    kinds: tuple[str, ...] = ("image", "video")  # dataset kinds it runs on
    dataset_task: str = ""  # what a dataset must list in its ``tasks`` (default: the task's name)
    alternative: str = ""  # a model that can do it, for the one-line refusal
    takes_interventions: bool = False  # runs a fusion model through calls an intervention reaches (VQA, ITM, ...)
    takes_adaptation: bool = False  # runs test-time adaptation (robustlab.adapt) on an ``adapt`` condition set
    options: dict = {}  # the keyword options evaluate() takes beyond n / progress: name -> one-line help

    def check_options(self, options: dict) -> None:
        """ValueError (one line) for an option this task does not take (the CLI's ``--option KEY=VALUE``) or a value
        that is, or holds, a number that is not finite."""
        bad = sorted(set(options) - set(self.options))
        if bad:
            takes = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"task {self.name} has no option {', '.join(bad)} (its options: {takes})")

        for k, v in options.items():  # a number that is not finite (inf, nan, 1e999): one line, before any work
            check_finite(f"task {self.name} option {k}", v)

    def check_model(self, model) -> None:
        """ValueError (one line) unless the model has the methods this task calls and, when it declares the tasks
        its head serves (``model.supported_tasks``, e.g. a ViLT checkpoint with one head), this one is among them."""
        mid = getattr(model, "model_id", type(model).__name__)
        alt = f"; use {self.alternative}" if self.alternative else ""
        missing = [m for m in self.needs if not callable(getattr(model, m, None))]
        if missing:
            raise ValueError(f"model {mid} cannot do {self.name} (it has no {', '.join(m + '()' for m in missing)})"
                             + alt)
        declared = getattr(model, "supported_tasks", None)
        if declared is not None and self.name not in declared:
            raise ValueError(f"model {mid} cannot do {self.name} (its head serves {', '.join(declared)})" + alt)

    def check_model_for(self, model, kind: str) -> None:
        """:meth:`check_model` for a dataset of ``kind`` ("image" / "video"): what a sweep or a page asks before it
        runs (retrieval needs the encoder of that kind; the other tasks ask no more than :meth:`check_model`)."""
        self.check_model(model)

    def sweep_options(self, model, dataset, *, cache=None, worst: int = 0, directions=None) -> dict:
        """The keyword options a sweep passes to :meth:`evaluate` for a group of cells of one model on one dataset
        (built once per group, shared by its cells). None by default; retrieval shares one bench (its clean
        embeddings), the worst examples to keep and the directions."""
        return {}

    def check_dataset(self, dataset) -> None:
        need = self.dataset_task or self.name
        if dataset.kind not in self.kinds:
            raise ValueError(f"{self.name} runs on {' or '.join(k + 's' for k in self.kinds)}; dataset "
                             f"{dataset.name} has {dataset.kind}s")
        if need not in getattr(dataset, "tasks", ()):
            raise ValueError(f"dataset {dataset.name} has nothing for {self.name} (its items support "
                             f"{', '.join(dataset.tasks) or 'nothing'})")

    def evaluate(self, model, dataset, conditions=None, *, progress: ProgressFn = None, n=None,
                 **options) -> list[Result]:
        """One :class:`Result` per condition set (None: clean only) on the first ``n`` items (all by default).
        Checks everything first (model, dataset, every condition), then runs :meth:`run` per condition set."""
        self.check_model(model)
        self.check_dataset(dataset)
        conds = as_conditions(conditions)
        check_conditions(conds, self.visual_kind(dataset))

        self.check_interventions(conds, model)
        self.check_adaptation(conds)
        m = limit(dataset, n)
        out = []
        for ci, c in enumerate(conds):
            prog = (lambda d, t, ci=ci: progress(ci * t + d, len(conds) * t)) if progress else None
            with iv.applied(model, c.get(INTERVENTION)) as mod:
                count, metrics, extra = self.run(mod, dataset, c.get("visual", Condition()),
                                                 c.get("text", Condition()), m, prog, **options)
            if INTERVENTION in c and iv.check(c[INTERVENTION], model).kind == "quag-attention":
                probe = self.forward_probe(dataset, m)  # QUAG's "Δ multiplication ops", measured
                if probe is not None:
                    extra["multiplications"] = iv.multiplications(model, c[INTERVENTION], probe)
            out.append(make_result(self.name, model, dataset, c, count, metrics, **extra))
        return out

    def forward_probe(self, dataset, m: int):
        """``call(model)``: one forward of a few of the first ``m`` clean items, through which a QUAG-attention
        cell measures its multiplications against the model's own (None: the task has none)."""
        return None

    def check_interventions(self, conds: list, model) -> None:
        """Refuse (one line) a model intervention this task cannot run or this model cannot take."""
        for c in conds:
            if INTERVENTION in c:
                if not self.takes_interventions:
                    raise ValueError(f"{self.name} takes no model interventions ({c[INTERVENTION].name}): they act "
                                     "on a fusion model's joint attention or inputs; tasks that take them: "
                                     "vqa, itm, grounding, clavi, order-reversal")
                iv.check(c[INTERVENTION], model)

    def check_adaptation(self, conds: list) -> None:
        """Refuse (one line) an adaptation method for a task that does not run test-time adaptation."""
        for c in conds:
            if ADAPT in c and not self.takes_adaptation:
                raise ValueError(f"{self.name} takes no test-time adaptation ({c[ADAPT].name}): it adapts a "
                                 "retrieval model's query encoder; the task that takes it: retrieval")

    def visual_kind(self, dataset) -> str:
        """What a visual perturbation must apply to (the dataset's kind; "image" for image-only tasks)."""
        return dataset.kind if len(self.kinds) > 1 else self.kinds[0]

    def run(self, model, dataset, visual: Condition, text: Condition, m: int, progress: ProgressFn,
            **options) -> tuple[int, dict, dict]:
        """(items evaluated, metrics, extra fields of the Result) of the first ``m`` items under one condition set."""
        raise NotImplementedError  # pragma: no cover


__all__ = ["Task", "ProgressFn", "chunks", "limit"]
