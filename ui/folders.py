"""The sidebar's Local folder: a picker of the datasets found under the operator's data roots (never a free path).

A viewer picks a discovered dataset (a registered format + folder), or a root and a folder under it. Either way the
folder is resolved (symlinks included) and must stay inside a root; a folder that is outside, missing or unreadable
gets one and the same line (:class:`robustlab.io.access.AccessDenied`), so a viewer can't tell what exists; so does
a folder whose name the file system refuses to look up (a component over 255 bytes, a symlink loop:
:func:`resolve_folder`). With no data roots the choice says in one line how the operator turns it on. The CLI and
the library are unaffected.

A folder that holds a dataset only in a form the dashboard does not open (RefCOCO's pickled ``refs(unc).p``) is
listed after the others as ``refcoco · data/refer — needs conversion: run `python -m robustlab.datasets.refcoco
FOLDER` on the server`` (named relative to its data root, never by its server path); picking it, or typing that
folder under "another folder…", says that same line and opens nothing.
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from robustlab.datasets.registry import discover, get_entry, list_datasets, needs_conversion
from robustlab.io.access import AccessDenied, resolve_inside
from ui import operator
from ui.media import safe_md
from ui.widget_state import initial, valid
from ui.cache import shared

ANOTHER = "another folder under a data root…"
OFF = ("Local folders are off on this dashboard: the operator lists the folders it may open in "
       "ROBUSTLAB_DATA_ROOTS (or data_roots in robustlab.toml) and restarts it.")
REQUEST = "folder_request"  # (name, root, split) from another page: a sweep's dataset to open


@shared("results", spinner="Looking for datasets under the data roots…", ttl=60)
def found(roots: tuple[str, ...]) -> list[dict]:
    """The datasets under the roots (re-scanned at most once a minute): those the dashboard opens first, then those
    that need a conversion on the server first (``"convert"``: the command)."""
    got = discover(roots, convertible=True)
    return [e for e in got if not e.get("convert")] + [e for e in got if e.get("convert")]


def root_names(roots) -> dict[str, str]:
    """Each root's display name: its folder name (numbered when two roots share one). Never the full path."""
    names: dict[str, str] = {}
    for i, r in enumerate(roots):
        n = Path(r).name or str(i)
        names[str(r)] = n if n not in names.values() else f"{n} ({i + 1})"
    return names


def label(e: dict, names: dict[str, str]) -> str:
    """``name · root/rel`` (the root by its display name); for a folder that needs a conversion first, the one line
    that says so (:func:`conversion_line`)."""
    where = names.get(e["root"], "?") + (f"/{e['rel']}" if e["rel"] else "")
    return conversion_line(e["name"], where, e["convert"]) if e.get("convert") else f"{e['name']} · {where}"


def conversion_line(name: str, where: str, command: str) -> str:
    """The one line for a folder (``where``: relative to its data root) that holds dataset ``name`` only in a form
    the dashboard does not open, and the command that converts it (run by the operator, on the server)."""
    return f"{name} · {where} — needs conversion: run `{command}` on the server"


def resolve_folder(base: str, sub: str, roots) -> Path:
    """:func:`robustlab.io.access.resolve_inside`, and the same :class:`AccessDenied` line (naming ``sub`` as the
    viewer typed it) for any error looking the folder up: a name too long for the file system (ENAMETOOLONG), a
    symlink loop, a folder on the way that can't be searched -- never a traceback that shows a server path."""
    try:
        return resolve_inside(base, sub, roots=roots)
    except AccessDenied:
        raise
    except (OSError, ValueError):
        shown = str(sub or "").strip() or Path(base).name
        raise AccessDenied(shown if len(shown) <= 1024 else shown[:80]) from None


def folder_formats() -> list[str]:
    return [e["name"] for e in list_datasets() if e.get("needs_root")]


def _apply_request(req, entries: list[dict], names: dict, roots) -> None:
    """Point the widgets at a requested (name, root): its discovered entry, else that folder under its root (the
    check then says whether it may be opened)."""
    s = st.session_state
    name, root, split = (list(req) + [None, None, None])[:3]
    real = os.path.realpath(str(root or ""))
    hit = next((e for e in entries if e["name"] == name and e["folder"] == real), None)
    if hit is not None:
        s["folder_pick"] = label(hit, names)
    else:
        base = next((str(r) for r in roots if real == str(r) or real.startswith(str(r).rstrip("/") + "/")), None)
        s["folder_pick"], s["folder_fmt"] = ANOTHER, name
        s["folder_base"] = base or str(roots[0])
        s["folder_sub"] = os.path.relpath(real, base) if base else str(root or "")
    if split:
        s["folder_split"] = split


def sidebar_section() -> None:
    """The Local folder widgets (app.py's sidebar), each drawn with its kept value (:mod:`ui.widget_state`: the
    first pick in a box used to be dropped on a fresh server)."""
    cfg = operator.config()
    if not cfg.data_roots:
        st.caption(OFF)
        return
    roots = [str(r) for r in cfg.data_roots]
    names = root_names(roots)
    entries = found(tuple(roots))
    req = st.session_state.pop(REQUEST, None)
    if req:
        _apply_request(req, entries, names, roots)
    labels = [label(e, names) for e in entries] + [ANOTHER]
    pick = st.selectbox("Dataset under the data roots", labels, key="folder_pick", **valid("folder_pick", labels),
                        help=f"Datasets found under {', '.join(names.values())} (the operator's data roots).")
    if pick == ANOTHER:
        st.selectbox("Data root", roots, key="folder_base", format_func=names.get,
                     **valid("folder_base", roots, format_func=names.get))
        st.text_input("Folder under it", key="folder_sub", max_chars=1024, **initial("folder_sub", value=""),
                      placeholder="e.g. coco2014 or videos/msrvtt")
        fmts = folder_formats()
        name = st.selectbox("Format", fmts, key="folder_fmt", **valid("folder_fmt", fmts))
    else:
        hit = entries[labels.index(pick)]
        if hit.get("convert"):  # nothing to choose until the operator has converted it (the page says so)
            return
        name = hit["name"]
    e = get_entry(name)
    st.caption(f"{e['description']}. Needs: {e['needs']}.")
    st.selectbox("Split", e["splits"], key="folder_split", **valid("folder_split", e["splits"], e["default_split"]))
    st.number_input("Max items (0 = all)", 0, 10**7, step=100, key="folder_max", **initial("folder_max", value=0),
                    help="Use only the first N items (faster on a large dataset).")


def choice() -> tuple[str, str, str] | None:
    """(format, resolved folder, split) of the sidebar's Local folder, or None after one line saying why not
    (off, nothing typed yet, or a folder that may not be opened: the same line for outside, missing, unreadable)."""
    s = st.session_state
    cfg = operator.config()
    if not cfg.data_roots:
        st.info(OFF)
        return None
    roots = [str(r) for r in cfg.data_roots]
    pick = s.get("folder_pick")
    if pick == ANOTHER:
        base, sub, name = s.get("folder_base") or roots[0], (s.get("folder_sub") or "").strip(), s.get("folder_fmt")
        if not sub:
            st.info("Type a folder under the data root in the sidebar, or pick a dataset found there.")
            return None
        if base not in roots:
            base = roots[0]
    else:
        entries = found(tuple(roots))
        names = root_names(roots)
        # no choice yet (a page run before the sidebar drew its box): the box's default, the first one found
        hit = next((e for e in entries if label(e, names) == pick), None) if pick is not None else \
            (entries[0] if entries else None)
        if hit is None:
            st.info("Pick a dataset found under the data roots in the sidebar.")
            return None
        if hit.get("convert"):
            st.warning(safe_md(label(hit, names), code=True))
            return None
        base, sub, name = hit["root"], hit["rel"], hit["name"]
    try:
        folder = resolve_folder(base, sub, cfg.data_roots)
    except AccessDenied as e:
        st.error(safe_md(str(e)))
        return None
    if name not in folder_formats():
        st.info("Pick the dataset's format in the sidebar.")
        return None
    command = needs_conversion(name, folder)
    if command:  # a folder typed under "another folder…": the same line as the picker's, never the loader's refusal
        st.warning(safe_md(conversion_line(name, _where(folder, roots), command), code=True))
        return None
    split = s.get("folder_split") or get_entry(name)["default_split"]
    return name, str(folder), split


def _where(folder: Path, roots: list[str]) -> str:
    """``folder`` (resolved, inside a root) named as the picker names it: the root's display name / the rest."""
    names = root_names(roots)
    for r in roots:
        rp = Path(r)
        if folder == rp or rp in folder.parents:
            rel = folder.relative_to(rp).as_posix()
            return names[r] + (f"/{rel}" if rel != "." else "")
    return folder.name


__all__ = ["ANOTHER", "OFF", "REQUEST", "sidebar_section", "choice", "found", "folder_formats", "resolve_folder",
           "conversion_line"]
