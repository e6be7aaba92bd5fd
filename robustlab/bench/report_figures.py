"""Plain plotly figures of the sweep report (no widgets: the HTML report and the dashboard's Benchmark page show the
same ones), built from :func:`robustlab.bench.report_data.report_tables`' DataFrames.

Keys (``SUFFIX`` is ``""`` for a run with one task and dataset, else `` · task · dataset``):
``clean`` (bar of the clean metric per model), ``heatmap · MODEL`` (perturbation × severity: the metric and the
relative drop 1 − p/c), ``severity`` (small multiples, one per perturbation, one line per model, severity 0 =
clean), ``robustness`` (γʳ per category, overall and natural-only, mean ± SD), ``scatter`` (clean metric vs
overall γʳ; marker area: the model's parameter count), ``combinations · MODEL`` (the visual × text γʳ grid).

Titles and labels are for a reader: metric keys read as words (:func:`metric_label`: ``t2i_R@1`` is "text→image
R@1"), the axes as what they perturb ("image perturbations"), and every axis grows its margin to fit its labels (a
heatmap's left margin is computed from its longest row label, so no label is clipped).
"""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from robustlab.tasks.conditions import AXES

from robustlab.bench.report_data import DIRECTIONS, axis_noun, metric_label  # noqa: F401  (DIRECTIONS: re-exported)

LEGEND = dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom")
MARGIN = dict(t=60, b=30, l=60, r=20)
AXIS_SYMBOL = {"visual": "circle", "text": "diamond"}
CHAR_PX = 7.2  # the width of one character of a 12 px tick label (plotly's default font), generously


def label_margin(labels, minimum: int = 60) -> int:
    """A left margin (px) wide enough for the longest of ``labels`` as tick labels."""
    longest = max((len(str(x)) for x in labels), default=0)
    return max(minimum, int(24 + CHAR_PX * longest))


def _fit(fig: go.Figure) -> go.Figure:
    """Every axis grows its margin to fit its tick labels and title (plotly's automargin)."""
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def axis_names(df: pd.DataFrame) -> dict:
    """{"visual": "image perturbations" | "video perturbations", "text": "text perturbations"} for a table."""
    d = str(df["dataset"].iloc[0]) if df is not None and "dataset" in df and len(df) else ""
    return {a: f"{axis_noun(a, df, d) if df is not None and len(df) else a} perturbations" for a in AXES}


def groups(df: pd.DataFrame):
    """(suffix, rows) per (task, dataset) of a table; the suffix is empty when the run has one group."""
    if df is None or df.empty:
        return []
    keys = list(df.groupby(["task", "dataset"], sort=False, dropna=False).groups)
    return [("" if len(keys) == 1 else f" · {t} · {d}", df[(df["task"] == t) & (df["dataset"] == d)])
            for t, d in keys]


def palette(models) -> dict:
    """One colour per model, the same in every figure (plotly's qualitative palette, cycled)."""
    cols = qualitative.Plotly
    return {m: cols[i % len(cols)] for i, m in enumerate(dict.fromkeys(models))}


def _metric(df: pd.DataFrame) -> str:
    m = [metric_label(x) for x in dict.fromkeys(df["metric"].dropna())]
    return ", ".join(m) or "no metric"


def _ci_bars(df: pd.DataFrame, col: str = "score") -> dict:
    """Asymmetric error bars from ``col_lo`` / ``col_hi`` (the 95 % bootstrap interval), when the table has them."""
    lo, hi = f"{col}_lo", f"{col}_hi"
    if lo not in df or hi not in df or not df[lo].notna().any():
        return {}
    v = pd.to_numeric(df[col], errors="coerce")
    return dict(error_y=dict(type="data", symmetric=False, array=(df[hi] - v).clip(lower=0).fillna(0).tolist(),
                             arrayminus=(v - df[lo]).clip(lower=0).fillna(0).tolist()))


def clean_bar(clean: pd.DataFrame, title: str = "") -> go.Figure:
    """The clean metric per model, with its 95 % bootstrap interval when the cells kept their ranks."""
    fig = go.Figure(go.Bar(x=clean["model"], y=clean["score"], text=[f"{v:.3f}" for v in clean["score"]],
                           textposition="auto", marker_color="#1f77b4", name="clean", **_ci_bars(clean),
                           width=0.5 if clean["model"].nunique() <= 3 else None))
    fig.update_layout(title=f"Clean {_metric(clean)} per model{title}", yaxis_title=_metric(clean),
                      height=280 if clean["model"].nunique() <= 3 else 340, margin=MARGIN)
    return _fit(fig)


def _single(df: pd.DataFrame) -> pd.DataFrame:
    """Single-axis perturbed rows with a ``perturbation`` label and ``severity`` column."""
    parts = []
    for a in AXES:
        sub = df[(df["axes"] == a) & df["score"].notna()].copy()
        sub["perturbation"] = sub[a] + (" (text)" if a == "text" else "")
        sub["severity"], sub["axis"] = sub[f"{a}_severity"].astype(int), a
        parts.append(sub)
    return pd.concat(parts) if parts else df.iloc[:0]


def _text2(v) -> str:
    """A heatmap cell's number: two decimals, never "-0.00"."""
    if _nan(v):
        return ""
    t = f"{v:.2f}"
    return "0.00" if t == "-0.00" else t


def heatmap(df: pd.DataFrame, model: str, title: str = "") -> go.Figure:
    """One model: perturbation (rows) × severity (columns) of the metric and of the relative drop 1 − p/c. The
    colour scales are the run's (every model of ``df``), so two models' heatmaps read alike."""
    every = _single(df)
    s = every[every["model"] == model]
    z = s.pivot_table(index="perturbation", columns="severity", values="score", aggfunc="mean", sort=False)
    drop = s.pivot_table(index="perturbation", columns="severity", values="mmi", aggfunc="mean", sort=False)
    z, drop = z[sorted(z.columns)], drop[sorted(drop.columns)]
    # one set of row labels (the left panel's; the right panel shares its rows), a left margin that fits the
    # longest, and the left panel's colour bar in the gap between the panels
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14, shared_yaxes=True,
                        subplot_titles=(_metric(s), "relative drop 1 − p/c"))
    mmi = every["mmi"].dropna() if "mmi" in every else every.iloc[:0]
    lim = max(0.05, float(mmi.abs().max())) if len(mmi) else 1.0
    sc = every["score"].dropna()
    zr = dict(zmin=float(sc.min()), zmax=float(sc.max())) if len(sc) and sc.min() < sc.max() else {}
    for col, m, scale in ((1, z, dict(colorscale="Viridis", **zr)),
                          (2, drop, dict(colorscale="RdBu_r", zmid=0, zmin=-lim, zmax=lim))):
        fig.add_trace(go.Heatmap(z=m.values, x=[f"s{c}" for c in m.columns], y=list(m.index), **scale,
                                 text=[[_text2(v) for v in r] for r in m.values],
                                 texttemplate="%{text}", colorbar=dict(x=0.445 if col == 1 else 1.0, len=0.9,
                                                                       thickness=14),
                                 hovertemplate="%{y} %{x}: %{z:.4f}<extra></extra>"), row=1, col=col)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(showticklabels=False, row=1, col=2)
    fig.update_xaxes(title_text="severity")
    fig.update_layout(title=f"{model}: each perturbation at each severity{title}",
                      margin=dict(MARGIN, l=label_margin(z.index)), height=max(300, 110 + 26 * len(z)))
    return _fit(fig)


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def severity_curves(df: pd.DataFrame, title: str = "", cols: int = 4) -> go.Figure:
    """Small multiples: one panel per perturbation, the metric against severity (0 = clean), a line per model."""
    s = _single(df)
    perts = list(dict.fromkeys(s["perturbation"]))
    rows = max(1, math.ceil(len(perts) / cols))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=perts, vertical_spacing=min(0.12, 0.6 / rows),
                        horizontal_spacing=0.06, shared_yaxes=True)
    fig.update_annotations(font_size=12)  # the panels' titles: long perturbation names stay inside their panel
    colors = palette(df["model"])
    for k, p in enumerate(perts):
        for m in colors:
            g = s[(s["perturbation"] == p) & (s["model"] == m)].groupby("severity")["score"].mean()
            clean = df.loc[(df["model"] == m) & (df["axes"] == "clean"), "score"].dropna()
            if len(clean):
                g = pd.concat([pd.Series({0: float(clean.mean())}), g])
            fig.add_trace(go.Scatter(x=list(g.index), y=list(g.values), mode="lines+markers", name=m,
                                     legendgroup=m, showlegend=k == 0, line=dict(color=colors[m]),
                                     hovertemplate=f"{m}<br>{p} s%{{x}}: %{{y:.4f}}<extra></extra>"),
                          row=k // cols + 1, col=k % cols + 1)
    fig.update_xaxes(tickvals=list(range(6)), range=[-0.3, 5.3])
    fig.update_layout(title=f"{_metric(df)} against severity (0 = clean){title}", height=120 + 210 * rows,
                      margin=MARGIN)
    return _fit(fig)


def robustness_bars(rob: pd.DataFrame, title: str = "", names: dict | None = None) -> go.Figure:
    """γʳ per category, overall and natural-only (mean ± population SD over perturbations), per model and axis;
    ``names``: the axes' titles (:func:`axis_names`)."""
    agg = rob[rob["level"] != "perturbation"]
    axes = [a for a in AXES if (agg["axis"] == a).any()]
    names = names or {}
    fig = make_subplots(rows=1, cols=max(1, len(axes)), subplot_titles=[names.get(a, a) for a in axes],
                        horizontal_spacing=0.08)
    colors = palette(rob["model"])
    for ci, a in enumerate(axes):
        for m, g in agg[agg["axis"] == a].groupby("model", sort=False):
            fig.add_trace(go.Bar(x=g["name"], y=g["gamma_r"], name=m, legendgroup=m, showlegend=ci == 0,
                                 marker_color=colors[m],
                                 error_y=dict(type="data", array=g["gamma_r_std"].fillna(0).tolist()),
                                 customdata=g[["mmi", "gamma_a"]].values,
                                 hovertemplate=f"{m} %{{x}}<br>γʳ %{{y:.3f}} · MMI %{{customdata[0]:.3f}} · "
                                               f"γᵃ %{{customdata[1]:.3f}}<extra></extra>"), row=1, col=ci + 1)
    fig.update_yaxes(title_text="γʳ (mean ± SD)", col=1)
    fig.update_layout(title=f"Relative robustness γʳ of {_metric(rob)} per category{title}", barmode="group",
                      height=380, margin=MARGIN)
    return _fit(fig)


def marker_sizes(models, params: dict | None, smallest: float = 9, largest: float = 36) -> list[float]:
    """Marker diameters (px) with the area proportional to each model's parameter count (Schiappa et al.'s
    clean-vs-robustness figure); 12 px for every model when a count is unknown."""
    ps = [(params or {}).get(m) for m in models]
    ok = [float(p) for p in ps if isinstance(p, (int, float)) and not isinstance(p, bool) and p > 0]
    if not ok or len(ok) < len(ps):
        return [12.0] * len(ps)
    top = max(ok)
    return [max(smallest, largest * math.sqrt(float(p) / top)) for p in ps]


def _params_text(p) -> str:
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not p > 0:
        return "parameters unknown"
    return f"{p / 1e9:.2f} B parameters" if p >= 1e9 else f"{p / 1e6:.1f} M parameters"


def _label_positions(g: pd.DataFrame, axis: str) -> list[str]:
    """Text positions for the models' labels: points that nearly coincide (within 3 % of each axis's span) take
    turns around the marker, so their labels do not print over each other."""
    base = ["bottom center", "bottom right", "bottom left"] if axis == "text" else \
        ["top center", "top right", "top left"]
    more = ["middle right", "middle left"]
    xs, ys = g["clean"].astype(float).tolist(), g["gamma_r"].astype(float).tolist()
    dx = (max(xs) - min(xs)) or 1.0 if xs else 1.0
    dy = (max(ys) - min(ys)) or 1.0 if ys else 1.0
    out = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        near = sum(1 for j in range(i) if abs(xs[j] - x) <= 0.03 * dx and abs(ys[j] - y) <= 0.03 * dy)
        out.append((base + more)[near % 5])
    return out


def clean_vs_gamma(rob: pd.DataFrame, title: str = "", names: dict | None = None,
                   params: dict | None = None) -> go.Figure:
    """Clean metric (x) against overall γʳ (y) per model, one trace per axis (``names``: their legend), ± SD;
    marker area proportional to the model's parameter count (``params``: model → count) when every count is
    known."""
    fig = go.Figure()
    over = rob[rob["level"] == "overall"]
    sized = bool(params) and len(set(marker_sizes(list(over["model"]), params))) > 1
    for a, g in over.groupby("axis", sort=False):
        fig.add_trace(go.Scatter(x=g["clean"], y=g["gamma_r"], mode="markers+text", text=g["model"],
                                 textposition=_label_positions(g, a),
                                 name=(names or {}).get(a, a),
                                 marker=dict(size=marker_sizes(list(g["model"]), params),
                                             symbol=AXIS_SYMBOL.get(a, "circle"), opacity=0.8),
                                 customdata=[_params_text((params or {}).get(m)) for m in g["model"]],
                                 error_y=dict(type="data", array=g["gamma_r_std"].fillna(0).tolist()),
                                 hovertemplate="%{text}<br>clean %{x:.4f}<br>γʳ %{y:.4f}<br>%{customdata}<extra>"
                                               + a + "</extra>"))
    if not over.empty:
        lo, hi = float(over["clean"].min()), float(over["clean"].max())
        pad = max(0.05 * max(abs(hi), 1e-9), 0.25 * (hi - lo))
        fig.update_xaxes(range=[lo - pad, hi + pad])
    fig.update_layout(title=f"Clean {_metric(rob)} vs overall γʳ{title}"
                      + (" · marker area: parameter count" if sized else ""), xaxis_title=f"clean {_metric(rob)}",
                      yaxis_title="γʳ (mean ± SD over perturbations)", height=400, margin=MARGIN, legend=LEGEND)
    return _fit(fig)


def combination_heatmap(grid: pd.DataFrame, model: str, title: str = "") -> go.Figure:
    """γʳ of visual (rows) × text (columns) conditions; the first row / column are single-modality."""
    g = grid[grid["model"] == model]
    z = g.pivot_table(index="visual", columns="text", values="gamma_r", aggfunc="mean", sort=False)
    rows = ["clean"] + [r for r in z.index if r != "clean"]
    cols = ["clean"] + [c for c in z.columns if c != "clean"]
    z = z.reindex(index=[r for r in rows if r in z.index], columns=[c for c in cols if c in z.columns])
    ys = [f"visual: {r}" for r in z.index]
    fig = go.Figure(go.Heatmap(z=z.values, x=[f"text: {c}" for c in z.columns], y=ys,
                               colorscale="RdYlGn", zmin=0,
                               zmax=max(1.0, float(z.max().max())) if z.notna().any().any() else 1.0,
                               text=[[("" if _nan(v) else f"{v:.2f}") for v in r] for r in z.values],
                               texttemplate="%{text}", hovertemplate="%{y} × %{x}: γʳ %{z:.4f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title=f"{model}: γʳ of {_metric(g)}, visual × text (first row/column: one modality){title}",
                      height=max(300, 120 + 30 * len(z)), margin=dict(MARGIN, l=label_margin(ys)))
    return _fit(fig)


def figures(tables: dict) -> dict:
    """Every report figure by key, from :func:`robustlab.bench.report_data.report_tables`' output."""
    out: dict = {}
    df, rob, grid = tables["results"], tables["robustness"], tables["combinations"]
    params = {m: p for m, p in zip(df["model"], df["n_params"]) if pd.notna(p)} if "n_params" in df else {}
    for sfx, g in groups(tables["clean"]):
        out["clean" + sfx] = clean_bar(g, sfx)
    for sfx, g in groups(df):
        singles = g[g["axes"].isin(AXES)]
        if singles.empty:
            continue
        for m in dict.fromkeys(singles["model"]):
            out[f"heatmap · {m}{sfx}"] = heatmap(g, m, sfx)
        out["severity" + sfx] = severity_curves(g, sfx)
    for sfx, g in groups(rob):
        names = axis_names(g)
        out["robustness" + sfx] = robustness_bars(g, sfx, names)
        out["scatter" + sfx] = clean_vs_gamma(g, sfx, names, params)
    for sfx, g in groups(grid):
        for m in dict.fromkeys(g["model"]):
            out[f"combinations · {m}{sfx}"] = combination_heatmap(g, m, sfx)
    return out


__all__ = ["figures", "groups", "metric_label", "label_margin", "axis_names", "clean_bar", "heatmap", "severity_curves",
           "robustness_bars", "clean_vs_gamma", "combination_heatmap", "marker_sizes"]
