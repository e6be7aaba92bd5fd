"""FALLBACK, to be replaced by :mod:`robustlab.export.report` (branch ``report``): the same API, minimal — a heatmap
and severity curves built straight from the run folder's cell JSONs, results.csv and a bare report.html."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import plotly.express as px


@dataclass
class RunData:
    root: Path
    sweep: dict
    results: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.sweep.get("name") or self.root.name)


def load_run(run_dir) -> RunData:
    from robustlab.tasks.base import Result

    root = Path(run_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"no run folder at {root}")
    try:
        run = RunData(root, json.loads((root / "sweep.json").read_text()))
    except (OSError, ValueError) as e:
        run = RunData(root, {}, warnings=[f"sweep.json: unreadable ({type(e).__name__})"])
    for p in sorted((root / "cells").glob("*.json")):
        try:
            run.results.append(Result.from_json(json.loads(p.read_text())))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            run.warnings.append(f"cells/{p.name}: skipped ({type(e).__name__})")
    return run


def describe(run: RunData) -> str:
    return f"run {run.name}: {len(run.results)} cells present (fallback report)"


def results_table(run: RunData, metric=None) -> pd.DataFrame:
    rows = []
    for r in run.results:
        v = (r.conditions.get("visual") or {})
        flat = {f"{d}_{k}" if isinstance(m, dict) else d: x for d, m in r.metrics.items()
                for k, x in (m.items() if isinstance(m, dict) else [(d, m)]) if isinstance(x, (int, float))}
        key = next((k for k in flat if metric is None or k.endswith(str(metric))), None)
        rows.append({"model": r.model, "task": r.task, "perturbation": v.get("name") or "clean",
                     "severity": v.get("severity") or 0, "metric": key, "score": flat.get(key)})
    return pd.DataFrame(rows)


def report_tables(run: RunData, metric=None) -> dict:
    return {"results": results_table(run, metric)}


def report_figures(run: RunData, metric=None) -> dict:
    df = results_table(run, metric)
    df = df[df["perturbation"] != "clean"] if not df.empty else df
    if df.empty:
        return {}
    return {"heatmap": px.density_heatmap(df, x="severity", y="perturbation", z="score", histfunc="avg"),
            "severity": px.line(df.sort_values("severity"), x="severity", y="score", color="perturbation",
                                markers=True)}


def write_report(run_dir, out_dir=None, metric=None):
    run = load_run(run_dir)
    out = Path(out_dir) if out_dir else run.root
    csv, html = out / "results.csv", out / "report.html"
    results_table(run, metric).to_csv(csv, index=False)
    figs = "".join(f.to_html(full_html=False, include_plotlyjs="cdn" if i == 0 else False)
                   for i, f in enumerate(report_figures(run, metric).values()))
    html.write_text(f"<html><body><h1>{run.name}</h1>{figs}</body></html>", encoding="utf-8")
    return csv, html
