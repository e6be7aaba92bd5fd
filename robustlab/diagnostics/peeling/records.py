"""PEELING's records: a test, an item, the run's configuration, the run itself and its metrics
(:func:`summarize`). Part of :mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from robustlab.diagnostics.peeling.p2 import P2_STAGES, SHORT_LEN, SYNONYM_SENSES, SYNONYM_THRESHOLD
from robustlab.diagnostics.peeling.uniqueness import CHUNK
from robustlab.metrics import mmi

IOU_THRESHOLD = 0.5  # correct iff IoU > 0.5 (strict); IoU <= 0.5 is an issue
SKIP_REASONS = ("plural", "no_unique_candidate", "extraction_empty")


def _box(b) -> list[float] | None:
    if b is None:
        return None
    t = b.as_tuple() if hasattr(b, "as_tuple") else tuple(b)[:4]
    return [round(float(v), 2) for v in t]


def _iou(pred, gt) -> float:
    if hasattr(pred, "iou"):
        return float(pred.iou(gt))
    from robustlab.models.protocols import Box  # here, not at the top: robustlab.models loads torch (~6 s)

    return float(Box(*[float(v) for v in tuple(pred)[:4]]).iou(gt))


@dataclass
class PeelingTest:
    """One adversarial test (the paper's columns ``uniq_id, image_id, rawtext, Reducetext, MRtext, region`` and
    what grounding it gave)."""

    uniq_id: str
    image_id: str
    item: int
    ref: int
    rawtext: str
    Reducetext: str
    MRtext: str
    region: list[float]
    pred_box: list[float]
    iou: float
    issue: bool
    reduce_box: list[float]
    reduce_iou: float
    orig_box: list[float]
    orig_iou: float
    strategy: str
    properties: list[str]
    uniqueness: dict
    asked: bool
    world_valid: bool | None
    stages: list[dict]
    seed: int
    source_text: str = ""  # the dataset's expression before a text condition (== rawtext when clean)

    @property
    def correct(self) -> bool:
        return self.iou > IOU_THRESHOLD

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PeelingItem:
    """One referring expression: what PEELING did with it (``status``: "tested" or a skip reason)."""

    item: int
    ref: int
    image_id: str
    rawtext: str
    status: str
    extraction: dict
    judged: list[dict]  # every candidate's verdict: x, unique, asked, world_valid, strategy
    n_tests: int
    orig_box: list[float]
    orig_iou: float
    region: list[float]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PeelingConfig:
    """Every choice of a PEELING run (see the module docstring); ``released()`` is the released code's set."""

    compat: bool = False
    wide: bool = False
    skip_plural: bool = True
    check_all: bool = False
    keep_article: bool = False
    stages: tuple[str, ...] = P2_STAGES
    synonym_mode: str = "paper"
    synonym_scorer: Any = "minilm"
    synonym_threshold: float = SYNONYM_THRESHOLD
    synonym_senses: int = SYNONYM_SENSES  # WordNet's most frequent sense only; 0 = every sense (released)
    synonym_derived: bool = False  # allow morphological relatives ("ring" -> "ringing"; released: yes)
    short_len: int | None = SHORT_LEN
    seed: int = 0
    chunk: int = CHUNK

    @classmethod
    def released(cls, **kw) -> PeelingConfig:
        """The released code's behaviour: substring answers, its template string, every eligible word replaced by
        a lemma of any sense, derivations included ("ring" -> "ringing").

        Not reproduced: with a single property the released code also tests object + property (the full
        expression); here the full set is never a candidate (the paper's rule)."""
        return cls(**{"compat": True, "synonym_mode": "code", "synonym_senses": 0, "synonym_derived": True, **kw})

    def to_dict(self) -> dict:
        d = asdict(self)
        d["stages"] = list(self.stages)
        if not isinstance(self.synonym_scorer, (str, type(None))):
            d["synonym_scorer"] = getattr(self.synonym_scorer, "__name__", "custom")
        return d


def _config(config: PeelingConfig | None, overrides: Mapping) -> PeelingConfig:
    cfg = config or PeelingConfig()
    if overrides:
        unknown = set(overrides) - set(PeelingConfig.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown PEELING option(s): {', '.join(sorted(unknown))}")
        o = dict(overrides)
        if isinstance(o.get("stages"), str):
            o["stages"] = tuple(s.strip() for s in o["stages"].split(",") if s.strip())
        cfg = replace(cfg, **o)
    cfg.stages = tuple(cfg.stages)
    bad = [s for s in cfg.stages if s not in P2_STAGES]
    if bad:
        raise ValueError(f"unknown P2 stage(s) {', '.join(bad)}; stages: {', '.join(P2_STAGES)}")
    return cfg


class PeelingRun:
    """The tests and per-item records of a PEELING run, with :meth:`summary` and the image of each item (for the
    export)."""

    def __init__(self, tests: list[PeelingTest], items: list[PeelingItem], config: PeelingConfig,
                 image_of: Callable[[int], Any] | None = None, vqa_queries: int = 0, extractor: str = ""):
        self.tests, self.items, self.config = tests, items, config
        self.image_of = image_of
        self.vqa_queries = vqa_queries
        self.extractor = extractor

    def summary(self) -> dict:
        return summarize(self.items, self.tests, vqa_queries=self.vqa_queries)

    def to_json(self) -> dict:
        return {"config": self.config.to_dict(), "extractor": self.extractor, "summary": self.summary(),
                "items": [i.to_dict() for i in self.items], "tests": [t.to_dict() for t in self.tests]}


def _mmi(a, b) -> float | None:
    if a is None or b is None or a <= 0:
        return None
    return round(float(mmi(a, b)), 6)


def _mean(xs) -> float | None:
    xs = list(xs)
    return round(float(np.mean(xs)), 6) if xs else None


def summarize(items: Sequence[PeelingItem], tests: Sequence[PeelingTest], vqa_queries: int = 0) -> dict:
    """The run's metrics (see the module docstring): accuracies (IoU > 0.5), MMI, skips, issue rate, reduction-only
    accuracy, per strategy, and the VQA oracle against the world's truth where known."""
    tested = [it for it in items if it.status == "tested"]
    acc_o = _mean(it.orig_iou > IOU_THRESHOLD for it in items)
    acc_ot = _mean(it.orig_iou > IOU_THRESHOLD for it in tested)
    acc_adv = _mean(t.iou > IOU_THRESHOLD for t in tests)
    acc_red = _mean(t.reduce_iou > IOU_THRESHOLD for t in tests)
    out: dict = {  # acc_adv first: a sweep report's headline is a task's first numeric metric
        "acc_adv": acc_adv, "acc_original": acc_o, "mmi": _mmi(acc_o, acc_adv),
        "acc_original_tested": acc_ot, "mmi_tested": _mmi(acc_ot, acc_adv),
        "acc_reduced": acc_red, "mmi_reduced": _mmi(acc_o, acc_red),
        "issues": sum(t.issue for t in tests), "issue_rate": None if acc_adv is None else round(1 - acc_adv, 6),
        "items": len(items), "items_tested": len(tested), "tests": len(tests),
        "tests_per_item": round(len(tests) / len(tested), 4) if tested else 0.0,
        "tests_per_item_all": round(len(tests) / len(items), 4) if items else 0.0,
        "skipped": {r: sum(it.status == r for it in items) for r in SKIP_REASONS},
        "mean_iou_original": _mean(it.orig_iou for it in items), "mean_iou_adv": _mean(t.iou for t in tests),
        "by_strategy": {}, "vqa_queries": int(vqa_queries),
    }
    for s in sorted({t.strategy for t in tests}):
        ts = [t for t in tests if t.strategy == s]
        out["by_strategy"][s] = {"n": len(ts), "acc_adv": _mean(t.iou > IOU_THRESHOLD for t in ts),
                                 "acc_reduced": _mean(t.reduce_iou > IOU_THRESHOLD for t in ts)}
    p2: dict = {}
    reasons: dict = {}
    for t in tests:
        for st in t.stages:
            d = p2.setdefault(st["stage"], {"ran": 0, "changed": 0, "skipped": 0})
            if st["skipped"]:
                d["skipped"] += 1
                r = reasons.setdefault(st["stage"], {})
                r[st["reason"]] = r.get(st["reason"], 0) + 1
            else:
                d["ran"] += 1
                d["changed"] += int(st["changed"])
    out["p2"] = p2
    out["p2_skip_reasons"] = reasons  # {stage: {reason: count}} (text: the task moves it to the Result's extra)
    judged = [j for it in items for j in it.judged if j.get("world_valid") is not None]
    if judged:
        acc_yes = [j for j in judged if j["unique"]]
        true = [j for j in judged if j["world_valid"]]
        valid_tests = [t for t in tests if t.world_valid]
        out["oracle"] = {
            "candidates": len(judged),
            "precision": _mean(j["world_valid"] for j in acc_yes),
            "recall": _mean(j["unique"] for j in true),
            "agreement": _mean(j["unique"] == j["world_valid"] for j in judged),
            "asked_agreement": _mean(j["unique"] == j["world_valid"] for j in judged if j["asked"]),
            "tests_valid": _mean(bool(t.world_valid) for t in tests if t.world_valid is not None),
            "acc_adv_valid": _mean(t.iou > IOU_THRESHOLD for t in valid_tests),
            "acc_reduced_valid": _mean(t.reduce_iou > IOU_THRESHOLD for t in valid_tests),
        }
    return out
