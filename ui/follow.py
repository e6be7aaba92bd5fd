"""A retrieval page's model follows the kind of data: a built-in made for the other kind (an image model on
videos, a video model on still images) is replaced by its counterpart, with one line and an undo (split from
ui.state, issue 46)."""
from __future__ import annotations

import streamlit as st

from robustlab.models import list_models
from ui.media import safe_md

VIDEO_BUILTIN = "builtin:tiny-clip-video-seqtransf"  # the best built-in on videos (t2v R@1 0.884 vs meanP 0.699)
# an image built-in's own video model (the same frame tower with CLIP4Clip's seqTransf head); others: VIDEO_BUILTIN
VIDEO_SIBLING = {"builtin:tiny-vit-clip": "builtin:tiny-vit-clip-video-seqtransf"}
KEEP = "keep_model"  # session key: (spec, kind) the viewer chose to keep despite the switch
KEEP_BASELINE = "keep_baseline"  # the same for the sidebar's "Compare with" model (ui.compare)


def _family(spec: str) -> str | None:
    """A registered model's own task ("retrieval" for an image built-in, "video-retrieval" for a video one)."""
    return next((m["task"] for m in list_models() if m["spec"] == spec), None)


def _video_family(spec: str) -> bool:
    """A built-in whose family is video retrieval (a temporal model), by the registry."""
    return _family(spec) == "video-retrieval"


def counterpart(spec: str, kind: str) -> str | None:
    """The built-in a retrieval page uses instead of ``spec`` on data of ``kind``, or None (``spec`` fits them, is
    not a built-in, or has no counterpart here). An image built-in on videos only averages frames and scores near
    chance: its own family's video model (VIDEO_SIBLING, else VIDEO_BUILTIN). A video built-in on still images sees
    each one as a one-frame video: its own image model (the spec without its "-video-..." part)."""
    if not spec.startswith("builtin:"):
        return None
    if kind == "video" and _family(spec) == "retrieval":
        other = VIDEO_SIBLING.get(spec, VIDEO_BUILTIN)
        return other if _video_family(other) else None
    if kind == "image" and _video_family(spec):
        other = spec.split("-video-")[0]
        return other if _family(other) == "retrieval" else None
    return None


def mismatch(spec: str, kind: str) -> str:
    """Why built-in ``spec`` is the wrong model for data of ``kind`` (the start of a line; :func:`counterpart`)."""
    if kind == "video":
        return f"**{safe_md(spec)}** is an image model: on videos it only averages frames and scores near chance"
    return (f"**{safe_md(spec)}** is a video model: on still images it sees one-frame videos and scores far below its "
            "own image model")


def follow_data(spec: str, kind: str, keep: str = KEEP, what: str = "this page uses") -> str:
    """The model a retrieval page uses on a dataset of ``kind``: the sidebar's, unless it is a built-in made for the
    other kind of data (:func:`counterpart`: an image model on videos scores near chance, a demo reads that as
    "broken"); then its counterpart, after one visible line saying so with an undo (remembered under ``keep``, the
    button keyed ``keep + "_btn"``). The button's label is short (a model spec in it was cut off in a narrow column):
    the line above names the model, the button's help says what it does."""
    other = counterpart(spec, kind)
    if other is None or tuple(st.session_state.get(keep) or ()) == (spec, kind):
        return spec
    st.info(f"{mismatch(spec, kind)}, so {what} **{other}**, the built-in {kind} model.")
    st.button(UNDO_LABEL, key=f"{keep}_btn", help=f"Use {spec} on these {kind}s, as picked in the sidebar.",
              on_click=lambda: st.session_state.__setitem__(keep, (spec, kind)))
    return other


UNDO_LABEL = "Use my pick anyway"
