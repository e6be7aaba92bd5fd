"""Perturb: any perturbation on an image, a video or a caption; every severity at a glance; keep examples."""
from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from robustlab.diagnostics.text_similarity import diff_ops, edit_stats, similarities
from robustlab.export.basket import Basket, LoadedInput, builtin_source, filmstrip, load_upload, make_example, typed_source
from robustlab.datasets.synthetic import world
from robustlab.io.files import InputError, clean_caption
from robustlab.perturb import list_perturbations, perturb
from robustlab.perturb.record import hash_value
from robustlab.tasks.video_retrieval import BUILTIN_VIDEO_FPS

VIDEO_MAX_FRAMES, VIDEO_MAX_SIDE = 300, 320  # uploads are bounded so that every severity stays interactive
BUILTIN_VIDEO_SIZE, BUILTIN_VIDEOS = 128, 200
KINDS = {"image": "Image", "video": "Video", "text": "Caption"}
UPLOAD_TYPES = {"image": ["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"],
                "video": ["mp4", "webm", "avi", "mov", "mkv", "m4v"],
                "text": ["txt", "csv", "tsv", "json"]}

st.header("Perturb — see exactly what a perturbation does")


# ---- cached work (keyed by content hashes; the underscored arguments are not hashed) -----------------------
@st.cache_resource(show_spinner=False, max_entries=48)
def run_perturbation(_x, input_hash: str, name: str, severity: int, seed: int, variant: str):
    return perturb(_x, name, severity, seed=seed, variant=variant)


@st.cache_resource(show_spinner=False, max_entries=16)
def mp4_bytes(_frames, frames_hash: str, fps: float) -> bytes:
    from robustlab.io.media import write_mp4

    return write_mp4(_frames, fps)


@st.cache_resource(show_spinner=False, max_entries=16)
def builtin_video(seed: int, index: int, size: int):
    v = world.sample_video(seed, index)
    return world.render_video(v, size), v.caption


@st.cache_resource(show_spinner="Loading MiniLM for text similarity…", max_entries=64)
def text_similarities(reference: str, texts: tuple[str, ...]) -> list[float]:
    return similarities(reference, list(texts))


# ---- input ---------------------------------------------------------------------------------------------
def choose_input(kind: str) -> LoadedInput | None:
    sources = ["builtin", "upload"] + (["typed"] if kind == "text" else [])
    labels = {"builtin": "Built-in world", "upload": "Upload", "typed": "Type a caption"}
    src = st.radio("From", sources, key=f"pt_source_{kind}", horizontal=True, format_func=labels.get)
    if src == "builtin":
        if kind == "video":
            i = st.number_input("Built-in event video", 0, BUILTIN_VIDEOS - 1, 0, key="pt_video_idx")
            frames, caption = builtin_video(world.DEMO_SEED, int(i), BUILTIN_VIDEO_SIZE)
            st.caption(f"“{caption}” · {len(frames)} frames at {BUILTIN_VIDEO_FPS:g} fps")
            src = builtin_source("video", world.DEMO_SEED, int(i), size=BUILTIN_VIDEO_SIZE)
            return LoadedInput("video", frames, src, f"video-{world.DEMO_SEED}-{int(i):05d}", fps=BUILTIN_VIDEO_FPS)
        g = ui.get_builtin_gallery(ui.DEMO_N)
        if kind == "image":
            i = int(st.number_input("Built-in scene", 0, len(g) - 1, 0, key="pt_image_idx"))
            st.caption(f"#{i} · “{g.captions[i]}”")
            return LoadedInput("image", g.images[i], builtin_source("gallery", g.meta[i]["seed"], i, g.names[i]),
                               g.names[i])
        i = st.selectbox("Built-in caption", range(len(g)), key="pt_caption_idx",
                         format_func=lambda j: f"#{j} · {g.captions[j]}")
        return LoadedInput("text", [g.captions[i]], builtin_source("gallery", g.meta[i]["seed"], i, g.names[i],
                                                                   field="caption"), g.names[i])
    if src == "typed":
        typed = st.text_area("Caption", "a small red circle at the top left on a gray background", key="pt_typed")
        try:
            cap = clean_caption(typed, "caption")
        except InputError as e:
            st.error(str(e))
            return None
        return LoadedInput("text", [cap], typed_source(), "typed")
    # upload: decoded once per file; a bad file shows why and keeps the last good one
    item_key, err_key, id_key = f"pt_item_{kind}", f"pt_error_{kind}", f"pt_upload_id_{kind}"
    help_ = {"image": "Any image Pillow reads (gray, RGBA, 16-bit included), up to 50 MB and 40 megapixels.",
             "video": f"mp4, webm, avi, mov; up to 50 MB. Read with PyAV, at most {VIDEO_MAX_FRAMES} frames "
                      f"(sampled uniformly) and {VIDEO_MAX_SIDE} px on the long side.",
             "text": "UTF-8 .txt (one caption per line), .csv with a caption column, or .json."}[kind]
    f = st.file_uploader(f"{KINDS[kind]} file", type=UPLOAD_TYPES[kind], key=f"pt_upload_{kind}", help=help_)
    if f is not None and st.session_state.get(id_key) != f.file_id:
        st.session_state[id_key] = f.file_id
        try:
            with st.spinner(f"Reading {f.name}…"):
                st.session_state[item_key] = load_upload(kind, f.name, f.getvalue(), max_frames=VIDEO_MAX_FRAMES,
                                                         max_side=VIDEO_MAX_SIDE)
            st.session_state.pop(err_key, None)
        except InputError as e:
            st.session_state[err_key] = str(e)
    if st.session_state.get(err_key):
        st.error(st.session_state[err_key])
    item = st.session_state.get(item_key)
    if item is None:
        st.info(f"Upload {'an image' if kind == 'image' else 'a ' + KINDS[kind].lower()} file to perturb it, "
                "or pick the built-in world.")
        return None
    if st.session_state.get(err_key):
        st.caption(f"Still using the last good upload: {item.label}")
    if item.note:
        st.caption(f"{item.label}: {item.note}")
    if kind == "text":
        j = st.selectbox("Caption from the file", range(len(item.data)), key="pt_upload_caption_idx",
                         format_func=lambda k: f"line {k + 1} · {item.data[k]}")
        j = min(j or 0, len(item.data) - 1)
        return LoadedInput("text", [item.data[j]], {**item.source, "line": j}, item.label)
    return item


def group_of(spec) -> str:
    return f"{spec.modality} · {spec.category}"


def md_escape(text: str) -> str:
    """Escape every Markdown/Streamlit-directive character so user text renders literally (and break URL
    autolinks with an invisible zero-width space)."""
    text = re.sub(r"(?i)(www)(\.)|(:)(//)", "\\1\\3\u200b\\2\\4", text)
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~<>$:=&^%@\"'])", r"\\\1", text).replace("\n", " ")


def diff_markdown(a: str, b: str, level: str) -> str:
    out = []
    for op, piece in diff_ops(a, b, level):
        shown = md_escape(piece) if piece.strip() else "␣" * len(piece)
        if op == "equal":
            out.append(md_escape(piece))
        elif op == "delete":
            out.append(f":red-background[{shown}]")
        else:
            out.append(f":green-background[{shown}]")
    return "".join(out) or "*(empty)*"


# ---- page ------------------------------------------------------------------------------------------------
kind = st.radio("Input", list(KINDS), key="pt_kind", horizontal=True, format_func=KINDS.get)
with st.container(border=True):
    item = choose_input(kind)
if item is None:
    st.stop()
x = item.data[0] if kind == "text" else item.data
x_hash = hash_value(x)

specs = list_perturbations(modality=kind)
if not specs:
    st.warning(f"No perturbation accepts {kind} input yet.")
    st.stop()
# default: the first available one registered for this modality (e.g. gaussian_noise, keyboard)
default_name = next((s.name for s in specs if s.available and s.modality == kind),
                    next((s.name for s in specs if s.available), specs[0].name))
specs.sort(key=lambda s: (s.modality != kind, group_of(s), s.name))  # native ops first, then per-frame ones
by_name = {s.name: s for s in specs}
unavailable = [s for s in specs if not s.available]

c1, c2, c3, c4 = st.columns([2, 3, 2, 1])
with c1:
    groups = ["all"] + list(dict.fromkeys(group_of(s) for s in specs))
    grp = st.selectbox("Category", groups, key=f"pt_group_{kind}",
                       format_func=lambda g: f"all ({len(specs)})" if g == "all" else
                       f"{g} ({sum(group_of(s) == g for s in specs)})")
with c2:
    names = [s.name for s in specs if grp == "all" or group_of(s) == grp]
    name = st.selectbox("Perturbation (type to search)", names, key=f"pt_name_{kind}",
                        index=names.index(default_name) if default_name in names else 0,
                        format_func=lambda n: f"{group_of(by_name[n])} › {n}" +
                        ("" if by_name[n].available else "  — unavailable"))
spec = by_name[name]
variants = list(spec.variants)
with c3:
    variant = st.selectbox("Variant", variants, index=variants.index(spec.default_variant), key=f"pt_variant_{name}",
                           format_func=lambda v: f"{v} (default)" if v == spec.default_variant else v)
with c4:
    seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, key="pt_seed"))

note = spec.variant_notes.get(variant, "")
st.caption(f"**{spec.name}** — {(spec.description or spec.category).rstrip('. ')}. Source: {spec.source}."
           + (f" Variant: {note}" if note else "")
           + (" Applied frame by frame to videos." if kind == "video" and spec.modality == "image" else ""))
if unavailable:
    with st.expander(f"{len(unavailable)} perturbation(s) unavailable here (listed, never run)"):
        st.dataframe(pd.DataFrame([{"perturbation": s.name, "group": group_of(s), "why": s.reason}
                                   for s in unavailable]), hide_index=True, key="pt_unavailable")
if not spec.available:
    st.warning(f"**{spec.name}** is unavailable here: {spec.reason}")
    st.stop()


def result(severity: int):
    return run_perturbation(x, x_hash, name, severity, seed, variant)


try:
    with st.spinner(f"Applying {name} at severities 1–5…"):
        strip = {k: result(k) for k in range(1, 6)}
except Exception as e:  # noqa: BLE001 - one perturbation failing must not take the page down
    st.error(f"{name} cannot run on this input: {e}" if isinstance(e, (InputError, ValueError, TypeError, RuntimeError))
             else f"{name} failed on this input ({type(e).__name__}: {e})")
    st.stop()

# ---- severity strip ---------------------------------------------------------------------------------------
st.subheader("Severities 1–5")
if kind == "image":
    with st.container(key="pt_strip"):
        cols = st.columns(5)
        for k, col in zip(range(1, 6), cols):
            col.image(strip[k].output, caption=f"severity {k}", width="stretch")
elif kind == "video":
    with st.container(key="pt_strip"):
        st.caption("Six evenly spaced frames of each severity")
        for k in range(1, 6):
            st.image(filmstrip(strip[k].output), caption=f"severity {k}", width="stretch")
else:
    outs = [strip[k].output for k in range(1, 6)]
    try:
        sims = text_similarities(x, tuple(outs))
    except (ImportError, OSError, RuntimeError) as e:  # the MiniLM weights or transformers are missing/broken
        st.warning(f"MiniLM similarity is unavailable here: {e}")
        sims = [float("nan")] * 5
    rows = [{"severity": k, "perturbed caption": o, "MiniLM cosine": round(s, 3),
             "words changed": f"{edit_stats(x, o)['changed_fraction']:.0%}"}
            for k, o, s in zip(range(1, 6), outs, sims)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="pt_strip_table")
    fig = go.Figure(go.Scatter(x=[0, 1, 2, 3, 4, 5], y=[1.0] + sims, mode="lines+markers", name="similarity"))
    fig.add_hline(y=0.9, line_dash="dot", annotation_text="0.9 semantic gate (Qiu et al. / MLVP)")
    fig.update_layout(xaxis_title="severity", yaxis_title="MiniLM cosine to the original", height=260,
                      margin=dict(t=20, b=20),
                      yaxis_range=[min([v for v in sims if v == v] + [0.5]) - 0.05, 1.02])
    st.plotly_chart(fig, key="pt_sim_chart")

# ---- one severity, side by side ----------------------------------------------------------------------------
severity = st.slider("Severity (0 = clean)", 0, 5, 3, key="pt_severity")
res = strip[severity] if severity else result(0)
left, right = st.columns(2)
with left:
    st.markdown("**Clean**")
with right:
    st.markdown(f"**{name} · {variant} · severity {severity}**")
if kind == "image":
    left.image(x, width="stretch")
    right.image(res.output, width="stretch")
elif kind == "video":
    try:
        with left:
            st.video(mp4_bytes(x, x_hash, item.fps))
        with right:
            st.video(mp4_bytes(res.output, res.record["output_hash"], item.fps))
    except (ImportError, ValueError, RuntimeError) as e:
        st.error(f"Cannot encode the video for playback: {e}")
else:
    with left:
        st.text(x)
    with right:
        level = st.radio("Diff", ["word", "char"], key="pt_diff_level", horizontal=True,
                         format_func=lambda v: "by word" if v == "word" else "by character")
        st.markdown(diff_markdown(x, res.output, level))
        st.caption("red: removed · green: inserted · ␣: a changed space")
    try:
        sim = text_similarities(x, (res.output,))[0]
    except (ImportError, OSError, RuntimeError):
        sim = float("nan")
    stats = edit_stats(x, res.output)
    m1, m2 = st.columns(2)
    m1.metric("MiniLM cosine to the original", "—" if sim != sim else f"{sim:.3f}",
              help="all-MiniLM-L6-v2 sentence embeddings (mean pooling); Qiu et al. and MLVP keep a perturbed "
                   "caption when this is ≥ 0.9")
    m2.metric("Words changed", f"{stats['deleted']} of {stats['units']}")
if res.record.get("note"):
    st.info(res.record["note"])

p1, p2 = st.columns([1, 2])
with p1:
    st.markdown("**Resolved parameters**")
    st.json(res.record["params"] or {"severity 0": "clean pass-through"}, expanded=True)
with p2:
    with st.expander("Record (regenerates this output bit for bit)"):
        st.json(res.record)

# ---- basket --------------------------------------------------------------------------------------------------
basket = st.session_state.setdefault("basket", Basket())
b1, b2 = st.columns([1, 3])
with b1:
    add = st.button("Add to basket", key="pt_add", type="primary", icon="🧺")
if add:
    ex = make_example(kind, x, res, item.source, label=item.label, fps=item.fps)
    if basket.add(ex):
        st.toast(f"Added {ex.title()}")
        st.success(f"Added to the basket ({len(basket)} example(s)).")
    else:
        st.info("This example is already in the basket.")
with b2:
    st.page_link("pages/export.py", label=f"Export the basket ({len(basket)})", icon="📦")
