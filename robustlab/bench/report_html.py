"""The self-contained ``report.html`` of a sweep: Jinja2 (autoescaped: captions are user text), plotly.js embedded
once, every figure as a div plus its ``Plotly.newPlot`` call, thumbnails as ``data:`` URIs — it opens offline and
requests nothing. Missing thumbnails show a placeholder.

It opens on the summary in plain words (:func:`robustlab.bench.report_summary.summary`), then the sections with
readable titles; tables show readable column names (:data:`SHOWN_AS`; results.csv keeps the data's own) inside a
wrapper that scrolls sideways when a table is wider than the page."""
from __future__ import annotations

import base64
import html
import json
import math
import re
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from robustlab.adapt import METHODS

from robustlab.bench.report_data import ADAPT_ID, DIRECTIONS, headline_of, metric_label
from robustlab.bench.report_failures import section as where_it_breaks
from robustlab.bench.report_figures import figures, groups
from robustlab.bench.report_summary import summary

TEMPLATES = Path(__file__).parent / "templates"
MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}
MAX_THUMB_BYTES = 2_000_000
NATURAL_NOTE = ("natural = text perturbations other than Positional and DropText (as in Schiappa et al.'s Table 4); "
                "the papers define no natural subset of visual perturbations, so for the visual axis natural = all.")
# column names as a reader sees them in report.html (results.csv keeps the data's names)
SHOWN_AS = {"gamma_a": "γᵃ", "gamma_r": "γʳ", "mmi": "MMI", "gamma_a_std": "γᵃ SD", "gamma_r_std": "γʳ SD",
            "mmi_std": "MMI SD", "clean": "clean score", "most_effective": "worst perturbation",
            "most_score": "worst score", "most_gamma_r": "worst γʳ", "least_effective": "mildest perturbation",
            "least_score": "mildest score", "least_gamma_r": "mildest γʳ", "drop": "↓", "delta": "Δ"}


CONSTANT_OK = ("task", "dataset", "split", "metric", "items", "clean_score", "scale", "level")  # in the notes


def data_uri(root: Path, rel) -> str | None:
    """A thumbnail inside the run folder as a base64 ``data:`` URI; None when missing, too big or outside it."""
    if not rel:
        return None
    try:
        p = (root / str(rel)).resolve()
        if not p.is_relative_to(root.resolve()) or p.suffix.lower() not in MIME or not p.is_file() \
                or p.stat().st_size > MAX_THUMB_BYTES:
            return None
        return f"data:{MIME[p.suffix.lower()]};base64," + base64.b64encode(p.read_bytes()).decode("ascii")
    except OSError:
        return None


def _fmt(x) -> str:
    if isinstance(x, float):
        return "" if math.isnan(x) else f"{x:.4g}"
    return str(x)


def table_html(df: pd.DataFrame, constant=()) -> str:
    """A DataFrame as an HTML table (pandas escapes the cells); columns empty in every row are left out, and so are
    the columns of :data:`CONSTANT_OK` that hold one value (said in the section's note), and those of
    ``constant`` (one value in the whole run) even in a one-row table."""
    if df is None or df.empty:
        return '<p class="none">(nothing to show)</p>'
    df = df.dropna(axis=1, how="all")
    same = [c for c in CONSTANT_OK if c in df and df[c].nunique(dropna=False) == 1 and (len(df) > 1 or c in constant)]
    df = df.drop(columns=same)
    df = df.rename(columns={c: SHOWN_AS.get(c, c) for c in df.columns if isinstance(c, str)})
    return df.to_html(index=False, border=0, classes="tbl", na_rep="", float_format=_fmt, escape=True)


def with_ci(df: pd.DataFrame) -> pd.DataFrame:
    """A table for reading: every column ``c`` that has ``c_lo`` / ``c_hi`` becomes ``"v [lo, hi]"`` (the 95 %
    bootstrap interval), the R@K Error columns (results.csv has them) are left out."""
    if df is None or df.empty:
        return df
    df = df.drop(columns=[c for c in df.columns if str(c).endswith("_error")])
    for c in [c for c in df.columns if f"{c}_lo" in df and f"{c}_hi" in df]:
        df[c] = [_fmt(v) + (f" [{_fmt(lo)}, {_fmt(hi)}]" if _num(lo) and _num(hi) else "") if _num(v) else ""
                 for v, lo, hi in zip(df[c], df[f"{c}_lo"], df[f"{c}_hi"])]
        df = df.drop(columns=[f"{c}_lo", f"{c}_hi"])
    return df


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


CI_NOTE = ("[lo, hi]: 95 % bootstrap interval over the queries (1,000 resamples, seed 0, percentile method); a "
           "difference holds when its paired-bootstrap interval (the same resampled queries for both) excludes 0")


def holds_tables(tables: dict) -> list:
    """The confidence section's tables: each perturbed cell against its model's clean cell, and every pair of
    models on each condition, with the difference's interval and whether it holds."""
    df, mods = tables["results"], tables.get("models")
    out = []
    if "holds" in df and df["holds"].notna().any():
        sub = df[df["holds"].notna()].rename(columns={"delta": "Δ vs clean"})
        sub = sub.rename(columns={"delta_lo": "Δ vs clean_lo", "delta_hi": "Δ vs clean_hi"})
        sub["holds"] = sub["holds"].map(lambda h: "✓ holds" if h else "—")
        cols = ["model", "task", "dataset", "condition", "metric", "score", "score_lo", "score_hi", "Δ vs clean",
                "Δ vs clean_lo", "Δ vs clean_hi", "holds", "gamma_r", "gamma_r_lo", "gamma_r_hi", "n"]
        out.append(("perturbed vs clean, per model", with_ci(sub[[c for c in cols if c in sub]])))
    if mods is not None and not mods.empty:
        m = mods.assign(holds=mods["holds"].map(lambda h: "✓ holds" if h else "—")).rename(
            columns={"delta": "a − b", "delta_lo": "a − b_lo", "delta_hi": "a − b_hi"})
        out.append(("between models, per condition", with_ci(m)))
    return out


def figure_html(fig, key: str) -> str:
    div = "fig-" + "".join(c if c.isalnum() else "-" for c in key)
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div,
                       config={"displaylogo": False, "responsive": True})


def _n(df: pd.DataFrame) -> str:
    ns = sorted({int(v) for v in df["n"].dropna()}) if df is not None and "n" in df and len(df) else []
    if not ns:
        return "n = ? items"
    return f"n = {ns[0]} items" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]} items"


def _metric(df: pd.DataFrame) -> str:
    ms = list(dict.fromkeys(df["metric"].dropna())) if df is not None and "metric" in df else []
    return ", ".join(metric_label(m) for m in ms) or "—"


NO_GAMMA = "no γ scores: they need the model's clean cell and perturbed cells in this run"
NO_SINGLE = "no cell perturbed on one axis in this run"


def _section(title, note, figs=(), tables=(), empty=""):
    tables = [(t, d) for t, d in tables if d is not None and (isinstance(d, str) or not d.empty)]
    return {"title": title, "note": note, "figures": list(figs), "tables": tables, "empty": empty}


def _sections(tables: dict, figs: dict) -> list[dict]:
    df, rob = tables["results"], tables["robustness"]
    meta = f"{_n(df)} · metric {_metric(df)}"
    out = []

    def pick(prefix):
        return [(k, v) for k, v in figs.items() if k == prefix or k.startswith(prefix + " ")]

    one = ("task", "dataset", "split") if len(groups(df)) == 1 else ()  # said above the report's sections
    out.append(_section("1. Clean scores per model", meta + " · " + CI_NOTE.split(";")[0], pick("clean"),
                        [("", Markup(table_html(with_ci(tables["clean"]), one)) if not tables["clean"].empty
                          else None)],
                        "no clean cell in this run: γ scores cannot be computed"))
    out.append(_section("2. Each perturbation at each severity", meta + " · left: the metric, right: the relative "
                        "drop 1 − p/c (p: perturbed, c: clean)", pick("heatmap"), (), NO_SINGLE))
    out.append(_section("3. Score against severity", meta + " · severity 0 = clean", pick("severity"), (),
                        NO_SINGLE))
    agg = rob[rob["level"] != "perturbation"] if not rob.empty else rob
    per = rob[rob["level"] == "perturbation"] if not rob.empty else rob
    out.append(_section(
        "4. Relative robustness per category, overall and natural-only",
        f"{_n(rob.rename(columns={'items': 'n'}) if not rob.empty else rob)} · metric {_metric(rob)} · "
        "γᵃ = 1 − (c − p)/scale, γʳ = p/c, MMI = (c − p)/c; per perturbation the mean over severities, then mean ± "
        "population SD over perturbations; [lo, hi]: their 95 % bootstrap interval over the queries (the same "
        "aggregation per resample) · " + NATURAL_NOTE,
        pick("robustness"), [("per category / overall / natural", with_ci(agg)), ("per perturbation", with_ci(per))],
        NO_GAMMA))
    out.append(_section("5. The most and the least damaging perturbation per model",
                        meta + " · lowest / highest severity-mean score", (), [("", tables["effective"])], NO_GAMMA))
    out.append(_section("6. Clean score against relative robustness", meta, pick("scatter"), (), NO_GAMMA))
    grid = tables["combinations"]
    if not grid.empty:  # a run without cells perturbed on both axes has no such section (issue 45: no empty one)
        out.append(_section(f"{len(out) + 1}. Visual and text perturbations combined",
                            f"{_n(grid)} · γʳ of {_metric(grid)} · first row / column: single-modality scores",
                            pick("combinations"), [("", grid)]))
    held = holds_tables(tables)
    if held:
        ok = df["holds"].dropna() if "holds" in df else df.iloc[:0]
        out.append(_section(
            f"{len(out) + 1}. Which differences hold (paired bootstrap)",
            f"{_n(df)} · metric {_metric(df)} · {int(ok.sum())} of {len(ok)} perturbed cells differ from clean "
            f"beyond chance · {CI_NOTE}", (), held))
    iv = tables.get("interventions")
    if iv is not None and not iv.empty:
        out.append(_section(
            f"{len(out) + 1}. Model interventions (Rawal et al., Table 1)",
            f"{_n(iv)} · metric {_metric(iv)} on clean inputs · QUAG short-circuits average attention quadrants in "
            "every fusion layer; QUAG-attention averages a modality before the keys and values; input ablations run "
            "the model without its visual (language-only) or text (video-only) input · ↓: a drop of at least 2 "
            "points from the baseline", (), [("", iv)]))
    ad = tables.get("adaptation")
    if ad is not None and not ad.empty:
        present = {c.split(" (")[0] for c in ad.columns}
        names = ", ".join(f"{m.name} = {m.label}" for m in METHODS.values() if m.adapts and m.name in present)
        out.append(_section(
            f"{len(out) + 1}. Test-time adaptation (HAT-VTR, Tables 1–3)",
            f"{_n(ad)} · R@1 of the adapted direction · clean: clean queries; none: the shifted queries without "
            f"adaptation; then each method ({names}) adapting the query side's LayerNorms online over the shifted "
            "queries (robustlab.adapt; parameters in brackets where set) · mean: over the perturbations at that "
            "severity · bold and best: the highest R@1 in the row (of none and the methods) · seconds per 1,000 "
            "queries: results.csv, column adapt_s_per_1000q",
            (), [(f"{m} · {dr}", adapt_html(g)) for (m, dr), g in ad.groupby(["model", "direction"], sort=False)]))
    return out


def adapt_html(df: pd.DataFrame):
    """One model and direction of the adaptation table as HTML (escaped), the best value of each row in bold."""
    df = df.dropna(axis=1, how="all")  # methods of other models' tables
    methods = [c for c in df.columns if c not in ADAPT_ID + ["best", "n"]]
    rows = []
    for _, r in df.iterrows():
        best = set(str(r["best"]).split(" = ")) if r["best"] else set()
        cells = [html.escape(str(r["perturbation"])), str(int(r["severity"]))]
        for c in methods:
            v = _fmt(float(r[c])) if r[c] is not None else ""
            cells.append(f"<b>{v}</b>" if c in best and v else v)
        cells += [html.escape(str(r["best"])), str(r["n"])]
        cls = ' class="mean"' if r["perturbation"] == "mean" else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in ["perturbation", "severity"] + methods + ["best", "n"])
    return Markup(f'<table class="tbl adapt"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


WORST_PER_PERTURBATION = 4  # examples shown per (perturbation, model): the largest rank rises over its severities


def worst_examples(run, df: pd.DataFrame, k: int = WORST_PER_PERTURBATION) -> list[dict]:
    """The worst examples of each perturbation (visual, text or pair) per model: the ``k`` largest rises of the
    ground truth's rank over all its severities, thumbnails inlined (so a 1,000-cell run stays a few MB)."""
    by_cell = {r.extra.get("cell") or Path(f).stem: r for r, f in zip(run.results, run.files)}
    rows = df[df["axes"] != "clean"].assign(_a=df["axes"].map({"visual": 0, "text": 1}).fillna(2))
    rows = rows.sort_values(["_a", "visual", "visual_severity", "text", "text_severity"], kind="stable")
    groups: dict = {}
    for _, row in rows.iterrows():
        r = by_cell.get(row["cell"])
        worst = r.extra.get("worst") if r is not None else None
        if not isinstance(worst, list) or not worst:
            continue
        key = (row["axes"], row["visual"], row["text"], row["model"], row["task"])
        g = groups.setdefault(key, {"condition": _perturbation_label(row), "model": row["model"],
                                    "task": row["task"], "n": row["n"], "metric": metric_label(row["metric"]),
                                    "cand": []})
        for w in worst:
            if isinstance(w, dict):
                g["cand"].append((row["condition"], w))

    def rise(cw):
        w = cw[1]
        try:
            return -(int(w.get("perturbed_rank")) - int(w.get("clean_rank")))
        except (TypeError, ValueError):
            return 0
    out = []
    for g in groups.values():
        best = sorted(g.pop("cand"), key=rise)[:k]
        g["items"] = [dict(_example(run.root, w), condition=cond) for cond, w in best]
        out.append(g)
    return out


def _perturbation_label(row) -> str:
    parts = [str(row[a]) + (" (text)" if a == "text" else "") for a in ("visual", "text")
             if isinstance(row.get(a), str) and row.get(a) not in ("", "clean")]
    return " + ".join(parts) or str(row["condition"])


def _example(root: Path, w: dict) -> dict:
    recs = {k: w.get(k) for k in ("visual_record", "text_record") if w.get(k)}
    d = str(w.get("direction", ""))
    return {"direction": DIRECTIONS.get(d, d), "text": str(w.get("text", "")), "item": w.get("item"),
            "clean_rank": w.get("clean_rank"), "perturbed_rank": w.get("perturbed_rank"),
            "thumb": data_uri(root, w.get("thumb")), "thumb_path": w.get("thumb"),
            "same": bool(w.get("thumb")) and w.get("thumb") == w.get("clean_thumb"),
            "clean_thumb": data_uri(root, w.get("clean_thumb")), "clean_thumb_path": w.get("clean_thumb"),
            "record": json.dumps(recs, indent=1, ensure_ascii=False, default=str) if recs else ""}


def dataset_line(sweep: dict) -> str:
    """"builtin (demo split, 20 items)": the sweep's dataset as a reader sees it."""
    d = sweep.get("dataset") if isinstance(sweep.get("dataset"), dict) else {}
    parts = [f"{d['split']} split" if d.get("split") else "", f"{d['n']} items" if d.get("n") else "",
             f"seed {d['seed']}" if d.get("seed") is not None else ""]
    parts = [p for p in parts if p]
    return str(d.get("name") or "?") + (f" ({', '.join(parts)})" if parts else "")


def extra_section(number: int, item) -> dict:
    """A caller's section (a protocol's tables): ``(title, content)`` or ``(title, note, content)`` with content an
    HTML string (trusted, e.g. :func:`table_html`'s), a DataFrame or a list of ``(subtitle, HTML or DataFrame)``;
    or a dict with ``title`` and optional ``note``, ``tables``, ``figures`` (plotly figures by key)."""
    if isinstance(item, dict):
        title, note, tabs, figs = item["title"], item.get("note", ""), item.get("tables", ()), item.get("figures", {})
    else:
        title, note, content = item if len(item) == 3 else (item[0], "", item[1])
        figs = {}
        tabs = content if isinstance(content, (list, tuple)) else [("", content)]
    tabs = [(t, Markup(d) if isinstance(d, str) and not isinstance(d, Markup) else d) for t, d in tabs]
    return _section(f"{number}. {title}", note, list(dict(figs).items()), tabs)


def render(run, tables: dict, metric=None, sections=None, headline=None) -> str:
    """The report's HTML text; the protocol's own tables (``tables["protocol"]``) come first, ``sections`` are extra
    sections after the standard ones (:func:`extra_section`)."""
    figs = figures(tables)
    # a protocol run opens on the paper's own tables, in its layout; the standard sections follow, renumbered
    first = [extra_section(i + 1, item) for i, item in enumerate(tables.get("protocol") or ())]
    sections_ = first + [dict(s, title=re.sub(r"^(\d+)\.", lambda m: f"{int(m.group(1)) + len(first)}.",
                                              s["title"])) for s in _sections(tables, figs)]
    broke = where_it_breaks(run.root, len(sections_) + 1, run) if run.root is not None else None
    if broke is not None:  # a failure map or a search result: what it found; a plain sweep: what its cells keep
        sections_.append(broke)
    for item in list(sections or ()):
        sections_.append(extra_section(len(sections_) + 1, item))
    sections = sections_
    headline = headline_of(run, headline)
    for s in sections:
        s["figures"] = [Markup(figure_html(f, k)) for k, f in s["figures"]]
        s["tables"] = [(t, d if isinstance(d, Markup) else Markup(table_html(d))) for t, d in s["tables"]]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True)
    df = tables["results"]
    return env.get_template("report.html.j2").render(
        run=run, name=run.name, sweep=run.sweep, present=run.present, expected=run.expected,
        summary=summary(run, tables, metric, headline), dataset=dataset_line(run.sweep),
        missing=run.missing(), warnings=run.warnings, sections=sections,
        metric=metric or (f"headline {headline}" if headline else "headline per task"),
        metrics_used=_metric(df), worst=worst_examples(run, df) if not df.empty else [],
        worst_meta=f"{_n(df)} · clean → perturbed rank of the ground truth",
        plotlyjs=Markup(get_plotlyjs()), groups=len(groups(df)), worst_no=len(sections) + 1)
