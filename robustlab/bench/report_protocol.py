"""The paper's own tables for a sweep that ran a protocol (:mod:`robustlab.bench.protocol`), in the paper's layout.

* ``schiappa`` (MSRVTT-P, YouCook2-P): Tables 2 and 3 — per model, γʳ mean ± SD over each category's perturbations
  (video: Noise, Blur, Camera, Digital, Temporal; text: the seven categories), on the headline metric (R@5);
  Table 4 — γᵃ and γʳ ± σ per modality, the text aggregate over the natural shifts only (the protocol's
  ``text_aggregate_exclude``: Positional, DropText). Each perturbation's γ is the mean over its severities; σ is
  the population standard deviation over the perturbations (the paper does not say which; ``numpy.std``).
* ``qiu`` (Flickr30K / COCO -IP / -TP): Table 1 (image) or Table 2 (text) — per model, RSUM (on the paper's 0–600
  scale, as everywhere in the report) per perturbation type (mean over its levels; the paper's short names under a
  header row of its categories), the clean RSUM, "ave" (the unweighted mean over types) and
  ↓MMI = (clean − ave) / clean.
* ``schiappa`` on YouCook2-P: the paper's Table 2 is MSRVTT-P only, so the video table is titled as no table of
  the paper; Table 3's Bias column stays, "—", as the paper prints it.
* ``mlvp`` and ``hat-vtr`` (Zhang et al.): Table 1 (v2t under video shifts) and Table 3 (t2v under text shifts) —
  per model (and, for hat-vtr, method in the paper's order: no adaptation, Tent, READ, SAR, EATA, TCR, Ours, then the
  oracle as ours only) and severity, the types with the paper's short names under a header row of their levels, each
  level's mean and "Avg.", in percent; then Tables 17 (mixed severities) and 18 (mixed types by share of queries).
* ``quag``: Table 1 — accuracy per configuration with Δ from the baseline and ↓ where it drops by ≥ 2 points, and
  the measured % decrease in multiplications of QUAG-attention.

Numbers are printed with the papers' precision (one decimal for percentages and RSUM, two for Schiappa's γ), as
text, so that a whole number keeps its decimal in a column that also holds words.

Every table names the perturbations the protocol lists but which could not run here (``not run``); a category whose
members all failed to run is shown as such, never as a number.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pandas as pd

from robustlab.perturb.condition import Condition
from robustlab.perturb.share import same_as
from robustlab.perturb.specs import split_variant
from robustlab.tasks.conditions import intervention_label

from robustlab.bench.protocol import Protocol
from robustlab.bench.report_layouts import (MLVP_LEVEL, MLVP_SHORT, QIU_CATEGORY, QIU_SHORT, TABLE1_ORDER, clavi_table,
                                            num, peeling_table, short_name)

AXIS_NOUN = {"visual": "video / image", "text": "text"}


def _youcook(p: Protocol) -> bool:
    """Whether a Schiappa protocol runs YouCook2(-P) (its dataset), whose tables the paper numbers differently."""
    return "youcook2" in str((p.data.get("dataset") or {}).get("name") or p.name).lower()


def protocol_of(run) -> Optional[Protocol]:
    """The protocol a run's ``sweep.json`` recorded (its resolved data), else None."""
    p = run.sweep.get("protocol") if isinstance(getattr(run, "sweep", None), dict) else None
    if not isinstance(p, dict) or not isinstance(p.get("data"), dict):
        return None
    try:
        return Protocol(name=str(p.get("name") or p["data"].get("name")), data=p["data"], source=str(p.get("source")))
    except (KeyError, TypeError, ValueError):
        return None


def _pm(values) -> str:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return "—"
    return f"{np.mean(vals):.2f} ± {np.std(vals):.2f}"  # two decimals, as Schiappa et al. print γ


def _per_perturbation(df: pd.DataFrame, axis: str) -> pd.DataFrame:
    """Per (model, perturbation on ``axis`` alone): the severity-mean score, γᵃ and γʳ."""
    sub = df[(df["axes"] == axis) & df["score"].notna()]
    if sub.empty:
        return pd.DataFrame(columns=["model", "perturbation", "score", "gamma_a", "gamma_r"])
    g = sub.groupby(["model", axis], sort=False)[["score", "gamma_a", "gamma_r"]].mean().reset_index()
    return g.rename(columns={axis: "perturbation"})


def _regime(df: pd.DataFrame) -> dict:
    if "regime" not in df:
        return {}
    return {m: r for m, r in zip(df["model"], df["regime"]) if isinstance(r, str) and r}


def _columns(p: Protocol, axis: str, cats: dict) -> dict:
    """``cats`` in the paper's column order (the protocol's ``[report.columns]``), any others after; a column the
    paper prints that has no perturbation in this protocol (YouCook2-P's Bias) is kept, with no members ("—")."""
    order = list((p.report.get("columns") or {}).get(axis) or [])
    return {c: cats.get(c, []) for c in order + [c for c in cats if c not in order]}


def _of(text: str, have: int, members: int) -> str:
    """A cell averaged over only some of its members says so: ``0.812 ± 0.050 (2 of 5)``."""
    return text if have >= members else f"{text} ({have} of {members})"


def _category_table(df: pd.DataFrame, p: Protocol, axis: str, plan=None, by_type: bool = False) -> pd.DataFrame:
    per = _per_perturbation(df, axis)
    cats = p.types(axis) if by_type else _columns(p, axis, p.categories(axis))
    runnable = {e.spec for e in p.entries(axis) if e.available}
    regime = _regime(df)
    rows = []
    for m in dict.fromkeys(df["model"]):
        pm = per[per["model"] == m].set_index("perturbation")
        row = {"model": m, "regime": regime.get(m, "—")}
        for c, members in cats.items():
            have = [pm.loc[s, "gamma_r"] for s in members if s in pm.index]
            row[c] = _of(_pm(have), len(have), len(members)) if have else \
                _missing(members, runnable, plan) if members else "—"  # the paper's "—": none in this benchmark
        rows.append(row)
    return pd.DataFrame(rows)


def _missing(members, runnable, planned=None) -> str:
    """What a cell without a number says: none of its perturbations can run here, the run has not reached them yet
    (``pending``), or the sweep left them out (``not swept``: grid options overrode the protocol)."""
    if not any(s in runnable for s in members):
        return "not run here"
    return "pending" if planned is None or any(s in planned for s in members) else "not swept"


def planned(run) -> set:
    """``name/variant`` of every perturbation the run's sweep.json asks for (either axis)."""
    out = set()
    for c in (run.sweep.get("conditions") or []) if isinstance(run.sweep, dict) else []:
        for axis in ("visual", "text"):
            d = c.get(axis) if isinstance(c, dict) else None
            if isinstance(d, dict) and d.get("name"):
                out.add(d["name"] + (f"/{d['variant']}" if d.get("variant") else ""))
    return out


def _modality_table(df: pd.DataFrame, p: Protocol, plan=None) -> pd.DataFrame:
    exclude = set(p.report.get("text_aggregate_exclude") or [])
    regime = _regime(df)
    rows = []
    for m in dict.fromkeys(df["model"]):
        row = {"model": m, "regime": regime.get(m, "—")}
        for axis, label in (("visual", "video"), ("text", "text")):
            per = _per_perturbation(df[df["model"] == m], axis).set_index("perturbation")
            keep = [e.spec for e in p.entries(axis) if axis != "text" or e.category not in exclude]
            got = per.loc[[s for s in keep if s in per.index]]
            none = _missing(keep, {e.spec for e in p.entries(axis) if e.available}, plan)
            row[f"{label} γᵃ"] = _of(_pm(got["gamma_a"]), len(got), len(keep)) if len(got) else none
            row[f"{label} γʳ"] = _of(_pm(got["gamma_r"]), len(got), len(keep)) if len(got) else none
        rows.append(row)
    return pd.DataFrame(rows)


def _qiu_table(df: pd.DataFrame, p: Protocol, plan=None) -> pd.DataFrame:
    """Qiu's Table 1 (IP) or 2 (TP): the paper's short column names (Gauss., …; Keyboard, OCR, CI, …) under a header
    row of its categories (Noise, …; Character-level, …), RSUM with one decimal."""
    regime = _regime(df)
    ents = [e for axis in ("visual", "text") for e in p.entries(axis)]
    col = {e.spec: short_name(e.spec, QIU_SHORT) for e in ents}
    if len(set(col.values())) < len(col):  # two variants of one perturbation: keep the registry's names
        col = {e.spec: e.spec for e in ents}
    rows = [{"model": "(category)", "regime": "", "clean": ""}
            | {col[e.spec]: QIU_CATEGORY.get(e.category, e.category) for e in ents} | {"ave": "", "↓MMI": ""}]
    for m in dict.fromkeys(df["model"]):
        g = df[df["model"] == m]
        # RSUM is on the paper's 0–600 already (report_data.run_rsum); another headline (a fraction) in percent
        f = 1.0 if set(g["metric"].dropna()) == {"RSUM"} else 100.0
        clean = g.loc[g["axes"] == "clean", "score"].dropna()
        c = float(clean.mean()) * f if len(clean) else math.nan
        row = {"model": m, "regime": regime.get(m, "—"), "clean": num(c)}
        types = []
        for axis in ("visual", "text"):
            per = _per_perturbation(g, axis).set_index("perturbation")
            for e in p.entries(axis):
                if e.spec in per.index:
                    v = float(per.loc[e.spec, "score"]) * f
                    row[col[e.spec]] = num(v)
                    types.append(v)
                else:
                    row[col[e.spec]] = _missing([e.spec], {e.spec} if e.available else set(), plan)
        ave = float(np.mean(types)) if types else math.nan
        row["ave"] = num(ave) if types else "—"
        row["↓MMI"] = f"{100 * (c - ave) / c:.1f}%" if types and c > 0 else "—"
        rows.append(row)
    return pd.DataFrame(rows)


ADAPT_ORDER = ("none", "tent", "read", "sar", "eata", "tcr", "hat-vtr", "oracle")  # Zhang et al.'s row order
ADAPT_LABEL = {"none": "no adaptation", "tent": "Tent", "read": "READ", "sar": "SAR", "eata": "EATA", "tcr": "TCR",
               "hat-vtr": "Ours (HAT-VTR)", "oracle": "oracle (ours only)"}  # the oracle is not in the paper


def _methods(g: pd.DataFrame) -> list:
    """The adaptation methods of ``g`` in the paper's order (no adaptation first, HAT-VTR, then the oracle)."""
    have = list(dict.fromkeys(g["adapt"])) if "adapt" in g else ["none"]
    base = [str(x).split(" (")[0] for x in have]  # "tent (steps=1)": its variant after the name
    return [have[i] for i in sorted(range(len(have)), key=lambda i: (
        ADAPT_ORDER.index(base[i]) if base[i] in ADAPT_ORDER else len(ADAPT_ORDER), i))]


def _method_label(x: str) -> str:
    """``tent (steps=1)`` -> ``Tent (steps=1)``: the paper's name of the method, its variant kept."""
    name, _, rest = str(x).partition(" (")
    return ADAPT_LABEL.get(name, name) + (f" ({rest}" if rest else "")


def _side_table(df: pd.DataFrame, p: Protocol, axis: str, plan=None, adapt: bool = False) -> pd.DataFrame:
    """One side of Zhang et al.'s Tables 1 (v2t under video shifts) and 3 (t2v under text shifts): rows model ×
    method (``adapt``: no adaptation, Tent, …, Ours, then the oracle; else no adaptation only) × severity, columns the
    types with the paper's short names under a header row of their levels, each level's mean ("Low-Level mean", …)
    and "Avg." over the types, in percent with one decimal. A type the sweep left out has no column; one that cannot
    run here says so; one planned but not yet run is "pending"."""
    runnable = {e.spec for e in p.entries(axis) if e.available}
    cols = {lv: [s for s in ms if plan is None or s in plan or s not in runnable]
            for lv, ms in p.categories(axis).items()}
    col = {s: short_name(s, MLVP_SHORT) for ms in cols.values() for s in ms}
    if len(set(col.values())) < len(col):  # two variants of one perturbation: keep the registry's names
        col = {s: s for s in col}
    key = ["model"] + ["method"] * adapt + ["severity"]
    head = dict.fromkeys(key, "") | {"model": "(level)"}
    for lv, ms in cols.items():
        head |= {col[s]: MLVP_LEVEL.get(lv, lv) for s in ms} | ({f"{MLVP_LEVEL.get(lv, lv)} mean": ""} if ms else {})
    head["Avg."] = ""
    rows = []
    for m in dict.fromkeys(df["model"]):
        g = df[(df["model"] == m) & df["axes"].isin([axis, f"{axis}+adapt"])]
        plain = g[~g[axis].astype(str).str.contains(" [", regex=False)] if len(g) else g
        for method in _methods(plain) if adapt else ["none"]:
            sub = plain[plain["adapt"] == method] if "adapt" in plain else plain
            sevs = sorted({int(x) for x in sub[f"{axis}_severity"].dropna()}) if len(sub) else []
            for sev in sevs:
                row = {"model": m, "method": _method_label(method), "severity": f"s{sev}"}
                row, every = {k: row[k] for k in key}, []
                for lv, ms in cols.items():
                    vals = []
                    for s in ms:
                        v = sub.loc[(sub[axis] == s) & (sub[f"{axis}_severity"] == sev), "_side_score"].dropna()
                        row[col[s]] = num(100 * float(v.mean())) if len(v) else (
                            "not run here" if s not in runnable else "pending")
                        vals += [float(v.mean())] if len(v) else []
                    if ms:
                        row[f"{MLVP_LEVEL.get(lv, lv)} mean"] = _of(num(100 * np.mean(vals)), len(vals), len(ms)) \
                            if vals else "—"
                    every += vals
                row["Avg."] = num(100 * np.mean(every)) if every else "—"
                rows.append(row)
    return pd.DataFrame([head] + rows) if rows else pd.DataFrame()


def _mix_tables(df: pd.DataFrame, p: Protocol, axis: str, adapt: bool = False) -> list[tuple[str, pd.DataFrame]]:
    """Zhang et al.'s Tables 17 (each type at mixed severities: ``<type> [mixed-s1-5]``) and 18 (random types on a
    share of the queries: ``random-types [p20-…]``, one column per share) for ``axis``, rows model × method, in percent
    with one decimal and "Avg." over the columns: ``[(kind, table)]``, kind "types" or "shares"."""
    specs = {e.spec for e in p.entries(axis)}
    out = []
    for kind in ("types", "shares"):
        mixes = [v for v in _mixed(df[df["axes"].isin([axis, f"{axis}+adapt"])], axis)
                 if (v.split(" [")[0] in specs) == (kind == "types")]
        rank = {e.spec: i for i, e in enumerate(p.entries(axis))}  # the paper's column order, not the run's
        mixes.sort(key=lambda v: (rank.get(v.split(" [")[0], len(rank)), _share_key(v)))
        if not mixes:
            continue
        label = {v: short_name(v.split(" [")[0], MLVP_SHORT) if kind == "types" else _share(v) for v in mixes}
        if len(set(label.values())) < len(label):
            label = {v: v for v in mixes}
        rows = []
        for m in dict.fromkeys(df["model"]):
            g = df[(df["model"] == m) & df[axis].isin(mixes)] if axis in df else df.iloc[:0]
            for method in _methods(g) if adapt else ["none"]:
                sub = g[g["adapt"] == method] if "adapt" in g else g
                if sub.empty:
                    continue
                row = {"model": m} | ({"method": _method_label(method)} if adapt else {})
                vals = []
                for v in mixes:
                    x = sub.loc[sub[axis] == v, "_side_score"].dropna()
                    row[label[v]] = num(100 * float(x.mean())) if len(x) else "pending"
                    vals += [float(x.mean())] if len(x) else []
                row["Avg."] = num(100 * np.mean(vals)) if vals else "—"
                rows.append(row)
        if rows:
            out.append((kind, pd.DataFrame(rows)))
    return out


def _share_key(v: str) -> float:
    """The share of a ``… [p20-…]`` mix (0.2), for ordering Table 18's columns; 0 without one."""
    head = v.split(" [", 1)[-1].split("-")[0]
    return int(head[1:]) / 100 if head[:1] == "p" and head[1:].isdigit() else 0.0


def _share(v: str) -> str:
    """``random-types [p20-mixed-s1-5]`` -> ``20%`` (Table 18's column), else the bracket's text."""
    tag = v.split(" [", 1)[1].rstrip("]")
    head = tag.split("-")[0]
    return f"{head[1:]}%" if head[:1] == "p" and head[1:].isdigit() else tag


def _zhang_tables(df: pd.DataFrame, p: Protocol, plan, adapt: bool) -> list[tuple[str, str, pd.DataFrame]]:
    """MLVP's (``adapt`` False: no adaptation) or HAT-VTR's tables as Zhang et al. number them: Table 1 (v2t under
    video shifts), Table 3 (t2v under text shifts), Tables 17 (mixed severities) and 18 (mixed types)."""
    head = p.report.get("headline") or "R@1"
    df = _side_scores(df, p)
    rows = "rows: no adaptation, the paper's methods in its order, then the oracle (a label-informed upper bound, " \
        "not in the paper); " if adapt else "no adaptation (the base models); "
    out, lab = [], "HAT-VTR" if adapt else "MLVP"  # one paper (Zhang et al. 2025): its benchmark and its method
    sides = (("visual", 1, "v2t", "video"), ("text", 3, "t2v", "text"))
    for axis, num_, d, what in sides:  # Tables 1 and 3, then the mixed settings (Tables 17-18)
        t = _side_table(df, p, axis, plan, adapt)
        if not t.empty:
            out.append((f"{lab} — Table {num_}: {d} {head} (%) under {what} shifts", f"{rows}{d} {head} in percent, "
                        "the shifted side's queries; each level's mean and Avg. over the types that ran", t))
    for axis, _, d, what in sides:
        for kind, mt in _mix_tables(df, p, axis, adapt):
            if axis == "visual":
                title = f"{lab} — Table 17: {d} {head} (%), mixed severities" if kind == "types" else \
                    f"{lab} — Table 18: {d} {head} (%), mixed types by share of corrupted queries"
            else:
                title = f"{lab} — {d} {head} (%), mixed {what} settings"
            out.append((title, f"{rows}{d} {head} in percent; Avg. over the columns", mt))
    return out


def _mixed(df: pd.DataFrame, axis: str) -> list[str]:
    """The ``axis`` values of mixed conditions (MLVP Tables 17-18: ``name [mix]``), in the run's order."""
    return [v for v in dict.fromkeys(df[axis]) if isinstance(v, str) and " [" in v] if axis in df else []


def _side_scores(df: pd.DataFrame, p: Protocol) -> pd.DataFrame:
    """The score of the direction whose queries the shifted side makes (visual: v2t / i2t, text: t2v / t2i), on the
    protocol's headline metric: what the adaptation tables compare."""
    name = p.report.get("headline") or "R@1"
    df = df.copy()

    def pick(r):
        side = "visual" if str(r["axes"]).startswith("visual") else "text" if str(r["axes"]).startswith("text") \
            else None
        for d in (("v2t", "i2t") if side == "visual" else ("t2v", "t2i") if side == "text" else ()):
            v = r.get(f"{d}_{name}")
            if v is not None and isinstance(v, (int, float)) and math.isfinite(v):
                return float(v)
        return math.nan
    df["_side_score"] = df.apply(pick, axis=1) if len(df) else []
    return df


def _multiplications(run) -> dict:
    """``{(model, intervention label): measured multiplications}`` from the cells' ``extra["multiplications"]``
    (the task measures one forward with and without a QUAG-attention intervention)."""
    out = {}
    for r in getattr(run, "results", None) or []:
        mult = r.extra.get("multiplications") if isinstance(getattr(r, "extra", None), dict) else None
        c = (r.conditions or {}).get("intervention") if isinstance(r.conditions, dict) else None
        c = Condition.from_dict(c) if isinstance(c, dict) else c
        if isinstance(mult, dict) and c is not None and not getattr(c, "clean", True):
            out[(r.model, intervention_label(c))] = mult
    return out


def _quag_table(df: pd.DataFrame, run=None) -> pd.DataFrame:
    """Table 1: accuracy per configuration in the paper's order, Δ from the baseline, ↓ for a drop of 2 points or
    more, then the paper's "Δ multiplication ops" row for each QUAG-attention configuration, from the count
    measured on one forward (never only the formula)."""
    mults = _multiplications(run)
    rows = []
    for m in dict.fromkeys(df["model"]):
        g = df[df["model"] == m]
        base = g.loc[g["axes"] == "clean", "score"].dropna()
        b = float(base.mean()) if len(base) else math.nan
        rows.append({"model": m, "configuration": "baseline", "accuracy": num(b * 100), "Δ": num(0.0), "↓": ""})
        ivs = g[g["axes"] == "intervention"]
        ivs = ivs.iloc[sorted(range(len(ivs)), key=lambda i: (TABLE1_ORDER.get(str(ivs["intervention"].iloc[i])
                                                                               .split("/")[0], len(TABLE1_ORDER)), i))]
        for _, r in ivs.iterrows():  # the paper's row order
            a = float(r["score"]) * 100
            d = a - b * 100
            rows.append({"model": m, "configuration": r["intervention"], "accuracy": num(a),
                         "Δ": num(d), "↓": "↓" if d <= -2.0 else ""})
        for label in [str(x) for x in ivs["intervention"]]:  # in the table's order
            mult = mults.get((m, label))
            if mult is not None and label.startswith("quag-attention"):
                # the paper's "Δ: % decrease in multiplication operations": a decrease, printed positive
                rows.append({"model": m, "configuration": f"Δ multiplication ops, % decrease ({label})",
                             "accuracy": f"{100 * float(mult['saving']):.1f}% (measured: {int(mult['intervened']):,}"
                                         f" of {int(mult['baseline']):,})", "Δ": "", "↓": ""})
    return pd.DataFrame(rows)


def not_run_table(run) -> pd.DataFrame:
    nr = ((run.sweep.get("protocol") or {}).get("not_run") or []) if isinstance(run.sweep, dict) else []
    return pd.DataFrame(nr, columns=["axis", "perturbation", "category", "reason"]) if nr else pd.DataFrame()


def identical_table(df: pd.DataFrame) -> pd.DataFrame:
    """The cells that ran at a severity whose output is byte-identical to a lower severity's of the same
    perturbation (equal effective parameters: codec1 s2–s5 since FFmpeg clamps the quantiser at 31), one row per
    perturbation: one output measured more than once is not more evidence."""
    rows = []
    for axis in ("visual", "text"):
        if df is None or axis not in df or f"{axis}_severity" not in df:
            continue
        for name in sorted({str(x) for x in df[axis].dropna()} - {"clean"}):
            if " [" in name:  # a mixed condition
                continue
            base, variant = split_variant(name)
            try:
                sevs = sorted({int(s) for s in df.loc[df[axis] == name, f"{axis}_severity"]})
                same = {s: same_as(base, variant, s) for s in sevs}
            except (KeyError, ValueError):
                continue
            groups: dict = {}
            for s, m in same.items():
                if m is not None:
                    groups.setdefault(m[0], (m[1], []))[1].append(s)
            for low, (eff, dup) in sorted(groups.items()):
                rows.append({"axis": axis, "perturbation": name, "severities": ", ".join(f"s{x}" for x in dup),
                             "same output as": f"s{low}" + ("" if low in sevs else " (not run)"),
                             "effective parameters": ", ".join(f"{k}={v}" for k, v in eff.items())})
    return pd.DataFrame(rows)


def protocol_tables(run, df: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """``[(title, note, table)]``: the protocol's tables in the paper's layout (empty when the run ran none), and
    for any run the severities whose output is identical to a lower one's (:func:`identical_table`)."""
    p = protocol_of(run)
    ident = identical_table(df) if df is not None and not df.empty else pd.DataFrame()
    same = [("Identical severities", "these cells repeat a lower severity's output byte for byte (equal effective "
             "parameters), as the papers' released code does; their scores are the same measurement, not more "
             "evidence of robustness", ident)] if not ident.empty else []
    if p is None or df is None or df.empty:
        return same
    head = p.report.get("headline") or "the task's headline"
    metric = ", ".join(dict.fromkeys(str(m) for m in df["metric"].dropna())) or head
    out: list[tuple[str, str, pd.DataFrame]] = []
    lay = p.layout
    plan = planned(run)
    if lay == "schiappa":
        note = (f"γʳ on {metric} per perturbation (mean over its severities), then mean ± SD over the category's "
                "perturbations (population SD)")
        yc = _youcook(p)
        if yc:  # Schiappa's Table 2 is MSRVTT-P only; Figure 2 (left) summarises YouCook2-P's video perturbations
            out.append(("YouCook2-P video perturbations by category (γʳ; no table in the paper)", note + "; the "
                        "paper's Table 2 is MSRVTT-P only (Figure 2, left, plots YouCook2-P's video γʳ per model): "
                        "this is Table 2's layout on YouCook2-P", _category_table(df, p, "visual", plan)))
        else:
            out.append(("Table 2 — video perturbations by category (γʳ)", note,
                        _category_table(df, p, "visual", plan)))
        bias = " (Bias: —, as in the paper: its gender perturbations are MSRVTT-only; YouCook2 has no gendered " \
               "words)" if yc and not p.categories("text").get("Bias") else ""
        out.append((f"Table 3 — {'YouCook2 part: ' if yc else ''}text perturbations by category (γʳ)", note + bias,
                    _category_table(df, p, "text", plan)))
        if p.types("text"):
            out.append(("Text perturbations by type (γʳ)", note + "; types as the released perturbations.json "
                        "labels them (natural, machine, synthetic)", _category_table(df, p, "text", plan, True)))
        excl = ", ".join(p.report.get("text_aggregate_exclude") or []) or "none"
        out.append((f"Table 4 — {'YouCook2-P columns: ' if yc else ''}robustness per modality (γᵃ, γʳ ± σ)",
                    f"{metric}; text aggregates natural shifts only (without {excl})", _modality_table(df, p, plan)))
    elif lay == "qiu":
        table = "Table 1 — image perturbations (IP)" if p.entries("visual") else "Table 2 — text perturbations (TP)"
        out.append((f"{table}: RSUM per perturbation type, ave and ↓MMI",
                    "RSUM on the paper's 0–600 scale; each type's mean over its levels; ave = the unweighted mean "
                    "over the types that ran here; MMI = (clean − ave) / clean, lower is more robust",
                    _qiu_table(df, p, plan)))
    elif lay in ("mlvp", "hat-vtr"):
        out += _zhang_tables(df, p, plan, adapt=lay == "hat-vtr")
    elif lay == "quag":
        out.append(("QUAG Table 1 — accuracy per configuration", "accuracy in %; ↓: a drop of 2 points or more from "
                    "the baseline; Δ multiplication ops: the % decrease in multiplications (positive, as the paper "
                    "prints it), counted over every matrix product of one forward (torch FlopCounterMode), with and "
                    "without QUAG-attention",
                    _quag_table(df, run)))
    elif lay == "clavi":
        out.append(("CLAVI Table 3 — balanced and consistent accuracy (%)", "on each video and its action-swapped "
                    "complement; control: answerable without the order, complement: needs it; one run (the paper "
                    "gives mean ± SD of 3)", clavi_table(run, p.not_run())))
    elif lay == "peeling":
        fip = [e.spec for e in p.entries("visual") if e.category == "FIP"]
        out.append(("PEELING Table II — ACC / MMI / ATCR (%)", "ACC: IoU > 0.5; MMI = (original − PEELING) / "
                    "original; ATCR: correct adversarial tests / all, by the built-in world's oracle where it "
                    "knows the truth; FIP: the original expressions on images corrupted at severity 1 (the paper "
                    "states none; imagecorruptions' default), MMI against the clean images' original ACC",
                    peeling_table(run, p.not_run(), fip, plan)))
    nr = not_run_table(run)
    if not nr.empty:
        k, b = int((nr["axis"] == "setting").sum()), int((nr["axis"] == "baseline").sum())
        what = ", ".join([f"{len(nr) - k - b} of the protocol's perturbations"] * (len(nr) > k + b)
                         + [f"{k} settings of the paper"] * bool(k) + [f"{b} of the paper's baselines"] * bool(b))
        out.append((f"Not run here ({what})",
                    "named by the protocol but unavailable on this machine (weights or dependencies missing), or "
                    "settings and baselines of the paper the protocol does not express (with why); no score is shown "
                    "for them", nr))
    return [(t, n, d) for t, n, d in out + same if d is not None and not d.empty]


def protocol_columns(run, df: pd.DataFrame) -> pd.DataFrame:
    """A protocol run's results with the paper's grouping: ``{axis}_category`` is the protocol's category (Schiappa's
    AddText for ``append_irr``, not the registry's "word"), ``{axis}_type`` its type (natural / machine / synthetic)
    and ``natural`` whether the cell counts in the text aggregate (the protocol's ``text_aggregate_exclude``).
    Unchanged for a run without a protocol."""
    p = protocol_of(run)
    if p is None or df is None or df.empty:
        return df
    df = df.copy()
    exclude = set(p.report.get("text_aggregate_exclude") or [])
    for axis in ("visual", "text"):
        if axis not in df:
            continue
        ents = {e.spec: e for e in p.entries(axis)}
        cat = df[axis].map(lambda s: ents[s].category if s in ents else None)
        df[f"{axis}_category"] = cat.where(cat.notna(), df.get(f"{axis}_category"))
        df[f"{axis}_type"] = df[axis].map(lambda s: ents[s].type if s in ents and ents[s].type else "")
    if "text" in df and exclude:
        df["natural"] = [not (ax == "text" and c in exclude) for ax, c in zip(df["axes"], df["text_category"])]
    return df
