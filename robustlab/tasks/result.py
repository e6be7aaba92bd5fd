"""A task's :class:`Result`: one per condition set, plain JSON, so a sweep can write one file per cell and a report
can read any of them::

    {"model", "model_fingerprint", "dataset", "split", "task", "conditions": {...}, "n", "metrics": {...},
     "versions", "dataset_params": {...}, "extra": {...}}

:func:`make_result` builds one from the model, the dataset and the condition set it was evaluated under.
"""
from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from robustlab.io.atomic import atomic_write
from robustlab.perturb.condition import Condition
from robustlab.perturb.record import _dist_version  # the one version lookup (records use it too)
from robustlab.tasks.conditions import Conditions, conditions_json


def versions() -> dict:
    """Versions that decide a result's numbers (robustlab, numpy, torch, Python)."""
    out = {"robustlab": _dist_version("robustlab"), "numpy": np.__version__, "python": platform.python_version()}
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:  # pragma: no cover
        pass
    return out


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


__all__ = ["Result", "make_result", "versions", "model_identity", "model_card"]
