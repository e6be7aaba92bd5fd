"""Widget state: what the browser shows is what the page uses.

Streamlit keeps a keyed widget's identity across reruns whatever its options, and the browser keeps showing the label
it last had: a value corrected in Python (an option gone with the dataset, a number out of a new range) or relabelled
(the same caption index on another gallery) is used by the page but not shown, unless it is set again through the
Session State API, which sends it to the browser. Every page's data-dependent widget goes through :func:`valid` /
:func:`clamp` before it is drawn, and gets its default from :func:`initial` instead of ``value=`` / ``index=``
(a choice widget from :func:`valid` itself, which returns it).

The browser also forgets: at the end of a run that finished (not one cut short by a rerun) it drops the state of
every widget that run did not draw, and a widget it then mounts again shows its *declared* default. Two guards keep
that from showing anything but the page's value:

- :func:`remount` sends the kept value again to a widget that the last *finished* run did not draw (a run cut short
  by a rerun may have drawn it on the server while the browser, already asking for the next run, never kept it:
  a CI run of 16 sessions on one server once showed Top-k at 1, the slider's minimum, a value no session chose);
- :func:`initial` declares the kept value as the widget's default, so a widget the browser mounts afresh shows it
  even where no value was sent (Streamlit warns only about a default beside a value *set* in the same run, and then
  :func:`initial` passes none).

The server forgets too, once: Streamlit folds the active script's hash into a keyed widget's id, and in the first
session a fresh server serves, the first run hashes another main-script path than every later run. The sidebar
(drawn by app.py before ``st.navigation``) then gets new ids on the run the viewer's first change starts; the
browser's value arrives for the old id, and the new widget takes its *declared* default. Issue 45 saw the first
pick in "Compare with (baseline)" fall back to "none" (Model, Dataset and Device to their first option), a second
pick stick. So every keyed widget spreads :func:`valid` / :func:`initial` into its call: a choice widget that calls
:func:`valid` only for its side effects, or a number widget :func:`clamp` without :func:`initial`, is that defect.
"""
from __future__ import annotations

import streamlit as st

_PREV, _NOW, _DONE = "_drawn_prev", "_drawn_now", "_drawn_done"


def begin_run() -> None:
    """app.py, first thing in every run: what the last finished run drew is what :func:`remount` trusts the browser
    to keep."""
    s = st.session_state
    s[_PREV], s[_NOW] = s.get(_DONE, set()), set()


def end_run() -> None:
    """app.py, when the page's script ended without a rerun cutting it short (finished, ``st.stop()`` or an error
    shown on the page): the browser keeps exactly the widgets this run drew."""
    s = st.session_state
    s[_DONE] = set(s.get(_NOW, set()))


def _newly_set(key: str) -> bool:
    """Whether ``key`` was set through the Session State API in this run (Streamlit's own test for its warning)."""
    try:
        from streamlit.runtime.state import get_session_state  # Streamlit's, not its public API: guarded

        return bool(get_session_state().is_new_state_value(key))
    except Exception:  # noqa: BLE001 - no runtime (bare mode) or another Streamlit: declare no default, as before
        return True


def _resend(key: str, value) -> None:
    st.session_state[key] = value  # through the Session State API: the browser is told


def remount(key: str) -> None:
    """A widget about to be drawn that the last finished run did not draw (a page that stopped early, another page,
    an empty gallery, a run cut short) may be new to the browser, which would show its declared default while the
    page uses the value kept in the session state. Send that value, so the two agree."""
    s = st.session_state
    drawn = s.setdefault(_NOW, set())
    if key in s and _PREV in s and key not in s[_PREV] and key not in drawn:
        _resend(key, s[key])
    drawn.add(key)


def initial(key: str, options=None, **defaults) -> dict:
    """The default to declare for a widget (``value=`` or ``index=``, the latter with its ``options``): ``defaults``
    the first time; then the kept value itself, so a widget the browser mounts afresh shows what the page uses;
    nothing when the value was set through the Session State API in this run (Streamlit shows that, and warns
    about a default beside it). Call it right before the widget: it also re-sends a kept value to a remounted widget
    (:func:`remount`)."""
    remount(key)
    s = st.session_state
    if key not in s:
        return defaults
    if _newly_set(key):
        return {}
    v = s[key]
    if v is None:
        return {}
    if "index" in defaults:
        opts = list(options) if options is not None else []
        return {"index": opts.index(v)} if v in opts else {}
    return {"value": v} if "value" in defaults else {}


def clamp(key: str, lo, hi, default_value=None) -> None:
    """Keep a number widget inside its current range (a smaller gallery lowers the maximum), and remember what the
    viewer had chosen: when the range allows it again (the larger gallery back), it comes back."""
    s = st.session_state
    if default_value is not None:
        s.setdefault(key, default_value)
    remount(key)
    v, wish_key = s.get(key), f"_wish_{key}"
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return
    range_key = f"_range_{key}"
    if s.get(range_key, (lo, hi)) != (lo, hi):
        _resend(key, v)  # a slider with another range is a new widget to Streamlit: it would start at its minimum
    s[range_key] = (lo, hi)
    wish = s.get(wish_key)  # (the viewer's value, the value it was clamped to)
    if wish is not None and v != wish[1]:
        s.pop(wish_key, None)  # the viewer has chosen since
        wish = None
    if wish is not None and lo <= wish[0] <= hi:
        _resend(key, type(v)(wish[0]))
        s.pop(wish_key, None)
    elif not lo <= v <= hi:
        new = type(v)(min(max(v, lo), hi))
        s[wish_key] = (wish[0] if wish else v, new)
        _resend(key, new)


def valid(key: str, options, default_value=None, format_func=str) -> dict:
    """Keep a choice widget's value one of ``options`` (else ``default_value`` or the first option), and the label
    the browser shows equal to the value's label (the same value relabelled by another dataset is sent again).
    -> the ``index=`` to declare (:func:`initial`): spread it into the widget, ``st.radio(..., **valid(...))``."""
    s = st.session_state
    options = list(options)
    if not options:
        return {}
    remount(key)
    shown_key = f"_shown_{key}"
    first = default_value if default_value in options else options[0]
    declared = lambda: initial(key, options, index=options.index(first))  # noqa: E731 - after the checks below
    if key in s and s[key] in options:
        try:
            label = format_func(s[key])
        except Exception:  # noqa: BLE001 - a label function that can't take this value: just keep it
            return declared()
        before = s.get(shown_key)
        if before is not None and before[0] == s[key] and before[1] != label:
            _resend(key, s[key])
        s[shown_key] = (s[key], label)
        return declared()
    if key in s:
        _resend(key, first)  # else: drawn with its default (first), whose label is recorded below
    try:
        s[shown_key] = (first, format_func(first))
    except Exception:  # noqa: BLE001
        s.pop(shown_key, None)
    return declared()
