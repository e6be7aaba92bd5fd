"""Embeddings: a 2-D map (t-SNE or PCA) of image or video and caption embeddings, clean and perturbed; select
points to see them and add their perturbed versions to the export basket."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import ui
from robustlab.diagnostics import views
from robustlab.export.basket import Basket
from robustlab.perturb import list_perturbations
from robustlab.tasks.retrieval import Condition

st.header("Embeddings — where perturbed inputs move")
GALLERY_KIND = st.radio("Gallery", ["images", "videos"], horizontal=True, key="emb_gallery_kind",
                        help="videos: the built-in event-video gallery (the same gallery and video bench as the "
                             "Retrieval and Hubness pages' videos), with video perturbations")
st.caption(f"Each dot is one {GALLERY_KIND[:-1]} or caption embedding; a line joins a clean item to its perturbed "
           "version. Drag a box (or pick the lasso in the chart's toolbar) to select points.")

MAX_ITEMS = 1000
SYMBOLS = {("image", "clean"): "circle", ("image", "perturbed"): "circle-open",
           ("video", "clean"): "square", ("video", "perturbed"): "square-open",
           ("text", "clean"): "diamond", ("text", "perturbed"): "diamond-open"}
COLORS = {"clean": "#1f77b4", "perturbed": "#d62728", "image": "#2ca02c", "video": "#ff7f0e", "text": "#9467bd"}


@st.cache_data(show_spinner=False, max_entries=12)
def projection(spec: str, device: str, gid: str, vcond: tuple, tcond: tuple, n_items: int, method: str,
               perplexity: float, seed: int, k: int, _bench) -> views.EmbeddingPoints:
    """The map (cached per model, gallery — image or video, the id says which — conditions and settings)."""
    return views.embedding_points(_bench, Condition(*vcond), Condition(*tcond), n_items=n_items, method=method,
                                  perplexity=perplexity, seed=seed, k=k)


def scatter(pts: views.EmbeddingPoints, color_by: str) -> tuple[go.Figure, list]:
    """The map: one trace per group (or one coloured by N_k), each point's row in customdata, and the
    clean→perturbed lines underneath (not selectable)."""
    fig = go.Figure()
    trace_rows: list = []
    lx, ly = views.pair_lines(pts)
    if lx:
        fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", line=dict(color="rgba(120,120,120,0.35)", width=1),
                                 hoverinfo="skip", name="clean → perturbed", showlegend=True))
        trace_rows.append(None)
    rows_all = np.arange(len(pts))
    hover = [f"item {int(i)} · {m} · {c}<br>N_k = {int(n)}<br>{_short(t)}"
             for i, m, c, n, t in zip(pts.item, pts.modality, pts.condition, pts.k_occurrence, pts.text)]
    if color_by == "k-occurrence":
        fig.add_trace(go.Scatter(
            x=pts.xy[:, 0], y=pts.xy[:, 1], mode="markers", name="points", customdata=rows_all.tolist(),
            text=hover, hovertemplate="%{text}<extra></extra>",
            marker=dict(color=pts.k_occurrence, colorscale="Viridis", showscale=True, size=8,
                        colorbar=dict(title=f"N_{pts.k}"),
                        symbol=[SYMBOLS[(m, c)] for m, c in zip(pts.modality, pts.condition)])))
        trace_rows.append(list(rows_all))
    else:
        for (m, c), sym in SYMBOLS.items():
            sel = np.flatnonzero((pts.modality == m) & (pts.condition == c))
            if not len(sel):
                continue
            color = COLORS[c] if color_by == "condition" else COLORS[m]
            fig.add_trace(go.Scatter(
                x=pts.xy[sel, 0], y=pts.xy[sel, 1], mode="markers", name=f"{m} · {c}", customdata=sel.tolist(),
                text=[hover[r] for r in sel], hovertemplate="%{text}<extra></extra>",
                marker=dict(color=color, symbol=sym, size=8, line=dict(width=1.5, color=color))))
            trace_rows.append(list(sel))
    fig.update_layout(dragmode="select", height=620, margin=dict(t=20, b=20), xaxis_title=f"{pts.method} 1",
                      yaxis_title=f"{pts.method} 2", legend=dict(orientation="h", y=1.02, x=0, xanchor="left",
                                                                  yanchor="bottom"))
    return fig, trace_rows


def _short(t: str, n: int = 80) -> str:
    t = (t or "").replace("<", "‹").replace(">", "›")
    return t if len(t) <= n else t[: n - 1] + "…"


EMPTY_HINT = ("Your gallery is empty: upload images with captions on the Retrieval page, or pick the built-in demo "
              "in the sidebar.")


def main():
    video = GALLERY_KIND == "videos"
    got = ui.current_video_bench() if video else ui.current_bench(EMPTY_HINT)
    if got is None:
        return
    spec, device, gid, gallery, bench = got
    vis = views.visual_modality(bench)  # "image" | "video"
    n_cap = len(views.caption_columns(bench))
    if n_cap < 2 or len(gallery) < 3:
        st.warning(f"The map needs at least 3 gallery {vis}s and 2 captions.")
        return

    # ---- controls ---------------------------------------------------------------------------------------
    # the visual perturbation has a key per gallery kind: an image perturbation is not a video option and back
    vis_names = ["(none)"] + [s.name for s in list_perturbations(modality=vis) if s.available]
    txt_names = ["(none)"] + [s.name for s in list_perturbations(modality="text") if s.available]
    pkey, skey = ("emb_vid_pert", "emb_vid_sev") if video else ("emb_img_pert", "emb_img_sev")
    default_p = "motion_blur" if video else "gaussian_noise"
    c1, c2, c3 = st.columns(3)
    with c1:
        method = st.radio("Projection", ["tsne", "pca"], key="emb_method", horizontal=True,
                          format_func=lambda m: "t-SNE" if m == "tsne" else "PCA (instant)")
        hi = min(MAX_ITEMS, n_cap)
        ui.clamp("emb_items", min(2, hi), hi)
        n_items = int(st.slider("Items (captioned gallery items, seeded subsample)", min(2, hi), hi, min(200, hi),
                                key="emb_items", help=f"Each item gives a{'' if video else 'n'} {vis} and a "
                                                      "caption point, clean and perturbed."))
        perplexity = float(st.slider("Perplexity", 2, 100, 30, key="emb_perplexity", disabled=method != "tsne",
                                     help="Lowered automatically when there are few points (t-SNE needs more "
                                          "than 3 × perplexity)."))
    with c2:
        vp = st.selectbox(f"{vis.capitalize()} perturbation", vis_names, key=pkey,
                          index=vis_names.index(default_p) if default_p in vis_names else 0)
        vsev = st.slider(f"{vis.capitalize()} severity", 0, 5, 3, key=skey, disabled=vp == "(none)")
        tp = st.selectbox("Text perturbation", txt_names, key="emb_txt_pert",
                          index=txt_names.index("keyboard") if "keyboard" in txt_names else 0)
        tsev = st.slider("Text severity", 0, 5, 2, key="emb_txt_sev", disabled=tp == "(none)")
    with c3:
        color_by = st.radio("Colour by", ["condition", "modality", "k-occurrence"], key="emb_color", horizontal=True)
        ui.clamp("emb_k", 1, max(1, min(100, n_cap - 1)))
        k = int(st.number_input("k (for k-occurrence)", 1, max(1, min(100, n_cap - 1)), min(15, max(1, n_cap - 1)),
                                key="emb_k"))
        seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, key="emb_seed",
                                   help="Perturbation seed (item i gets seed + i), subsample and projection seed."))
    vcond = Condition(None if vp == "(none)" else vp, vsev, seed)
    tcond = Condition(None if tp == "(none)" else tp, tsev, seed)

    pts = ui.encode_then(bench, vcond, tcond,
                         lambda: projection(spec, device, gid, (vcond.name, vcond.severity, vcond.seed),
                                            (tcond.name, tcond.severity, tcond.seed), n_items, method, perplexity,
                                            seed, k, bench),
                         compute_msg="t-SNE…" if method == "tsne" else "PCA…",
                         failure="Perturbing or projecting the gallery failed", videos=video)
    if pts is None:
        return
    st.caption(f"{len(pts)} points: {pts.n_items} items · {vis} {vcond.label()} · text {tcond.label()} · "
               f"{'t-SNE' if method == 'tsne' else 'PCA'} (seed {seed}). Filled: clean; open: perturbed; "
               f"{'squares: videos' if video else 'circles: images'}; diamonds: captions.")

    fig, trace_rows = scatter(pts, color_by)
    event = st.plotly_chart(fig, key="emb_chart", on_select="rerun", selection_mode=("box", "lasso"))
    rows = views.selected_rows(getattr(event, "selection", None) or (event or {}).get("selection"), len(pts),
                               trace_rows)
    basket = st.session_state.setdefault("basket", Basket())
    if not rows:
        st.caption("No points selected.")
        st.page_link("pages/export.py", label=f"Export the basket ({len(basket)})", icon="📦")
        return

    # ---- the selection ---------------------------------------------------------------------------------
    items = views.selected_items(pts, rows)
    examples = views.selection_examples(bench, pts, rows, vcond, tcond, model_id=spec)
    st.subheader(f"Selected: {len(rows)} point(s), {len(items)} item(s)")
    b1, b2 = st.columns([1, 2])
    with b1:
        add = st.button(f"Add {len(examples)} to basket", key="emb_add", type="primary", icon="🧺",
                        disabled=not examples,
                        help="Adds the perturbed version of every selected item whose modality is perturbed, with "
                             "its perturbation record.")
    if add:
        new = sum(basket.add(ex) for ex in examples)
        if new:
            st.toast(f"Added {new} example(s)")
        st.success(f"Added {new} example(s) to the basket ({len(examples) - new} already there); the basket holds "
                   f"{len(basket)}.")
    with b2:
        st.page_link("pages/export.py", label=f"Export the basket ({len(basket)})", icon="📦")
    if not examples:
        st.caption("Nothing perturbed is selected (the selected modality is clean).")

    vis_p = (bench.videos if video else bench.images)(vcond)[0]
    caps_p = bench.texts(tcond)[0]
    col_of = views.caption_columns(bench)
    shown = items[:(12 if video else 24)]
    if len(items) > len(shown):
        st.caption(f"Showing the first {len(shown)} of {len(items)} selected items.")
    with st.container(key="emb_selection"):
        cols = st.columns(4)
        for n, (item, mod) in enumerate(shown):
            with cols[n % 4], st.container(border=True):
                st.caption(f"item {item} · {mod}")
                st.text(gallery.names[item])  # an uploaded file's name: shown literally, never as markdown
                if mod == "image":
                    a, b = st.columns(2)
                    a.image(gallery.images[item], caption="clean", width="stretch")
                    b.image(vis_p[item], caption=vcond.label(), width="stretch")
                elif mod == "video":
                    for cond, frames in ((Condition(), gallery.videos[item]), (vcond, vis_p[item])):
                        st.caption(cond.label())
                        # alt names the slot: Streamlit needs distinct elements for the clean and perturbed players
                        st.video(ui.video_mp4(gid, str(cond.key()), item, frames), format="video/mp4", loop=True,
                                 autoplay=True, muted=True, alt=f"{cond.label()}: video {item}")
                else:
                    st.caption("clean")
                    st.text(gallery.captions[item] or "")
                    st.caption(tcond.label())
                    st.text(caps_p[col_of[item]] if item in col_of else "")


main()
