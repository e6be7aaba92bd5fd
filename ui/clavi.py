"""CLAVI page pieces: the per-question table of one pair and the metric tables of a run. Every column says what it
holds; a cell without a value (a question type with no Q′ partner) is missing in the data (NaN; an empty CSV cell)
and shown as :data:`MISSING` (st.dataframe's ``placeholder``), never "None"."""
from __future__ import annotations

import pandas as pd

from robustlab.diagnostics import clavi as cl

METRIC_LABELS = {"balanced_acc": "Balanced accuracy", "cacc_v": "CAcc_V", "cacc_t": "CAcc_T",
                 "cacc_v_control": "CAcc_V control", "cacc_t_control": "CAcc_T control",
                 "cacc_v_complement": "CAcc_V complement", "cacc_t_complement": "CAcc_T complement",
                 "acc": "Accuracy", "yes_rate": "Share of 'yes'"}
MISSING = "—"  # a cell with no value
QUESTION_COLUMNS = ["question type", "question", "truth on V", "model on V", "right on V", "truth on V′",
                    "model on V′", "right on V′", "video-consistent", "text-consistent on V", "text-consistent on V′"]


def _mark(ok) -> str:
    return MISSING if ok is None else ("✓" if ok else "✗")


def _text(x) -> str:
    return MISSING if x is None else str(x)


def question_table(table: list[dict]) -> pd.DataFrame:
    """One row per question: the truth and the model's answer on V and on V′, and the consistency marks."""
    return pd.DataFrame([dict(zip(QUESTION_COLUMNS, (
        r["qtype"] + ("′" if r["prime"] and r["qtype"] in cl.COMPLEMENT else ""), r["question"],
        _text(r["answer_v"]), _text(r["pred_v"]), _mark(r["right_v"]), _text(r["answer_c"]), _text(r["pred_c"]),
        _mark(r["right_c"]), _mark(r["cacc_v"]), _mark(r.get("cacc_t_v")), _mark(r.get("cacc_t_c")))))
        for r in table], columns=QUESTION_COLUMNS)


def metrics_table(runs: dict) -> pd.DataFrame:
    """Metrics (rows, the index named "metric") × runs (columns: "<label> complement"; ``runs``: a label -> the
    metrics dict of :func:`robustlab.diagnostics.clavi.metrics`)."""
    df = pd.DataFrame({f"{label} complement": {v: round(float(m[k]), 4) if m.get(k) is not None else float("nan")
                                               for k, v in METRIC_LABELS.items()} for label, m in runs.items()})
    df.index.name = "metric"
    return df


FINE_SIDES = {"V": "V", "V'": "V′"}


def fine_table(m: dict) -> pd.DataFrame:
    """Rawal et al.'s Table 15 layout: one row per question type, the accuracy on V / V′ for the question Q and
    its swapped-word partner Q′ (NaN where a type has no Q′: the CSV leaves those cells empty)."""
    rows = cl.fine_rows(m)
    out = []
    for r in rows:
        row = {"question type": r["type"], "subset": r["subset"]}
        for side in ("V", "V'"):
            for prime in ("Q", "Q'"):
                v = r.get(f"{side}, {prime}")
                row[f"accuracy on {FINE_SIDES[side]}, {prime.replace(chr(39), '′')}"] = (
                    float("nan") if v is None else round(float(v), 4))
        out.append(row)
    return pd.DataFrame(out)


__all__ = ["question_table", "metrics_table", "fine_table", "METRIC_LABELS", "MISSING", "QUESTION_COLUMNS"]
