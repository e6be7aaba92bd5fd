"""A multiselect drawn with its kept value, as :mod:`ui.widget_state` draws the other keyed widgets.

:func:`ui.widget_state.initial` declares ``value=`` or ``index=``; a multiselect declares ``default=``. Without it a
box the browser mounts afresh (a fresh server's first change gives the widgets new ids) shows its declared default,
not the viewer's choice: issue 45's "first pick is dropped".
"""
from __future__ import annotations

import streamlit as st

from ui.widget_state import initial


def kept_list(key: str, options, default=()) -> dict:
    """-> the ``default=`` to spread into ``st.multiselect(..., key=key, **kept_list(key, options, default))``: the
    kept choice (its values still among ``options``; others are dropped and the rest sent again), ``default`` (those
    among ``options``) the first time, nothing when the value was set through the Session State API in this run."""
    options = list(options)
    s = st.session_state
    if key in s and s[key] is not None:
        now = [v for v in s[key] if v in options]
        if now != list(s[key]):
            s[key] = now  # through the Session State API: the browser is told (an option gone with the data)
    got = initial(key, value=[v for v in default if v in options])
    return {"default": got["value"]} if "value" in got else {}


__all__ = ["kept_list"]
