"""The paper's own tables for a sweep that ran a protocol (:mod:`robustlab.bench.protocol`), in the paper's layout.

* ``schiappa`` (MSRVTT-P, YouCook2-P): Tables 2 and 3 — per model, γʳ mean ± SD over each category's perturbations
  (video: Noise, Blur, Camera, Digital, Temporal; text: the seven categories), on the headline metric (R@5);
  Table 4 — γᵃ and γʳ ± σ per modality, the text aggregate over the natural shifts only (the protocol's
  ``text_aggregate_exclude``: Positional, DropText). Each perturbation's γ is the mean over its severities; σ is
  the population standard deviation over the perturbations (the paper does not say which; ``numpy.std``).
* ``qiu`` (Flickr30K / COCO -IP / -TP): Table 1 — per model, RSUM (on the paper's 0–600 scale, as everywhere in the
  report) per perturbation type
  (mean over its levels), the clean RSUM, "ave" (the unweighted mean over types) and ↓MMI = (clean − ave) / clean.
* ``mlvp``: methods × types (grouped by level, a header row naming it), each level's mean and "Avg.", in percent,
  per shifted side and severity; then the mixed settings.
* ``hat-vtr``: Tables 1–3 — per model and shifted side, R@1 per shift type for no adaptation and each method, with
  the average over types.
* ``quag``: Table 1 — accuracy per configuration with Δ from the baseline and ↓ where it drops by ≥ 2 points.

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
from robustlab.bench.report_layouts import TABLE1_ORDER, clavi_table, peeling_table

AXIS_NOUN = {"visual": "video / image", "text": "text"}


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
    return f"{np.mean(vals):.3f} ± {np.std(vals):.3f}"


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
    """``cats`` in the paper's column order (the protocol's ``[report.columns]``), any others after."""
    order = [c for c in ((p.report.get("columns") or {}).get(axis) or []) if c in cats]
    return {c: cats[c] for c in order + [c for c in cats if c not in order]}


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
            row[c] = _of(_pm(have), len(have), len(members)) if have else _missing(members, runnable, plan)
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
    regime = _regime(df)
    # the paper's header row over the types: each column's category (Noise, Blur, ...; Character, Word, Sentence)
    rows = [{"model": "(category)", "regime": "", "clean": ""}
            | {e.spec: e.category for axis in ("visual", "text") for e in p.entries(axis)} | {"ave": "", "↓MMI": ""}]
    for m in dict.fromkeys(df["model"]):
        g = df[df["model"] == m]
        # RSUM is on the paper's 0–600 already (report_data.run_rsum); another headline (a fraction) in percent
        f = 1.0 if set(g["metric"].dropna()) == {"RSUM"} else 100.0
        clean = g.loc[g["axes"] == "clean", "score"].dropna()
        c = float(clean.mean()) * f if len(clean) else math.nan
        row = {"model": m, "regime": regime.get(m, "—"), "clean": round(c, 1)}
        types = []
        for axis in ("visual", "text"):
            per = _per_perturbation(g, axis).set_index("perturbation")
            for e in p.entries(axis):
                if e.spec in per.index:
                    v = float(per.loc[e.spec, "score"]) * f
                    row[e.spec] = round(v, 1)
                    types.append(v)
                else:
                    row[e.spec] = _missing([e.spec], {e.spec} if e.available else set(), plan)
        ave = float(np.mean(types)) if types else math.nan
        row["ave"] = round(ave, 1) if types else "—"
        row["↓MMI"] = f"{100 * (c - ave) / c:.1f}%" if types and c > 0 else "—"
        rows.append(row)
    return pd.DataFrame(rows)


def _mlvp_table(df: pd.DataFrame, p: Protocol, plan=None) -> pd.DataFrame:
    """MLVP as its paper prints it: methods (models) × types, grouped by level (a header row names each column's
    level), each level's mean and "Avg." over the types, in percent, one row per shifted side and severity (the
    paper's Tables 1, 32–35), then the mixed settings (Tables 17–18). A type the sweep left out has no column; one
    that cannot run here says so; one planned but not yet run is "pending"."""
    df = _side_scores(df, p)
    runnable = {e.spec for axis in ("visual", "text") for e in p.entries(axis) if e.available}
    head, rows = {"model": "(level)", "side": "", "severity": ""}, []
    cols: dict = {}
    for axis in ("visual", "text"):
        for level, members in p.categories(axis).items():
            kept = [s for s in members if plan is None or s in plan or s not in runnable]
            cols[(axis, level)] = kept
            head |= {s: level for s in kept} | ({f"{level} avg": level} if kept else {})
    head["Avg."] = ""
    for m in dict.fromkeys(df["model"]):
        g = df[df["model"] == m]
        g = g[g["adapt"] == "none"] if "adapt" in g else g
        for axis in ("visual", "text"):
            sub = g[g["axes"] == axis]
            plain = sub[~sub[axis].astype(str).str.contains(" [", regex=False)] if len(sub) else sub
            sevs = sorted({int(x) for x in plain[f"{axis}_severity"].dropna()}) if len(plain) else []
            for sev in sevs:
                row, every = {"model": m, "side": axis, "severity": f"s{sev}"}, []
                for (ax, level), members in cols.items():
                    if ax != axis:
                        continue
                    vals = []
                    for s in members:
                        v = sub.loc[(sub[axis] == s) & (sub[f"{axis}_severity"] == sev), "_side_score"].dropna()
                        row[s] = round(100 * float(v.mean()), 1) if len(v) else (
                            "not run here" if s not in runnable else "pending")
                        vals += [float(v.mean())] if len(v) else []
                    if members:
                        row[f"{level} avg"] = _of(f"{100 * np.mean(vals):.1f}", len(vals), len(members)) \
                            if vals else "—"
                    every += vals
                row["Avg."] = round(100 * float(np.mean(every)), 1) if every else "—"
                rows.append(row)
            for mixed in _mixed(sub, axis):  # Tables 17-18: one value each
                v = g.loc[g[axis] == mixed, "_side_score"].dropna()
                rows.append({"model": m, "side": axis, "severity": mixed,
                             "Avg.": round(100 * float(v.mean()), 1) if len(v) else "pending"})
    if not rows:
        return pd.DataFrame()
    for axis in ("visual", "text"):  # a side that did not run keeps no columns
        if not any(r["side"] == axis for r in rows):
            for (ax, level), members in cols.items():
                if ax == axis:
                    for k in members + [f"{level} avg"]:
                        head.pop(k, None)
    return pd.DataFrame([head] + rows)


def _mixed(df: pd.DataFrame, axis: str) -> list[str]:
    """The ``axis`` values of mixed conditions (MLVP Tables 17-18: ``name [mix]``), in the run's order."""
    return [v for v in dict.fromkeys(df[axis]) if isinstance(v, str) and " [" in v] if axis in df else []


def _adapt_pivot(df: pd.DataFrame, p: Protocol) -> pd.DataFrame:
    """HAT-VTR's tables: rows model × side × method, columns the shift types at the protocol's severity, + avg."""
    if "adapt" not in df:
        return pd.DataFrame()
    rows = []
    for m in dict.fromkeys(df["model"]):
        g = df[df["model"] == m]
        for axis in ("visual", "text"):
            shifted = g[g["axes"].isin([axis, f"{axis}+adapt"])]
            if shifted.empty:
                continue
            for method in dict.fromkeys(shifted["adapt"]):
                sub = shifted[shifted["adapt"] == method]
                row = {"model": m, "side": axis, "method": "no adaptation" if method == "none" else method}
                vals = []
                for e in p.entries(axis):
                    v = sub.loc[sub[axis] == e.spec, "_side_score"].dropna()
                    if len(v):
                        row[e.spec] = round(float(v.mean()), 4)
                        vals.append(float(v.mean()))
                    else:
                        row[e.spec] = "pending" if e.available else "not run here"
                row["avg"] = round(float(np.mean(vals)), 4) if vals else "—"
                for mixed in _mixed(shifted, axis):  # Tables 17-18: after the average of the single types
                    v = sub.loc[sub[axis] == mixed, "_side_score"].dropna()
                    row[mixed] = round(float(v.mean()), 4) if len(v) else "pending"
                rows.append(row)
    return pd.DataFrame(rows)


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
        rows.append({"model": m, "configuration": "baseline", "accuracy": round(b * 100, 1), "Δ": 0.0, "↓": ""})
        ivs = g[g["axes"] == "intervention"]
        ivs = ivs.iloc[sorted(range(len(ivs)), key=lambda i: (TABLE1_ORDER.get(str(ivs["intervention"].iloc[i])
                                                                               .split("/")[0], len(TABLE1_ORDER)), i))]
        for _, r in ivs.iterrows():  # the paper's row order
            a = float(r["score"]) * 100
            d = a - b * 100
            rows.append({"model": m, "configuration": r["intervention"], "accuracy": round(a, 1),
                         "Δ": round(d, 1), "↓": "↓" if d <= -2.0 else ""})
        for label in [str(x) for x in ivs["intervention"]]:  # in the table's order
            mult = mults.get((m, label))
            if mult is not None and label.startswith("quag-attention"):
                rows.append({"model": m, "configuration": f"Δ multiplication ops ({label})",
                             "accuracy": f"−{100 * float(mult['saving']):.1f}% (measured: {int(mult['intervened']):,}"
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
        out.append(("Table 2 — video perturbations by category (γʳ)", note,
                    _category_table(df, p, "visual", plan)))
        out.append(("Table 3 — text perturbations by category (γʳ)", note, _category_table(df, p, "text", plan)))
        if p.types("text"):
            out.append(("Text perturbations by type (γʳ)", note + "; types as the released perturbations.json "
                        "labels them (natural, machine, synthetic)", _category_table(df, p, "text", plan, True)))
        excl = ", ".join(p.report.get("text_aggregate_exclude") or []) or "none"
        out.append(("Table 4 — robustness per modality (γᵃ, γʳ ± σ)",
                    f"{metric}; text aggregates natural shifts only (without {excl})", _modality_table(df, p, plan)))
    elif lay == "qiu":
        out.append(("Table 1 — RSUM per perturbation type, ave and ↓MMI",
                    "RSUM on the paper's 0–600 scale; each type's mean over its levels; ave = the unweighted mean "
                    "over the types that ran here; MMI = (clean − ave) / clean, lower is more robust",
                    _qiu_table(df, p, plan)))
    elif lay == "mlvp":
        out.append(("MLVP — score per type and severity, by level (%)", f"{metric} of the shifted side's "
                    "direction (video queries: v2t, text queries: t2v), in percent; each level's mean and Avg. over "
                    "the types that ran", _mlvp_table(df, p, plan)))
    elif lay == "hat-vtr":
        out.append((f"HAT-VTR Tables 1–3 — {head} per shift type, without and with adaptation",
                    f"{head} of the direction whose queries are shifted (video: v2t, text: t2v)",
                    _adapt_pivot(_side_scores(df, p), p)))
    elif lay == "quag":
        out.append(("QUAG Table 1 — accuracy per configuration", "↓: a drop of 2 points or more from the baseline; "
                    "Δ multiplication ops: counted over every matrix product of one forward (torch "
                    "FlopCounterMode), with and without QUAG-attention",
                    _quag_table(df, run)))
    elif lay == "clavi":
        out.append(("CLAVI Table 3 — balanced and consistent accuracy (%)", "on each video and its action-swapped "
                    "complement; control: answerable without the order, complement: needs it; one run (the paper "
                    "gives mean ± SD of 3)", clavi_table(run, p.not_run())))
    elif lay == "peeling":
        out.append(("PEELING Table II — ACC / MMI / ATCR (%)", "ACC: IoU > 0.5; MMI = (original − PEELING) / "
                    "original; ATCR: correct adversarial tests / all, by the built-in world's oracle where it "
                    "knows the truth", peeling_table(run, p.not_run())))
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
