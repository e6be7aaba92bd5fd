"""The tables of the protocols whose task is not retrieval, in their paper's layout: QUAG's Table 1 (Rawal et al.,
the model interventions), CLAVI's Table 3 (Rawal et al.) and PEELING's Table II (Yuan et al.). Each reads the clean
cells' own metrics (a task's ``mmi`` is its own, never the
report's γ column of that name), in percentages as the papers print them, one column per model that ran, and one
"not run here" column per paper baseline the protocol lists under ``[[not_run]]`` with ``axis = "baseline"``."""
from __future__ import annotations

import math

import pandas as pd

from robustlab.perturb.condition import Condition as _Cond

INTERVENTION = "intervention"  # the condition axis of model interventions (robustlab.tasks: INTERVENTION)

CLAVI_ROWS = (("Balanced Acc", "balanced_acc"), ("CAcc_V", "cacc_v"), ("CAcc_T", "cacc_t"),
              ("CAcc_V-control", "cacc_v_control"), ("CAcc_T-control", "cacc_t_control"),
              ("CAcc_V-complement", "cacc_v_complement"), ("CAcc_T-complement", "cacc_t_complement"))


def num(v, digits: int = 1) -> str:
    """``v`` as the papers print it, with a fixed number of decimals (``"600.0"``, never ``"600"``: a column that
    mixes numbers and words would otherwise lose the decimal of a whole number), or "—" when it is not a number."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "—"
    return "—" if not math.isfinite(f) else f"{f:.{digits}f}"


def _pct(v) -> str:
    """A 0..1 fraction in percent, one decimal (``"80.0"``)."""
    try:
        return num(100 * float(v))
    except (TypeError, ValueError):
        return "—"


# the papers' short column names, by the registry's perturbation (its variant dropped)
QIU_SHORT = {"gaussian_noise": "Gauss.", "shot_noise": "Shot", "impulse_noise": "Impulse", "speckle_noise": "Speckle",
             "defocus_blur": "Defocus", "glass_blur": "Glass", "motion_blur": "Motion", "zoom_blur": "Zoom",
             "snow": "Snow", "frost": "Frost", "fog": "Fog", "brightness": "Bright", "contrast": "Contrast",
             "elastic_transform": "Elastic", "pixelate": "Pixel", "jpeg_compression": "JPEG", "stylize": "Stylize",
             "keyboard": "Keyboard", "ocr": "OCR", "char_insert": "CI", "char_substitute": "CR", "char_swap": "CS",
             "char_delete": "CD", "synonym_replacement": "SR", "word_insertion": "WI", "word_swap": "WS",
             "word_deletion": "WD", "insert_punctuation": "IP", "formal": "Formal", "casual": "Casual",
             "passive": "Passive", "active": "Active", "back_translation": "Back_trans"}  # Qiu et al. Tables 1-2
QIU_CATEGORY = {"Character": "Character-level", "Word": "Word-level", "Sentence": "Sentence-level"}  # Table 2
# Zhang et al. (MLVP, HAT-VTR) Tables 1 and 3 ("CL" in Table 3 is their misprint of CI, character insertion)
MLVP_SHORT = {"mlvp_gaussian_noise": "Gauss.", "mlvp_impulse_noise": "Impul.", "mlvp_fog": "Fog", "mlvp_snow": "Snow",
              "mlvp_elastic": "Elastic.", "mlvp_h264": "H264.", "mlvp_motion_blur": "Motion", "mlvp_defocus": "Defocus",
              "mlvp_occlusion": "Occlu.", "mlvp_style": "Style", "mlvp_event_insertion": "Event",
              "mlvp_temporal_scrambling": "Tempo.", "ocr": "OCR", "char_insert": "CI", "char_substitute": "CR",
              "char_swap": "CS", "char_delete": "CD", "synonym_replacement": "SR", "word_insertion": "WI",
              "word_swap": "WS", "word_deletion": "WD", "insert_punctuation": "IP", "back_translation": "Backtrans.",
              "formal": "Formal", "casual": "Casual", "passive": "Passive", "active": "Active"}
MLVP_LEVEL = {"Low": "Low-Level", "Mid": "Mid-Level", "High": "High-Level", "Character": "Character-Level",
              "Word": "Word-Level", "Sentence": "Sentence-Level"}


def short_name(spec: str, names: dict) -> str:
    """The paper's column name of the registry's ``name/variant`` (``spec`` itself when the paper has none)."""
    return names.get(spec.split("/")[0], spec)


def _clean(run, task: str) -> list:
    """The clean cells of ``task`` (no perturbation, intervention or adaptation), in run order."""
    out = []
    for r in run.results:
        conds = r.conditions if isinstance(r.conditions, dict) else {}
        if r.task == task and all(_as_cond(c).clean for c in conds.values()):
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


FIP_SHORT = {"gaussian_noise": "Gaussian"}  # Table II's FIP columns: Qiu's short names but this one ("Gaussion")


def _as_cond(c) -> _Cond:
    """A cell's condition, a Condition or its JSON (a Result read back or made by hand); None is clean."""
    return c if isinstance(c, _Cond) else _Cond.from_dict(c if isinstance(c, dict) else None)


def _visual(r):
    """``(name/variant, severity)`` of a cell perturbed on the visual side alone, else None."""
    conds = r.conditions if isinstance(r.conditions, dict) else {}
    c = _as_cond(conds.get("visual"))
    if c.clean or any(not _as_cond(x).clean for k, x in conds.items() if k != "visual"):
        return None
    return c.name + (f"/{c.variant}" if c.variant else ""), int(c.severity)


def peeling_table(run, not_run: list, fip=(), planned=None) -> pd.DataFrame:
    """Table II as the paper prints it: per model and dataset, the rows ACC, MMI and ATCR (in %), the columns the
    original expressions, PEELING, the baselines the protocol lists as not run (QAQA, CAT, SIN) and FIP's image
    corruptions (``fip``: the protocol's ``name/variant`` of each, in order). FIP's ACC is a corrupted cell's
    accuracy on the original expressions, its MMI = (original − FIP) / original against the clean cell. PEELING's
    ATCR (the share of adversarial tests that are correct) comes from the built-in world's oracle where the data knows
    the truth (``oracle_tests_valid``); elsewhere, and for FIP's corrupted images, it needs the tests labelled by hand
    (the Grounding page, ``robustlab peeling atcr``). ``planned``: the specs the sweep asks for (None: all)."""
    cells = _clean(run, "peeling")
    if not cells:
        return pd.DataFrame()
    shifted = {}
    for r in run.results:
        v = _visual(r) if r.task == "peeling" else None
        if v is not None:
            shifted.setdefault((r.model, r.dataset, v[0]), []).append(r.flat().get("acc_original"))
    base = _baselines(not_run)
    rows = []
    for r in cells:
        m = r.flat()
        orig, atcr = m.get("acc_original"), m.get("oracle_tests_valid")
        acc = {"Original": _pct(orig), "PEELING": _pct(m.get("acc_adv"))} | base
        mmi = {"Original": "-", "PEELING": _pct(m.get("mmi"))} | base
        at = {"Original": "-", "PEELING": _pct(atcr) if atcr is not None else "needs labels (robustlab peeling atcr)"} \
            | base
        for spec in fip:
            col = "FIP " + short_name(spec, QIU_SHORT | FIP_SHORT)
            got = [float(x) for x in shifted.get((r.model, r.dataset, spec), []) if _finite(x)]
            if got:
                a = sum(got) / len(got)
                acc[col] = _pct(a)
                mmi[col] = _pct((float(orig) - a) / float(orig)) if _finite(orig) and float(orig) > 0 else "—"
                at[col] = "needs labels"
            else:
                acc[col] = mmi[col] = at[col] = "pending" if planned is None or spec in planned else "not swept"
        key = {"model": r.model, "dataset": r.dataset}
        rows += [key | {"metric": "ACC"} | acc | {"tests": m.get("tests")}, key | {"metric": "MMI"} | mmi,
                 key | {"metric": "ATCR"} | at]
    return pd.DataFrame(rows)


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


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


__all__ = ["num", "short_name", "QIU_SHORT", "QIU_CATEGORY", "MLVP_SHORT", "MLVP_LEVEL", "FIP_SHORT", "clavi_table",
           "peeling_table", "CLAVI_ROWS", "intervention_table", "TABLE1_ORDER", "DROP_FLAG"]
