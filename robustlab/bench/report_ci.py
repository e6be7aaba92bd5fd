"""The sweep report's confidence columns (:mod:`robustlab.bench.report_data` adds them to the results table):
bootstrap intervals of every retrieval metric, the paired bootstrap between conditions and between models, the
R@K Error columns and the per-model fields (parameter count, training regime).

* **Intervals.** A retrieval cell keeps the 1-based rank of every query's ground truth per direction
  (``extra["ranks"]``); :mod:`robustlab.metrics.bootstrap` resamples the queries (1,000 resamples, seed 0, the
  percentile method, 95 %) and every metric ``D_M`` (``t2v_R@1``, ``v2t_MdR``...) gets ``D_M_lo`` / ``D_M_hi``,
  RSUM ``RSUM_lo`` / ``RSUM_hi`` (each direction resampled on its own queries) and the row's headline ``score``
  ``score_lo`` / ``score_hi``. A cell without ranks (other tasks, adaptation cells, runs made before ranks were
  kept) has no interval (empty).
* **Which differences hold.** The resamples are a function of (number of queries, seed) only, so two cells over
  the same queries are resampled with the same query indices: the per-resample difference of their metric is the
  paired bootstrap (:func:`robustlab.metrics.bootstrap.paired`) and a difference *holds* when its 95 % interval
  excludes 0. Each perturbed cell is compared with its model's clean cell (``delta`` = perturbed − clean,
  ``delta_lo`` / ``delta_hi``, ``holds``; and γᵃ / γʳ / MMI of the cell with ``_lo`` / ``_hi``, the formulas
  applied per resample), and every pair of models on each condition (:func:`model_differences`).
* **R@K Error** (Schiappa et al.'s released results schema, ``Error = R_p − R_c``): ``D_R@K_error`` = the cell's
  R@K minus its model's clean R@K (0 on the clean cell), for every R@K column.
* **Fields**: ``n_params`` (recorded by the task from the model) and ``regime`` (zero-shot / fine-tuned / scratch):
  the sweep spec's ``fields = {"regime": {model: value}}`` when it names the model (a regime depends on the data
  the model is evaluated on, so the sweep's word wins), else what the model itself declared (``extra["regime"]``),
  else empty. Any other key of ``fields`` becomes a column too.
"""
from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from itertools import combinations
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from robustlab.metrics import bootstrap as bs
from robustlab.tasks.conditions import AXES

_KEY = re.compile(r"^(t2v|v2t|t2i|i2t)_(R@\d+|MdR|MnR)$")
RSUM_KS = ("R@1", "R@5", "R@10")
GAMMAS = ("gamma_a", "gamma_r", "mmi")
DIFF_COLUMNS = ["metric", "condition", "model_a", "model_b", "score_a", "score_b", "delta", "delta_lo", "delta_hi",
                "holds", "n"]


def headline_of(run, headline: Optional[str] = None) -> Optional[str]:
    """The report's headline retrieval metric: ``headline``, else the spec's ``report = {"headline": ...}``."""
    rep = run.sweep.get("report") if isinstance(run.sweep.get("report"), dict) else {}
    return headline or (str(rep["headline"]) if rep.get("headline") else None)


def rank_metric(key) -> Optional[tuple]:
    """``("t2v", "R@1")`` for ``t2v_R@1``, ``("RSUM", None)`` for RSUM, None for anything the ranks do not give."""
    if key == "RSUM":
        return ("RSUM", None)
    m = _KEY.match(str(key))
    return (m.group(1), m.group(2)) if m else None


def cell_ranks(result) -> dict:
    """``{direction: int array}`` of a Result's ``extra["ranks"]``; ``{}`` when absent or malformed."""
    raw = result.extra.get("ranks") if isinstance(getattr(result, "extra", None), dict) else None
    if not isinstance(raw, dict):
        return {}
    out = {}
    for d, r in raw.items():
        try:
            a = np.asarray(r, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            return {}
        if a.ndim != 1 or a.size == 0 or a.min() < 1:
            return {}
        out[str(d)] = a
    return out


def _dropped(result) -> list[int]:
    d = result.extra.get("dropped") if isinstance(getattr(result, "extra", None), dict) else None
    q = d.get("queries") if isinstance(d, dict) else None
    return [int(i) for i in q] if isinstance(q, list) and all(isinstance(i, int) for i in q) else []


class Replicates:
    """Bootstrap replicates of every cell's metrics, computed once per (cell, direction) and shared by the
    intervals and the paired comparisons."""

    def __init__(self, run, n_boot: int = bs.N_BOOT, seed: int = bs.SEED, level: float = bs.LEVEL):
        self.n_boot, self.seed, self.level = n_boot, seed, level
        self.ranks = {r.extra.get("cell") or Path(f).stem: cell_ranks(r) for r, f in zip(run.results, run.files)}
        # the text queries a cell's condition dropped (MLVP's similarity filter): left out of its text-query ranks
        self.dropped = {r.extra.get("cell") or Path(f).stem: _dropped(r) for r, f in zip(run.results, run.files)}
        self._reps: dict = {}

    def of(self, cell: str, key: str) -> Optional[np.ndarray]:
        """The replicates of metric ``key`` (``t2v_R@1``, ``RSUM``...) of a cell; None when it has no ranks."""
        rm = rank_metric(key)
        rk = self.ranks.get(cell) or {}
        if rm is None or not rk:
            return None
        d, m = rm
        if d == "RSUM":
            if len(rk) != 2:
                return None
            # each direction its own draws (streams 0, 1 in name order), as bootstrap.rsum_replicates
            return 100.0 * sum(self._direction(cell, x, i)[k] for i, x in enumerate(sorted(rk)) for k in RSUM_KS)
        return self._direction(cell, d)[m] if d in rk else None

    def _direction(self, cell: str, d: str, stream: int = 0) -> dict:
        if (cell, d, stream) not in self._reps:
            self._reps[(cell, d, stream)] = _replicates(self.ranks[cell][d], self.n_boot, self.seed, stream)
        return self._reps[(cell, d, stream)]

    def n(self, cell: str, key: str) -> Optional[tuple]:
        """The query counts behind a metric of a cell (what must match for a paired comparison)."""
        rm = rank_metric(key)
        rk = self.ranks.get(cell) or {}
        if rm is None or not rk:
            return None
        return tuple(sorted((d, len(r)) for d, r in rk.items())) if rm[0] == "RSUM" else \
            ((rm[0], len(rk[rm[0]])) if rm[0] in rk else None)

    def _without_dropped(self, cell: str, like: str) -> str:
        """A pseudo-cell: ``cell``'s ranks without the text queries ``like``'s condition dropped (text-query
        directions only, where ``cell`` has exactly those queries more), so the two are paired query by query."""
        name = f"{cell}~without~{like}"
        if name not in self.ranks:
            drop = self.dropped[like]
            mine, theirs = self.ranks.get(cell) or {}, self.ranks.get(like) or {}
            self.ranks[name] = {d: np.delete(r, drop) if d.startswith("t") and d in theirs
                                and len(r) == len(theirs[d]) + len(drop) else r for d, r in mine.items()}
        return name

    def interval(self, cell: str, key: str) -> tuple:
        v = self.of(cell, key)
        return bs.interval(v, self.level) if v is not None else (math.nan, math.nan)

    def intervals(self, arrays: list) -> tuple[list, list]:
        """The percentile intervals of many replicate arrays (None: no interval) in one numpy call; NaN
        replicates (a resample with a clean score of 0, for γʳ) are left out of their array's interval."""
        lo, hi = [math.nan] * len(arrays), [math.nan] * len(arrays)
        idx = [i for i, a in enumerate(arrays) if a is not None]
        if not idx:
            return lo, hi
        stack = np.vstack([arrays[i] for i in idx])
        bad = ~np.isfinite(stack).all(axis=1)
        qs = [(1 - self.level) / 2, (1 + self.level) / 2]
        q = np.quantile(np.where(bad[:, None], 0.0, stack), qs, axis=1)
        for j, i in enumerate(idx):
            if bad[j]:
                v = stack[j][np.isfinite(stack[j])]
                lo[i], hi[i] = bs.interval(v, self.level) if len(v) else (math.nan, math.nan)
            else:
                lo[i], hi[i] = float(q[0, j]), float(q[1, j])
        return lo, hi

    def paired(self, cell_a: str, cell_b: str, key: str, scale: Optional[float] = None) -> Optional[dict]:
        """The paired bootstrap of ``key``(a) − ``key``(b) over the same queries; None when either has no ranks
        or they are not over the same number of queries. With ``scale`` (b is the clean cell), also the intervals
        of γᵃ, γʳ and MMI of a against b (:func:`robustlab.metrics.robustness.robustness` per resample)."""
        arrays = self.paired_replicates(cell_a, cell_b, key, scale)
        if arrays is None:
            return None
        keys = list(arrays)
        lo, hi = self.intervals([arrays[k] for k in keys])
        out = {}
        for k, a, b in zip(keys, lo, hi):
            out[f"{k}_lo"], out[f"{k}_hi"] = a, b
        out["holds"] = bool(out["delta_lo"] > 0 or out["delta_hi"] < 0)
        return out

    def paired_replicates(self, cell_a: str, cell_b: str, key: str, scale: Optional[float] = None):
        """``{"delta": a − b per resample[, "gamma_a", "gamma_r", "mmi"]}`` or None (see :meth:`paired`)."""
        if self.n(cell_a, key) != self.n(cell_b, key) and self.dropped.get(cell_a):
            cell_b = self._without_dropped(cell_b, cell_a)  # the same queries on both sides
        a, b = self.of(cell_a, key), self.of(cell_b, key)
        if a is None or b is None or self.n(cell_a, key) != self.n(cell_b, key):
            return None
        out = {"delta": a - b}
        if scale:
            ok = b > 0  # a resample whose clean score is 0 has no relative robustness
            out["gamma_a"] = 1.0 - (b - a) / scale
            out["gamma_r"] = np.where(ok, a / np.where(ok, b, 1.0), np.nan)
            out["mmi"] = 1.0 - out["gamma_r"]
        return out


_MEMO: OrderedDict = OrderedDict()
_LOCK = threading.Lock()
MEMO_SIZE = 1024  # (cell, direction) replicates kept across reports (40 KB each): a page rerun recomputes none


def _replicates(r: np.ndarray, n_boot: int, seed: int, stream: int = 0) -> dict:
    """:func:`robustlab.metrics.bootstrap.replicates` of every rank metric, memoised by the ranks' content."""
    key = (hashlib.blake2b(np.ascontiguousarray(r, dtype=np.int64).tobytes(), digest_size=16).hexdigest(),
           len(r), n_boot, seed, stream)
    with _LOCK:  # the dashboard's sessions share it
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
    out = bs.replicates(r, bs.METRICS, n_boot, seed, stream=stream)
    with _LOCK:
        _MEMO[key] = out
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return out


def _order(cols: list, have: set) -> list:
    out = []
    for c in cols:
        out.append(c)
        out += [x for x in (f"{c}_lo", f"{c}_hi", f"{c}_error") if x in have]
    return out


def _error(df: pd.DataFrame, k: str) -> pd.Series:
    """Schiappa et al.'s "R@K Error" (the released results schema): R_p − R_c, the cell's R@K minus its model's
    clean R@K on the same task and dataset (0 on the clean cell, NaN without one)."""
    v = pd.to_numeric(df[k], errors="coerce")
    keys = ["model", "task", "dataset"]
    clean = df[df["axes"] == "clean"].assign(_v=v[df["axes"] == "clean"]).groupby(keys, dropna=False)["_v"].mean()
    base = pd.Series([clean.get(tuple(r), float("nan")) for r in df[keys].itertuples(index=False)], index=df.index)
    return v - base


def add_columns(run, df: pd.DataFrame, reps: Optional[Replicates] = None) -> pd.DataFrame:
    """The results table with the intervals, the comparisons against clean, the R@K Error columns and the model
    fields (see the module docstring); ``df`` is :func:`robustlab.bench.report_data.results_table`'s."""
    if df.empty or "cell" not in df:
        return df
    reps = reps or Replicates(run)
    df = df.copy()
    keys = [c for c in df.columns if rank_metric(c) is not None]
    new: dict = {}
    for k in keys:
        new[f"{k}_lo"], new[f"{k}_hi"] = reps.intervals([reps.of(c, k) for c in df["cell"]])
        if rank_metric(k)[1] and rank_metric(k)[1].startswith("R@"):
            new[f"{k}_error"] = _error(df, k)
    new["score_lo"], new["score_hi"] = reps.intervals([reps.of(c, m) for c, m in zip(df["cell"], df["metric"])])
    clean = _clean_cells(df)
    pairs = []
    cols = ["model", "task", "dataset", "cell", "axes", "metric", "scale"]
    for r in df[cols].itertuples(index=False):
        c = clean.get((r.model, r.task, r.dataset))
        scale = float(r.scale) if pd.notna(r.scale) and r.scale > 0 else None
        pairs.append(reps.paired_replicates(r.cell, c, r.metric, scale) if c is not None and r.axes != "clean"
                     else None)
    new["delta"] = [s - c if p else math.nan for p, s, c in zip(pairs, df["score"], df["clean_score"])]
    for k in ("delta",) + GAMMAS:
        new[f"{k}_lo"], new[f"{k}_hi"] = reps.intervals([p.get(k) if p else None for p in pairs])
    new["holds"] = [bool(lo > 0 or hi < 0) if p else None for p, lo, hi in zip(pairs, new["delta_lo"],
                                                                                new["delta_hi"])]
    df = pd.concat([df, pd.DataFrame(new, index=df.index)], axis=1)
    for name, val in model_fields(run).items():
        df[name] = df["model"].map(val)
    return df


def _clean_cells(df: pd.DataFrame) -> dict:
    return {k: g["cell"].iloc[0] for k, g in df[df["axes"] == "clean"].groupby(["model", "task", "dataset"],
                                                                               sort=False, dropna=False)}


def _mean(arrays: list) -> Optional[dict]:
    if not arrays or any(a is None for a in arrays):
        return None
    return {k: np.mean([a[k] for a in arrays], axis=0) for k in GAMMAS}


def robustness_ci(df: pd.DataFrame, rob: pd.DataFrame, reps: Optional[Replicates] = None,
                  natural=lambda axis, name: True, run=None, keep: Optional[dict] = None) -> pd.DataFrame:
    """The robustness rows (:func:`robustlab.bench.report_data.robustness_rows`) with 95 % intervals of γᵃ, γʳ
    and MMI: the table's own aggregation (per perturbation the mean over severities — and over repeated seeds —,
    per category, overall and natural-only the mean over perturbations) applied to every paired resample against
    the clean cell. A row whose cells lack ranks has no interval. ``natural``: report_data's predicate. ``keep``: a
    dict filled with each row's replicates, ``{(model, task, dataset, axis, level, name): {"gamma_r": ...}}``
    (:func:`gamma_differences` compares models with them)."""
    if rob is None or rob.empty or "cell" not in df:
        return rob
    reps = reps or Replicates(run)
    clean = _clean_cells(df)
    per: dict = {}
    for (m, t, d, axis), g in df[df["axes"].isin(AXES) & df["score"].notna()].groupby(
            ["model", "task", "dataset", "axes"], sort=False, dropna=False):
        c = clean.get((m, t, d))
        for name, gp in g.groupby(axis, sort=False):
            sevs = []
            for _, gs in gp.groupby(f"{axis}_severity", sort=False):
                sevs.append(_mean([reps.paired_replicates(r.cell, c, r.metric, float(r.scale))
                                   if c is not None and pd.notna(r.scale) and r.scale > 0 else None
                                   for r in gs[["cell", "metric", "scale"]].itertuples(index=False)]))
            per[(m, t, d, axis, name)] = (gp[f"{axis}_category"].iloc[0], _mean(sevs))
    rows = []
    for r in rob[["model", "task", "dataset", "axis", "level", "name"]].itertuples(index=False):
        mine = {p: v for (m, t, d, a, p), v in per.items() if (m, t, d, a) == (r.model, r.task, r.dataset, r.axis)}
        if r.level == "perturbation":
            pick = [mine[r.name][1]] if r.name in mine else [None]
        elif r.level == "category":
            pick = [v for cat, v in mine.values() if cat == r.name]
        elif r.level == "natural":
            pick = [v for p, (_, v) in mine.items() if natural(r.axis, p)]
        else:
            pick = [v for _, v in mine.values()]
        rows.append(_mean(pick))
        if keep is not None:
            keep[(r.model, r.task, r.dataset, r.axis, r.level, r.name)] = rows[-1]
    rob = rob.copy()
    for k in GAMMAS:
        rob[f"{k}_lo"], rob[f"{k}_hi"] = reps.intervals([x[k] if x else None for x in rows])
    return rob


def column_order(df: pd.DataFrame, first: list) -> list:
    """``first`` (identity and score columns), the score's interval and comparison with clean, every metric
    followed by its interval and error, the model fields, ``cell``."""
    have = set(df.columns)
    ci = [c for c in ("delta", "delta_lo", "delta_hi", "holds") if c in have]
    fields = [c for c in ("regime", "n_params") if c in have]
    derived = {c for c in have if c.endswith(("_lo", "_hi", "_error"))} | set(ci)
    rest = [c for c in df.columns if c not in set(first) | derived | set(fields) | {"cell"}]
    extra_fields = [c for c in rest if c.startswith("field_")]
    rest = [c for c in rest if c not in extra_fields]
    return _order([c for c in first if c in have], have) + ci + _order(rest, have) + fields + extra_fields + \
        (["cell"] if "cell" in have else [])


def model_fields(run) -> dict:
    """``{column: {model: value}}``: ``n_params`` and ``regime`` (see the module docstring) and any other key of
    the spec's ``fields`` (as ``field_KEY``)."""
    models = list(dict.fromkeys(r.model for r in run.results))
    spec = run.sweep.get("fields") if isinstance(run.sweep.get("fields"), dict) else {}
    out: dict = {"n_params": {}, "regime": {}}
    for r in run.results:
        n = r.extra.get("n_params")
        if isinstance(n, int) and not isinstance(n, bool) and r.model not in out["n_params"]:
            out["n_params"][r.model] = n
        g = r.extra.get("regime")
        if isinstance(g, str) and g and r.model not in out["regime"]:
            out["regime"][r.model] = g
    given = spec.get("regime") if isinstance(spec.get("regime"), dict) else {}
    out["regime"].update({m: str(v) for m, v in given.items() if m in models})
    for key, val in spec.items():
        if key != "regime" and isinstance(val, dict):
            out[f"field_{key}"] = {m: v for m, v in val.items() if m in models}
    for m in models:  # always both columns (empty when unknown): results.csv keeps one schema
        out["n_params"].setdefault(m, None)
        out["regime"].setdefault(m, None)
    return out


def model_differences(run, df: pd.DataFrame, reps: Optional[Replicates] = None) -> pd.DataFrame:
    """Between every pair of models (sweep order) on each condition they share: the headline metric of each, the
    difference a − b with its paired-bootstrap 95 % interval and whether it holds (interval excludes 0)."""
    if df.empty or "cell" not in df or df["model"].nunique() < 2:
        return pd.DataFrame(columns=["task", "dataset"] + DIFF_COLUMNS)
    reps = reps or Replicates(run)
    out, arrays = [], []
    narrow = df[["task", "dataset", "condition", "model", "metric", "cell", "score", "n"]]
    for (t, d, cond), g in narrow.groupby(["task", "dataset", "condition"], sort=False, dropna=False):
        rows = list(g.drop_duplicates("model").itertuples(index=False))
        for a, b in combinations(rows, 2):
            p = reps.paired_replicates(a.cell, b.cell, a.metric) if a.metric == b.metric else None
            if p is None:
                continue
            arrays.append(p["delta"])
            out.append({"task": t, "dataset": d, "metric": a.metric, "condition": cond, "model_a": a.model,
                        "model_b": b.model, "score_a": a.score, "score_b": b.score, "delta": a.score - b.score,
                        "n": a.n})
    for row, lo, hi in zip(out, *reps.intervals(arrays)):
        row.update(delta_lo=lo, delta_hi=hi, holds=bool(lo > 0 or hi < 0))
    return pd.DataFrame(out, columns=["task", "dataset"] + DIFF_COLUMNS)


GAMMA_DIFF_COLUMNS = ["task", "dataset", "axis", "model_a", "model_b", "gamma_r_a", "gamma_r_b", "delta", "delta_lo",
                      "delta_hi", "holds", "n"]


def gamma_differences(df: pd.DataFrame, rob: pd.DataFrame, kept: dict, reps: Replicates) -> pd.DataFrame:
    """Between every pair of models, per task, dataset and perturbed axis: the overall γʳ of each (the robustness
    table's), the difference a − b with its paired-bootstrap 95 % interval and whether it holds. Paired: the
    resamples are a function of (queries, seed) only, so both models' γʳ replicates come from the same query
    indices when their clean cells have the same queries (else no interval: the pair is not compared). ``kept``:
    what :func:`robustness_ci` kept."""
    if rob is None or rob.empty or df.empty or df["model"].nunique() < 2:
        return pd.DataFrame(columns=GAMMA_DIFF_COLUMNS)
    clean = _clean_cells(df)
    metric = {k: g["metric"].iloc[0] for k, g in df.groupby(["model", "task", "dataset"], sort=False, dropna=False)}
    over = rob[rob["level"] == "overall"]
    out, arrays = [], []
    for (t, d, axis), g in over.groupby(["task", "dataset", "axis"], sort=False, dropna=False):
        rows = list(g.drop_duplicates("model").itertuples(index=False))
        for a, b in combinations(rows, 2):
            ka, kb = (a.model, t, d, axis, "overall", a.name), (b.model, t, d, axis, "overall", b.name)
            ra, rb = kept.get(ka), kept.get(kb)
            ca, cb = clean.get((a.model, t, d)), clean.get((b.model, t, d))
            same = ca is not None and cb is not None and \
                reps.n(ca, metric[(a.model, t, d)]) == reps.n(cb, metric[(b.model, t, d)]) is not None
            p = ra["gamma_r"] - rb["gamma_r"] if ra and rb and same and len(ra["gamma_r"]) == len(rb["gamma_r"]) \
                else None
            arrays.append(p)
            n = df.loc[(df["model"] == a.model) & (df["task"] == t) & (df["dataset"] == d) & (df["axes"] == "clean"),
                       "n"]
            out.append({"task": t, "dataset": d, "axis": axis, "model_a": a.model, "model_b": b.model,
                        "gamma_r_a": a.gamma_r, "gamma_r_b": b.gamma_r, "delta": a.gamma_r - b.gamma_r,
                        "n": int(n.max()) if len(n) else None})
    for row, lo, hi in zip(out, *reps.intervals(arrays)):
        row.update(delta_lo=lo, delta_hi=hi, holds=bool(lo > 0 or hi < 0) if math.isfinite(lo) else None)
    return pd.DataFrame(out, columns=GAMMA_DIFF_COLUMNS)


__all__ = ["headline_of", "rank_metric", "cell_ranks", "Replicates", "add_columns", "column_order", "model_fields",
           "model_differences", "robustness_ci", "gamma_differences", "DIFF_COLUMNS", "GAMMA_DIFF_COLUMNS"]
