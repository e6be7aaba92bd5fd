"""Embeddings: a 2-D map (t-SNE or PCA) of the sidebar dataset's image or video and caption embeddings, clean and
perturbed; select points to see them and add their perturbed versions to the export basket."""
from __future__ import annotations

from dataclasses import astuple

import streamlit as st

import ui
from robustlab.diagnostics import views
from robustlab.export import selection
from robustlab.perturb.condition import Condition
from ui.charts import embedding_scatter
from ui.cache import shared

MAX_ITEMS = 1000
# The visual perturbation starts from the session's one choice, whose default is every page's (ui.choice.DEFAULTS:
# gaussian_noise s3 on images, reverse_sampling s1 on videos); the captions' own default: keyboard s2 on both kinds.
DEFAULTS = {"text": ("keyboard", 2)}

st.header("Embeddings — where perturbed inputs move")


@shared("results")
def projection(spec: str, device: str, gid: str, vcond: tuple, tcond: tuple, n_items: int, method: str,
               perplexity: float, seed: int, k: int, _bench) -> views.EmbeddingPoints:
    """The map (cached per model, dataset, conditions and settings; ``_bench`` is not hashed)."""
    return views.embedding_points(_bench, Condition(*vcond), Condition(*tcond), n_items=n_items, method=method,
                                  perplexity=perplexity, seed=seed, k=k)


ctx = ui.current_bench()
if ctx is None:
    st.stop()
bench, ds, vis = ctx.bench, ctx.dataset, ctx.bench.kind
st.caption(f"Each dot is one {vis} or caption embedding; a line joins a clean item to its perturbed version. Drag a "
           "box (or pick the lasso in the chart's toolbar) to select points.")
n_cap = len(views.caption_columns(bench))
if n_cap < 2 or len(ds) < 3:
    st.warning(f"The map needs at least 3 gallery {vis}s and 2 captions.")
    st.stop()

# ---- controls ---------------------------------------------------------------------------------------------
c1, c2, c3 = st.columns(3)
with c1:
    method = st.radio("Projection", ["tsne", "pca"], key="emb_method", horizontal=True,
                      **ui.valid("emb_method", ["tsne", "pca"]),
                      format_func=lambda m: "t-SNE" if m == "tsne" else "PCA (instant)")
    hi = min(MAX_ITEMS, n_cap)
    ui.clamp("emb_items", min(2, hi), hi, default_value=200)
    n_items = int(st.slider("Items (captioned gallery items, seeded subsample)", min(2, hi), hi, key="emb_items",
                            **ui.initial("emb_items", value=min(200, hi)),
                            help=f"Each item gives a {vis} and a caption point, clean and perturbed."))
    perplexity = float(st.slider("Perplexity", 2, 100, key="emb_perplexity", disabled=method != "tsne",
                                 **ui.initial("emb_perplexity", value=30),
                                 help="Lowered automatically when there are few points (t-SNE needs more than 3 × "
                                      "perplexity)."))
with c3:
    colours = ["condition", "modality", "k-occurrence"]
    color_by = st.radio("Colour by", colours, key="emb_color", horizontal=True, **ui.valid("emb_color", colours))
    max_k = max(1, min(100, n_cap - 1))
    ui.clamp("emb_k", 1, max_k, default_value=15)
    k = int(st.number_input("k (for k-occurrence)", 1, max_k, key="emb_k", **ui.initial("emb_k", value=min(15, max_k))))
    seed = int(st.number_input("Seed", 0, 2**31 - 1, key="emb_seed", **ui.initial("emb_seed", value=0),
                               help="Perturbation seed (item i gets seed + i), subsample and projection seed."))
with c2:
    vcond, tcond = ui.condition_row(vis, "emb_", seed, DEFAULTS, stacked=True)

key = (ctx.spec, ctx.device, ctx.gid, astuple(vcond), astuple(tcond), n_items, method, perplexity, seed, k)
pts = ui.compute(bench, vcond, tcond, lambda: projection(*key, bench), msg="t-SNE…" if method == "tsne" else "PCA…",
                 failure="Perturbing or projecting the gallery failed")
if pts is None:
    st.stop()
st.caption(f"{len(pts)} points: {pts.n_items} items · {vis} {vcond.label()} · text {tcond.label()} · "
           f"{'t-SNE' if method == 'tsne' else 'PCA'} (seed {seed}). Filled: clean; open: perturbed; "
           f"{'squares: videos' if vis == 'video' else 'circles: images'}; diamonds: captions.")

fig, trace_rows = embedding_scatter(pts, color_by)
event = st.plotly_chart(fig, key="emb_chart", on_select="rerun", selection_mode=("box", "lasso"))
rows = views.selected_rows(getattr(event, "selection", None) or (event or {}).get("selection"), len(pts), trace_rows)
if not rows:
    st.caption("No points selected.")
    ui.export_link()
    st.stop()

# ---- the selection ------------------------------------------------------------------------------------------
items = views.selected_items(pts, rows)
examples = selection.selection_examples(bench, pts, rows, vcond, tcond, model_id=ctx.spec)
st.subheader(f"Selected: {len(rows)} point(s), {len(items)} item(s)")
b1, b2 = st.columns([1, 2])
add = b1.button(f"Add {len(examples)} to basket", key="emb_add", type="primary", icon=":material/shopping_basket:",
                disabled=not examples,
                help="Adds the perturbed version of every selected item whose modality is perturbed, with its "
                     "perturbation record.")
if add:
    basket = ui.basket()
    new = sum(basket.add(ex) for ex in examples)
    if new:
        st.toast(f"Added {new} example(s)")
    st.success(f"Added {new} example(s) to the basket ({len(examples) - new} already there); the basket holds "
               f"{len(basket)}.")
with b2:
    ui.export_link()
if not examples:
    st.caption("Nothing perturbed is selected (the selected modality is clean).")

vis_c, vis_p, caps_c, caps_p = bench.visuals()[0], bench.visuals(vcond)[0], bench.texts()[0], bench.texts(tcond)[0]
col_of, names = views.caption_columns(bench), getattr(ds, "names", None)
shown = items[:(12 if vis == "video" else 24)]
if len(items) > len(shown):
    st.caption(f"Showing the first {len(shown)} of {len(items)} selected items.")
with st.container(key="emb_selection"):
    cols = st.columns(4)
    for n, (item, mod) in enumerate(shown):
        with cols[n % 4], st.container(border=True):
            st.caption(f"item {item} · {mod}")
            st.text(names[item] if names else ds.item(item).id)  # a file's name: literal, never markdown
            if mod == "text":
                for label, caps in (("clean", caps_c), (tcond.label(), caps_p)):
                    st.caption(label)
                    st.text(caps[col_of[item]] if item in col_of else "")
                continue
            for col, cond, x in zip(st.columns(2) if vis == "image" else (st.container(),) * 2,
                                    (Condition(), vcond), (vis_c[item], vis_p[item])):
                with col:
                    if vis == "video":
                        st.caption(cond.label())
                    ui.show_visual(x, kind=vis, gid=ctx.gid, cond=cond, index=item, fps=ui.fps_of(ds),
                                   caption=cond.label() if vis == "image" else "", slot=f"{cond.label()}")
