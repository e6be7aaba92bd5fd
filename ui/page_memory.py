"""A page's form kept across page switches (issue 45: back on Benchmark after "Open on Retrieval", the form was
back to its defaults and the report opened under "Open a run" was gone).

Streamlit drops a widget's value when a run does not draw it: every other page's run. :func:`keep` (first thing on
the page) copies the page's widget values, as the viewer left them, to a session key of its own, and puts back,
through the Session State API (so the browser shows them), those Streamlit dropped while another page ran.
Only value widgets are kept (a button, a download or a dataframe selection can't be set).
"""
from __future__ import annotations

import streamlit as st

STORE = "_page_memory"


def keep(page: str, keys: tuple[str, ...], prefixes: tuple[str, ...] = ()) -> None:
    """Remember the values of ``keys`` (and of the keys starting with one of ``prefixes``) for ``page``, and put
    back those the session no longer holds."""
    s = st.session_state
    mem = s.setdefault(STORE, {}).setdefault(page, {})
    mine = [k for k in list(s.keys()) if isinstance(k, str) and (k in keys or k.startswith(prefixes or ("\0",)))]
    mem.update({k: s[k] for k in mine})
    for k, v in mem.items():
        if k not in s:
            s[k] = v


__all__ = ["STORE", "keep"]
