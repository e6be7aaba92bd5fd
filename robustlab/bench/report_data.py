"""The sweep report's data: a run folder read back and the papers' tables as DataFrames (:mod:`robustlab.bench.report`
writes ``results.csv`` and a self-contained ``report.html`` from them).

A run folder (written by :mod:`robustlab.bench.runner`) holds ``sweep.json``, one
:class:`robustlab.tasks.result.Result` JSON per cell under ``cells/`` and the worst examples' thumbnails under
``thumbs/``. :func:`load_run` reads it (a malformed cell is skipped and listed, never a traceback),
:func:`results_table` is the D01 table (one row per cell), :func:`report_tables` / :func:`report_figures` are the
papers' outputs as DataFrames and plain plotly figures (the dashboard's Benchmark page shows the same ones) and
:func:`write_report` writes both files.

Choices (digest seeds_perturbations.md §3.2–3.3, A01–A10):

* headline metric per task: retrieval — R@1 of the first direction (``t2v_R@1``, ``t2i_R@1``; the sweep's
  ``directions`` decide which is first); other tasks — ``accuracy``, else ``acc``, else the first numeric metric.
  ``metric=`` overrides it for every task that has it (a task without it keeps its headline).
  ``RSUM`` = Σ over both directions of R@1, 5, 10 in percent: the papers' 0..600, its one scale everywhere.
* γᵃ / γʳ / MMI come from :func:`robustlab.metrics.robustness.robustness` against the clean cell of the same model,
  task and dataset measured in the same run (A10); the γᵃ scale is 1 for fractions, 600 for RSUM, 100 for scores in
  percent, else the largest value seen. Aggregation is :func:`robustness_table` (severity mean per perturbation,
  then mean ± population SD over perturbations per category and overall); cells repeated with other seeds are
  averaged per (perturbation, severity) first.
* "natural" (A05, P1 Table 4): text perturbations other than Positional and DropText (registry category
  ``positional``, tags ``p1:Positional`` / ``p1:DropText``). The papers define no natural subset of visual
  perturbations, so for the visual axis natural = all.
* the category tables cover single-axis cells; cells perturbed on both axes go to the combination grid (M01/A08).
* test-time adaptation cells (axis ``adapt``: a shift of one side plus a method of :mod:`robustlab.adapt`) hold the
  metrics of the adapted direction only and stay out of every table above; :func:`adapt_table` lays them out as
  HAT-VTR's Tables 1–3 (per model and direction: perturbation × severity rows, R@1 clean, shifted and after each
  method, a mean row per severity, the best method per row), also written as ``adaptation.csv``.
"""
from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from robustlab.adapt import METHODS
from robustlab.datasets.registry import get_entry
from robustlab.metrics.retrieval import mean_recall, rsum
from robustlab.metrics.robustness import robustness, robustness_table, table_rows
from robustlab.perturb import get_perturbation
from robustlab.perturb.condition import Condition
from robustlab.tasks.conditions import ADAPT, AXES, INTERVENTION, adapt_label, intervention_label
from robustlab.tasks.result import Result

from robustlab.bench.cellfile import checksum
from robustlab.bench.report_layouts import DROP_FLAG, intervention_table
from robustlab.bench.report_protocol import protocol_columns, protocol_tables
from robustlab.bench.report_ci import (Replicates, add_columns, column_order, gamma_differences, headline_of,
                                       model_differences, robustness_ci)

RETRIEVAL_PAIRS = (("t2v", "v2t"), ("t2i", "i2t"))
UNNATURAL_TAGS = ("p1:Positional", "p1:DropText")
ID_COLUMNS = ["model", "dataset", "split", "task", "axes", "condition", "visual", "visual_category",
              "visual_modality", "visual_severity", "visual_seed", "text", "text_category", "text_severity",
              "text_seed", "n"]
SCORE_COLUMNS = ["metric", "score", "clean_score", "scale", "gamma_a", "gamma_r", "mmi"]


# ------------------------------------------------------------------------------------------------- loading
@dataclass
class RunData:
    """A run folder as read: its ``sweep`` spec (``{}`` if unreadable), the cells' Results with their file names,
    and the warnings (skipped files)."""

    root: Path
    sweep: dict
    results: list = field(default_factory=list)
    files: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.sweep.get("name") or self.root.name)

    @property
    def expected(self) -> Optional[int]:
        """Cells the sweep asked for (models × tasks × condition sets), None when sweep.json does not say."""
        s = self.sweep
        if not all(isinstance(s.get(k), list) for k in ("models", "tasks", "conditions")):
            return None
        return len(s["models"]) * len(s["tasks"]) * len(s["conditions"])

    @property
    def present(self) -> int:
        return len(self.results)

    def missing(self) -> list[str]:
        """Labels of the sweep's cells with no result file (model · task · condition)."""
        if self.expected is None:
            return []
        have = {(r.model, r.task, _cond_key(r.conditions)) for r in self.results}
        out = []
        for m in self.sweep["models"]:
            for t in self.sweep["tasks"]:
                for c in self.sweep["conditions"]:
                    if (str(m), str(t), _cond_key(c)) not in have:
                        out.append(f"{m} · {t} · {_cond_label(c)}")
        return out


def _cond(d, axis) -> Condition:
    try:
        return Condition.from_dict((d or {}).get(axis))
    except (TypeError, ValueError, AttributeError):
        return Condition()


def _cond_key(conds) -> tuple:
    return tuple(_cond(conds, a).key() for a in AXES + (INTERVENTION, ADAPT))


def _cond_label(conds) -> str:
    parts = [f"{a} {_cond(conds, a).label()}" for a in AXES if not _cond(conds, a).clean]
    iv = _cond(conds, INTERVENTION)
    if not iv.clean:
        parts.append(f"{INTERVENTION} {intervention_label(iv)}")
    ad = _cond(conds, ADAPT)
    if not ad.clean:
        parts.append(f"{ADAPT} {adapt_label(ad)}")
    return ", ".join(parts) or "clean"


def _read_cell(path: Path) -> Result:
    d = json.loads(path.read_text())
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    if "checksum" in d and d["checksum"] != checksum(d):  # cells written before checksums have none: read as before
        raise ValueError("its checksum does not match its content (changed after it was written)")
    r = Result.from_json(d)
    if not isinstance(r.metrics, dict) or not isinstance(r.conditions, dict):
        raise ValueError("metrics and conditions must be objects")
    for a in AXES + (INTERVENTION, ADAPT):
        c = r.conditions.get(a)
        if c is not None and not isinstance(c, dict):
            raise ValueError(f"condition {a!r} is not an object")
        Condition.from_dict(c)
    return r


def load_run(run_dir) -> RunData:
    """Read ``sweep.json`` and every ``cells/*.json`` of a run folder. A file that cannot be read is skipped with a
    warning in ``RunData.warnings``; a folder that does not exist is a FileNotFoundError."""
    root = Path(run_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"no run folder at {root}")
    run = RunData(root=root, sweep={})
    try:
        sweep = json.loads((root / "sweep.json").read_text())
        run.sweep = sweep if isinstance(sweep, dict) else {}
        if not isinstance(sweep, dict):
            run.warnings.append("sweep.json: not a JSON object; ignored")
    except FileNotFoundError:
        run.warnings.append("sweep.json: missing (the run's size is unknown)")
    except (OSError, ValueError) as e:
        run.warnings.append(f"sweep.json: unreadable ({type(e).__name__}: {e}); ignored")
    for p in sorted((root / "cells").glob("*.json")):
        try:
            run.results.append(_read_cell(p))
            run.files.append(p.name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            run.warnings.append(f"cells/{p.name}: skipped ({type(e).__name__}: {str(e)[:200]})")
    return run


def describe(run: RunData) -> str:
    """One line: the run's name and how many of its cells are present."""
    of = f" of {run.expected}" if run.expected is not None else ""
    skipped = f", {len(run.warnings)} warning(s)" if run.warnings else ""
    return f"run {run.name}: {run.present}{of} cells present{skipped}"


# --------------------------------------------------------------------------------------------- the table
def _spec(name):
    if not name:
        return None
    try:
        return get_perturbation(name)
    except (KeyError, ValueError):
        return None


def _axis_columns(axis: str, c: Condition) -> dict:
    if c.clean:
        d = {axis: "clean", f"{axis}_category": "clean", f"{axis}_severity": 0, f"{axis}_seed": None}
        return d | ({"visual_modality": "clean"} if axis == "visual" else {})
    mix = c.mix  # a mixed condition (MLVP Tables 17-18) is its own row, never merged with a plain one
    spec = _spec(c.name) or (_spec(mix.types[0].partition("/")[0]) if mix and mix.types else None)
    d = {axis: c.name + (f"/{c.variant}" if c.variant else "") + (f" [{mix.slug()}]" if mix else ""),
         f"{axis}_category": "mixed" if mix and mix.types else spec.category if spec else "unknown",
         f"{axis}_severity": int(c.severity), f"{axis}_seed": int(c.seed)}
    return d | ({"visual_modality": spec.modality if spec else "unknown"} if axis == "visual" else {})


def directions(metrics: dict, preferred=None) -> list[str]:
    """Retrieval directions present in ``metrics`` (dicts of R@K), the sweep's ``preferred`` order first."""
    have = [k for k, v in metrics.items() if isinstance(v, dict) and "R@1" in v]
    first = [d for d in (preferred or []) if d in have]
    return first + [d for d in have if d not in first]


def run_rsum(metrics: dict) -> float:
    """RSUM on the papers' 0..600 (both directions' R@1, 5, 10 in percent), NaN when a direction is missing."""
    for a, b in RETRIEVAL_PAIRS:
        if isinstance(metrics.get(a), dict) and isinstance(metrics.get(b), dict):
            try:
                return rsum(metrics[a], metrics[b], percent=True)
            except (ValueError, TypeError):
                return math.nan
    return math.nan


def _numeric(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def headline(result: Result, preferred_dirs=None, name: Optional[str] = None) -> Optional[str]:
    """The task's headline metric key in :meth:`Result.flat` form (``t2v_R@1``, ``accuracy``, ``acc``...);
    ``name`` (retrieval: ``R@5``, ``MdR``, ``RSUM``...) picks another retrieval metric of the first direction."""
    dirs = directions(result.metrics, preferred_dirs)
    if dirs:
        if name == "RSUM" and _numeric(run_rsum(result.metrics)):
            return "RSUM"
        return f"{dirs[0]}_{name}" if name and _numeric(result.metrics[dirs[0]].get(name)) else f"{dirs[0]}_R@1"
    flat = result.flat()
    if name and _numeric(flat.get(name)):  # a protocol's headline of another task (CLAVI: balanced_acc)
        return name
    for k in ("accuracy", "acc"):
        if _numeric(flat.get(k)):
            return k
    return next((k for k, v in flat.items() if _numeric(v)), None)


REPORT_COLUMNS = frozenset({"metric", "score", "score_lo", "score_hi", "clean_score", "scale", "gamma_a", "gamma_a_lo",
                            "gamma_a_hi", "gamma_r", "gamma_r_lo", "gamma_r_hi", "mmi", "mmi_lo", "mmi_hi", "delta",
                            "delta_lo", "delta_hi", "holds", "RSUM"})


def _row(r: Result, file: str) -> dict:
    conds = {a: _cond(r.conditions, a) for a in AXES + (INTERVENTION, ADAPT)}
    axes = "+".join(a for a in AXES + (INTERVENTION, ADAPT) if not conds[a].clean) or "clean"
    row = {"model": r.model, "dataset": r.dataset, "split": r.split, "task": r.task, "axes": axes,
           "condition": _cond_label(r.conditions), "n": r.n, "cell": r.extra.get("cell") or Path(file).stem}
    for a in AXES:
        row.update(_axis_columns(a, conds[a]))
    row[INTERVENTION] = "none" if conds[INTERVENTION].clean else intervention_label(conds[INTERVENTION])
    row[ADAPT] = "none" if conds[ADAPT].clean else adapt_label(conds[ADAPT])
    info = r.extra.get("adapt") if isinstance(r.extra.get("adapt"), dict) else {}
    secs = [v for v in (info.get("per_1000_queries") or {}).values() if _numeric(v)]
    row["adapt_s_per_1000q"] = sum(secs) / len(secs) if secs else math.nan
    flat = {k: v for k, v in r.flat().items() if _numeric(v) or v is None}
    # a task's own metric named like a column the report computes (PEELING's "mmi" against the original
    # expressions, not γ's MMI against the clean cell) keeps its value under the task's name: "peeling_mmi"
    row.update({(f"{r.task}_{k}" if k in REPORT_COLUMNS or k in row else k): v for k, v in flat.items()})
    mult = r.extra.get("multiplications")  # QUAG-attention's measured saving of multiplications (Table 1)
    if isinstance(mult, dict) and _numeric(mult.get("saving")):
        row["mult_ops_saving"] = float(mult["saving"])
    for d in directions(r.metrics):  # Qiu et al.'s per-direction "Mean" = (R@1 + R@5 + R@10) / 3
        with contextlib.suppress(KeyError, ValueError, TypeError):
            row[f"{d}_mean_recall"] = mean_recall(r.metrics[d])
    if directions(r.metrics):
        row["RSUM"] = run_rsum(r.metrics)
    return row


def metric_scale(metric: str, values) -> float:
    """The best possible score (γᵃ's denominator): 600 for RSUM, 1 for fractions, 100 for percentages."""
    if metric == "RSUM":
        return 600.0
    vals = [float(v) for v in values if _numeric(v)]
    top = max(vals, default=1.0)
    return 1.0 if top <= 1 else 100.0 if top <= 100 else top


def _safe_robustness(c, p, scale) -> dict:
    try:
        return robustness(float(c), float(p), scale=scale)
    except (TypeError, ValueError):
        return {"gamma_a": math.nan, "gamma_r": math.nan, "mmi": math.nan}


def _score_group(g: pd.DataFrame, metric: Optional[str]) -> pd.DataFrame:
    g = g.copy()
    plain = g[g[ADAPT] == "none"] if ADAPT in g else g  # adaptation cells hold one direction: not the headline's
    heads = (plain if len(plain) else g)["_headline"].dropna()
    key = metric if metric and metric in g and g[metric].notna().any() else heads.iloc[0] if len(heads) else None
    g["metric"] = key
    if key is None or key not in g:
        g[["score", "clean_score", "scale", "gamma_a", "gamma_r", "mmi"]] = math.nan
        return g
    g["score"] = pd.to_numeric(g[key], errors="coerce")
    scale = metric_scale(key, g["score"])
    clean = g.loc[g["axes"] == "clean", "score"].dropna()
    c = float(clean.mean()) if len(clean) else math.nan
    g["clean_score"], g["scale"] = c, scale
    rob = [_safe_robustness(c, p, scale) for p in g["score"]]
    for k in ("gamma_a", "gamma_r", "mmi"):
        g[k] = [x[k] for x in rob]
    return g


def _sorted(df: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """Sweep order of models and tasks, then clean, visual, text, visual+text, by perturbation and severity; an
    adaptation cell right after its shifted cell (methods in registry order)."""
    order = {m: i for i, m in enumerate(run.sweep.get("models") or [])}
    tasks = {t: i for i, t in enumerate(run.sweep.get("tasks") or [])}
    key = pd.DataFrame({"m": df["model"].map(lambda m: order.get(m, len(order))), "model": df["model"],
                        "t_": df["task"].map(lambda t: tasks.get(t, len(tasks))), "task": df["task"],
                        "a": df["axes"].map({"clean": 0, "visual": 1, "text": 2, f"visual+{ADAPT}": 1,
                                             f"text+{ADAPT}": 2}).fillna(3),
                        "v": df["visual"], "vs": df["visual_severity"], "t": df["text"], "ts": df["text_severity"],
                        "ad": (df[ADAPT] if ADAPT in df else pd.Series("none", index=df.index)).map(
                            lambda x: "{:03d} {}".format(*_method_order(x)) if x != "none" else "")})
    return df.loc[key.sort_values(list(key.columns), kind="stable").index]


def results_table(run: RunData, metric: Optional[str] = None, headline: Optional[str] = None,
                  reps: Optional[Replicates] = None) -> pd.DataFrame:
    """The D01 table: one row per cell — identity, visual / text perturbation with category, modality and
    severity, every flat metric, RSUM (retrieval, 0..600) and γᵃ / γʳ / MMI of the metric (``metric``, else the
    task's headline — ``headline`` such as ``R@5`` or ``RSUM`` (:func:`headline_of`) for retrieval — column
    ``metric``) against the same model's clean cell in this run; then the bootstrap intervals, the comparisons
    with clean, R@K Error and the model fields (:func:`robustlab.bench.report_ci.add_columns`)."""
    if not run.results:
        return pd.DataFrame(columns=ID_COLUMNS + SCORE_COLUMNS)
    dirs = run.sweep.get("directions") if isinstance(run.sweep.get("directions"), list) else None
    name = headline_of(run, headline)
    rows = [_row(r, f) | {"_headline": _headline(r, dirs, name)} for r, f in zip(run.results, run.files)]
    df = pd.DataFrame(rows)
    if metric and metric not in df:
        avail = sorted(c for c in df.columns if c not in ID_COLUMNS and not c.startswith("_") and c != "cell")
        raise ValueError(f"no cell has the metric {metric!r}; metrics: {', '.join(avail)}")
    parts = [_score_group(g, metric) for _, g in df.groupby(["model", "task", "dataset"], sort=False,
                                                                   dropna=False)]
    df = add_columns(run, _sorted(pd.concat(parts).drop(columns="_headline"), run), reps)
    df = protocol_columns(run, df)  # a protocol run: the paper's categories and types
    return df[column_order(df, ID_COLUMNS + SCORE_COLUMNS)].reset_index(drop=True)


_headline = headline  # results_table's parameter of that name hides the function


# ---------------------------------------------------------------------------------------- aggregations
def natural(axis: str, name: str) -> bool:
    """Whether a perturbation counts in the "natural-only" aggregate (A05): text minus Positional and DropText;
    every visual perturbation (the papers define no unnatural visual ones)."""
    if axis != "text":
        return True
    spec = _spec(str(name).split("/")[0])
    if spec is None:
        return True
    return spec.category != "positional" and not any(t in spec.tags for t in UNNATURAL_TAGS)


def _sweep(sub: pd.DataFrame, axis: str) -> dict:
    means = sub.groupby([axis, f"{axis}_severity"])["score"].mean()
    return {(str(p), int(s)): float(v) for (p, s), v in means.items()}


def _axis_rows(sub: pd.DataFrame, axis: str, clean: float, scale: float, base: dict) -> list[dict]:
    cats = dict(zip(sub[axis], sub[f"{axis}_category"]))
    rows = [base | r for r in table_rows(robustness_table(_sweep(sub, axis), clean=clean, categories=cats,
                                                          scale=scale))]
    # a protocol run says which cells are natural (its text_aggregate_exclude, robustlab.bench.report_protocol)
    nat = sub[sub["natural"].astype(bool)] if "natural" in sub else sub[[natural(axis, p) for p in sub[axis]]]
    if not nat.empty:
        r = table_rows(robustness_table(_sweep(nat, axis), clean=clean, categories=cats, scale=scale))[-1]
        rows.append(base | r | {"level": "natural", "name": "natural", "category": "natural"})
    return rows


def robustness_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, task, dataset, axis): :func:`table_rows` of :func:`robustness_table` (per perturbation, per
    category, overall) plus a ``natural`` row, each with the metric, its clean score and the items' n."""
    out = []
    for (m, t, d), g in df.groupby(["model", "task", "dataset"], sort=False, dropna=False):
        clean = g["clean_score"].iloc[0]
        if not _numeric(clean) or clean <= 0:
            continue
        for axis in AXES:
            sub = g[(g["axes"] == axis) & g["score"].notna()]
            if sub.empty:
                continue
            base = {"model": m, "task": t, "dataset": d, "axis": axis, "metric": g["metric"].iloc[0],
                    "clean": clean, "items": int(sub["n"].max())}
            try:
                out += _axis_rows(sub, axis, clean, float(g["scale"].iloc[0]), base)
            except ValueError:  # scores the γ formulas refuse (e.g. negative): no aggregate for this axis
                continue
    return pd.DataFrame(out).rename(columns={"n": "perturbations"})


def effective(rob: pd.DataFrame) -> pd.DataFrame:
    """A09: per model and axis, the most effective perturbation (lowest severity-mean score) and the least."""
    out = []
    if rob.empty:
        return pd.DataFrame(out)
    per = rob[rob["level"] == "perturbation"]
    for (m, t, d, a), g in per.groupby(["model", "task", "dataset", "axis"], sort=False, dropna=False):
        lo, hi = g.loc[g["score"].idxmin()], g.loc[g["score"].idxmax()]
        out.append({"model": m, "task": t, "dataset": d, "axis": a, "metric": g["metric"].iloc[0],
                    "clean": g["clean"].iloc[0], "most_effective": lo["name"], "most_score": lo["score"],
                    "most_gamma_r": lo["gamma_r"], "least_effective": hi["name"], "least_score": hi["score"],
                    "least_gamma_r": hi["gamma_r"]})
    return pd.DataFrame(out)


def combination_grid(df: pd.DataFrame) -> pd.DataFrame:
    """M01/A08: γʳ per (visual condition, text condition) for every model with combined cells, long form; the
    ``clean`` row / column holds the single-modality scores of the conditions that appear in combinations."""
    out = []
    for (m, t, d), g in df.groupby(["model", "task", "dataset"], sort=False, dropna=False):
        both = g[g["axes"] == "visual+text"]
        if both.empty:
            continue
        lab = {a: g[a] + " s" + g[f"{a}_severity"].astype(str) for a in AXES}
        vis, txt = set(lab["visual"][both.index]), set(lab["text"][both.index])
        for i, r in g.iterrows():
            v = lab["visual"][i] if r["visual"] != "clean" else "clean"
            x = lab["text"][i] if r["text"] != "clean" else "clean"
            if (v in vis or v == "clean") and (x in txt or x == "clean"):
                out.append({"model": m, "task": t, "dataset": d, "visual": v, "text": x, "metric": r["metric"],
                            "score": r["score"], "gamma_r": r["gamma_r"], "n": r["n"]})
    grid = pd.DataFrame(out)
    if not grid.empty:
        grid = grid.groupby(["model", "task", "dataset", "visual", "text", "metric"], sort=False,
                            as_index=False).mean(numeric_only=True)
    return grid


def clean_table(df: pd.DataFrame) -> pd.DataFrame:
    """Clean metrics per model (section 1): the clean cells' flat metrics."""
    clean = df[df["axes"] == "clean"]
    drop = [c for c in clean.columns if c.startswith(("visual", "text", INTERVENTION, ADAPT, "delta")) or c in (
        "axes", "condition", "clean_score", "scale", "gamma_a", "gamma_r", "mmi", "cell", "holds")]
    return clean.drop(columns=drop).dropna(axis=1, how="all").reset_index(drop=True)


ADAPT_ID = ["model", "task", "dataset", "direction", "metric", "perturbation", "severity"]


def _method_order(label: str) -> tuple:
    name = label.split(" (")[0]
    order = list(METHODS)
    return (order.index(name) if name in order else len(order), label)


def _diagnostic(label: str) -> bool:
    m = METHODS.get(label.split(" (")[0])
    return bool(m is not None and m.diagnostic)


def adapt_table(df: pd.DataFrame, run: Optional[RunData] = None) -> pd.DataFrame:
    """HAT-VTR's Tables 1–3 for every model and adapted direction: one row per query shift (perturbation of the
    query side, severity) with R@1 on clean queries (``clean``), on the shifted ones without adaptation (``none``:
    the shifted cell) and after each method (one column per method and parameter setting, registry order), then a
    ``mean`` row per severity over the perturbations; ``best``: the method (or ``none``) with the highest R@1 in the
    row (ties joined by " = "; a diagnostic method such as the oracle is shown but never best). ``clean`` /
    ``none`` come from the run's clean and shifted cells, else from what the adaptation cells measured on the same
    queries (their ``extra["adapt"]``). Repeated seeds are averaged."""
    cols = ADAPT_ID + ["clean", "none", "best", "n"]
    if df.empty or ADAPT not in df or not (df[ADAPT] != "none").any():
        return pd.DataFrame(columns=cols)
    extra = {}
    if run is not None:
        for r, f in zip(run.results, run.files):
            info = r.extra.get("adapt")
            if isinstance(info, dict):
                extra[r.extra.get("cell") or Path(f).stem] = info
    preferred = run.sweep.get("directions") if run is not None else None
    preferred = preferred if isinstance(preferred, list) else []
    out = []
    for (m, t, d), g in df.groupby(["model", "task", "dataset"], sort=False, dropna=False):
        adapted = g[g[ADAPT] != "none"]
        have = [dr for pair in RETRIEVAL_PAIRS for dr in pair
                if f"{dr}_R@1" in adapted and adapted[f"{dr}_R@1"].notna().any()]
        for dr in [x for x in preferred if x in have] + [x for x in have if x not in preferred]:
            side = "text" if dr[0] == "t" else "visual"  # the query side of the direction
            ad = g[g["axes"] == f"{side}+{ADAPT}"]
            shifted = g[(g["axes"] == side) & (g[ADAPT] == "none")]
            clean_rows = g[g["axes"] == "clean"]
            col = f"{dr}_R@1"
            sub = ad[ad[col].notna()]
            methods = sorted(dict.fromkeys(sub[ADAPT]), key=_method_order)

            def from_extra(rows, which):
                vals = [extra.get(c, {}).get(which, {}).get(dr, {}).get("R@1") for c in rows["cell"]]
                vals = [float(v) for v in vals if _numeric(v)]
                return sum(vals) / len(vals) if vals else math.nan

            clean = clean_rows[col].mean() if col in clean_rows and clean_rows[col].notna().any() \
                else from_extra(sub, "clean")

            def label(p):
                return p + (" (text)" if side == "text" else "")

            keys = list(dict.fromkeys(zip(sub[side], sub[f"{side}_severity"].astype(int))))
            order = {p: i for i, p in enumerate(dict.fromkeys(k[0] for k in keys))}
            rows = []
            for p, sev in sorted(keys, key=lambda k: (order[k[0]], k[1])):
                here = sub[(sub[side] == p) & (sub[f"{side}_severity"] == sev)]
                sh = shifted[(shifted[side] == p) & (shifted[f"{side}_severity"] == sev)]
                none = sh[col].mean() if col in sh and sh[col].notna().any() else from_extra(here, "shifted")
                row = {"model": m, "task": t, "dataset": d, "direction": dr, "metric": "R@1",
                       "perturbation": label(p), "severity": int(sev), "clean": clean, "none": none}
                row.update({meth: here.loc[here[ADAPT] == meth, col].mean() for meth in methods})
                row["n"] = int(here["n"].max())
                rows.append(row)
            for sev in sorted({r["severity"] for r in rows}):
                at = [r for r in rows if r["severity"] == sev]
                mean = {k: _mean([r[k] for r in at]) for k in ["clean", "none"] + methods}
                rows.append({"model": m, "task": t, "dataset": d, "direction": dr, "metric": "R@1",
                             "perturbation": "mean", "severity": sev, **mean, "n": at[0]["n"]})
            for r in rows:  # the best of none and the methods (a diagnostic one, e.g. the oracle, is no contender)
                vals = {k: r[k] for k in ["none"] + methods if _numeric(r.get(k)) and not _diagnostic(k)}
                top = max(vals.values(), default=math.nan)
                r["best"] = " = ".join(k for k, v in vals.items() if v >= top - 1e-12) if vals else ""
            out += rows
    if not out:
        return pd.DataFrame(columns=cols)
    res = pd.DataFrame(out)
    methods = sorted([c for c in res.columns if c not in cols], key=_method_order)
    return res[ADAPT_ID + ["clean", "none"] + methods + ["best", "n"]]


def _mean(vals) -> float:
    v = [float(x) for x in vals if _numeric(x)]
    return sum(v) / len(v) if v else math.nan


def report_tables(run: RunData, metric: Optional[str] = None, headline: Optional[str] = None) -> dict:
    """The report's tables as DataFrames: ``results`` (D01), ``clean``, ``robustness`` (per perturbation, category,
    overall, natural), ``effective`` (A09), ``combinations`` (M01/A08 grid, long form), ``interventions`` (Rawal et
    al.'s Table 1), ``adaptation`` (HAT-VTR Tables 1–3, :func:`adapt_table`), ``models`` (paired bootstrap
    between models per condition, :func:`~robustlab.bench.report_ci.model_differences`), ``gamma_models`` (the
    same for each axis's overall γʳ, :func:`~robustlab.bench.report_ci.gamma_differences`), ``protocol`` (the paper's
    own tables when the run ran a protocol: ``[(title, note, DataFrame)]``,
    :func:`~robustlab.bench.report_protocol.protocol_tables`)."""
    reps = Replicates(run)
    df = results_table(run, metric, headline, reps)
    kept: dict = {}
    rob = robustness_ci(df, robustness_rows(df), reps, natural, keep=kept) if not df.empty else pd.DataFrame()
    return {"results": df, "clean": clean_table(df) if not df.empty else df, "robustness": rob,
            "effective": effective(rob), "combinations": combination_grid(df) if not df.empty else pd.DataFrame(),
            "interventions": intervention_table(df), "adaptation": adapt_table(df, run),
            "models": model_differences(run, df, reps), "gamma_models": gamma_differences(df, rob, kept, reps),
            "protocol": protocol_tables(run, df)}


DIRECTIONS = {"t2i": "text→image", "i2t": "image→text", "t2v": "text→video", "v2t": "video→text"}


def metric_label(key) -> str:
    """A metric key as words: ``t2v_R@1`` → "text→video R@1"; anything else as it is."""
    key = str(key)
    d, _, rest = key.partition("_")
    return f"{DIRECTIONS[d]} {rest}" if d in DIRECTIONS and rest else key


def axis_noun(axis: str, df: pd.DataFrame, dataset: str) -> str:
    """"image" / "video" / "text": what the axis perturbs (the visual axis: the dataset's kind)."""
    if axis == "text":
        return "text"
    try:
        return get_entry(dataset)["kind"]
    except (KeyError, ValueError, TypeError):
        mods = set(df.get("visual_modality", pd.Series(dtype=str)).dropna()) - {"clean", "unknown"}
        return "video" if "video" in mods else "image" if mods else "visual"



__all__ = ["RunData", "load_run", "results_table", "report_tables", "describe", "headline_of",
           "headline", "directions", "run_rsum", "metric_scale", "natural", "robustness_rows", "effective",
           "combination_grid", "clean_table", "intervention_table", "adapt_table", "DROP_FLAG", "ADAPT_ID",
           "DIRECTIONS", "metric_label", "axis_noun"]
