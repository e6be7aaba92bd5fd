"""The session's one perturbation choice, shared by every page (issue 45: a perturbation picked on Retrieval was
not the one Grounding, Hubness, Embeddings, Adaptation or Perturb then showed, and each page had its own video
default).

Streamlit drops a widget's value when a run does not draw it (another page), and a page's widget keys differ
(``img_pert`` on Retrieval, ``gr_img_pert`` on Grounding). So the choice lives once, outside the widgets, in the
session state under :data:`STORE`: per modality, the perturbation (None: none) and its severity; the text choice
per kind of data (captions of images and of videos have different defaults). A page's picker starts from it
(:func:`seed`, through the Session State API, so the browser shows it) and writes the viewer's pick back
(:func:`remember`). The defaults, the same on every page, are :data:`DEFAULTS`: what the Retrieval page and the
server's warm-up compute first (``ui.warmup.RETRIEVAL_DEFAULTS``; tests/ui/test_app_choice.py keeps the two equal).
Every page's visual picker starts from them (Embeddings and Adaptation too); a page may keep a text default of its
own (Embeddings: keyboard s2 on videos as on images; Adaptation: keyboard s3, a shift for the text tower).
"""
from __future__ import annotations

import streamlit as st

STORE = "_perturbation_choice"
NONE = "(none)"  # a picker's "no perturbation" (ui.widgets.NONE)
KIND = "_perturbation_choice_kind"  # the kind of data ("image", "video") the last picker was drawn for
DEFAULTS = {"image": {"image": ("gaussian_noise", 3), "text": ("keyboard", 2)},
            "video": {"video": ("reverse_sampling", 1), "text": (None, 2)}}


def _slot(modality: str, kind: str) -> str:
    return f"text@{kind}" if modality == "text" else modality


def data_kind() -> str:
    """The kind of data ("image" or "video") the pages last showed (a page without a dataset of its own, Perturb,
    keeps the text choice of that kind)."""
    return st.session_state.get(KIND, "image")


def default(modality: str, kind: str) -> tuple[str | None, int]:
    """The default for ``modality`` on data of ``kind``: the visual one is the same on every page (:data:`DEFAULTS`);
    the text one too, where a page has none of its own."""
    table = DEFAULTS.get(kind, DEFAULTS["image"])
    return table.get(modality) or DEFAULTS.get(modality, {}).get(modality) or (None, 3)


def picked(modality: str, kind: str, fallback: tuple | None = None) -> tuple[str | None, int]:
    """The session's choice for ``modality`` on data of ``kind`` ("image" or "video"): (name or None, severity):
    what the viewer last picked on any page, else ``fallback`` (a page's own text default), else :func:`default`."""
    got = st.session_state.get(STORE, {}).get(_slot(modality, kind))
    if got is not None:
        return got
    return tuple(fallback) if fallback is not None else default(modality, kind)


def remember(modality: str, kind: str, name: str | None, severity: int | None = None) -> None:
    """The viewer picked ``name`` (None: none) at ``severity`` (None: the severity stays) for ``modality``: called
    from the widgets' ``on_change`` only, so a page's default never overrides another page's pick."""
    store = st.session_state.setdefault(STORE, {})
    sev = int(severity) if severity is not None else picked(modality, kind)[1]
    store[_slot(modality, kind)] = (name, sev)


def seed(key: str, value) -> None:
    """Start widget ``key`` at ``value`` when the session holds no value for it (a page not drawn in the last run:
    Streamlit dropped it), through the Session State API, so the browser shows what the page uses."""
    if key not in st.session_state:
        st.session_state[key] = value


def one_side(kind: str, key: str, sev_key: str, options: list[str]) -> dict:
    """A picker of one perturbation of either side, ``"modality:name"`` (Hubness): started from the session's choice
    (the visual one if any, else the text one the viewer picked) and written back on a change. -> the keyword
    arguments for both widgets (``on_change``)."""
    st.session_state[KIND] = kind
    store = st.session_state.get(STORE, {})
    vis, txt = picked(kind, kind), store.get(_slot("text", kind))
    start = (f"{kind}:{vis[0]}", vis[1]) if vis[0] else (f"text:{txt[0]}", txt[1]) if txt and txt[0] else (NONE, vis[1])
    if key not in st.session_state:  # (a perturbation set for this page alone keeps the page's severity)
        seed(key, start[0] if start[0] in options else NONE)
        seed(sev_key, int(start[1]))
    s = st.session_state

    def pick():
        got, sev = s.get(key, NONE), s.get(sev_key)
        if got == NONE:
            remember(kind, kind, None, sev)
        else:
            mod, name = got.split(":", 1)
            remember(mod, kind, name, sev)
    return {"on_change": pick}


__all__ = ["DEFAULTS", "KIND", "NONE", "data_kind", "STORE", "default", "one_side", "picked", "remember", "seed"]
