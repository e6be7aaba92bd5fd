"""HAT-VTR's analyses of an adaptation run (Zhang et al. §5.5, Figs. 5-13), from :class:`~robustlab.adapt.loop.
AdaptResult` objects, with no UI:

* :func:`severity_curve` -- R@K before (shifted) and after adaptation over the severities of one query shift
  (the paper's Fig. 13 / Tables 32-35: v2t R@1 against severity 1-5);
* :func:`time_breakdown` -- the forward / backward / Reliable-Memory / HSM / loss seconds of a run, per 1,000
  queries and as shares (§5.5, Table 15: 6.9 / 65.7 / 7.6 / 13.0 / 6.8 % on an RTX 4090);
* :func:`memory_accuracy` -- how accurate the pseudo-labels kept in the Reliable Memory are, batch by batch (a
  diagnostic against the ground truth, which the method never sees);
* :func:`top_k` and :func:`heatmap` -- the adapted model's ranking for one query next to the unadapted one, and the
  adapted score matrix (HSM-reranked for HAT-VTR) next to the shifted one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from robustlab.adapt.loop import PHASES, AdaptResult, run
from robustlab.adapt.towers import AdaptError
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import RetrievalBench

#: the time breakdown's rows: HAT-VTR Table 15's phases, then the frozen parts computed once per batch
BREAKDOWN = (("forward", "forward"), ("backward", "backward + optimiser step"), ("memory", "Reliable Memory"),
             ("hsm", "HSM (selection + reranking)"), ("loss", "loss"), ("prepare", "frozen parts (once per batch)"))


@dataclass
class SeverityCurve:
    """R@K of one query shift at each severity: clean, shifted (before) and adapted (after), one run each."""

    method: str
    direction: str
    perturbation: str
    perturb_seed: int  # query i is perturbed with perturb_seed + i
    params: dict  # the parameters asked for (each run's full set is in its row)
    rows: list = field(default_factory=list)  # {"severity", "clean", "shifted", "adapted", "params", "seconds"}
    mdr: str = "median"

    def series(self, metric: str = "R@1") -> dict:
        """{"severity": [...], "clean": [...], "shifted": [...], "adapted": [...]} of ``metric``."""
        out: dict = {"severity": [r["severity"] for r in self.rows]}
        for k in ("clean", "shifted", "adapted"):
            out[k] = [r[k][metric] for r in self.rows]
        return out

    def to_json(self) -> dict:
        return {"method": self.method, "direction": self.direction, "perturbation": self.perturbation,
                "perturb_seed": self.perturb_seed, "params": self.params, "mdr": self.mdr, "rows": self.rows}


def severity_curve(model, dataset, method: str = "hat-vtr", direction: str = "v2t", perturbation: str = "",
                   severities=(1, 2, 3, 4, 5), *, perturb_seed: int = 0, bench=None,
                   progress: Optional[Callable[[int, int], None]] = None, mdr: str = "median",
                   **params) -> SeverityCurve:
    """One :func:`robustlab.adapt.run` per severity of ``perturbation`` (a perturbation of the query side, with an
    optional ``/variant``; query i gets seed ``perturb_seed + i``): R@K before and after adaptation at each (every
    run starts from the unadapted model); ``params``: the method's (its ``seed`` is the stream order's).
    ``progress(done, total)`` counts severities."""
    name = str(perturbation or "").strip()
    if not name:
        raise AdaptError("severity_curve needs a perturbation of the query side (e.g. gaussian_noise)")
    try:
        sevs = sorted({int(s) for s in severities})
    except (TypeError, ValueError):
        raise AdaptError(f"severities must be integers 1..5, got {severities!r}") from None
    if not sevs or sevs[0] < 1 or sevs[-1] > 5:
        raise AdaptError(f"severities must be integers 1..5, got {severities!r}")
    own = bench is None  # a bench of our own keeps clean only between severities; a caller's is left as it is
    if own:
        bench = RetrievalBench(model, dataset, lazy=True)
    curve = SeverityCurve(method, direction, name, int(perturb_seed), dict(params), mdr=mdr)
    for i, sev in enumerate(sevs):
        try:
            cond = Condition.parse(f"{name}:{sev}", int(perturb_seed))
        except ValueError as e:
            raise AdaptError(str(e)) from None
        r = run(model, dataset, method, direction, cond, bench=bench, keep_arrays=False, mdr=mdr, **params)
        curve.rows.append({"severity": sev, "condition": r.condition, "clean": r.metrics["clean"],
                           "shifted": r.metrics["shifted"], "adapted": r.metrics["adapted"], "params": r.params,
                           "n_queries": r.n_queries, "seconds": r.seconds})
        if own:
            bench.forget()  # each severity is perturbed and encoded once; only clean is reused
        if progress:
            progress(i + 1, len(sevs))
    return curve


def time_breakdown(res: AdaptResult) -> list[dict]:
    """Rows {"phase", "label", "seconds", "per_1000_queries", "share"} of a run's timing (empty: nothing adapted),
    in HAT-VTR Table 15's order; "share" is of the adaptation's measured total (all the phases)."""
    t = res.timing or {}
    if not t or not any(t.get("seconds", {}).values()):
        return []
    return [{"phase": k, "label": label, "seconds": t["seconds"].get(k, 0.0),
             "per_1000_queries": t["per_1000_queries"].get(k, 0.0), "share": t["share"].get(k, 0.0)}
            for k, label in BREAKDOWN if k in PHASES]


def memory_accuracy(res: AdaptResult) -> dict:
    """{"batch": [...], "accuracy": [...], "added_accuracy": [...], "batch_accuracy": [...], "size": [...]}: the
    Reliable Memory's pseudo-label accuracy per batch (1-based batches; None where undefined). Empty lists for a
    method without a Reliable Memory (none, Tent, the oracle)."""
    out = {"batch": [r["batch"] + 1 for r in res.memory]}
    for k in ("accuracy", "added_accuracy", "batch_accuracy", "size"):
        out[k] = res.memory_curve(k)
    return out


def _arrays(res: AdaptResult) -> tuple[np.ndarray, np.ndarray, list]:
    if res.scores_adapted is None or res.scores_shifted is None or res.positives is None:
        raise AdaptError("this result kept no score matrices: run robustlab.adapt.run with keep_arrays=True")
    pos = [np.atleast_1d(np.asarray(p, dtype=np.int64)).tolist() for p in res.positives]
    return np.asarray(res.scores_shifted), np.asarray(res.scores_adapted), pos


def _ranking(row: np.ndarray, positives: list, k: int) -> dict:
    order = np.argsort(-row, kind="stable")[:k]
    best = float(row[positives].max())
    gt_rank = 1 + int(((row > best) & ~np.isin(np.arange(len(row)), positives)).sum())
    return {"gt_rank": gt_rank, "items": [{"rank": r + 1, "item": int(g), "score": float(row[g]),
                                           "positive": int(g) in positives} for r, g in enumerate(order)]}


def top_k(res: AdaptResult, query: int, k: int = 5) -> dict:
    """Query ``query``'s top ``k`` gallery items before (the shifted queries, unadapted model) and after
    adaptation (the scores the adapting stream gave it; HSM-reranked for HAT-VTR): {"query", "positives",
    "before": {"gt_rank", "items": [{"rank", "item", "score", "positive"}]}, "after": {...}}. The ground truth's
    rank counts ties in the query's favour, as :func:`robustlab.metrics.retrieval.ranks`."""
    before, after, pos = _arrays(res)
    n = before.shape[0]
    try:
        q, k = int(query), int(k)
    except (TypeError, ValueError):
        raise AdaptError(f"query and k must be integers, got {query!r} and {k!r}") from None
    if not 0 <= q < n:
        raise AdaptError(f"query must be in 0..{n - 1} ({n} queries), got {query}")
    if k < 1:
        raise AdaptError(f"k must be at least 1, got {k}")
    k = min(k, before.shape[1])
    return {"query": q, "positives": pos[q], "before": _ranking(before[q], pos[q], k),
            "after": _ranking(after[q], pos[q], k)}


def heatmap(res: AdaptResult, n: int = 20, start: int = 0) -> dict:
    """The score sub-matrix of queries ``start``..``start + n − 1`` against their first true items (so the ground
    truth lies on the diagonal), shifted and adapted: {"queries", "items", "shifted", "adapted"} (n × n lists).
    The adapted scores are what the run ranked by (HSM-reranked for HAT-VTR: a different scale from the raw
    cosines, so each matrix has its own colour scale)."""
    before, after, pos = _arrays(res)
    nq = before.shape[0]
    try:
        n, start = int(n), int(start)
    except (TypeError, ValueError):
        raise AdaptError(f"n and start must be integers, got {n!r} and {start!r}") from None
    if n < 1 or not 0 <= start < nq:
        raise AdaptError(f"the heatmap needs n ≥ 1 and start in 0..{nq - 1}, got n={n}, start={start}")
    queries = list(range(start, min(nq, start + n)))
    items: list[int] = []
    for q in queries:  # first true item, each gallery column once
        g = next((g for g in pos[q] if g not in items), pos[q][0])
        if g not in items:
            items.append(int(g))
    return {"queries": queries, "items": items, "shifted": before[np.ix_(queries, items)].tolist(),
            "adapted": after[np.ix_(queries, items)].tolist()}


__all__ = ["SeverityCurve", "severity_curve", "time_breakdown", "memory_accuracy", "top_k", "heatmap", "BREAKDOWN"]
