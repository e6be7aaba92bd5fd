"""Showing media: an image or a video (a looping muted mp4 player), boxes drawn on an image, user text shown
literally. Videos are encoded once per (dataset, condition, item) and cached."""
from __future__ import annotations

import re

import numpy as np
import streamlit as st

from robustlab.datasets.uploads import UPLOAD_VIDEO_FPS
from robustlab.perturb.condition import Condition

GT, CLEAN, PERT = (40, 200, 80), (30, 120, 255), (240, 60, 40)  # box colours: truth, clean, perturbed


@st.cache_data(show_spinner=False, max_entries=512)
def video_mp4(gallery_id: str, condition_key: str, index: int, fps: float, _frames) -> bytes:
    """Browser-playable H.264 mp4 of one dataset video under one condition (cached by id, condition, index);
    small videos are upscaled (nearest neighbour) to about 192 px."""
    from robustlab.io.media import display_mp4

    frames = np.asarray(_frames)
    return display_mp4(frames, scale=max(1, 192 // max(frames.shape[1:3])), fps=fps)


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
        st.video(data, format="video/mp4", loop=True, autoplay=True, muted=True, alt=f"{slot}: video {index}")
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


def safe_md(text: str) -> str:
    """``text`` neutralised for a Markdown string, keeping it readable (a model spec, a path, an error line): no
    link, image, HTML, directive, math or autolink can form (``[ ] < > $ ` \\`` escaped, ``://`` and ``www.``
    broken by a zero-width space, one line); emphasis characters stay (harmless). :func:`md_escape` escapes all."""
    text = re.sub(r"(?i)(www)(\.)|(:)(//)", "\\1\\3\u200b\\2\\4", str(text))
    return re.sub(r"([\\`\[\]<>$])", r"\\\1", text).replace("\n", " ").replace("\r", " ")


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
