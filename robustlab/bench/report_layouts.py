"""The tables of the protocols whose task is not retrieval, in their paper's layout: QUAG's Table 1 (Rawal et al.,
the model interventions), CLAVI's Table 3 (Rawal et al.) and PEELING's Table II (Yuan et al.). Each reads the clean
cells' own metrics (a task's ``mmi`` is its own, never the
report's γ column of that name), in percentages as the papers print them, one column per model that ran, and one
"not run here" column per paper baseline the protocol lists under ``[[not_run]]`` with ``axis = "baseline"``."""
from __future__ import annotations

import math

import pandas as pd

INTERVENTION = "intervention"  # the condition axis of model interventions (robustlab.tasks: INTERVENTION)

CLAVI_ROWS = (("Balanced Acc", "balanced_acc"), ("CAcc_V", "cacc_v"), ("CAcc_T", "cacc_t"),
              ("CAcc_V-control", "cacc_v_control"), ("CAcc_T-control", "cacc_t_control"),
              ("CAcc_V-complement", "cacc_v_complement"), ("CAcc_T-complement", "cacc_t_complement"))


def _pct(v) -> object:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "—"
    return "—" if math.isnan(f) else round(100 * f, 1)


def _clean(run, task: str) -> list:
    """The clean cells of ``task`` (no perturbation, intervention or adaptation), in run order."""
    out = []
    for r in run.results:
        conds = r.conditions if isinstance(r.conditions, dict) else {}
        if r.task == task and all(getattr(c, "clean", True) for c in conds.values()):
            out.append(r)
    return out


def _baselines(not_run: list) -> dict:
    return {x["perturbation"]: "not run here" for x in not_run if x.get("axis") == "baseline"}


def clavi_table(run, not_run: list) -> pd.DataFrame:
    """Table 3: balanced accuracy and the consistent accuracies (overall, control, complement) per model, in %."""
    cells = _clean(run, "clavi")
    if not cells:
        return pd.DataFrame()
    rows = []
    for label, key in CLAVI_ROWS:
        row = {"metric": label}
        for r in cells:
            row[r.model] = _pct(r.flat().get(key))
        rows.append(row | _baselines(not_run))
    return pd.DataFrame(rows)


def peeling_table(run, not_run: list) -> pd.DataFrame:
    """Table II: per model and dataset, the original accuracy, then PEELING's ACC / MMI / ATCR, in %. ATCR (the
    share of adversarial tests that are correct) comes from the built-in world's oracle where the data knows the
    truth (``oracle_tests_valid``); elsewhere it needs the tests labelled by hand (the Grounding page,
    ``robustlab peeling atcr``)."""
    cells = _clean(run, "peeling")
    if not cells:
        return pd.DataFrame()
    rows = []
    for r in cells:
        m = r.flat()
        atcr = m.get("oracle_tests_valid")
        rows.append({"model": r.model, "dataset": r.dataset, "Original ACC": _pct(m.get("acc_original")),
                     "PEELING ACC": _pct(m.get("acc_adv")), "MMI": _pct(m.get("mmi")),
                     "ATCR": _pct(atcr) if atcr is not None else "needs labels (robustlab peeling atcr)",
                     "tests": m.get("tests")} | _baselines(not_run))
    return pd.DataFrame(rows)


def _numeric(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


TABLE1_ORDER = {k: i for i, k in enumerate(["input:language-only", "input:video-only", "quag:unimodal",
                                             "quag:crossmodal", "quag:video", "quag:text", "quag-attention:video-avg",
                                             "quag-attention:text-avg", "quag-attention:text-video-avg"])}
DROP_FLAG = 0.02  # Rawal et al. Table 1: "↓" for a drop of at least 2 (percentage points; 0.02 on a 0..1 scale)


def intervention_table(df: pd.DataFrame) -> pd.DataFrame:
    """Rawal et al.'s Table 1 for every model: the metric on clean inputs without and with each model intervention
    (QUAG short-circuits, QUAG-attention, input ablations), Δ vs the baseline, ↓ when the drop is at least 2 points,
    and the metric per question type (``per_type_<type>_acc`` columns of VQA results) as ``type: <type>``."""
    out = []
    if df.empty or INTERVENTION not in df:
        return pd.DataFrame(out)
    for (m, t, d), g in df.groupby(["model", "task", "dataset"], sort=False, dropna=False):
        rows = g[g["axes"].isin(["clean", INTERVENTION])]
        if not (rows["axes"] == INTERVENTION).any():
            continue
        types = sorted({c[len("per_type_"):-len("_acc")] for c in g.columns
                        if c.startswith("per_type_") and c.endswith("_acc")})
        clean = rows[rows["axes"] == "clean"]
        base = float(clean["score"].mean()) if len(clean) else math.nan
        scale = float(g["scale"].iloc[0]) if _numeric(g["scale"].iloc[0]) else 1.0
        ivs = rows[rows["axes"] == INTERVENTION]
        ivs = ivs.iloc[sorted(range(len(ivs)), key=lambda i: (TABLE1_ORDER.get(ivs[INTERVENTION].iloc[i].split("/")[0],
                                                                                 len(TABLE1_ORDER)),
                                                                ivs[INTERVENTION].iloc[i]))]
        for _, r in pd.concat([clean.head(1), ivs]).iterrows():
            name = "baseline" if r["axes"] == "clean" else r[INTERVENTION]
            delta = float(r["score"]) - base if _numeric(r["score"]) and _numeric(base) else math.nan
            row = {"model": m, "task": t, "dataset": d, "intervention": name, "metric": r["metric"],
                   "score": r["score"], "delta": 0.0 if name == "baseline" else delta,
                   "drop": "↓" if name != "baseline" and _numeric(delta) and -delta >= DROP_FLAG * scale - 1e-12
                   else "", "n": r["n"]}
            if _numeric(r.get("mult_ops_saving")):  # measured on one forward (QUAG-attention only)
                row["mult_ops_saving"] = float(r["mult_ops_saving"])
            row.update({f"type: {ty}": r.get(f"per_type_{ty}_acc") for ty in types})
            out.append(row)
    return pd.DataFrame(out)


__all__ = ["clavi_table", "peeling_table", "CLAVI_ROWS", "intervention_table", "TABLE1_ORDER", "DROP_FLAG"]
