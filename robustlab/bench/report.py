"""The sweep report: ``results.csv`` and a self-contained ``report.html`` over a (finished or partial) run folder.

The data and its choices (headline metrics, γᵃ / γʳ / MMI, "natural", the tables) are in
:mod:`robustlab.bench.report_data`; the figures in :mod:`robustlab.bench.report_figures`; the summary in plain words
in :mod:`robustlab.bench.report_summary`; the page in :mod:`robustlab.bench.report_html`. Needs pandas and plotly
(``pip install robustlab[report]``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

import pandas as pd

from robustlab.tasks.conditions import INTERVENTION
from robustlab.tasks.registry import get as get_task

from robustlab.bench.report_data import *  # noqa: F401,F403  (the data API, re-exported)
from robustlab.bench.report_data import RunData, load_run, report_tables
from robustlab.bench.report_data import __all__ as _DATA_ALL
from robustlab.bench.report_figures import figures
from robustlab.bench.report_html import render


def report_figures(run: RunData, metric: Optional[str] = None, headline: Optional[str] = None) -> dict:
    """The report's plotly figures by key (see :mod:`robustlab.bench.report_figures`)."""
    return figures(report_tables(run, metric, headline))


def write_report(run_dir, out_dir=None, metric: Optional[str] = None, headline: Optional[str] = None,
                 sections: Optional[Sequence] = None) -> tuple[Path, Path]:
    """Write ``results.csv`` and a self-contained ``report.html`` (into ``out_dir``, default the run folder), and
    ``adaptation.csv`` (:func:`adapt_table`) when the run has adaptation cells, ``differences.csv`` (the paired
    bootstrap between models) when it has several models; returns the first two paths. ``headline``: the
    retrieval metric the report leads with (``R@5``, ``RSUM``...; default: the spec's ``report.headline``, else
    R@1); ``sections``: extra sections of the HTML after the standard ones
    (:func:`robustlab.bench.report_html.extra_section`: ``(title, html | DataFrame)`` or dicts)."""
    run = load_run(run_dir)
    if not run.results and run.expected is None:
        raise ValueError(f"{run_dir} holds no sweep.json and no readable cells/*.json: not a run folder")
    tables = report_tables(run, metric, headline)
    out = Path(out_dir) if out_dir is not None else run.root
    out.mkdir(parents=True, exist_ok=True)
    csv_path, html_path = out / "results.csv", out / "report.html"
    tables["results"].to_csv(csv_path, index=False)
    adapt_path = out / "adaptation.csv"
    if not tables["adaptation"].empty:
        tables["adaptation"].to_csv(adapt_path, index=False)
    elif adapt_path.is_file():  # from an earlier report of this folder: it no longer describes the run
        adapt_path.unlink()
    diff_path = out / "differences.csv"
    if not tables["models"].empty:
        tables["models"].to_csv(diff_path, index=False)
    elif diff_path.is_file():
        diff_path.unlink()
    html_path.write_text(render(run, tables, metric, sections, headline), encoding="utf-8")
    return csv_path, html_path


def quag_table1(model, dataset, n: int, interventions: Sequence[str], progress: Optional[Callable] = None):
    """Rawal et al.'s Table 1 on the first ``n`` items of a VQA dataset: a DataFrame with the baseline and one row
    per intervention (accuracy, Δ, ↓, per question type) — the sweep report's table, computed in memory."""
    conds = [{}] + [{INTERVENTION: iv} for iv in interventions]
    results = get_task("vqa").evaluate(model, dataset, conds, n=n, progress=progress)
    run = RunData(root=None, sweep={"models": [results[0].model], "tasks": ["vqa"]})
    run.results, run.files = list(results), [f"cell{i}.json" for i in range(len(results))]
    t = report_tables(run)["interventions"]
    return t.drop(columns=[c for c in ("model", "task", "dataset") if c in t]) if isinstance(t, pd.DataFrame) else t


__all__ = [*_DATA_ALL, "report_figures", "write_report", "quag_table1"]
