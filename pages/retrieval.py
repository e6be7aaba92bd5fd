"""Retrieval: text→image / image→text (or text→video / video→text) on the sidebar's dataset, clean vs perturbed,
side by side."""
from __future__ import annotations

import streamlit as st

import ui
import ui.compare
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import DIRECTION_LABELS
from ui.warmup import RETRIEVAL_DEFAULTS as DEFAULTS, RETRIEVAL_SEED  # what the server's warm-up computes first
TYPED = {"image": "a large red circle at the left on a gray background",
         "video": "the red circle moves left, then the blue square appears"}

st.header("Retrieval — clean vs perturbed")
ctx = ui.current_bench()
if ctx is None:
    st.stop()
bench, ds, kind = ctx.bench, ctx.dataset, ctx.bench.kind
texts = bench.caption_texts
items = sorted(bench.caption_of)  # captioned items: they query with their first caption, or as visuals
names = getattr(ds, "names", None)


def item_label(i):
    return "none" if i is None else f"#{i} · {names[i] if names else texts[bench.caption_of[i]]}"


# ---- controls ---------------------------------------------------------------------------------------------
c1, c2 = st.columns([3, 2])
with c1:
    d = st.radio("Direction", bench.directions, key="direction", horizontal=True, format_func=DIRECTION_LABELS.get,
                 **ui.valid("direction", bench.directions, format_func=DIRECTION_LABELS.get))
    qi = qtext = gt = None
    if d[0] == "t":
        modes = ["gallery caption", "my own text"]
        mode = st.radio("Query", modes, horizontal=True, key="query_mode", **ui.initial("query_mode", modes, index=0))
        if mode == "gallery caption":
            cap = lambda i: f"#{i} · {texts[bench.caption_of[i]]}"  # noqa: E731
            qi = st.selectbox(f"Caption (its {kind} is the ground truth)", items, key="query_idx", format_func=cap,
                              **ui.valid("query_idx", items, format_func=cap))
        else:
            if st.session_state.get("_typed_kind") != kind and "query_text" in st.session_state:
                st.session_state["query_text"] = TYPED[kind]  # the other kind's example no longer applies
            st.session_state["_typed_kind"] = kind
            qtext = st.text_input("Query text", key="query_text", **ui.initial("query_text", value=TYPED[kind]))
            gts = [None] + list(range(len(ds)))
            gt = st.selectbox(f"Ground-truth {kind} (optional)", gts, key="query_gt", format_func=item_label,
                              **ui.valid("query_gt", gts, format_func=item_label))
    else:
        qi = st.selectbox(f"Query {kind} (its captions are the ground truth)", items, key="query_visual",
                          format_func=item_label, **ui.valid("query_visual", items, format_func=item_label))
with c2:
    hi = min(20 if kind == "image" else 10, len(ds) if d[0] == "t" else len(texts))
    k = ui.int_slider("Top-k", 1, hi, 5, key="topk")
    seed = int(st.number_input("Seed", 0, 2**31 - 1, key="seed", **ui.initial("seed", value=RETRIEVAL_SEED),
                               help="Item i is perturbed with seed + i; the typed query with seed."))
vcond, tcond = ui.condition_row(kind, "", seed, DEFAULTS[kind])

# the ranking first (text→visual encodes only the query's captions), the gallery metrics after it
failed = f"{vcond.label()} / {tcond.label()} failed on this dataset"
cmp = ui.compute(bench, vcond, tcond, lambda: bench.compare(vcond, tcond, query_index=qi, query_text=qtext,
                                                             gt_index=gt, k=k, direction=d, metrics=False),
                 msg="Ranking…", failure=failed, texts=False)
if cmp is None:
    st.stop()

# ---- results ----------------------------------------------------------------------------------------------
m1, m2, m3 = st.columns(3)
m1.metric("Ground-truth rank, clean", "—" if cmp.clean.gt_rank is None else cmp.clean.gt_rank)
m2.metric("Ground-truth rank, perturbed", "—" if cmp.perturbed.gt_rank is None else cmp.perturbed.gt_rank,
          delta=None if cmp.rank_change is None else -cmp.rank_change,
          help="Positive delta: the ground truth moved up; negative: it fell.")
r1_slot = m3.empty()
r1_slot.caption(f"Gallery {DIRECTION_LABELS[d]} R@1: computing below…")
for note in cmp.notes:
    st.warning(note)

vis_c, (vis_p, vrecs, _) = bench.visuals()[0], bench.visuals(vcond)
show = dict(kind=kind, gid=ctx.gid, fps=ui.fps_of(ds))
q1, q2 = st.columns(2)
left, right = st.columns(2)
title = f"Perturbed top-k ({vcond.label()} / {tcond.label()})"
if d[0] == "t":
    # user text is shown with st.text (never markdown: "$", "*" or "<" in a caption must stay literal)
    q1.caption("Query, clean")
    q1.text(cmp.query)
    q2.caption(f"Query, perturbed ({tcond.label()})")
    q2.text(cmp.perturbed_query)
    with left:
        ui.ranked_grid("Clean top-k", "ranked_clean", cmp.clean, vis_c, cmp.gt, cond=Condition(), **show)
    with right:
        ui.ranked_grid(title, "ranked_perturbed", cmp.perturbed, vis_p, cmp.gt, cond=vcond, **show)
else:
    with q1:
        st.caption(f"Query {kind}, clean")
        ui.show_visual(vis_c[qi], cond=Condition(), index=qi, slot="query, clean", **show)
    with q2:
        st.caption(f"Query {kind}, perturbed ({vcond.label()})")
        ui.show_visual(vis_p[qi], cond=vcond, index=qi, slot="query, perturbed", **show)
    with left:
        ui.ranked_captions("Clean top-k captions", "ranked_captions_clean", cmp.clean, texts, cmp.gt)
    with right:
        ui.ranked_captions(title.replace("top-k", "top-k captions"), "ranked_captions_perturbed", cmp.perturbed,
                           bench.texts(tcond)[0], cmp.gt)  # encoded by compare() for a visual query

st.subheader("Gallery metrics")
mets = ui.gallery_metrics(bench, vcond, tcond, failure=failed)
if mets is not None:
    ui.widgets.headline_r1(r1_slot, mets, d, kind)  # labelled with the condition it is (from mets)
    ui.metrics_table(mets, "metrics_table", mean=True)  # with Qiu's per-direction mean recall (issue 48)
    ui.recall_chart(mets, d, "metrics_chart")

base = ui.compare.baseline(ctx)
if base is not None:
    ui.compare.retrieval_panel(ctx, base, vcond, tcond, d, dict(query_index=qi, query_text=qtext, gt_index=gt, k=k),
                               mets, cmp)

with st.expander("Perturbation records (regenerate any example exactly)"):
    gt_recs = vrecs if d[0] == "t" else bench.texts(tcond)[1]
    if cmp.query_record:
        st.caption("Query")
        st.json(cmp.query_record)
    if gt_recs and cmp.gt:
        st.caption(f"Ground truth ({kind if d[0] == 't' else 'caption'} {cmp.gt[0]})")
        st.json(gt_recs[cmp.gt[0]])
    if not cmp.query_record and not (gt_recs and cmp.gt):
        st.write("Nothing is perturbed.")
