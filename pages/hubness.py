"""Hubness: which gallery items attract many queries, clean vs perturbed, and what hubness reduction does."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import streamlit as st

import ui
from robustlab.diagnostics import views
from robustlab.perturb import list_perturbations
from robustlab.tasks.retrieval import Condition

st.header("Hubness — who attracts the queries, clean vs perturbed")
st.caption("N_k (k-occurrence) of a gallery item: how many queries have it in their top k. A few items with a very "
           "large N_k (hubs) and many with N_k = 0 (anti-hubs) mean a skewed, hub-ridden embedding space.")
GALLERY_KIND = st.radio("Gallery", ["images", "videos"], horizontal=True, key="hub_gallery_kind",
                        help="videos: the built-in event-video gallery (text→video and video→text), the same "
                             "gallery and video bench as the Retrieval page's videos")


# ---- cached work (the underscored arguments are not hashed: the keys name the model, gallery and conditions) --
@st.cache_data(show_spinner=False, max_entries=12)
def hubness_data(spec: str, device: str, gid: str, direction: str, icond: tuple, tcond: tuple, k: int,
                 _bench) -> views.HubnessView:
    return views.hubness_view(_bench, direction, Condition(*icond), Condition(*tcond), k=k)


@st.cache_data(show_spinner=False, max_entries=12)
def video_hubness_data(spec: str, device: str, gid: str, direction: str, vcond: tuple, tcond: tuple, k: int,
                       _bench) -> views.HubnessView:
    return views.video_hubness_view(_bench, direction, Condition(*vcond), Condition(*tcond), k=k)


@st.cache_data(show_spinner=False, max_entries=12)
def reduction_data(spec: str, device: str, gid: str, direction: str, icond: tuple, tcond: tuple, k: int,
                   method: str, params: tuple, _view) -> views.ReductionView:
    return views.reduce_view(_view, method, **dict(params))


def histogram(series: dict, log_y: bool, title: str) -> go.Figure:
    """Overlaid k-occurrence histograms with integer bins (series: name -> N_k array)."""
    bins, counts = views.occurrence_counts(*series.values())
    fig = go.Figure()
    for name, c in zip(series, counts):
        fig.add_bar(x=bins, y=c, name=name, opacity=0.6)
    fig.update_layout(barmode="overlay", bargap=0, xaxis_title="N_k (queries with the item in their top k)",
                      yaxis_title="gallery items", yaxis_type="log" if log_y else "linear", height=340,
                      title=title, margin=dict(t=40, b=20), legend=dict(orientation="h", y=1.02, x=1,
                                                                         xanchor="right", yanchor="bottom"))
    return fig


EMPTY_HINT = ("Your gallery is empty: upload images with captions on the Retrieval page, or pick the built-in demo "
              "in the sidebar.")


def controls(visual: str, directions: dict, direction_key: str, direction_help: str, n_targets, pert_key: str):
    """The shared control row: direction, k (at most the targets of the chosen direction - 1), a perturbation of
    the ``visual`` modality or of the text, severity, seed, log axis. -> direction, k, the condition, the
    visual and the text condition (one of them clean), log_y."""
    perts = ["(none)"] + [f"{visual}:{s.name}" for s in list_perturbations(modality=visual) if s.available] \
        + [f"text:{s.name}" for s in list_perturbations(modality="text") if s.available]
    c1, c2, c3, c4 = st.columns([2, 3, 2, 2])
    with c1:
        direction = st.radio("Direction", list(directions), key=direction_key, format_func=directions.get,
                             help=direction_help)
        max_k = max(1, min(100, n_targets(direction) - 1))
        ui.clamp("hub_k", 1, max_k)
        k = int(st.number_input("k", 1, max_k, min(15, max_k), key="hub_k"))
    with c2:
        default = f"{visual}:gaussian_noise"
        pert = st.selectbox("Perturbation", perts, key=pert_key, index=perts.index(default) if default in perts else 0,
                            format_func=lambda p: p if p == "(none)" else " · ".join(p.split(":", 1)))
    with c3:
        sev = st.slider("Severity", 0, 5, 3, key="hub_sev", disabled=pert == "(none)")
    with c4:
        seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, key="hub_seed",
                                   help="Gallery item i is perturbed with seed + i."))
        log_y = st.checkbox("Log y axis", key="hub_log")
    mod, name = pert.split(":", 1) if pert != "(none)" else (visual, None)
    cond = Condition(name, sev, seed)
    vcond, tcond = (cond, Condition()) if mod == visual else (Condition(), cond)
    return direction, k, cond, vcond, tcond, log_y


def main():
    got = ui.current_bench(EMPTY_HINT)
    if got is None:
        return
    spec, device, gid, gallery, bench = got
    n_targets = len(gallery)
    if n_targets < 3 or len(bench.captioned) < 2:
        st.warning("Hubness needs at least 3 gallery images and 2 captions.")
        return

    # ---- controls ---------------------------------------------------------------------------------------
    direction, k, cond, icond, tcond, log_y = controls(
        "image", views.DIRECTIONS, "hub_direction",
        "text→image: captions query the images (hubs are images); image→text: images query the captions (hubs are "
        "captions).", lambda d: n_targets if d == "t2i" else len(bench.captioned), "hub_pert")
    ikey, tkey = (icond.name, icond.severity, icond.seed), (tcond.name, tcond.severity, tcond.seed)

    view = ui.encode_then(bench, icond, tcond,
                          lambda: hubness_data(spec, device, gid, direction, ikey, tkey, k, bench),
                          compute_msg="Computing k-occurrences…", failure=f"{cond.label()} failed on this gallery")
    if view is None:
        return
    label = view.label
    what = "images" if direction == "t2i" else "captions"
    st.caption(f"{view.n_queries} queries × {view.n_targets} {what}, k = {k}; perturbed: {label}.")

    show_occurrence(view, what, log_y)

    # ---- top hubs --------------------------------------------------------------------------------------
    st.subheader("Top hubs")
    m = hub_count(view)
    imgs_p = bench.images(icond)[0]
    caps_p = bench.texts(tcond)[0]
    tab_p, tab_c = st.tabs([f"perturbed ({label})", "clean"])
    for tab, which, nk, other in ((tab_p, "perturbed", view.nk_perturbed, view.nk_clean),
                                  (tab_c, "clean", view.nk_clean, view.nk_perturbed)):
        with tab, st.container(key=f"hub_top_{which}"):
            hubs = views.top_hubs(nk, m)
            cols = st.columns(min(5, len(hubs)))
            for j, t in enumerate(hubs):
                item = int(view.targets[t])
                cap = (f"#{j + 1} · item {item} · N_k = {int(nk[t])} queries "
                       f"({'clean' if which == 'perturbed' else 'perturbed'}: {int(other[t])})")
                with cols[j % len(cols)]:
                    if direction == "t2i":
                        img = imgs_p[item] if which == "perturbed" else gallery.images[item]
                        st.image(img, caption=cap, width="stretch")
                    else:
                        st.image(gallery.images[item], width="stretch")
                        st.caption(cap)
                        st.text(caps_p[t] if which == "perturbed" else gallery.captions[item])

    # ---- similarity heatmap and hubness reduction ------------------------------------------------------
    show_heatmap(view, what)
    show_reduction(view, (spec, device, gid, direction, ikey, tkey, k), log_y)


def hub_count(view: views.HubnessView) -> int:
    ui.clamp("hub_m", 1, min(30, view.n_targets))
    return int(st.slider("How many", 1, min(30, view.n_targets), min(10, view.n_targets), key="hub_m"))


def show_occurrence(view: views.HubnessView, what: str, log_y: bool) -> None:
    """k-occurrence histograms (clean vs perturbed) and the measures / R@K table."""
    label = view.label
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(histogram({"clean": view.nk_clean, f"perturbed ({label})": view.nk_perturbed}, log_y,
                                  f"k-occurrence of the gallery {what}"), key="hub_hist")
    with right:
        rows = views.compare_table(view.measures_clean, view.measures_perturbed)
        rows += views.compare_table(view.recall_clean, view.recall_perturbed)
        df = pd.DataFrame(rows)
        st.dataframe(df, hide_index=True, width="stretch", key="hub_measures", height=35 * (len(df) + 1) + 3,
                     column_config={c: st.column_config.NumberColumn(format="%.4f")
                                    for c in ("clean", "perturbed", "change")})
        st.caption("k_skewness: skewness of N_k (> 1: strong hubness); robinhood, gini, atkinson: inequality of "
                   "N_k; hub/antihub occurrence: share of top-k slots taken by hubs / items that are never "
                   "retrieved. R@K and ranks over the whole gallery.")


def show_heatmap(view: views.HubnessView, what: str) -> None:
    """Sampled queries × their ground-truth targets, clean and perturbed."""
    label = view.label
    st.subheader("Similarity matrix")
    hm_c, rows_idx, cols_idx = views.heatmap(view, "clean")
    hm_p, _, _ = views.heatmap(view, "perturbed")
    sub = "" if len(rows_idx) == view.n_queries else f" (evenly spaced, of {view.n_queries} queries)"
    st.caption(f"{len(rows_idx)} queries × their ground-truth {what}{sub}, cosine similarity: the diagonal is the "
               "ground truth; a bright column is an item close to every query (a hub), a bright row a query close "
               "to everything.")
    lo, hi = float(min(hm_c.min(), hm_p.min())), float(max(hm_c.max(), hm_p.max()))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("clean", f"perturbed ({label})"), horizontal_spacing=0.06)
    for c, hm in ((1, hm_c), (2, hm_p)):
        fig.add_trace(go.Heatmap(z=hm, zmin=lo, zmax=hi, colorscale="Viridis", showscale=c == 2,
                                 customdata=np.broadcast_to(view.targets[cols_idx][None, :], hm.shape),
                                 hovertemplate="query %{y} · item %{customdata}<br>cosine %{z:.3f}<extra></extra>"),
                      row=1, col=c)
    fig.update_yaxes(autorange="reversed", title_text="query (sampled)", col=1)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=f"ground-truth {what[:-1]} of the query")
    fig.update_layout(height=420, margin=dict(t=40, b=20))
    st.plotly_chart(fig, key="hub_heatmap")


def show_reduction(view: views.HubnessView, cache_key: tuple, log_y: bool) -> None:
    """``cache_key``: (spec, device, gallery id, direction, visual condition key, text condition key, k)."""
    label = view.label
    st.subheader("Hubness reduction")
    try:
        methods = views.reduction_methods()
    except ImportError as e:
        st.info(f"Hubness reduction is not available in this robustlab: {e}")
        return
    names = ["none"] + list(methods)
    method = st.selectbox("Method", names, key="hub_reduction",
                          format_func=lambda n: "none" if n == "none" else methods[n].label,
                          help="Re-scores the query × gallery similarities (no model change), applied to the clean "
                               "and the perturbed scores alike.")
    if method == "none":
        st.caption("Pick a method to see R@K and the k-occurrence histogram before and after it.")
        return
    entry = methods[method]
    st.caption(f"{entry.description} Source: {entry.source}."
               + (" Transductive: uses all the queries at once." if entry.transductive else ""))
    params = {}
    shown = [p for p in entry.params if p.kind in ("int", "float")]  # array parameters (a querybank) keep defaults
    for col, p in zip(st.columns(max(1, len(shown))), shown):
        with col:
            lo = None if p.min is None else (int(p.min) if p.kind == "int" else float(p.min))
            hi = None if p.max is None else (int(p.max) if p.kind == "int" else float(p.max))
            key = f"hub_red_{method}_{p.name}"
            if p.kind == "int":
                params[p.name] = int(st.number_input(p.name, lo, hi, int(p.default), step=1, key=key, help=p.help))
            else:
                params[p.name] = float(st.number_input(p.name, lo, hi, float(p.default), format="%.4g", key=key,
                                                       help=p.help))
    try:
        with st.spinner(f"Applying {method}…"):
            red = reduction_data(*cache_key, method, tuple(sorted(params.items())), view)
    except (ValueError, TypeError) as e:
        st.warning(f"{method} cannot run with these parameters: {e}")
        return
    rows = []
    for cnd in ("clean", "perturbed"):
        for when in ("before", "after"):
            rows.append({"condition": cnd if cnd == "clean" else f"perturbed ({label})", "reduction": when,
                         **{kk: round(v, 4) for kk, v in red.recall[cnd][when].items()},
                         "k_skewness": round(red.measures[cnd][when].get("k_skewness", float("nan")), 4)})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="hub_reduction_table")
    h1, h2 = st.columns(2)
    with h1:
        st.plotly_chart(histogram({"before": red.nk["clean"]["before"], f"after {method}": red.nk["clean"]["after"]},
                                  log_y, "clean"), key="hub_red_hist_clean")
    with h2:
        st.plotly_chart(histogram({"before": red.nk["perturbed"]["before"],
                                   f"after {method}": red.nk["perturbed"]["after"]}, log_y,
                                  f"perturbed ({label})"), key="hub_red_hist_perturbed")


# ---- videos: text→video and video→text over the built-in event-video gallery -------------------------------
def video_main():
    got = ui.current_video_bench()
    if got is None:
        return
    spec, device, gid, gallery, bench = got
    n = len(gallery)
    if n < 3:
        st.warning("Hubness needs at least 3 gallery videos.")
        return

    # ---- controls ---------------------------------------------------------------------------------------
    # the perturbation has a key of its own: the image view's "image:…" choice is not an option here
    direction, k, cond, vcond, tcond, log_y = controls(
        "video", views.VIDEO_DIRECTIONS, "hub_v_direction",
        "text→video: the captions query the videos (hubs are videos); video→text: the videos query the captions "
        "(hubs are captions). Identical captions are all ground truth.", lambda d: n, "hub_v_pert")
    vkey, tkey = (vcond.name, vcond.severity, vcond.seed), (tcond.name, tcond.severity, tcond.seed)

    view = ui.encode_then(bench, vcond, tcond,
                          lambda: video_hubness_data(spec, device, gid, direction, vkey, tkey, k, bench),
                          compute_msg="Computing k-occurrences…", failure=f"{cond.label()} failed on this gallery",
                          videos=True)
    if view is None:
        return
    label = view.label
    what = "videos" if direction == "t2v" else "captions"
    st.caption(f"{view.n_queries} queries × {view.n_targets} {what}, k = {k}; perturbed: {label}. Ground truth: "
               "every item with exactly the query's caption.")

    show_occurrence(view, what, log_y)

    # ---- top hubs --------------------------------------------------------------------------------------
    st.subheader("Top hubs")
    m = hub_count(view)
    vids_p = bench.videos(vcond)[0]
    caps_p = bench.texts(tcond)[0]
    tab_p, tab_c = st.tabs([f"perturbed ({label})", "clean"])
    for tab, which, nk, other in ((tab_p, "perturbed", view.nk_perturbed, view.nk_clean),
                                  (tab_c, "clean", view.nk_clean, view.nk_perturbed)):
        with tab, st.container(key=f"hub_top_{which}"):
            hubs = views.top_hubs(nk, m)
            cols = st.columns(min(5, len(hubs)))
            for j, t in enumerate(hubs):
                item = int(view.targets[t])
                cap = (f"#{j + 1} · item {item} · N_k = {int(nk[t])} queries "
                       f"({'clean' if which == 'perturbed' else 'perturbed'}: {int(other[t])})")
                # the video shown is perturbed only when it is the perturbed hub (t2v) or the perturbed side
                show_p = which == "perturbed" and direction == "t2v"
                vc = vcond if show_p else Condition()
                frames = vids_p[item] if show_p else gallery.videos[item]
                with cols[j % len(cols)]:
                    # alt names the slot: the same video can be in both tabs, and Streamlit needs distinct elements
                    st.video(ui.video_mp4(gid, str(vc.key()), item, frames), format="video/mp4", loop=True,
                             autoplay=True, muted=True, alt=f"{which} hub #{j + 1}: video {item}")
                    st.caption(cap)
                    if direction == "v2t":
                        st.text(caps_p[t] if which == "perturbed" else gallery.captions[item])

    # ---- similarity heatmap and hubness reduction ------------------------------------------------------
    show_heatmap(view, what)
    show_reduction(view, (spec, device, gid, direction, vkey, tkey, k), log_y)


if GALLERY_KIND == "videos":
    video_main()
else:
    main()
