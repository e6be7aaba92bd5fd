"""One input: to perturb (the Perturb page: a built-in world item, an uploaded file, or a typed caption), or to
ground (the Grounding page: an item of the sidebar's dataset, or an uploaded image, and an expression)."""
from __future__ import annotations

import streamlit as st

from robustlab.datasets.synthetic import world
from robustlab.datasets.synthetic.datasets import BUILTIN_VIDEO_FPS
from robustlab.export.basket import LoadedInput, builtin_source, load_upload, typed_source
from robustlab.io.files import InputError, clean_caption, uploaded_bytes
from ui.media import safe_md
from ui.server_guard import arrived, current_session_id
from ui.loaders import DEMO_N, current_dataset, get_builtin_gallery
from ui.widget_state import clamp, initial, valid
from ui.cache import shared

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


@shared("results")
def builtin_video(seed: int, index: int, size: int):
    v = world.sample_video(seed, index)
    return world.render_video(v, size), v.caption


def choose_input(kind: str) -> LoadedInput | None:
    """The input of ``kind`` ("image", "video", "text") the user picks, or None after saying what is missing."""
    sources = ["dataset", "builtin", "upload"] + (["typed"] if kind == "text" else [])
    labels = {"dataset": "From the sidebar's dataset", "builtin": "Built-in world", "upload": "Upload",
              "typed": "Type a caption"}
    d, g = st.session_state.get("dataset", "builtin"), st.session_state.get("upload_gallery")
    held = {"builtin": "image", "builtin-videos": "video", "upload": getattr(g, "kind", None)}.get(d, kind)
    first = "dataset" if kind in ("text", held) else "builtin"  # the sidebar's dataset, where it holds this kind
    src = st.radio("From", sources, key=f"pt_source_{kind}", horizontal=True, format_func=labels.get,
                   **valid(f"pt_source_{kind}", sources, first))
    if src == "dataset":
        return _sidebar_item(kind)
    if src == "builtin":
        return _builtin(kind)
    if src == "typed":
        typed = st.text_area("Caption", key="pt_typed",
                             **initial("pt_typed", value="a small red circle at the top left on a gray background"))
        try:
            return LoadedInput("text", [clean_caption(typed, "caption")], typed_source(), "typed")
        except InputError as e:
            st.error(str(e))
            return None
    return upload(kind)


def _sidebar_item(kind: str) -> LoadedInput | None:
    """An item of the sidebar's dataset (built-in, uploads or a local folder): its image or video, or its caption;
    None after one line when the dataset holds the other kind of visual."""
    from robustlab.export.selection import gallery_source

    got = current_dataset()
    if got is None:
        return None
    _, ds = got
    if kind != "text" and ds.kind != kind:
        st.info(f"The sidebar's dataset holds {ds.kind}s: pick the built-in world or upload a {KINDS[kind].lower()}.")
        return None
    clamp("pt_ds_item", 0, len(ds) - 1)
    i = int(st.number_input(f"Item of the sidebar's dataset (of {len(ds)})", 0, len(ds) - 1, key="pt_ds_item",
                            **initial("pt_ds_item", value=0)))
    item = ds.item(i)
    if kind == "text":
        caption = next((t for t in item.texts if t and t.strip()), "")
        st.text(f"#{i} · {item.id} · “{caption}”")  # dataset text: literal
        return LoadedInput("text", [caption], gallery_source(ds, i, field="caption"), item.id) if caption else None
    st.text(f"#{i} · {item.id}" + (f" · “{item.texts[0]}”" if item.texts else ""))
    fps = float(getattr(ds, "fps", None) or BUILTIN_VIDEO_FPS) if kind == "video" else None
    return LoadedInput(kind, ds.visual(i), gallery_source(ds, i), item.id, fps=fps)


def _builtin(kind: str) -> LoadedInput:
    if kind == "video":
        i = int(st.number_input("Built-in event video", 0, BUILTIN_VIDEOS - 1, key="pt_video_idx",
                                **initial("pt_video_idx", value=0)))
        frames, caption = builtin_video(world.DEMO_SEED, i, BUILTIN_VIDEO_SIZE)
        st.caption(f"“{caption}” · {len(frames)} frames at {BUILTIN_VIDEO_FPS:g} fps")
        src = builtin_source("video", world.DEMO_SEED, i, size=BUILTIN_VIDEO_SIZE)
        return LoadedInput("video", frames, src, f"video-{world.DEMO_SEED}-{i:05d}", fps=BUILTIN_VIDEO_FPS)
    g = get_builtin_gallery(DEMO_N)
    if kind == "image":
        clamp("pt_image_idx", 0, len(g) - 1)
        i = int(st.number_input("Built-in scene", 0, len(g) - 1, key="pt_image_idx",
                                **initial("pt_image_idx", value=0)))
        st.caption(f"#{i} · “{safe_md(g.captions[i])}”")
        return LoadedInput("image", g.images[i], builtin_source("gallery", g.meta[i]["seed"], i, g.names[i]),
                           g.names[i])
    cap = lambda j: f"#{j} · {g.captions[j]}"  # noqa: E731
    i = st.selectbox("Built-in caption", range(len(g)), key="pt_caption_idx", format_func=cap,
                     **valid("pt_caption_idx", range(len(g)), format_func=cap))
    return LoadedInput("text", [g.captions[i]], builtin_source("gallery", g.meta[i]["seed"], i, g.names[i],
                                                               field="caption"), g.names[i])


def upload(kind: str) -> LoadedInput | None:
    """Decoded once per file; a bad file shows why and keeps the last good one."""
    item_key, err_key, id_key = f"pt_item_{kind}", f"pt_error_{kind}", f"pt_upload_id_{kind}"
    f = st.file_uploader(f"{KINDS[kind]} file", type=UPLOAD_TYPES[kind], key=f"pt_upload_{kind}",
                         help=UPLOAD_HELP[kind])
    if f is not None and st.session_state.get(id_key) != f.file_id:
        st.session_state[id_key] = f.file_id
        arrived(current_session_id(), [f.name])  # not one the upload form should miss (ui.uploads.left_out)
        try:
            with st.spinner(f"Reading {safe_md(f.name)}…"):  # a file name: text, never Markdown (issue 44)
                st.session_state[item_key] = load_upload(kind, f.name, uploaded_bytes(f), max_frames=VIDEO_MAX_FRAMES,
                                                         max_side=VIDEO_MAX_SIDE)  # .size checked before getvalue()
            st.session_state.pop(err_key, None)
        except InputError as e:
            st.session_state[err_key] = str(e)
    if st.session_state.get(err_key):
        st.error(safe_md(st.session_state[err_key]))
    item = st.session_state.get(item_key)
    if item is None:
        st.info(f"Upload {'an image' if kind == 'image' else 'a ' + KINDS[kind].lower()} file to perturb it, "
                "or pick the built-in world.")
        return None
    if st.session_state.get(err_key):
        st.caption(f"Still using the last good upload: {safe_md(item.label)}")
    if item.note:
        st.caption(f"{safe_md(item.label)}: {safe_md(item.note)}")
    if kind == "text":
        line = lambda k: f"line {k + 1} · {item.data[k]}"  # noqa: E731
        j = st.selectbox("Caption from the file", range(len(item.data)), key="pt_upload_caption_idx", format_func=line,
                         **valid("pt_upload_caption_idx", range(len(item.data)), format_func=line))
        j = min(j or 0, len(item.data) - 1)
        return LoadedInput("text", [item.data[j]], {**item.source, "line": j}, item.label)
    return item


def grounding_input():
    """(image, expression, ground-truth box or None, source, label, "dataset" | "upload"), or None after saying
    what is missing: an item of the sidebar's dataset, or one uploaded image, and an expression."""
    with st.container(border=True):
        src = st.radio("Image", ["dataset", "upload"], key="gr_source", horizontal=True,
                       **valid("gr_source", ["dataset", "upload"]),
                       format_func=lambda s: "Upload" if s == "upload" else "From the sidebar's dataset")
        got = _dataset_target() if src == "dataset" else _uploaded_image()
        if got is None:
            return None
        image, expr, gt, source, label = got
        if not expr.strip():  # nothing yet for this image: a prompt; typed blanks: an error
            (st.error if expr else st.info)("Type a referring expression (e.g. \u201cthe small red circle\u201d).")
            return None
    return image, expr.strip(), gt, source, label, src


_EXPR_OWNER = "_gr_expr_owner"  # expression widget key -> the input (and derived expression) it was drawn for


def _expression_input(key: str, owner: tuple, default: str, **kw) -> str:
    """The referring-expression box of one input, bound to it: ``owner`` names the input (dataset, item, target or
    upload) and ``default`` the expression derived for it. When the same key comes back for another input (another
    dataset's item 0, another upload) the box is reset to that input's expression through the Session State API
    (the browser is told), so a typed or derived expression never follows the user to an input it was not meant
    for; for the same input the typed text stays."""
    s = st.session_state
    owners = s.setdefault(_EXPR_OWNER, {})
    if key in owners and owners[key] != owner:
        s[key] = default
    owners[key] = owner
    return st.text_input("Referring expression", key=key, placeholder="e.g. the small red circle",
                         **initial(key, value=default), **kw)


def _dataset_target():
    """An item of the sidebar's dataset (built-in scenes when it holds videos) and its target: in the built-in
    world any object of the scene, with its box; in a dataset with referring expressions one of them; else a
    typed expression without ground truth."""
    from robustlab.export.selection import gallery_source

    got = current_dataset()
    if got is None:
        return None
    ds_id, ds = got
    if ds.kind != "image":
        st.info("Grounding works on images: showing the built-in scenes (the sidebar's dataset holds videos).")
        ds = get_builtin_gallery(DEMO_N)
        ds_id = ds.id
    i1, i2 = st.columns([1, 3])
    clamp("gr_scene", 0, len(ds) - 1)
    i = int(i1.number_input(f"Item (of {len(ds)})", 0, len(ds) - 1, key="gr_scene", **initial("gr_scene", value=0)))
    item, source, gt, t = ds.item(i), gallery_source(ds, i), None, 0
    expr = next((x for x in item.texts if x and x.strip()), "")  # no referring expression: the item's caption
    if hasattr(ds, "scene"):
        scene = ds.scene(i)
        phrase = lambda j: scene.objects[j].phrase()  # noqa: E731
        t = int(i2.selectbox("Target object", range(len(scene.objects)), key=f"gr_target_{i}", format_func=phrase,
                             **valid(f"gr_target_{i}", range(len(scene.objects)), format_func=phrase)))
        ref = world.referring_expression(scene, t, int(getattr(ds, "size", 128)))
        expr, gt, source = ref["expression"], tuple(float(v) for v in ref["box"]), {**source, "target": t}
    elif item.refs:
        said = lambda j: item.refs[j].expression  # noqa: E731
        t = int(i2.selectbox("Expression", range(len(item.refs)), key=f"gr_ref_{i}", format_func=said,
                             **valid(f"gr_ref_{i}", range(len(item.refs)), format_func=said)))
        expr, gt = item.refs[t].expression, tuple(float(v) for v in item.refs[t].box)
    st.text(f"#{i} · {item.id}" + (f" · “{item.texts[0]}”" if item.texts else ""))  # user text: literal
    expr = _expression_input(f"gr_expr_{i}_{t}", (ds_id, item.id, t, expr), expr,
                             help="The dataset's expression for the target, when it has one, else the item's "
                                  "caption; edit it freely (the IoU stays against the target's box). It belongs to "
                                  "this item: another item or dataset starts from its own.")
    return ds.visual(i), expr, gt, source, item.id


def _uploaded_image():
    """One uploaded image (decoded once; a bad file says why and keeps the last good one) and a typed
    expression; no ground truth."""
    f = st.file_uploader("Image file", type=UPLOAD_TYPES["image"], key="gr_upload",
                         help="Any image Pillow reads, up to 50 MB and 40 megapixels.")
    if f is not None and st.session_state.get("gr_upload_id") != f.file_id:
        st.session_state["gr_upload_id"] = f.file_id
        arrived(current_session_id(), [f.name])  # not one the upload form should miss (ui.uploads.left_out)
        try:
            st.session_state["gr_item"], st.session_state["gr_error"] = \
                load_upload("image", f.name, uploaded_bytes(f)), None  # .size checked before getvalue()
        except InputError as e:
            st.session_state["gr_error"] = str(e)
    if st.session_state.get("gr_error"):
        st.error(safe_md(st.session_state["gr_error"]))
    up = st.session_state.get("gr_item")
    if up is None:
        st.info("Upload an image, or pick an item of the sidebar's dataset.")
        return None
    st.text(f"{up.label}: {up.note} · no ground truth for an upload (IoU is to the clean prediction)")
    expr = _expression_input("gr_expr_upload", ("upload", up.source.get("sha256"), up.label), "",
                             help="What to find in this image; a new upload starts empty.")
    return up.data, expr, None, up.source, up.label
