"""Retrieval: text→image (and text↔video on the built-in event-video gallery), clean vs perturbed, side by side."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from robustlab.datasets.uploads import ingest_uploads, set_captions
from robustlab.io.files import InputError
from robustlab.engine.cache import content_hash
from robustlab.perturb import list_perturbations
from robustlab.tasks.retrieval import Condition

st.header("Retrieval — clean vs perturbed")


def upload_section():
    gal = st.session_state.get("upload_gallery")
    with st.expander(f"Upload images and captions ({len(gal) if gal else 0} in your gallery)", expanded=not gal):
        with st.form("upload_form", clear_on_submit=True):
            files = st.file_uploader("Images", accept_multiple_files=True, key="up_images",
                                     type=["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"])
            capfile = st.file_uploader("Captions file (optional): .txt one per line, .csv with image,caption, "
                                       "or .json", type=["txt", "csv", "tsv", "json"], key="up_captions")
            lines = st.text_area("…or type captions, one per line, in the order of the images", key="up_lines")
            submitted = st.form_submit_button("Add to my gallery")
        if submitted:
            imgs = [(f.name, f.getvalue()) for f in (files or [])]
            cf = (capfile.name, capfile.getvalue()) if capfile else None
            if imgs:
                rep = ingest_uploads(imgs, cf, lines, existing=gal)
            elif gal is not None and (cf or lines.strip()):
                rep = set_captions(gal, cf, lines)
            else:
                rep = None
                st.warning("Choose at least one image to add (or captions for the images already here).")
            if rep is not None:
                for e in rep.errors:
                    st.error(e)
                for w in rep.warnings:
                    st.warning(w)
                if rep.gallery is not None and rep.gallery is not gal:
                    st.session_state["upload_gallery"] = rep.gallery
                    st.session_state["upload_gallery_id"] = "upload-" + content_hash(
                        "|".join(m["hash"] for m in rep.gallery.meta) + "|" + "|".join(
                            c or "" for c in rep.gallery.captions))
                if rep.added:
                    st.success(f"Added {rep.added} image(s).")
        if gal is not None and st.button("Clear my gallery", key="clear_uploads"):
            st.session_state.pop("upload_gallery", None)
            st.session_state.pop("upload_gallery_id", None)
            st.rerun()


GALLERY_KIND = st.radio("Gallery", ["images", "videos"], horizontal=True, key="gallery_kind",
                        help="videos: the built-in event-video gallery (text→video and video→text retrieval)")

if GALLERY_KIND == "images" and st.session_state.get("dataset") == "upload":
    upload_section()

def main():
    model = ui.current_model()
    gid, gallery = ui.current_gallery()
    if model is None:
        return
    if gallery is None or len(gallery) == 0:
        st.info("Your gallery is empty: upload images with captions above, or pick the built-in demo in the sidebar.")
        return
    try:
        bench = ui.get_bench(st.session_state["model_spec"], st.session_state.get("device", "auto"), gid, gallery)
    except ValueError as e:
        st.warning(str(e))
        return

    # ---- controls -----------------------------------------------------------------------------------
    img_specs = [s for s in list_perturbations(modality="image") if s.available]
    txt_specs = [s for s in list_perturbations(modality="text") if s.available]
    img_names = ["(none)"] + [s.name for s in img_specs]
    txt_names = ["(none)"] + [s.name for s in txt_specs]
    cat_of = {s.name: s.category for s in img_specs + txt_specs}


    def fmt(name: str) -> str:
        return name if name == "(none)" else f"{cat_of[name]} · {name}"


    captioned = bench.captioned
    c1, c2 = st.columns([3, 2])
    with c1:
        mode = st.radio("Query", ["gallery caption", "my own text"], horizontal=True, key="query_mode")
        if mode == "gallery caption":
            qi = st.selectbox("Caption (its image is the ground truth)", captioned, key="query_idx",
                              format_func=lambda i: f"#{i} · {gallery.captions[i]}")
            qtext, gt = None, qi
        else:
            qtext = st.text_input("Query text", value="a large red circle at the left on a gray background",
                                  key="query_text")
            gt_choice = st.selectbox("Ground-truth image (optional)", [None] + list(range(len(gallery))),
                                     key="query_gt", format_func=lambda i: "none" if i is None else
                                     f"#{i} · {gallery.names[i]}")
            qi, gt = None, gt_choice
    with c2:
        k = st.slider("Top-k", 1, min(20, len(gallery)), min(5, len(gallery)), key="topk")
        seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="seed",
                               help="Gallery item i is perturbed with seed + i; the typed query with seed.")

    p1, p2 = st.columns(2)
    with p1:
        ip = st.selectbox("Image perturbation", img_names, key="img_pert", format_func=fmt,
                          index=img_names.index("gaussian_noise") if "gaussian_noise" in img_names else 0)
        isev = st.slider("Image severity", 0, 5, 3, key="img_sev", disabled=ip == "(none)")
    with p2:
        tp = st.selectbox("Text perturbation", txt_names, key="txt_pert", format_func=fmt,
                          index=txt_names.index("keyboard") if "keyboard" in txt_names else 0)
        tsev = st.slider("Text severity", 0, 5, 2, key="txt_sev", disabled=tp == "(none)")

    icond = Condition(None if ip == "(none)" else ip, isev, int(seed))
    tcond = Condition(None if tp == "(none)" else tp, tsev, int(seed))

    bar = st.progress(0.0, text="Encoding the gallery…")


    def progress(done, total):
        bar.progress(done / max(total, 1), text=f"Encoding the gallery… {done}/{total}")


    try:
        cmp = bench.compare(icond, tcond, query_index=qi, query_text=qtext, gt_index=gt, k=k, progress=progress)
    except (InputError, ValueError) as e:
        bar.empty()
        st.warning(str(e))
        return
    bar.empty()

    # ---- results ------------------------------------------------------------------------------------
    m1, m2, m3 = st.columns(3)
    m1.metric("Ground-truth rank, clean", "—" if cmp.clean.gt_rank is None else cmp.clean.gt_rank)
    m2.metric("Ground-truth rank, perturbed", "—" if cmp.perturbed.gt_rank is None else cmp.perturbed.gt_rank,
              delta=None if cmp.rank_change is None else -cmp.rank_change,
              help="Positive delta: the ground truth moved up; negative: it fell.")
    both = cmp.metrics["both perturbed"]["t2i"]["R@1"] - cmp.metrics["clean"]["t2i"]["R@1"]
    m3.metric("Gallery text→image R@1", f"{cmp.metrics['both perturbed']['t2i']['R@1']:.3f}", delta=f"{both:+.3f}")

    # user text is shown with st.text (never markdown: "$", "*" or "<" in a caption must stay literal)
    q1, q2 = st.columns(2)
    q1.caption("Query, clean")
    q1.text(cmp.query)
    q2.caption(f"Query, perturbed ({tcond.label()})")
    q2.text(cmp.perturbed_query)
    for n in cmp.notes:
        st.warning(n)

    imgs_p, _, _ = bench.images(icond)


    def show_ranked(ranked, images, title, key):
        st.subheader(title)
        with st.container(key=key):
            cols = st.columns(min(5, len(ranked.indices)))
            for j, (i, s) in enumerate(zip(ranked.indices, ranked.scores)):
                hit = " ✓ ground truth" if i == cmp.gt_index else ""
                with cols[j % len(cols)]:
                    st.image(images[i], caption=f"#{j + 1} · {s:.3f} · item {i}{hit}", width="stretch")


    left, right = st.columns(2)
    with left:
        show_ranked(cmp.clean, gallery.images, "Clean top-k", "ranked_clean")
    with right:
        show_ranked(cmp.perturbed, imgs_p, f"Perturbed top-k ({icond.label()} / {tcond.label()})", "ranked_perturbed")

    st.subheader("Gallery metrics")
    rows = []
    for cond, dirs in cmp.metrics.items():
        for d, m in dirs.items():
            rows.append({"condition": cond, "direction": "text→image" if d == "t2i" else "image→text",
                         **{kk: round(v, 4) for kk, v in m.items()}})
    df = pd.DataFrame(rows)
    st.dataframe(df, hide_index=True, width="stretch", key="metrics_table")
    fig = go.Figure()
    for cond in ("clean", "image perturbed", "text perturbed", "both perturbed"):
        m = cmp.metrics[cond]["t2i"]
        fig.add_bar(name=cond, x=["R@1", "R@5", "R@10"], y=[m["R@1"], m["R@5"], m["R@10"]])
    fig.update_layout(barmode="group", yaxis_title="text→image recall", yaxis_range=[0, 1], height=320,
                      margin=dict(t=20, b=20))
    st.plotly_chart(fig, key="metrics_chart")

    with st.expander("Perturbation records (regenerate any example exactly)"):
        if cmp.query_record:
            st.caption("Query")
            st.json(cmp.query_record)
        if cmp.gt_index is not None:
            _, recs, _ = bench.images(icond)
            if recs:
                st.caption(f"Ground-truth image (item {cmp.gt_index})")
                st.json(recs[cmp.gt_index])
        if not cmp.query_record and not (cmp.gt_index is not None and bench.images(icond)[1]):
            st.write("Nothing is perturbed.")


# ---- videos: text→video and video→text over the built-in event-video gallery -------------------------------
def video_main():
    got = ui.current_video_bench()
    if got is None:
        return
    spec, _, gid, gallery, bench = got

    vid_specs = [s for s in list_perturbations(modality="video") if s.available]
    txt_specs = [s for s in list_perturbations(modality="text") if s.available]
    vid_names = ["(none)"] + [s.name for s in vid_specs]
    txt_names = ["(none)"] + [s.name for s in txt_specs]
    cat_of = {s.name: s.category for s in vid_specs + txt_specs}

    def fmt(name: str) -> str:
        return name if name == "(none)" else f"{cat_of[name]} · {name}"

    n = len(gallery)
    c1, c2 = st.columns([3, 2])
    with c1:
        direction = st.radio("Direction", ["text→video", "video→text"], horizontal=True, key="v_direction")
        qtext, qi = None, None
        if direction == "text→video":
            mode = st.radio("Query", ["gallery caption", "my own text"], horizontal=True, key="v_query_mode")
            if mode == "gallery caption":
                qi = st.selectbox("Caption (videos with this caption are the ground truth)", list(range(n)),
                                  key="v_query_idx", format_func=lambda i: f"#{i} · {gallery.captions[i]}")
            else:
                qtext = st.text_input("Query text", value="the red circle moves left, then the blue square appears",
                                      key="v_query_text")
        else:
            qi = st.selectbox("Query video (captions equal to its caption are the ground truth)", list(range(n)),
                              key="v_query_video", format_func=lambda i: f"#{i} · {gallery.captions[i]}")
    with c2:
        k = st.slider("Top-k", 1, min(10, n), min(5, n), key="v_topk")
        seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="v_seed",
                               help="Gallery item i is perturbed with seed + i; the typed query with seed.")

    p1, p2 = st.columns(2)
    with p1:
        vp = st.selectbox("Video perturbation", vid_names, key="vid_pert", format_func=fmt,
                          index=vid_names.index("reverse_sampling") if "reverse_sampling" in vid_names else 0)
        vsev = st.slider("Video severity", 0, 5, 1, key="vid_sev", disabled=vp == "(none)")
    with p2:
        tp = st.selectbox("Text perturbation", txt_names, key="vtxt_pert", format_func=fmt, index=0)
        tsev = st.slider("Text severity", 0, 5, 2, key="vtxt_sev", disabled=tp == "(none)")

    vcond = Condition(None if vp == "(none)" else vp, vsev, int(seed))
    tcond = Condition(None if tp == "(none)" else tp, tsev, int(seed))

    bar = st.progress(0.0, text="Encoding the video gallery…")

    def progress(done, total):
        bar.progress(min(done / max(total, 1), 1.0), text=f"Perturbing and encoding the videos… {done}/{total}")

    try:
        cmp = bench.compare(vcond, tcond, direction="t2v" if direction == "text→video" else "v2t",
                            query_index=qi, query_text=qtext, k=k, progress=progress)
    except (InputError, ValueError) as e:
        bar.empty()
        st.warning(str(e))
        return
    bar.empty()

    m1, m2, m3 = st.columns(3)
    m1.metric("Ground-truth rank, clean", "—" if cmp.clean.gt_rank is None else cmp.clean.gt_rank)
    m2.metric("Ground-truth rank, perturbed", "—" if cmp.perturbed.gt_rank is None else cmp.perturbed.gt_rank,
              delta=None if cmp.rank_change is None else -cmp.rank_change,
              help="Positive delta: the ground truth moved up; negative: it fell.")
    d = cmp.direction
    r1 = cmp.metrics["both perturbed"][d]["R@1"]
    m3.metric(f"Gallery {direction} R@1", f"{r1:.3f}", delta=f"{r1 - cmp.metrics['clean'][d]['R@1']:+.3f}")
    for note in cmp.notes:
        st.warning(note)

    vids_p, vrecs, _ = bench.videos(vcond)
    caps_p, _, _ = bench.texts(tcond)

    def show_video(frames, cond, i, caption, slot):
        # alt names the slot: the same video can be on screen twice (clean and perturbed top-k), and Streamlit
        # needs distinct elements
        st.video(ui.video_mp4(gid, str(cond.key()), int(i), frames), format="video/mp4", loop=True,
                 autoplay=True, muted=True, alt=f"{slot}: video {i}")
        st.caption(caption)

    if d == "t2v":
        q1, q2 = st.columns(2)
        q1.caption("Query, clean")
        q1.text(cmp.query)
        q2.caption(f"Query, perturbed ({tcond.label()})")
        q2.text(cmp.perturbed_query)

        def show_ranked(ranked, videos, cond, title, key):
            st.subheader(title)
            with st.container(key=key):
                cols = st.columns(min(5, len(ranked.indices)))
                for j, (i, s) in enumerate(zip(ranked.indices, ranked.scores)):
                    hit = " ✓ ground truth" if i in cmp.gt else ""
                    with cols[j % len(cols)]:
                        show_video(videos[i], cond, i, f"#{j + 1} · {s:.3f} · video {i}{hit}", f"{key} #{j + 1}")

        left, right = st.columns(2)
        with left:
            show_ranked(cmp.clean, gallery.videos, Condition(), "Clean top-k", "v_ranked_clean")
        with right:
            show_ranked(cmp.perturbed, vids_p, vcond, f"Perturbed top-k ({vcond.label()} / {tcond.label()})",
                        "v_ranked_perturbed")
    else:
        q1, q2 = st.columns(2)
        with q1:
            st.caption("Query video, clean")
            show_video(gallery.videos[qi], Condition(), qi, gallery.captions[qi], "query, clean")
        with q2:
            st.caption(f"Query video, perturbed ({vcond.label()})")
            show_video(vids_p[qi], vcond, qi, f"{len(vids_p[qi])} frames", "query, perturbed")

        def caption_table(ranked, caps, key):
            rows = [{"rank": j + 1, "caption": caps[i], "score": round(s, 4), "item": i,
                     "ground truth": "✓" if i in cmp.gt else ""}
                    for j, (i, s) in enumerate(zip(ranked.indices, ranked.scores))]
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=key)

        left, right = st.columns(2)
        with left:
            st.subheader("Clean top-k captions")
            caption_table(cmp.clean, gallery.captions, "v_ranked_captions_clean")
        with right:
            st.subheader(f"Perturbed top-k captions ({vcond.label()} / {tcond.label()})")
            caption_table(cmp.perturbed, caps_p, "v_ranked_captions_perturbed")

    st.subheader("Gallery metrics")
    rows = []
    for cond, dirs in cmp.metrics.items():
        for dd, m in dirs.items():
            rows.append({"condition": cond, "direction": "text→video" if dd == "t2v" else "video→text",
                         **{kk: round(v, 4) for kk, v in m.items()}})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="v_metrics_table")
    fig = go.Figure()
    for cond in ("clean", "video perturbed", "text perturbed", "both perturbed"):
        m = cmp.metrics[cond][d]
        fig.add_bar(name=cond, x=["R@1", "R@5", "R@10"], y=[m["R@1"], m["R@5"], m["R@10"]])
    fig.update_layout(barmode="group", yaxis_title=f"{direction} recall", yaxis_range=[0, 1], height=320,
                      margin=dict(t=20, b=20))
    st.plotly_chart(fig, key="v_metrics_chart")

    with st.expander("Perturbation records (regenerate any example exactly)"):
        shown = False
        if cmp.query_record:
            st.caption("Query")
            st.json(cmp.query_record)
            shown = True
        if vrecs and cmp.gt:
            st.caption(f"Ground-truth video (item {cmp.gt[0]})")
            st.json(vrecs[cmp.gt[0]])
            shown = True
        if not shown:
            st.write("Nothing is perturbed.")


if GALLERY_KIND == "videos":
    video_main()
else:
    main()
