"""Streamlit glue shared by app.py and the pages: cached loaders and the global sidebar's choices.

Kept out of ``robustlab/`` (the core is UI-free) and out of ``pages/`` (one file per view).
"""
from __future__ import annotations

import streamlit as st

from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.datasets.uploads import Gallery
from robustlab.models import ModelUnavailable, load_model
from robustlab.tasks.retrieval import RetrievalBench

DEMO_N = 300
DEFAULT_MODEL = "builtin:tiny-clip"


@st.cache_resource(show_spinner="Loading model…")
def get_model(spec: str, device: str):
    """One model instance per (spec, device) per process."""
    return load_model(spec, device=None if device == "auto" else device)


@st.cache_resource(show_spinner="Generating the built-in gallery (first run only)…")
def get_builtin_gallery(n: int = DEMO_N) -> Gallery:
    return builtin_gallery(n)


@st.cache_resource(show_spinner=False, max_entries=8)
def get_bench(spec: str, device: str, gallery_id: str, _gallery: Gallery) -> RetrievalBench:
    """A RetrievalBench per model and gallery: memoises perturbed galleries and their embeddings."""
    return RetrievalBench(get_model(spec, device), _gallery)


def current_model():
    """The sidebar's model, or None after showing why it can't be loaded."""
    spec = st.session_state.get("model_spec", DEFAULT_MODEL)
    device = st.session_state.get("device", "auto")
    try:
        model = get_model(spec, device)
    except (ModelUnavailable, ValueError, RuntimeError, OSError) as e:
        st.error(f"Model **{spec}** can't be loaded here: {e}")
        return None
    if model.random_init:
        st.warning(f"{spec} is randomly initialised: plumbing only, its numbers are not results.")
    return model


def current_gallery() -> tuple[str, Gallery | None]:
    """(gallery id, gallery) for the sidebar's dataset choice; the uploaded gallery lives in session state."""
    if st.session_state.get("dataset", "builtin") == "upload":
        g = st.session_state.get("upload_gallery")
        return (st.session_state.get("upload_gallery_id", "upload-empty"), g)
    return (f"builtin-{DEMO_N}", get_builtin_gallery(DEMO_N))


def current_bench(empty_hint: str):
    """(spec, device, gallery id, gallery, bench) for the sidebar's model and dataset, or None after saying why
    there is nothing to show (model unavailable, empty gallery, a bench that can't be built)."""
    if current_model() is None:
        return None
    gid, gallery = current_gallery()
    if gallery is None or len(gallery) == 0:
        st.info(empty_hint)
        return None
    return _with_bench(get_bench, gid, gallery)


def _with_bench(getter, gid: str, gallery):
    """(spec, device, gid, gallery, bench) from ``getter`` (get_bench / get_video_bench) for the sidebar's model
    and device, or None after a warning when the bench can't be built."""
    spec, device = st.session_state.get("model_spec", DEFAULT_MODEL), st.session_state.get("device", "auto")
    try:
        return spec, device, gid, gallery, getter(spec, device, gid, gallery)
    except ValueError as e:
        st.warning(str(e))
        return None


def clamp(key: str, lo: int, hi: int) -> None:
    """Keep a widget's remembered value inside its current range (a smaller gallery lowers the maximum)."""
    v = st.session_state.get(key)
    if isinstance(v, (int, float)) and not lo <= v <= hi:
        st.session_state[key] = type(v)(min(max(v, lo), hi))


def encode_then(bench, visual_cond, text_cond, compute, *, compute_msg: str, failure: str, videos: bool = False):
    """Encode the clean and perturbed gallery (memoised by the bench, embeddings on disk) with a progress bar, then
    ``compute()``; returns its result, or None after a clear message (bad input: a warning; anything a
    perturbation raises on this gallery: ``failure`` plus the error) so the page stays up."""
    from robustlab.io.files import InputError
    from robustlab.tasks.retrieval import Condition

    what = "videos" if videos else "gallery"
    bar = st.progress(0.0, text=f"Perturbing and encoding the {what}…")

    def progress(done, total):
        bar.progress(min(done / max(total, 1), 1.0), text=f"Encoding the {what}… {done}/{total}")

    encode = bench.videos if videos else bench.images
    try:
        with st.spinner(f"Perturbing and encoding the {'videos' if videos else 'images'}…"):
            encode(Condition(), progress=progress)
            encode(visual_cond, progress=progress)
        with st.spinner("Perturbing and encoding the captions…"):
            bench.texts(Condition())
            bench.texts(text_cond)
        with st.spinner(compute_msg):
            out = compute()
    except (InputError, ValueError) as e:
        st.warning(str(e))
        return None
    except Exception as e:  # noqa: BLE001 - a perturbation failing on this gallery must not take the page down
        st.error(f"{failure} ({type(e).__name__}: {e})")
        return None
    finally:
        bar.empty()
    return out


# ---- video galleries (Retrieval page, "Gallery: videos") -------------------------------------------------
VIDEO_DEMO_N = 200


@st.cache_resource(show_spinner="Generating the built-in video gallery (first run only)…")
def get_builtin_video_gallery(n: int = VIDEO_DEMO_N):
    from robustlab.tasks.video_retrieval import builtin_video_gallery

    return builtin_video_gallery(n)


@st.cache_resource(show_spinner=False, max_entries=8)
def get_video_bench(spec: str, device: str, gallery_id: str, _gallery):
    """A VideoRetrievalBench per model and video gallery: memoises perturbed videos and their embeddings."""
    from robustlab.tasks.video_retrieval import VideoRetrievalBench

    return VideoRetrievalBench(get_model(spec, device), _gallery)


@st.cache_data(show_spinner=False, max_entries=512)
def video_mp4(gallery_id: str, condition_key: str, index: int, _frames) -> bytes:
    """Browser-playable H.264 mp4 of one gallery video under one condition (cached by id, condition, index)."""
    from robustlab.tasks.video_retrieval import display_mp4

    return display_mp4(_frames)


def current_video_bench():
    """(spec, device, gallery id, gallery, bench) for the sidebar's model over the built-in event-video gallery,
    or None after saying why not (model unavailable, a bench that can't be built). Says so when the sidebar's
    dataset is an upload (uploads are images) and when the model has no temporal part."""
    model = current_model()
    if model is None:
        return None
    if st.session_state.get("dataset") == "upload":
        st.info("Video galleries are built-in only for now (your uploads are images): showing the built-in "
                f"event-video gallery ({VIDEO_DEMO_N} videos).")
    got = _with_bench(get_video_bench, f"videos-builtin-{VIDEO_DEMO_N}", get_builtin_video_gallery(VIDEO_DEMO_N))
    if got is not None and not getattr(model, "num_frames", None):
        st.caption(f"{got[0]} has no temporal model: a video is the mean of its frame embeddings (every frame).")
    return got
