"""The Task protocol and its Result.

A task evaluates a model on a dataset under conditions and returns one :class:`Result` per condition — plain
JSON, so a sweep can write one file per cell and a report can read any of them::

    {"model", "model_fingerprint", "dataset", "split", "task", "conditions": {...}, "n", "metrics": {...},
     "versions", "dataset_params": {...}, "extra": {...}}

``conditions`` maps an axis to a perturbation (:class:`robustlab.perturb.condition.Condition`): ``"visual"`` (an
image or video perturbation of the dataset's visuals) and ``"text"`` (of its captions, questions or expressions);
a missing axis is clean. Two more axes leave that shape as it is: ``"intervention"`` (a model intervention,
:mod:`robustlab.models.interventions`) and ``"adapt"`` (a test-time adaptation method of :mod:`robustlab.adapt`
run on the queries of the one perturbed side: ``Condition(method, 1, 0, "key=value,...")``, the variant holding
the parameters set explicitly, see :func:`adapt_condition`); each appears in a Result only when present.
:func:`grid` builds the usual list of conditions; :func:`as_conditions` accepts what users naturally pass.

A task also gives the interactive bench the pages use (``Task.bench(model, dataset)``): the same object computes a
page's clean-vs-perturbed view and the task's metrics, so there is one implementation of each.
"""
from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np

from robustlab.io.atomic import atomic_write
from robustlab.io.params import check_finite
from robustlab.models import interventions as iv
from robustlab.perturb.record import _dist_version  # the one version lookup (records use it too)
from robustlab.perturb.condition import Condition, check, perturb_many

AXES = ("visual", "text")  # perturbation axes (of the input)
INTERVENTION = "intervention"  # the model-intervention axis (robustlab.models.interventions)
ADAPT = "adapt"  # the test-time adaptation axis (robustlab.adapt): a method run on the perturbed side's queries
ALL_AXES = AXES + (INTERVENTION, ADAPT)
ProgressFn = Optional[Callable[[int, int], None]]
Conditions = dict  # axis -> Condition


def versions() -> dict:
    """Versions that decide a result's numbers (robustlab, numpy, torch, Python)."""


    out = {"robustlab": _dist_version("robustlab"), "numpy": np.__version__, "python": platform.python_version()}
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:  # pragma: no cover
        pass
    return out


def normalize(cond: Any) -> Conditions:
    """One condition set from a dict of axis -> Condition / dict / "name:severity" string, or a single Condition
    (taken as the visual axis). Unknown axes are refused."""
    if cond is None:
        return {}
    if isinstance(cond, Condition):
        return {} if cond.clean else {"visual": cond}
    if not isinstance(cond, Mapping):
        raise ValueError(f"a condition set is a dict of {', '.join(AXES)} -> Condition, got {type(cond).__name__}")
    out = {}
    for axis, c in cond.items():
        if axis not in ALL_AXES:
            raise ValueError(f"unknown condition axis {axis!r}; axes: {', '.join(ALL_AXES)}")
        if axis == INTERVENTION:

            if c is None or (isinstance(c, Condition) and c.clean) or (isinstance(c, dict) and not c.get("name")):
                continue
            out[axis] = iv.as_condition(c)
            continue
        if axis == ADAPT:
            a = as_adapt(c)
            if not a.clean:
                out[axis] = a
            continue
        c = c if isinstance(c, Condition) else Condition.parse(c) if isinstance(c, str) or c is None \
            else Condition.from_dict(c)
        if not c.clean:
            out[axis] = c
    return out


def as_conditions(conditions: Any) -> list[Conditions]:
    """A list of condition sets from None (clean only), one set, or a list of sets."""
    if conditions is None:
        return [{}]
    if isinstance(conditions, (Condition, Mapping)):
        return [normalize(conditions)]
    return [normalize(c) for c in conditions]


def grid(visual: Iterable = (None,), text: Iterable = (None,)) -> list[Conditions]:
    """Every combination of the given visual and text conditions (None = clean), clean first when present."""
    out = []
    for v in visual:
        for t in text:
            out.append(normalize({"visual": v, "text": t}))
    return out


def conditions_json(conds: Conditions) -> dict:
    """Every perturbation axis (clean ones as ``{"name": None}``) and the intervention and adaptation method only
    when there is one, so results (and sweep cell keys) without them are what they were before those axes
    existed."""
    out = {axis: conds.get(axis, Condition()).to_dict() for axis in AXES}
    for axis in (INTERVENTION, ADAPT):
        c = conds.get(axis)
        if c is not None and not c.clean:
            out[axis] = c.to_dict()
    return out


def intervention_label(c: Condition) -> str:
    return c.name + (f"/{c.variant}" if c.variant else "")


# ---- the adaptation axis -------------------------------------------------------------------------------------
# Which side's embeddings are a direction's queries (a retrieval fact the adaptation methods build on).
QUERY_SIDE = {"t2i": "text", "t2v": "text", "i2t": "visual", "v2t": "visual"}

# The methods of the ``adapt`` axis live in robustlab.adapt, the layer above this one, which registers itself here
# on import (as a task registers itself in the task registry): a sweep, the CLI, the dashboard and the report import
# it; a notebook that evaluates an ``adapt`` condition set imports robustlab.adapt first.
_ADAPTATION = None


def register_adaptation(provider) -> None:
    """Make ``provider`` (robustlab.adapt: ``get_method``, ``resolve``, ``run``) the adaptation methods of the
    ``adapt`` axis."""
    global _ADAPTATION
    _ADAPTATION = provider


def adaptation():
    """The registered adaptation methods (robustlab.adapt); ValueError (one line) when none is."""
    if _ADAPTATION is None:
        raise ValueError("test-time adaptation (the adapt axis) needs robustlab.adapt: import robustlab.adapt first")
    return _ADAPTATION


def _param_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v) if isinstance(v, (int, float)) else str(v)


def adapt_condition(method: str, params: Optional[Mapping] = None) -> Condition:
    """The ``adapt`` axis' condition of a method of :mod:`robustlab.adapt` with the parameters set explicitly
    (checked and canonicalised: ``lr=3e-4`` and ``lr=0.0003`` are the same cell); ``"none"`` is clean (no
    adaptation: the shifted cell itself). ValueError (one line) for an unknown method or a bad parameter."""
    method = str(method or "").strip()
    if method in ("", "none"):
        if params:
            raise ValueError(f"adaptation method none takes no parameters ({', '.join(params)})")
        return Condition()
    methods = adaptation()
    methods.get_method(method)
    params = dict(params or {})
    full = methods.resolve(method, "text", 1000, params)  # checks names, types and ranges (the side only sets defaults)
    given = {k: full[k] for k in sorted(params) if params[k] is not None}
    variant = ",".join(f"{k}={_param_text(v)}" for k, v in given.items()) or None
    return Condition(method, 1, 0, variant)


def adapt_params(c: Condition) -> dict:
    """The parameters an ``adapt`` condition sets explicitly (its variant ``key=value,...``; values as JSON where
    they parse)."""
    out: dict = {}
    for part in (c.variant or "").split(","):
        k, eq, v = part.partition("=")
        if not eq or not k.strip():
            continue
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:
            out[k.strip()] = v
    return out


def as_adapt(c) -> Condition:
    """An ``adapt`` condition from a Condition, its dict, or text ``"tent"`` / ``"tent/steps=1,lr=3e-4"``."""
    if c is None:
        return Condition()
    if isinstance(c, Condition):
        return Condition() if not c.name or c.name == "none" else adapt_condition(c.name, adapt_params(c))
    if isinstance(c, Mapping):
        return as_adapt(Condition.from_dict(c) if c.get("name") else None)
    name, _, variant = str(c).partition("/")
    return as_adapt(Condition(name.strip(), 1, 0, variant.strip() or None) if name.strip() else None)


def adapt_label(c: Condition) -> str:
    """``tent`` or ``tent (steps=1)``."""
    return c.name + (f" ({c.variant.replace(',', ', ')})" if c.variant else "")


def adapt_side(conds: Conditions) -> Optional[str]:
    """The perturbed side whose queries an ``adapt`` condition set adapts ("visual" or "text"); None when the
    set has no method. ValueError (one line) unless exactly one side is perturbed and no intervention is set."""
    a = conds.get(ADAPT)
    if a is None or a.clean:
        return None
    sides = [axis for axis in AXES if axis in conds and not conds[axis].clean]
    if len(sides) != 1:
        raise ValueError(f"test-time adaptation ({adapt_label(a)}) adapts the queries of the one perturbed side: "
                         f"its condition set must perturb exactly one of visual or text, not "
                         f"{' and '.join(sides) or 'neither'}")
    if INTERVENTION in conds:
        raise ValueError(f"test-time adaptation ({adapt_label(a)}) does not combine with a model intervention")
    return sides[0]


def label(conds: Conditions) -> str:
    def one(axis, c):
        return intervention_label(c) if axis == INTERVENTION else adapt_label(c) if axis == ADAPT else c.label()
    parts = [f"{axis} {one(axis, c)}" for axis, c in conds.items() if not c.clean]
    return ", ".join(parts) or "clean"


@dataclass
class Result:
    model: str
    model_fingerprint: str
    dataset: str
    split: Optional[str]
    task: str
    conditions: dict
    n: int
    metrics: dict
    versions: dict = field(default_factory=versions)
    extra: dict = field(default_factory=dict)
    dataset_params: dict = field(default_factory=dict)  # what else chose the items: seed, size, root, n...

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self), default=_jsonable))

    @classmethod
    def from_json(cls, d: Mapping) -> "Result":
        return cls(**{k: d[k] for k in ("model", "model_fingerprint", "dataset", "split", "task", "conditions", "n",
                                        "metrics")}, versions=dict(d.get("versions", {})),
                   extra=dict(d.get("extra", {})), dataset_params=dict(d.get("dataset_params", {})))

    def save(self, path: str | Path) -> Path:
        """Write the result as JSON atomically (a reader never sees half a file)."""
        return atomic_write(path, json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "Result":
        return cls.from_json(json.loads(Path(path).read_text()))

    def flat(self) -> dict:
        """Metrics flattened to ``a_b`` keys (``t2i_R@1``), for tables and the CLI."""
        out: dict = {}

        def walk(prefix, v):
            if isinstance(v, Mapping):
                for k, x in v.items():
                    walk(f"{prefix}_{k}" if prefix else str(k), x)
            else:
                out[prefix] = v
        walk("", self.metrics)
        return out


def _jsonable(x):

    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, Condition):
        return x.to_dict()
    return str(x)


def model_identity(model) -> tuple[str, str]:
    """(model id, weights fingerprint) of a model; the fingerprint falls back to the id for test doubles."""
    mid = getattr(model, "model_id", type(model).__name__)
    fp = getattr(model, "fingerprint", None)
    return str(mid), str(fp if isinstance(fp, str) else mid)


def model_card(model) -> dict:
    """What a Result records of the model beyond its identity: ``n_params`` (its parameter count, when it can
    say) and ``regime`` (zero-shot / fine-tuned / scratch, when the model carries one as ``model.regime``)."""
    out = {}
    try:
        n = model.n_params() if callable(getattr(model, "n_params", None)) else None
        if isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0:
            out["n_params"] = int(n)
    except Exception:  # noqa: BLE001 - a model that cannot count its parameters records none
        pass
    regime = getattr(model, "regime", None)
    if isinstance(regime, str) and regime:
        out["regime"] = regime
    return out


def make_result(task: str, model, dataset, conds: Conditions, n: int, metrics: dict, **extra) -> Result:
    mid, fp = model_identity(model)
    extra = {**model_card(model), **extra}
    params = dict(getattr(dataset, "params", {}) or {})
    if getattr(dataset, "root", None):
        params["root"] = str(dataset.root)
    return Result(model=mid, model_fingerprint=fp, dataset=getattr(dataset, "name", str(dataset)),
                  split=getattr(dataset, "split", None), task=task, conditions=conditions_json(conds), n=int(n),
                  metrics=metrics, extra={k: v for k, v in extra.items() if v is not None},
                  dataset_params=json.loads(json.dumps(params, default=str)))


def check_conditions(conds: list, visual_kind: str) -> None:
    """Refuse (one line) a perturbation that does not apply to the dataset's visuals or to text, before any work."""
    for c in conds:
        if "visual" in c:
            check(c["visual"], visual_kind)
        if "text" in c:
            check(c["text"], "text")
        if INTERVENTION in c:

            iv.parse(c[INTERVENTION])
        if ADAPT in c:
            side = adapt_side(c)
            adaptation().resolve(c[ADAPT].name, side, 1000, adapt_params(c[ADAPT]))


def perturb_one(x, cond: Condition, index: int, kind: str):
    """Item ``index`` of a dataset under ``cond`` (seed ``cond.seed + index``, as :func:`perturb_many` gives it)."""
    outs, _ = perturb_many([x], cond, kind, offset=int(index))
    return outs[0]


def perturb_text(text: str, cond: Condition, index: int) -> str:
    """A question / expression under a text condition; a perturbation that deletes every word leaves "?"."""
    t = perturb_one(text, cond, index, "text") if not cond.clean else text
    return t if t.strip() else "?"


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
    fields it uses, and ``evaluate``. Subclasses register with :func:`robustlab.tasks.registry.register_task`."""
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
            out.append(make_result(self.name, model, dataset, c, count, metrics, **extra))
        return out

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


__all__ = ["Result", "Task", "Condition", "grid", "as_conditions", "normalize", "conditions_json", "label",
           "make_result", "versions", "check_conditions", "perturb_one", "perturb_text", "chunks",
           "limit", "AXES", "ALL_AXES", "INTERVENTION", "intervention_label", "ADAPT", "adapt_condition",
           "adapt_params", "adapt_label", "adapt_side", "as_adapt", "QUERY_SIDE", "register_adaptation",
           "adaptation"]
