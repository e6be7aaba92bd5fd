"""Showing media: an image or a video (a looping muted mp4 player), boxes drawn on an image, user text shown
literally. Videos are encoded once per (dataset, condition, item) and cached.

Players get their mp4 as a ``data:`` URL (:func:`mp4_source`), not as bytes. Bytes go to Streamlit's media file
manager, which forgets a file at the end of any script run that has not drawn it again, including a run cut short
by the viewer's next change (every full run starts by dropping the session's media references). A player the
previous run had just drawn, not yet loaded when such an interrupted run ended, then asked the server for a deleted
file: ``GET /media/<id>.mp4`` 404, "Client Error: Video source error" in the console and a player broken for good
(Retrieval's top-k or severity changed quickly on the built-in videos, CLAVI's seed, Perturb's severity or video;
tests/browser/test_browser_no_404.py). A ``data:`` URL travels with the element itself, so nothing can go missing; the
dashboard's videos are small (about 7 kB for a built-in one), and Streamlit's message cache sends a large unchanged
player (10 kB and more) again as a reference only.
"""
from __future__ import annotations

import base64
import re

import numpy as np
import streamlit as st

from robustlab.datasets.uploads import UPLOAD_VIDEO_FPS
from robustlab.perturb.condition import Condition
from ui.cache import shared

GT, CLEAN, PERT = (40, 200, 80), (30, 120, 255), (240, 60, 40)  # box colours: truth, clean, perturbed


@shared("results")
def video_mp4(gallery_id: str, condition_key: str, index: int, fps: float, _frames) -> bytes:
    """Browser-playable H.264 mp4 of one dataset video under one condition (cached by id, condition, index);
    small videos are upscaled (nearest neighbour) to about 192 px."""
    from robustlab.io.media import display_mp4

    frames = np.asarray(_frames)
    return display_mp4(frames, scale=max(1, 192 // max(frames.shape[1:3])), fps=fps)


DATA_URL_MAX = 96 * 2**20  # bytes: the largest mp4 sent inside the page (base64 stays under Streamlit's 200 MB message
# limit); the dashboard's own videos are far smaller (uploads are capped at 300 frames of 320 px)


def mp4_source(data: bytes):
    """What ``st.video`` gets for an mp4: a ``data:video/mp4;base64,...`` URL (never released between reruns, so
    never a 404), or the bytes themselves past :data:`DATA_URL_MAX`."""
    if len(data) > DATA_URL_MAX:
        return data
    return "data:video/mp4;base64," + base64.b64encode(data).decode("ascii")


def show_visual(x, *, kind: str, gid: str = "", cond: Condition = Condition(), index: int = 0, caption: str = "",
                slot: str = "", fps: float | None = None) -> None:
    """An image, or a video player (``slot`` names the player: the same video can be on screen twice and
    Streamlit needs distinct elements). The caption is robustlab's own text (never user text)."""
    if kind == "video":
        try:
            data = video_mp4(gid, str(cond.key()), int(index), float(fps or UPLOAD_VIDEO_FPS), x)
        except (ImportError, ValueError, RuntimeError) as e:
            st.error(f"Cannot encode the video for playback: {e}")
            return
        st.video(mp4_source(data), format="video/mp4", loop=True, autoplay=True, muted=True,
                 alt=f"{slot}: video {index}")
        if caption:
            st.caption(caption)
    else:
        st.image(x, caption=caption or None, width="stretch")


def fps_of(dataset) -> float:
    return float(getattr(dataset, "fps", None) or UPLOAD_VIDEO_FPS)


def boxed(image, truth=None, box=None, colour=CLEAN, label: str = "clean"):
    """The image with the ground-truth box (green) and a predicted box drawn on it."""
    from robustlab.io.draw import draw_boxes

    return draw_boxes(image, ([(truth, GT, "truth")] if truth else []) + ([(box, colour, label)] if box else []))


def md_escape(text: str) -> str:
    """Escape every Markdown/Streamlit-directive character so user text renders literally (and break URL
    autolinks with an invisible zero-width space)."""
    text = re.sub(r"(?i)(www)(\.)|(:)(//)", "\\1\\3\u200b\\2\\4", text)
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~<>$:=&^%@\"'])", r"\\\1", text).replace("\n", " ")


# an absolute server path: "/" not after a word, "~", ":" or "/" (so never a URL, "t2v/v2t" or "~/.cache"), then at
# least two components ("/centre", a variant, is one)
_SERVER_PATH = re.compile(r"(?<![\w.~:/\\-])/(?:[^\s/'\"`,;:()\[\]<>|]+/)+[^\s/'\"`,;:()\[\]<>|]*")
SERVER_PATH = "a path on the server"


def hide_paths(text: str) -> str:
    """``text`` with every absolute path replaced by "a path on the server": a message a viewer reads never shows
    where the server keeps its files (a model's checkpoint, the AdaIN folder, a job's temporary folder)."""
    return _SERVER_PATH.sub(SERVER_PATH, str(text))


def safe_md(text: str, code: bool = False, hide: bool = False) -> str:
    """``text`` neutralised for a Markdown string, keeping it readable (a model spec, a path, an error line): no
    link, image, HTML, directive, math or autolink can form (``[ ] < > $ ` \\`` escaped, ``://`` and ``www.``
    broken by a zero-width space, one line); emphasis characters stay (harmless). :func:`md_escape` escapes all.
    ``code``: backticks stay, so a message's own code spans (``file.png, caption``) render as code: inside a code
    span nothing forms either. ``hide``: a message from the server's side (an exception, a reason) loses its
    absolute paths (:func:`hide_paths`); a caption or what the viewer typed is shown as it is."""
    text = re.sub(r"(?i)(www)(\.)|(:)(//)", "\\1\\3\u200b\\2\\4", hide_paths(text) if hide else str(text))
    return re.sub(r"([\\\[\]<>$])" if code else r"([\\`\[\]<>$])", r"\\\1", text).replace("\n", " ").replace("\r", " ")


def diff_markdown(a: str, b: str, level: str) -> str:
    """The word- or character-level diff of two texts as escaped Markdown (red: removed, green: inserted)."""
    from robustlab.diagnostics.text_similarity import diff_ops

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
