"""Ours vs a baseline, side by side: the sidebar's "Compare with" model, scored on the same perturbed examples.

Perturbations depend on the condition and the seed, never on the model, so both models see the very same perturbed
images, videos and captions; only the scores differ. The Retrieval page adds the baseline's ground-truth ranks for
the query and both models' gallery metrics; the Hubness page both models' hubness measures. Every row is labelled
with the model and the conditions it was computed with (from the result, never from the widgets).
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from robustlab.tasks.retrieval_bench import DIRECTION_LABELS
from ui.follow import KEEP_BASELINE, counterpart, follow_data, mismatch
from ui.loaders import can_do, get_bench, load, models_for, offered_models
from ui.media import safe_md
from ui.widget_state import valid

NONE = "none"


def picker(models: list[str]) -> None:
    """The sidebar's baseline choice (any offered model but the main one)."""
    main = st.session_state.get("model_choice")
    options = [NONE] + [m for m in models if m != main]
    st.selectbox("Compare with (baseline)", options, key="baseline", **valid("baseline", options),
                 help="A second model scored on the same perturbed examples: ours vs baseline, side by side on "
                      "Retrieval and Hubness (the Benchmark report compares every model of a sweep).")


@dataclass(frozen=True)
class Baseline:
    spec: str
    bench: object


def baseline(ctx) -> Baseline | None:
    """The baseline's bench on the page's dataset, or None (none chosen, the page's own model, or it can't load:
    said). The baseline follows the data as the page's model does (:func:`ui.state.follow_data`: a built-in made for
    the other kind of data is replaced by its counterpart, with one line and an undo), unless that counterpart is
    the page's own model: then the chosen baseline is kept, and one line says what its scores mean."""
    chosen = st.session_state.get("baseline") or NONE
    if chosen == NONE:
        return None
    kind = ctx.bench.kind
    other = counterpart(chosen, kind)
    if other is not None and other == ctx.spec:
        st.caption(f"{mismatch(chosen, kind)}; its counterpart **{other}** is this page's own model, so the "
                   f"baseline stays **{safe_md(chosen)}**.")
        spec = chosen
    else:
        spec = follow_data(chosen, kind, KEEP_BASELINE, "the baseline here is")
    if spec == ctx.spec:
        st.info(f"The baseline **{safe_md(chosen)}** is the model this page uses on {kind}s: nothing to compare. "
                "Pick another baseline in the sidebar.")
        return None
    if load(spec, "Baseline model") is None:
        return None
    try:
        return Baseline(spec, get_bench(spec, ctx.device, ctx.gid, ctx.dataset))
    except ValueError as e:
        st.warning(f"Baseline {safe_md(spec)}: {safe_md(e, hide=True)}")
        return None


def _r1(mets: dict, direction: str) -> dict:
    """R@1 of each condition in ``mets`` (ui.widgets.applied: the sides that something perturbs) and γʳ of the most
    perturbed one (none when nothing is)."""
    clean, last = mets["clean"][direction]["R@1"], list(mets)[-1]
    return {cond: mets[cond][direction]["R@1"] for cond in mets} | ({} if last == "clean" else {
        f"γʳ ({last} / clean)": (mets[last][direction]["R@1"] / clean) if clean else float("nan")})


def retrieval_panel(ctx, base: Baseline, vcond, tcond, direction: str, query: dict, ours_metrics: dict | None,
                    ours_cmp) -> None:
    """The baseline beside ours on the Retrieval page: the query's ground-truth ranks and the gallery R@1."""
    from ui.widgets import applied, compute

    st.subheader(f"Ours vs baseline ({vcond.label()} / {tcond.label()})")
    got = compute(base.bench, vcond, tcond, lambda: (
        base.bench.compare(vcond, tcond, direction=direction, metrics=False, **query),
        applied(base.bench.condition_metrics(vcond, tcond), base.bench.kind, vcond, tcond)),
        msg="Scoring the baseline…",
        failure=f"{vcond.label()} / {tcond.label()} failed for {base.spec}")
    if got is None:
        return
    cmp_b, mets_b = got
    rows = []
    for spec, cmp, mets in ((ctx.spec, ours_cmp, ours_metrics), (base.spec, cmp_b, mets_b)):
        row = {"model": spec, "query's GT rank, clean": cmp.clean.gt_rank, "query's GT rank, perturbed":
               cmp.perturbed.gt_rank}
        if mets is not None:
            row |= {f"R@1 {k}": round(v, 4) for k, v in _r1(mets, direction).items()}
        rows.append(row)
    df = pd.DataFrame(rows)
    st.dataframe(df, hide_index=True, width="stretch", key="cmp_table")
    if ours_metrics is not None:
        fig = go.Figure()
        for row in rows:
            conds = [c for c in row if c.startswith("R@1 ") and "γʳ" not in c]
            fig.add_bar(name=row["model"], x=[c[4:] for c in conds], y=[row[c] for c in conds])
        fig.update_layout(barmode="group", yaxis_title=f"{DIRECTION_LABELS[direction]} R@1", yaxis_range=[0, 1],
                          height=300, margin=dict(t=20, b=20))
        st.plotly_chart(fig, key="cmp_chart")
    st.caption("Both models see the same perturbed inputs (a perturbation depends on its condition and seed only).")


def hubness_panel(ctx, base: Baseline, direction: str, vcond, tcond, k: int, ours) -> None:
    """The baseline's hubness measures beside ours (same direction, conditions and k)."""
    from robustlab.diagnostics import views
    from ui.widgets import compute

    st.subheader(f"Ours vs baseline (k = {ours.k}, perturbed: {ours.label})")
    view = compute(base.bench, vcond, tcond, lambda: views.hubness_view(base.bench, direction, vcond, tcond, k=k),
                   msg="Hubness of the baseline…", failure=f"{ours.label} failed for {base.spec}")
    if view is None:
        return
    rows = []
    for spec, v in ((ctx.spec, ours), (base.spec, view)):
        for cond, meas, rec in (("clean", v.measures_clean, v.recall_clean),
                                ("perturbed", v.measures_perturbed, v.recall_perturbed)):
            rows.append({"model": spec, "condition": cond if cond == "clean" else f"perturbed ({v.label})",
                         **{m: round(float(x), 4) for m, x in meas.items()},
                         **{m: round(float(x), 4) for m, x in rec.items()}})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="cmp_hub_table")


def grounding_panel(spec: str, res: dict, run, gt) -> None:
    """Another grounding model on the same perturbed image and expression (``run(spec) -> result``), beside ours."""
    others = [m for m in dict.fromkeys(models_for("grounding")
                                       + [m for m in offered_models() if can_do(m, "grounding")])
              if m != spec]
    st.subheader("Ours vs baseline")
    if not others:
        st.caption(f"No other grounding model is offered here to compare {safe_md(spec)} with (the operator can offer "
                   "hf-grounding models: docs/security.md).")
        return
    options = [NONE] + others
    base = st.selectbox("Compare with (grounding baseline)", options, key="gr_baseline",
                        **valid("gr_baseline", options))
    if base == NONE or load(base, "Baseline model") is None:
        return
    try:
        other = run(base)
    except (ValueError, RuntimeError) as e:
        st.error(f"{safe_md(base)} cannot ground this input: {safe_md(e, hide=True)}")
        return
    rows = [{"model": m, **({"IoU to ground truth, clean": round(r["iou_clean"], 3),
                             "IoU to ground truth, perturbed": round(r["iou_perturbed"], 3)} if gt else {}),
             "IoU clean vs perturbed box": round(r["iou_clean_vs_perturbed"], 3)}
            for m, r in ((spec, res), (base, other))]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="cmp_gr_table")


__all__ = ["picker", "baseline", "retrieval_panel", "hubness_panel", "grounding_panel", "Baseline"]
