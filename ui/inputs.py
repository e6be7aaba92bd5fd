"""One input to perturb (the Perturb page): a built-in world item, an uploaded file, or a typed caption."""
from __future__ import annotations

import streamlit as st

from robustlab.datasets.synthetic import world
from robustlab.datasets.synthetic.datasets import BUILTIN_VIDEO_FPS
from robustlab.export.basket import LoadedInput, builtin_source, load_upload, typed_source
from robustlab.io.files import InputError, clean_caption
from ui.state import DEMO_N, get_builtin_gallery

VIDEO_MAX_FRAMES, VIDEO_MAX_SIDE = 300, 320  # uploads are bounded so that every severity stays interactive
BUILTIN_VIDEO_SIZE, BUILTIN_VIDEOS = 128, 200
KINDS = {"image": "Image", "video": "Video", "text": "Caption"}
UPLOAD_TYPES = {"image": ["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"],
                "video": ["mp4", "webm", "avi", "mov", "mkv", "m4v"],
                "text": ["txt", "csv", "tsv", "json"]}
UPLOAD_HELP = {"image": "Any image Pillow reads (gray, RGBA, 16-bit included), up to 50 MB and 40 megapixels.",
               "video": f"mp4, webm, avi, mov; up to 50 MB. Read with PyAV, at most {VIDEO_MAX_FRAMES} frames "
                        f"(sampled uniformly) and {VIDEO_MAX_SIDE} px on the long side.",
               "text": "UTF-8 .txt (one caption per line), .csv with a caption column, or .json."}


@st.cache_resource(show_spinner=False, max_entries=16)
def builtin_video(seed: int, index: int, size: int):
    v = world.sample_video(seed, index)
    return world.render_video(v, size), v.caption


def choose_input(kind: str) -> LoadedInput | None:
    """The input of ``kind`` ("image", "video", "text") the user picks, or None after saying what is missing."""
    sources = ["builtin", "upload"] + (["typed"] if kind == "text" else [])
    labels = {"builtin": "Built-in world", "upload": "Upload", "typed": "Type a caption"}
    src = st.radio("From", sources, key=f"pt_source_{kind}", horizontal=True, format_func=labels.get)
    if src == "builtin":
        return _builtin(kind)
    if src == "typed":
        typed = st.text_area("Caption", "a small red circle at the top left on a gray background", key="pt_typed")
        try:
            return LoadedInput("text", [clean_caption(typed, "caption")], typed_source(), "typed")
        except InputError as e:
            st.error(str(e))
            return None
    return _upload(kind)


def _builtin(kind: str) -> LoadedInput:
    if kind == "video":
        i = int(st.number_input("Built-in event video", 0, BUILTIN_VIDEOS - 1, 0, key="pt_video_idx"))
        frames, caption = builtin_video(world.DEMO_SEED, i, BUILTIN_VIDEO_SIZE)
        st.caption(f"“{caption}” · {len(frames)} frames at {BUILTIN_VIDEO_FPS:g} fps")
        src = builtin_source("video", world.DEMO_SEED, i, size=BUILTIN_VIDEO_SIZE)
        return LoadedInput("video", frames, src, f"video-{world.DEMO_SEED}-{i:05d}", fps=BUILTIN_VIDEO_FPS)
    g = get_builtin_gallery(DEMO_N)
    if kind == "image":
        i = int(st.number_input("Built-in scene", 0, len(g) - 1, 0, key="pt_image_idx"))
        st.caption(f"#{i} · “{g.captions[i]}”")
        return LoadedInput("image", g.images[i], builtin_source("gallery", g.meta[i]["seed"], i, g.names[i]),
                           g.names[i])
    i = st.selectbox("Built-in caption", range(len(g)), key="pt_caption_idx",
                     format_func=lambda j: f"#{j} · {g.captions[j]}")
    return LoadedInput("text", [g.captions[i]], builtin_source("gallery", g.meta[i]["seed"], i, g.names[i],
                                                               field="caption"), g.names[i])


def _upload(kind: str) -> LoadedInput | None:
    """Decoded once per file; a bad file shows why and keeps the last good one."""
    item_key, err_key, id_key = f"pt_item_{kind}", f"pt_error_{kind}", f"pt_upload_id_{kind}"
    f = st.file_uploader(f"{KINDS[kind]} file", type=UPLOAD_TYPES[kind], key=f"pt_upload_{kind}",
                         help=UPLOAD_HELP[kind])
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
