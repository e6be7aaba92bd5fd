"""CLAVI page pieces: the per-question table of one pair and the metric tables of a run."""
from __future__ import annotations

import pandas as pd

from robustlab.diagnostics import clavi as cl

METRIC_LABELS = {"balanced_acc": "Balanced accuracy", "cacc_v": "CAcc_V", "cacc_t": "CAcc_T",
                 "cacc_v_control": "CAcc_V control", "cacc_t_control": "CAcc_T control",
                 "cacc_v_complement": "CAcc_V complement", "cacc_t_complement": "CAcc_T complement",
                 "acc": "Accuracy", "yes_rate": "Share of 'yes'"}


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def question_table(table: list[dict]) -> pd.DataFrame:
    """One row per question: the truth and the model's answer on V and on V′, and the consistency marks."""
    return pd.DataFrame([{"type": r["qtype"] + ("′" if r["prime"] and r["qtype"] in cl.COMPLEMENT else ""),
                          "question": r["question"], "truth V": r["answer_v"], "model V": r["pred_v"],
                          "": _mark(r["right_v"]), "truth V′": r["answer_c"], "model V′": r["pred_c"],
                          " ": _mark(r["right_c"]), "video-consistent": _mark(r["cacc_v"]),
                          "text-consistent (V)": _mark(r["cacc_t_v"])} for r in table])


def metrics_table(runs: dict) -> pd.DataFrame:
    """Metrics (rows) × runs (columns: a label -> the metrics dict of :func:`robustlab.diagnostics.clavi.metrics`)."""
    return pd.DataFrame({label: {v: round(m[k], 4) for k, v in METRIC_LABELS.items()} for label, m in runs.items()})


def fine_table(m: dict) -> pd.DataFrame:
    return pd.DataFrame(cl.fine_rows(m))


__all__ = ["question_table", "metrics_table", "fine_table", "METRIC_LABELS"]
