"""The sweep report's summary in plain words: a few short sentences computed from a run's tables, the first thing in
``report.html`` and on the dashboard's Benchmark page (:func:`summary`, one function for both).

Per model (and task and dataset): its clean headline metric; per perturbed axis (image or video, text) the mean
relative robustness γʳ over the perturbations as the share of the clean score it keeps, the category and the single
perturbation that hurt most and least (by γʳ; ties are named together); the worst visual + text pair when the run
combines them. With two models or more, first: which one is more robust (overall γʳ per axis) and which is better
clean.
Then model interventions (the largest change from the baseline) and test-time adaptation (clean, shifted and each
method's R@1, averaged over the shifts). Every number comes from :func:`robustlab.bench.report_data.report_tables`;
numbers are printed with two decimals (γʳ, scores) or as whole percentages (the share kept), and a run that has
nothing to compare says so in one sentence.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from robustlab.adapt import METHODS
from robustlab.tasks.conditions import AXES, INTERVENTION

from robustlab.bench.report_data import ADAPT_ID, axis_noun, metric_label, report_tables  # noqa: F401

MAX_NAMED = 3  # tied perturbations named in one sentence, then "and N more"


def _num(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) and \
        math.isfinite(v)


def f2(x: float) -> str:
    """A score or γ as printed in the summary (two decimals)."""
    return f"{x:.2f}"


def pct(x: float) -> str:
    """The share of the clean score kept, γʳ as a whole percentage."""
    return f"{100 * x:.0f} %"


def _names(names: list[str]) -> str:
    names = list(dict.fromkeys(names))
    if len(names) > MAX_NAMED:
        names = names[:MAX_NAMED] + [f"{len(names) - MAX_NAMED} more"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _extremes(rows: pd.DataFrame, col: str = "gamma_r") -> tuple | None:
    """(worst names, worst value, best names, best value) of ``rows`` by ``col`` as printed (ties: equal when
    they print the same), or None when fewer than two distinct printed values."""
    vals = [(str(n), float(v)) for n, v in zip(rows["name"], rows[col]) if _num(v)]
    if len({f2(v) for _, v in vals}) < 2:
        return None
    lo, hi = min(v for _, v in vals), max(v for _, v in vals)
    return ([n for n, v in vals if f2(v) == f2(lo)], lo, [n for n, v in vals if f2(v) == f2(hi)], hi)


# registry categories as words, and whether they take a plural verb
CATEGORY_WORDS = {"noise": ("noise", False), "blur": ("blur", False), "weather": ("weather", False),
                  "digital": ("digital distortion", False), "stylize": ("stylization", False),
                  "temporal": ("temporal edits", True), "camera": ("camera motion", False),
                  "occlusion": ("occlusion", False), "char": ("character edits", True), "word": ("word edits", True),
                  "sentence": ("sentence rewrites", True), "positional": ("word-order edits", True),
                  "bias": ("gender swaps", True)}


def _cats(names: list[str]) -> tuple[str, bool]:
    words = [CATEGORY_WORDS.get(n, (n, False)) for n in names]
    return _names([w for w, _ in words]), len(words) > 1 or words[0][1]


def _iv(rows: pd.DataFrame | None, names: list[str]) -> str:
    """" [lo, hi]": the 95 % interval of the first named row's γʳ (robustness_ci), or "" when it has none: a
    sentence that ranks conditions states their intervals."""
    if rows is None or rows.empty or "gamma_r_lo" not in rows:
        return ""
    hit = rows[rows["name"].astype(str) == str(names[0])]
    if hit.empty or not (_num(hit["gamma_r_lo"].iloc[0]) and _num(hit["gamma_r_hi"].iloc[0])):
        return ""
    return f" [{f2(hit['gamma_r_lo'].iloc[0])}, {f2(hit['gamma_r_hi'].iloc[0])}]"


def _mildest(names: list[str], value: float, plural: bool, rows: pd.DataFrame | None = None,
             keys: list[str] | None = None) -> str:
    """"blur least (1.00)" / "… leave it unchanged (γʳ 1.00)" / "… even help (γʳ 1.05)", with the interval of
    the row named ``keys[0]`` (default ``names[0]``)."""
    verb = {"unchanged": ("leave", "leaves"), "help": ("help", "helps"), "least": ("hurt", "hurts")}
    iv = _iv(rows, keys or names)
    if f2(value) == f2(1.0):
        return f"{_names(names)} {verb['unchanged'][not plural]} it unchanged (γʳ {f2(value)}{iv})"
    if value > 1:
        return f"{_names(names)} even {verb['help'][not plural]} (γʳ {f2(value)}{iv})"
    return f"{_names(names)} {verb['least'][not plural]} least ({f2(value)}{iv})"


def _axis_sentences(model: str, label: str, noun: str, rob: pd.DataFrame) -> list[str]:
    over = rob[rob["level"] == "overall"]
    if over.empty or not _num(over["gamma_r"].iloc[0]):
        return []
    per, cats = rob[rob["level"] == "perturbation"], rob[rob["level"] == "category"]
    if len(per) == 1:
        p = per.iloc[0]
        return [(f"Under its one {noun} perturbation ({p['name']}), {model} keeps {pct(p['gamma_r'])} of its clean "
                 f"{label} (γʳ {f2(p['gamma_r'])}).")]
    s = (f"Under the {len(per)} {noun} perturbations, {model} keeps {pct(over['gamma_r'].iloc[0])} of its clean "
         f"{label} on average")
    c = _extremes(cats) if 2 <= len(cats) < len(per) else None  # one perturbation per category: said below
    if c:
        worst, plural = _cats(c[0])
        best, bplural = _cats(c[2])
        s += (f"; {worst} {'hurt' if plural else 'hurts'} most (γʳ {f2(c[1])}{_iv(cats, c[0])}), "
              + _mildest([best], c[3], bplural, cats, c[2]))
    out = [s + "."]
    p = _extremes(per)
    if p:
        out.append(f"Of single {noun} perturbations, {_names(p[0])} {'hurt' if len(p[0]) > 1 else 'hurts'} "
                   f"{model} most (γʳ {f2(p[1])}{_iv(per, p[0])}); " + _mildest(p[2], p[3], len(p[2]) > 1, per)
                   + ".")
    else:
        out.append(f"Every {noun} perturbation gives {model} the same γʳ ({f2(float(per['gamma_r'].iloc[0]))}).")
    return out


def _model_sentences(model: str, g: pd.DataFrame, rob: pd.DataFrame, grid: pd.DataFrame, dataset: str,
                     where: str) -> list[str]:
    label = metric_label(str(g["metric"].dropna().iloc[0])) if g["metric"].notna().any() else None
    if label is None:
        return [f"{model}{where}: no cell holds a numeric metric, so there is nothing to compare."]
    clean = g.loc[g["axes"] == "clean", "score"].dropna()
    perturbed = g["axes"].isin(AXES + ("visual+text",)).any()
    if clean.empty:
        return [f"{model}{where} has no clean cell in this run, so its robustness (γʳ) cannot be computed."]
    c, n = float(clean.mean()), int(g.loc[g["axes"] == "clean", "n"].max())
    out = [f"{model} reaches a clean {label} of {fmt_metric(g['metric'].dropna().iloc[0])(c)}{where} ({n} items)."]
    if not perturbed:
        if not g["axes"].isin([INTERVENTION]).any():
            out.append(f"The run has no perturbed cell for {model}, so there is no robustness to report.")
        return out
    said = False
    for axis in AXES:
        got = _axis_sentences(model, label, axis_noun(axis, g, dataset), rob[rob["axis"] == axis]) \
            if not rob.empty else []
        out += got
        said = said or bool(got)
    both = grid[(grid["visual"] != "clean") & (grid["text"] != "clean")] if not grid.empty else grid
    both = both[both["gamma_r"].map(_num)] if not both.empty else both
    if not both.empty:
        w = both.loc[both["gamma_r"].idxmin()]
        noun = axis_noun("visual", g, dataset)
        out.append(f"Of the {len(both)} {noun} + text pairs, {w['visual']} with {w['text']} (text) hurts {model} "
                   f"most (γʳ {f2(w['gamma_r'])}).")
        said = True
    if not said:
        why = "its clean score is 0" if c <= 0 else "the γ formulas do not apply to its scores"
        out.append(f"No robustness (γʳ) for {model}: {why}.")
    return out


ACCURACY = ("acc", "accuracy")


def fmt_metric(metric) -> "callable":
    """How a score of ``metric`` is printed, on one scale everywhere in the report (issue 45): RSUM on the papers'
    0–600 with one decimal; accuracy in percent, as QUAG's and CLAVI's tables print it; anything else (R@K as a
    fraction, as every page of the dashboard shows it) with two decimals."""
    m = str(metric)
    if m == "RSUM":
        return lambda x: f"{x:.1f}"
    if m in ACCURACY or m.endswith(tuple("_" + a for a in ACCURACY)):
        return lambda x: f"{100 * x:.1f} %" if abs(x) <= 1 else f"{x:.1f} %"
    return f2


def _signed(x: float, fmt) -> str:
    return ("+" if x >= 0 else "−") + fmt(abs(x))


def _ci(row, fmt) -> str:
    return f"{_signed(row['delta_lo'], fmt)} to {_signed(row['delta_hi'], fmt)}"


def _pair(diffs: pd.DataFrame, a: str, b: str):
    """The paired comparison of models a and b (a − b), or None."""
    if diffs is None or diffs.empty:
        return None
    hit = diffs[(diffs["model_a"] == a) & (diffs["model_b"] == b)]
    if len(hit):
        return dict(hit.iloc[0])
    hit = diffs[(diffs["model_a"] == b) & (diffs["model_b"] == a)]
    if not len(hit):
        return None
    r = dict(hit.iloc[0])
    return {**r, "model_a": a, "model_b": b, "delta": -r["delta"], "delta_lo": -r["delta_hi"],
            "delta_hi": -r["delta_lo"]}


def _holds(p) -> bool | None:
    """Whether the paired comparison ``p`` holds (its 95 % interval excludes 0); None: no interval."""
    if p is None or p.get("holds") is None or not _num(p.get("delta_lo")) or not _num(p.get("delta_hi")):
        return None
    return bool(p["holds"])


def _compare(what: tuple, vals: dict, diffs: pd.DataFrame, fmt=f2) -> str | None:
    """One sentence comparing the models of ``vals`` ({model: value}) on one quantity, which claims an order only
    where the paired bootstrap (``diffs``: model_a, model_b, delta, delta_lo, delta_hi, holds, n) holds.
    ``what``: (phrase after "is", e.g. "more robust to text perturbations", the quantity's words for a sentence
    that claims nothing, e.g. "robustness to text perturbations", its symbol, e.g. "γʳ ")."""
    vals = {m: v for m, v in vals.items() if _num(v)}
    if len(vals) < 2:
        return None
    order = sorted(vals, key=lambda m: -vals[m])
    pairs = {(a, b): _pair(diffs, a, b) for i, a in enumerate(order) for b in order[i + 1:]}
    ns = [int(p["n"]) for p in pairs.values() if p is not None and p.get("n") is not None and pd.notna(p["n"])]
    at_n = f"at n = {max(ns)}" if ns else "with the items of this run"
    if len(order) == 2:
        a, b = order
        p = pairs[(a, b)]
        shown = f"{what[2]}{fmt(vals[a])} vs {fmt(vals[b])}" if fmt(vals[a]) != fmt(vals[b]) else \
            f"both {what[2]}{fmt(vals[a])}"
        h = _holds(p)
        if h:
            return (f"{a} is {what[0]} ({shown} for {b}; difference {_signed(p['delta'], fmt)}, 95 % CI "
                    f"{_ci(p, fmt)}, paired bootstrap {at_n}).")
        if h is False:
            return (f"No difference in {what[1]} between {a} and {b} that we can tell apart {at_n} ({shown}; "
                    f"difference {_signed(p['delta'], fmt)}, 95 % CI {_ci(p, fmt)}).")
        return (f"{what[1][0].upper() + what[1][1:]}: {a} {fmt(vals[a])}, {b} {fmt(vals[b])}; no paired interval "
                f"for these cells, so no difference is claimed.")
    listing = ", ".join(f"{m} {fmt(vals[m])}" for m in order)
    top = order[0]
    if all(_holds(pairs[(top, b)]) for b in order[1:]):
        lead = f"{top} is the most {what[0].removeprefix('more ')} ({what[2]}{listing}; each difference holds)"
    else:
        lead = f"{what[1][0].upper() + what[1][1:]} ({what[2]}{listing})"
    held = [f"{a} over {b} ({_signed(p['delta'], fmt)}, 95 % CI {_ci(p, fmt)})"
            for (a, b), p in pairs.items() if _holds(p)]
    rest = len(pairs) - len(held)
    tail = (f"; differences that hold: {', '.join(held)}" if held else "") + \
        (f"; {'the other' if held else 'no'} pair{'s' if rest != 1 or not held else ''} can't be told apart "
         f"{at_n}" if rest else "")
    return lead + tail + "."


def _comparisons(g: pd.DataFrame, rob: pd.DataFrame, dataset: str, where: str, gdiff: pd.DataFrame | None = None,
                 mdiff: pd.DataFrame | None = None) -> list[str]:
    models = list(dict.fromkeys(g["model"]))
    if len(models) < 2:
        return []
    out = []
    metric = str(g["metric"].dropna().iloc[0]) if g["metric"].notna().any() else "score"
    label = metric_label(metric)
    for axis in AXES:
        over = rob[(rob["axis"] == axis) & (rob["level"] == "overall")] if not rob.empty else rob
        vals = dict(zip(over["model"], over["gamma_r"])) if not over.empty else {}
        noun = axis_noun(axis, g, dataset)
        diffs = gdiff[gdiff["axis"] == axis] if gdiff is not None and not gdiff.empty else None
        s = _compare((f"more robust to {noun} perturbations{where}", f"robustness to {noun} perturbations{where}",
                      "γʳ "), vals, diffs)
        out += [s] if s else []
    clean = {m: float(x.mean()) for m, x in g[g["axes"] == "clean"].groupby("model", sort=False)["score"]
             if x.notna().any()}
    conds = set(g.loc[g["axes"] == "clean", "condition"])
    diffs = mdiff[mdiff["condition"].isin(conds) & (mdiff["metric"] == metric)] \
        if mdiff is not None and not mdiff.empty else None
    s = _compare((f"better on clean inputs{where}", f"clean {label}{where}", f"{label} "), clean, diffs,
                 fmt_metric(metric))
    return out + ([s] if s else [])


def _interventions(iv: pd.DataFrame) -> list[str]:
    out = []
    if iv is None or iv.empty:
        return out
    for (m, _t, _d), g in iv.groupby(["model", "task", "dataset"], sort=False, dropna=False):
        base = g[g["intervention"] == "baseline"]
        rest = g[(g["intervention"] != "baseline") & g["delta"].map(_num)]
        if base.empty or rest.empty or not _num(base["score"].iloc[0]):
            continue
        label = metric_label(str(g["metric"].iloc[0]))
        w = rest.loc[rest["delta"].idxmin()]
        drops = int((rest["drop"] == "↓").sum())
        k = 100.0 if float(base["score"].iloc[0]) <= 1 else 1.0  # in percent, as QUAG's Table 1 prints it
        b0, s1, dl = (k * float(x) for x in (base["score"].iloc[0], w["score"], w["delta"]))
        out.append(f"Model interventions on {m}: the baseline {label} on clean inputs is {b0:.1f} %; "
                   f"{w['intervention']} moves it most, to {s1:.1f} % ({'+' if dl >= 0 else '−'}{abs(dl):.1f} "
                   f"points); {drops} of the {len(rest)} interventions lower it by at least 2 points.")
    return out


def _adaptation(ad: pd.DataFrame) -> list[str]:
    out = []
    if ad is None or ad.empty:
        return out
    for (m, dr), g in ad.groupby(["model", "direction"], sort=False):
        rows = g[g["perturbation"] != "mean"].dropna(axis=1, how="all")
        methods = [c for c in rows.columns if c not in ADAPT_ID + ["clean", "none", "best", "n"]]
        mean = {c: float(rows[c].mean()) for c in ["clean", "none"] + methods if rows[c].notna().any()}
        if "none" not in mean or not methods:
            continue
        shown = ", ".join(f"{c} {f2(mean[c])}" for c in methods if c in mean)
        real = {c: v for c, v in mean.items() if c in methods and not getattr(
            METHODS.get(c.split(" (")[0]), "diagnostic", False)}
        best = max(real, key=real.get) if real else None
        label = metric_label(f"{dr}_R@1")
        head = (f"Test-time adaptation on {m} ({label}, mean over {len(rows)} "
                f"shift{'s' if len(rows) != 1 else ''}): " + (f"clean {f2(mean['clean'])}, " if "clean" in mean
                                                               else "") + f"shifted {f2(mean['none'])}; {shown}")
        if best is not None and f2(real[best]) > f2(mean["none"]) and real[best] > mean["none"]:
            out.append(f"{head}; {best} recovers the most.")
        else:
            out.append(f"{head}; no method beats the unadapted queries.")
    return out


def summary(run, tables: dict | None = None, metric: str | None = None, headline: str | None = None) -> list[str]:
    """Short sentences saying what the run found (see the module's docstring); ``tables``: the run's
    :func:`robustlab.bench.report_data.report_tables` when already computed (else with ``metric`` / ``headline``)."""
    if not run.results:
        of = f" of the {run.expected} it asks for" if run.expected else ""
        return [f"No cell of this run has finished yet{of}: there is nothing to summarise."]
    if tables is None:
        tables = report_tables(run, metric, headline)
    df, rob, grid = tables["results"], tables["robustness"], tables["combinations"]
    out = []
    if run.expected is not None and run.present < run.expected:
        out.append(f"A partial run: {run.present} of {run.expected} cells have finished; the sentences below "
                   "cover those.")
    keys = list(df.groupby(["task", "dataset"], sort=False, dropna=False).groups)
    for t, d in keys:
        g = df[(df["task"] == t) & (df["dataset"] == d)]
        where = f" on {t} · {d}" if len(keys) > 1 else ""
        rsel = (rob["task"] == t) & (rob["dataset"] == d) if not rob.empty else None
        gd, md = tables.get("gamma_models"), tables.get("models")
        out += _comparisons(g, rob[rsel] if rsel is not None else rob, str(d), where,  # the headline first
                            gd[(gd["task"] == t) & (gd["dataset"] == d)] if gd is not None and not gd.empty else gd,
                            md[(md["task"] == t) & (md["dataset"] == d)] if md is not None and not md.empty else md)
        for m in dict.fromkeys(g["model"]):
            sel = (rob["model"] == m) & (rob["task"] == t) & (rob["dataset"] == d) if not rob.empty else None
            gsel = (grid["model"] == m) & (grid["task"] == t) & (grid["dataset"] == d) if not grid.empty else None
            out += _model_sentences(m, g[g["model"] == m], rob[sel] if sel is not None else rob,
                                    grid[gsel] if gsel is not None else grid, str(d), where)
    out += _interventions(tables.get("interventions"))
    out += _adaptation(tables.get("adaptation"))
    return out


__all__ = ["axis_noun", "f2", "pct", "summary"]
