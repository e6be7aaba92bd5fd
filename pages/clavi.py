"""CLAVI: does the model answer by the order of events? A video, its action-swapped complement, 19 questions."""
from __future__ import annotations

import streamlit as st

import ui
from robustlab.datasets import build
from robustlab.datasets.synthetic.clavi import METHODS, eligible
from robustlab.diagnostics.clavi import ClaviError
from robustlab.perturb.record import hash_value
from robustlab.tasks import get
from robustlab.tasks.clavi import clavi_item, clavi_one
from ui.clavi import MISSING, fine_table, metrics_table, question_table
from ui.clavi_distance import distance_section
from ui.inputs import upload
from ui.multiselect_state import kept_list
from ui.media import show_visual
from ui.cache import shared

st.header("CLAVI — does the model answer by the order of events?")
st.caption("CLAVI (Rawal et al.) swaps a video's two actions (with random boundary extensions, the gap between them "
           "kept) and asks the same 19 questions of the video V and its complement V′. Beginning/end and before/after "
           "answers must flip; a model that reads only the words and which actions occur is right on V and wrong on "
           "V′, so its consistent accuracy on the complement questions falls to zero.")
st.caption("Its own input, not the sidebar's dataset: CLAVI needs videos of two timed actions (the built-in event "
           "videos), or a video you upload here with the two actions' times.")
METHOD_HELP = {"swap": "the paper's: the extended action segments swapped (V′ has two seams)",
               "render": "not in the paper: the built-in world re-rendered with the events exchanged (no seams)"}


@shared("models")
def videos(n: int = 200):
    return build("builtin-videos", split="test", n=n)


@shared("results")
def one_builtin(spec, device, i, seed, method):
    return clavi_item(ui.get_model(spec, device), videos(), i, seed=seed, method=method)


@shared("results")
def one_upload(spec, device, _frames, frames_hash, a, b, actions, seed, fps):
    return clavi_one(ui.get_model(spec, device), _frames, a, b, list(actions), seed=seed, fps=fps, seconds=True)


got = ui.task_model("clavi", "vqa", key="cv_model")
if got is None:
    st.stop()
spec, model = got
device = ui.spec_device()[1]

src = st.radio("Input", ["builtin", "upload"], key="cv_source", horizontal=True,
               **ui.valid("cv_source", ["builtin", "upload"]),
               format_func={"builtin": "Built-in event video", "upload": "Upload a video"}.get)
c1, c2 = st.columns([1, 3])
seed = int(c1.number_input("Seed (extensions)", 0, 10_000, key="cv_seed", **ui.initial("cv_seed", value=0)))
try:
    if src == "builtin":
        ds = videos()
        ok = [i for i in range(len(ds)) if eligible(ds.scene(i))]
        i = c2.selectbox("Video (two events on different objects)", ok, key="cv_item", **ui.valid("cv_item", ok),
                         format_func=lambda j: f"#{j} · {ds.scene(j).caption}")
        method = st.radio("Complement", METHODS, key="cv_method", horizontal=True, format_func=METHOD_HELP.get,
                          **ui.valid("cv_method", METHODS))
        with st.spinner("Asking 38 questions…"):
            res = one_builtin(spec, device, int(i), seed, method)
        fps = ds.fps
    else:
        item = upload("video")
        if item is None:
            st.stop()
        fps = float(item.fps or 8.0)
        dur = len(item.data) / fps
        st.caption(f"{len(item.data)} frames at {fps:g} fps ({dur:.1f} s). Type the two actions' intervals "
                   "(seconds, no overlap) and three action phrases as gerunds (\"opening a door\"); C must never "
                   "happen in the video.")
        t = st.columns(4)
        spans = {"cv_a0": ("A from (s)", 0.0), "cv_a1": ("A to (s)", min(dur, dur / 3)),
                 "cv_b0": ("B from (s)", dur / 2), "cv_b1": ("B to (s)", dur)}
        got = []
        for col, (key, (text, start)) in zip(t, spans.items()):
            ui.clamp(key, 0.0, dur)  # another upload: a shorter video
            got.append(col.number_input(text, 0.0, dur, key=key, **ui.initial(key, value=start)))
        a, b = tuple(got[:2]), tuple(got[2:])
        w = st.columns(3)
        acts = tuple(col.text_input(text, key=key, **ui.initial(key, value=start)) for col, (text, key, start) in
                     zip(w, [("Action A", "cv_act_a", "opening a door"), ("Action B", "cv_act_b", "closing a door"),
                             ("Negative control C", "cv_act_c", "washing a car")]))
        with st.spinner("Asking 38 questions…"):
            res = one_upload(spec, device, item.data, hash_value(item.data), a, b, acts, seed, fps)
except (ClaviError, ValueError, RuntimeError) as e:
    st.error(f"Cannot build this CLAVI pair: {e}")
    st.stop()

pair = res["pair"]
v1, v2 = st.columns(2)
with v1:
    st.markdown("**V** — actions in their order")
    show_visual(pair.video, kind="video", gid=f"clavi-v-{hash_value(pair.video).split(':')[-1]}", fps=fps, slot="V",
                caption=f"A: frames {pair.a_in_v[0]}–{pair.a_in_v[1] - 1} · B: {pair.b_in_v[0]}–{pair.b_in_v[1] - 1}")
with v2:
    st.markdown("**V′** — the complement")
    seams = f" · seams after frames {pair.seams[0] - 1} and {pair.seams[1] - 1}" if pair.seams else " · no seams"
    show_visual(pair.complement, kind="video", gid=f"clavi-c-{hash_value(pair.complement).split(':')[-1]}", fps=fps,
                slot="V′", caption=f"B: frames {pair.b_in_c[0]}–{pair.b_in_c[1] - 1} · A: {pair.a_in_c[0]}–"
                                   f"{pair.a_in_c[1] - 1}{seams}")
m = res["metrics"]
k = st.columns(4)
for col, key, label in zip(k, ("balanced_acc", "cacc_v_control", "cacc_v_complement", "cacc_t_complement"),
                           ("Balanced accuracy", "CAcc_V control", "CAcc_V complement", "CAcc_T complement")):
    col.metric(label, f"{m[key]:.2f}" if m.get(key) is not None and m[key] == m[key] else MISSING)
st.dataframe(question_table(res["table"]), hide_index=True, width="stretch", key="cv_table", placeholder=MISSING)
st.caption("✓/✗: right or wrong · video-consistent: right on V and on V′ · text-consistent on V (on V′): right on the "
           "question and on its swapped-word partner Q′ on that video (E and E-NC pair with themselves) · "
           f"{MISSING}: no answer.")

# ---- over the built-in videos -----------------------------------------------------------------------------------
st.subheader("Over the built-in event videos")
d1, d2 = st.columns([1, 3])
n = int(d1.number_input("Pairs", 5, 1000, step=5, key="cv_n", **ui.initial("cv_n", value=50)))
methods = d2.multiselect("Complements", METHODS, key="cv_run_methods", format_func=METHOD_HELP.get,
                         **kept_list("cv_run_methods", METHODS, ["swap"]))
if st.button("Run CLAVI", key="cv_run", type="primary", icon=":material/play_arrow:", disabled=not methods):
    bar = st.progress(0.0, text="CLAVI…")
    with ui.widgets.one_line_failure(bar, None, "CLAVI"):  # "CLAVI cannot run: ..." (ValueError, RuntimeError)
        ds = build("builtin-videos", split="test", n=3 * n)
        runs = {}
        for j, meth in enumerate(methods):
            r = get("clavi").evaluate(model, ds, n=n, method=meth, seed=seed, progress=lambda d, tot, j=j: bar.progress(
                min((j + d / max(tot, 1)) / len(methods), 1.0), text=f"CLAVI ({meth})… {d}/{tot} pairs"))[0]
            runs[meth] = r.metrics
        st.session_state["cv_runs"] = (spec, n, runs)
runs = st.session_state.get("cv_runs")
if runs and runs[0] == spec:
    st.caption(f"{runs[1]} held-out pairs (world seed 1000) · chance balanced accuracy 0.5")
    st.dataframe(metrics_table(runs[2]), width="stretch", key="cv_metrics", placeholder=MISSING)
    for meth, mm in runs[2].items():
        st.markdown(f"Fine-grained accuracy ({meth} complement): question type × V/V′ × Q/Q′ ({MISSING}: the type "
                    "has no swapped-word Q′)")
        ft = fine_table(mm)
        st.dataframe(ft, hide_index=True, width="stretch", key=f"cv_fine_{meth}", placeholder=MISSING)
        st.download_button(f"Fine-grained table, {meth} (CSV)", ft.to_csv(index=False), file_name=f"clavi_{meth}.csv",
                           mime="text/csv", key=f"cv_csv_{meth}", icon=":material/download:")

distance_section(model, spec, lambda n: build("builtin-videos", split="test", n=n))  # App. B.7, Table 16
