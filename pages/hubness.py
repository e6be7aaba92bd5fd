"""Hubness: which dataset items attract many queries, clean vs perturbed, and what hubness reduction does."""
from __future__ import annotations

from dataclasses import astuple

import pandas as pd
import streamlit as st

import ui
import ui.compare
import ui.panels
from robustlab.diagnostics import views
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import DIRECTION_LABELS
from ui.charts import occurrence_histogram, similarity_heatmaps
from ui.cache import shared

st.header("Hubness — who attracts the queries, clean vs perturbed")
st.caption("N_k (k-occurrence) of a gallery item: how many queries have it in their top k. A few items with a very "
           "large N_k (hubs) and many with N_k = 0 (anti-hubs) mean a skewed, hub-ridden embedding space.")


# cached per model, dataset, direction, conditions and k (the underscored arguments are not hashed)
@shared("results")
def hubness_data(spec, device, gid, direction, vcond: tuple, tcond: tuple, k: int, _bench) -> views.HubnessView:
    return views.hubness_view(_bench, direction, Condition(*vcond), Condition(*tcond), k=k)


ctx = ui.current_bench()
if ctx is None:
    st.stop()
bench, ds, kind = ctx.bench, ctx.dataset, ctx.bench.kind
if len(ds) < 3 or len(bench.captioned) < 2:
    st.warning(f"Hubness needs at least 3 gallery {kind}s and 2 captions.")
    st.stop()

# ---- controls: direction, k, one perturbation (of the visuals or of the captions), severity, seed ------------
perts = [ui.NONE] + [f"{m}:{n}" for m in (kind, "text") for n in ui.perturbation_names(m)[0][1:]]
c1, c2, c3, c4 = st.columns([2, 3, 2, 2])
with c1:
    d = st.radio("Direction", bench.directions, key="hub_direction", format_func=DIRECTION_LABELS.get,
                 **ui.valid("hub_direction", bench.directions, format_func=DIRECTION_LABELS.get),
                 help=f"{DIRECTION_LABELS[bench.directions[0]]}: the captions query the {kind}s (hubs are {kind}s); "
                      f"{DIRECTION_LABELS[bench.directions[1]]}: the {kind}s query the captions (hubs are captions).")
    max_k = max(1, min(100, (len(ds) if d[0] == "t" else len(bench.texts()[0])) - 1))
    ui.clamp("hub_k", 1, max_k, default_value=15)
    k = int(st.number_input("k", 1, max_k, key="hub_k", **ui.initial("hub_k", value=min(15, max_k))))
with c2:
    pfmt = lambda p: p if p == ui.NONE else " · ".join(p.split(":", 1))  # noqa: E731
    shared = ui.choice.one_side(kind, "hub_pert", "hub_sev", perts)  # the session's one perturbation choice
    vis = ui.choice.picked(kind, kind)[0]  # a pick gone with the data falls back to the session's choice
    back = f"{kind}:{vis}" if vis and f"{kind}:{vis}" in perts else ui.NONE
    pert = st.selectbox("Perturbation", perts, key="hub_pert", format_func=pfmt, **shared,
                        **ui.valid("hub_pert", perts, back, pfmt))
with c3:
    sev = st.slider("Severity", 0, 5, key="hub_sev", disabled=pert == ui.NONE, **shared,
                    **ui.initial("hub_sev", value=3))
with c4:
    seed = int(st.number_input("Seed", 0, 2**31 - 1, key="hub_seed", **ui.initial("hub_seed", value=0),
                               help="Gallery item i is perturbed with seed + i."))
    log_y = st.checkbox("Log y axis", key="hub_log", **ui.initial("hub_log", value=False))
mod, name = pert.split(":", 1) if pert != ui.NONE else (kind, None)
cond = Condition(name, sev, seed)
vcond, tcond = (cond, Condition()) if mod == kind else (Condition(), cond)
key = (ctx.spec, ctx.device, ctx.gid, d, astuple(vcond), astuple(tcond), k)

view = ui.compute(bench, vcond, tcond, lambda: hubness_data(*key, bench), msg="Computing k-occurrences…",
                  failure=f"{cond.label()} failed on this gallery")
if view is None:
    st.stop()
what = f"{kind}s" if d[0] == "t" else "captions"
st.caption(f"{view.n_queries} queries × {view.n_targets} {what}, k = {k}; perturbed: {view.label}."
           + (" Ground truth: every item with exactly the query's caption." if ds.positives == "caption" else ""))

# ---- k-occurrence: histograms and measures ------------------------------------------------------------------
left, right = st.columns([3, 2])
left.plotly_chart(occurrence_histogram({"clean": view.nk_clean, f"perturbed ({view.label})": view.nk_perturbed},
                                       log_y, f"k-occurrence of the gallery {what}"), key="hub_hist")
with right:
    df = pd.DataFrame(views.compare_table(view.measures_clean, view.measures_perturbed)
                      + views.compare_table(view.recall_clean, view.recall_perturbed))
    st.dataframe(df, hide_index=True, width="stretch", key="hub_measures", height=35 * (len(df) + 1) + 3,
                 column_config={c: st.column_config.NumberColumn(format="%.4f")
                                for c in ("clean", "perturbed", "change")})
    st.caption("k_skewness: skewness of N_k (> 1: strong hubness); robinhood, gini, atkinson: inequality of N_k; "
               "hub/antihub occurrence: share of top-k slots taken by hubs / items that are never retrieved. R@K "
               "and ranks over the whole gallery.")

base = ui.compare.baseline(ctx)
if base is not None:
    ui.compare.hubness_panel(ctx, base, d, vcond, tcond, k, view)

# ---- top hubs: the visual (perturbed when it is the perturbed hub), and the caption when hubs are captions -------
st.subheader("Top hubs")
m = ui.int_slider("How many", 1, min(30, view.n_targets), 10, key="hub_m")
vis_p, caps_p, caps_c = bench.visuals(vcond)[0], bench.texts(tcond)[0], bench.texts()[0]
text_items = bench.text_items
for tab, which, nk, other in zip(st.tabs([f"perturbed ({view.label})", "clean"]), ("perturbed", "clean"),
                                 (view.nk_perturbed, view.nk_clean), (view.nk_clean, view.nk_perturbed)):
    with tab, st.container(key=f"hub_top_{which}"):
        hubs = views.top_hubs(nk, m)
        cols = st.columns(min(5, len(hubs)))
        for j, t in enumerate(hubs):
            item = int(view.targets[t]) if d[0] == "t" else int(text_items[int(view.targets[t])])
            p = which == "perturbed" and d[0] == "t"
            with cols[j % len(cols)]:
                ui.show_visual((vis_p if p else bench.visuals()[0])[item], kind=kind, gid=ctx.gid, index=item,
                               cond=vcond if p else Condition(), fps=ui.fps_of(ds), slot=f"{which} hub #{j + 1}",
                               caption=f"#{j + 1} · item {item} · N_k = {int(nk[t])} queries "
                                       f"({'clean' if which == 'perturbed' else 'perturbed'}: {int(other[t])})")
                if d[0] != "t":
                    st.text((caps_p if which == "perturbed" else caps_c)[int(view.targets[t])])

# ---- similarity heatmap, then hubness reduction ----------------------------------------------------------------
st.subheader("Similarity matrix")
fig, shown = similarity_heatmaps(view, what)
st.caption(f"{shown} queries × their ground-truth {what}"
           + ("" if shown == view.n_queries else f" (evenly spaced, of {view.n_queries} queries)")
           + ", cosine similarity: the diagonal is the ground truth; a bright column is an item close to every "
             "query (a hub), a bright row a query close to everything.")
st.plotly_chart(fig, key="hub_heatmap")

ui.panels.reduction_panel(view, key, log_y)
