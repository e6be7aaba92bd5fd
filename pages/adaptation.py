"""Adaptation: test-time adaptation of the sidebar's model against a query shift (robustlab.adapt's methods: Tent,
TCR, HAT-VTR, READ, SAR, EATA, the oracle), R@K clean / shifted / adapted, the loss per batch, hubness before and
after, and where the queries move."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import ui
import ui.adaptation as ad
import ui.adaptation_analyses as an
from robustlab.diagnostics import views
from robustlab.diagnostics.hubness import k_occurrence, measures_from_nk
from ui.charts import occurrence_histogram

st.header("Adaptation — test-time adaptation against query shift")
st.caption("The queries are perturbed (a query shift: typos in the captions, noise on the images or videos) and the "
           "query tower's LayerNorms adapt online, batch by batch, on the shifted queries alone (no labels); the "
           "gallery stays clean and fixed. R@K is on the same queries: clean, shifted, and shifted after adaptation. "
           "The model itself is never changed: every run adapts a fresh copy.")

ctx = ui.current_bench()
if ctx is None:
    st.stop()
if len(ctx.dataset) < 3 or len(ctx.bench.captioned) < 2:
    st.warning(f"Adaptation needs at least 3 gallery {ctx.bench.kind}s and 2 captions.")
    st.stop()

setup = ad.controls(ctx)
if st.button("Run adaptation", key="ad_run", type="primary", icon=":material/play_arrow:"):
    ad.run(ctx, setup)
o = ad.last(ctx, setup)
if o is None:
    if st.session_state.get(ad.LAST) is None:
        st.caption("Pick a direction, a query shift and a method, then press Run adaptation.")
    st.stop()
res = o["result"]
st.caption(ad.summary(res))
with st.expander("Parameters of this run"):
    st.json(res.params)

# ---- R@K: clean, shifted, adapted ---------------------------------------------------------------------------
st.subheader("Retrieval: clean, shifted, adapted")
d = res.direction
mets = {c: {d: res.metrics[c]} for c in ("clean", "shifted", "adapted")}
left, right = st.columns([3, 2])
with left:
    with st.container(key="ad_metrics_box"):
        ui.metrics_table(mets, key="ad_metrics")
    for col, r in zip(st.columns(3), ("R@1", "R@5", "R@10")):
        a, s = res.metrics["adapted"][r], res.metrics["shifted"][r]
        col.metric(f"{r} adapted", f"{a:.3f}", f"{a - s:+.3f} vs shifted")
    st.caption("clean: the unshifted queries, unadapted model · shifted: the perturbed queries, unadapted model · "
               "adapted: the perturbed queries as the adapting stream scored them. MdR / MnR: median / mean rank.")
with right:
    ui.recall_chart(mets, d, key="ad_recall")

fig = ad.loss_figure(res)
if fig is None:
    st.caption("No adaptation: no loss to show.")
else:
    st.plotly_chart(fig, key="ad_loss")

# ---- hubness before / after ---------------------------------------------------------------------------------
st.subheader("Hubness: before and after adaptation")
what = "captions" if d[1:] == "2t" else f"{ctx.bench.kind}s"
c1, c2 = st.columns([1, 4])
max_k = max(1, min(100, res.n_gallery - 1))
ui.clamp("ad_k", 1, max_k, default_value=15)
k = int(c1.number_input("k", 1, max_k, key="ad_k", **ui.initial("ad_k", value=min(15, max_k))))
log_y = c1.checkbox("Log y axis", key="ad_log", **ui.initial("ad_log", value=False))
nk_s, nk_a = k_occurrence(res.scores_shifted, k=k), k_occurrence(res.scores_adapted, k=k)
hist = occurrence_histogram({"before (shifted)": nk_s, f"after ({res.method})": nk_a}, log_y,
                            f"k-occurrence of the gallery {what}")
for t, color in zip(hist.data, (ad.SHIFTED, ad.ADAPTED)):  # the map's colours
    t.marker.color = color
c2.plotly_chart(hist, key="ad_hist")
names = ("before (shifted)", "after (adapted)")
rows = views.compare_table(measures_from_nk(nk_s, k), measures_from_nk(nk_a, k), names=names)
keep = ("k_skewness", "robinhood", "gini", "antihub_occurrence", "hub_occurrence")
df = pd.DataFrame([r for r in rows if r["measure"] in keep])
st.dataframe(df, hide_index=True, width="stretch", key="ad_hubness",
             column_config={c: st.column_config.NumberColumn(format="%.4f") for c in names + ("change",)})
st.caption(f"N_k: how many queries have a gallery item in their top {k}. Hubs (large N_k) and anti-hubs (N_k = 0) "
           "mark a skewed space; k_skewness > 1 is strong hubness.")

# ---- the map: where the queries move --------------------------------------------------------------------------
st.subheader("Where the queries move")
m1, m2 = st.columns([1, 3])
with m1:
    method = st.radio("Projection", ["tsne", "pca"], key="ad_proj", horizontal=True,
                      **ui.valid("ad_proj", ["tsne", "pca"]),
                      format_func=lambda m: "t-SNE" if m == "tsne" else "PCA (instant)")
    perplexity = float(st.slider("Perplexity", 2, 100, key="ad_perplexity", disabled=method != "tsne",
                                 **ui.initial("ad_perplexity", value=30)))
qi, gi = ad.subsample(res.n_queries, res.n_gallery)
x = np.concatenate([res.query_shifted[qi], res.query_adapted[qi], res.gallery[gi]])
perp = min(perplexity, (len(x) - 2) / 3)
try:
    with st.spinner("t-SNE…" if method == "tsne" else "PCA…"):
        xy = ad.projection(o["id"], method, perp, x)
except ValueError as e:
    m2.warning(f"Cannot project these points: {e}")
    st.stop()
labels = ([f"query {i} · shifted" for i in qi], [f"query {i} · adapted" for i in qi], [f"gallery {i}" for i in gi])
m2.plotly_chart(ad.map_figure(xy, (len(qi), len(qi), len(gi)), labels, method), key="ad_map")
gap_s, gap_a = ad.centroid_gap(res.query_shifted, res.gallery), ad.centroid_gap(res.query_adapted, res.gallery)
m1.metric("Centroid gap, queries ↔ gallery", f"{gap_a:.3f}", f"{gap_a - gap_s:+.3f} vs shifted",
          delta_color="off", help="‖mean query − mean gallery item‖ in the embedding space (all the points).")
m1.caption(f"{len(qi)} of {res.n_queries} queries (before and after) and {len(gi)} of {res.n_gallery} gallery items"
           + (f" (at most {ad.MAX_POINTS} points)" if len(qi) < res.n_queries or len(gi) < res.n_gallery else "")
           + f"; {'t-SNE, perplexity ' + format(perp, '.3g') if method == 'tsne' else 'PCA'}. The crosses are the "
             "centroids of each group's 2-D points (HAT-VTR Fig. 5c).")

# ---- HAT-VTR's analyses: the memory and the time; one query's ranking, the heatmaps; R@1 vs severity ------------
an.memory_and_time(res)
an.ranking_section(ctx, res)
an.severity_section(ctx, setup)
