"""The "My uploads" gallery: images or videos with captions, added through one form (shown on every page that
uses the sidebar's dataset when it is "My uploads"). The gallery lives in session state; its kind is the kind of
its first files."""
from __future__ import annotations

import streamlit as st

from robustlab.datasets.uploads import IMAGE_SUFFIXES, VIDEO_SUFFIXES, ingest_uploads, set_captions, split_by_kind
from robustlab.engine.cache import content_hash
from robustlab.io.files import InputError, uploaded_bytes
from ui.media import safe_md

TYPES = [s[1:] for s in IMAGE_SUFFIXES + VIDEO_SUFFIXES]
MESSAGES = "upload_messages"  # what the last "Add to my gallery" said, shown after the rerun it starts


def upload_section() -> None:
    gal = st.session_state.get("upload_gallery")
    what = f"{len(gal) if gal else 0} {gal.kind + 's' if gal is not None else 'items'}"
    with st.expander(f"Upload images or videos with captions ({what} in your gallery)", expanded=not gal):
        with st.form("upload_form", clear_on_submit=True):
            files = st.file_uploader("Images or videos (one kind per gallery)", accept_multiple_files=True,
                                     key="up_images", type=TYPES,
                                     help="Images: any Pillow reads. Videos: mp4, webm, mov, avi, mkv…; up to 50 MB "
                                          "each, sampled to at most 64 frames of at most 256 px.")
            capfile = st.file_uploader("Captions file (optional): .txt one per line, .csv with name,caption, "
                                       "or .json", type=["txt", "csv", "tsv", "json"], key="up_captions")
            lines = st.text_area("…or type captions, one per line, in the order of the files", key="up_lines",
                                 help="As many lines as files, or name each line's file: `photo.png, a caption` "
                                      "(then the order and count don't matter).")
            submitted = st.form_submit_button("Add to my gallery")
        if submitted:
            got, too_big = _read(files or [])  # each file's .size is checked before getvalue() copies it
            caps = _read([capfile] if capfile else [])
            given = [f.name for f in files or []]  # captions pair over every file given, refused ones included
            missing = left_out(given + ([capfile.name] if capfile else []))
            if _ingest(gal, got, caps[0][0] if caps[0] else None, lines, errors=missing + too_big + caps[1],
                       given=given):
                st.rerun()  # a new gallery: the sidebar (drawn before this form) and the labels above must count it
        if gal is not None and st.button("Clear my gallery", key="clear_uploads"):
            st.session_state.pop("upload_gallery", None)
            st.session_state.pop("upload_gallery_id", None)
            st.rerun()
    for kind, text in st.session_state.pop(MESSAGES, []):  # below the expander: it folds once the gallery has items
        getattr(st, kind)(safe_md(text, code=True))  # file names are text, never Markdown (a link, an image)


def left_out(arrived: list[str]) -> list[str]:
    """One line when files this session chose (the browser asked the server where to upload each one:
    :func:`ui.server_guard.take_requested`) did not arrive with the form: still uploading, failed, or removed
    before Add. Says how many arrived and names the first that did not; [] when all did (or outside a server)."""
    from collections import Counter

    from ui.server_guard import current_session_id, take_requested

    missing = take_requested(current_session_id()) - Counter(arrived)
    n = sum(missing.values())
    if not n:
        return []
    names = sorted(missing.elements())
    shown = ", ".join(names[:5]) + (f" and {n - 5} more" if n > 5 else "")
    return [f"{len(arrived)} of the {len(arrived) + n} files chosen arrived; {n} did not (still uploading, failed, "
            f"or removed before Add) and were left out: {shown}. Choose them again and press Add."]


def _read(uploaded) -> tuple[list[tuple[str, bytes]], list[str]]:
    """(name, bytes) of the uploads within the size limit, and one line for each one over it (never copied)."""
    got, errors = [], []
    for f in uploaded:
        try:
            got.append((f.name, uploaded_bytes(f)))
        except InputError as e:
            errors.append(str(e))
    return got, errors


def _ingest(gal, files, capfile, lines: str, errors: list[str] | None = None, given: list[str] | None = None) -> bool:
    """Add the files (and captions) to the gallery; what it says is kept for the section to show (``errors``:
    lines already said about files that were refused; ``given``: the names of every file the user gave, in order,
    those refused included, default the names of ``files``: plain caption lines pair with them by position, so a
    refused file takes its own caption with it). Captions with no file given go to the gallery's items
    (``set_captions``). -> whether the session now holds another gallery."""
    say = st.session_state.setdefault(MESSAGES, [])
    given = [n for n, _ in files] if given is None else list(given)
    by, split_errors = split_by_kind(files)
    errors = list(errors or []) + split_errors
    kinds = [k for k in ("image", "video") if by[k]]
    kind = gal.kind if gal is not None else (kinds[0] if kinds else "image")
    for other in (k for k in kinds if k != kind):
        errors.append(f"{len(by[other])} {other}(s) not added: a gallery holds images or videos, and this one "
                      f"{'holds' if gal is not None else 'starts with'} {kind}s (clear it to switch)")
    rep = None
    if by[kind]:
        rep = ingest_uploads(by[kind], capfile, lines, existing=gal, kind=kind, given=given)
    elif given and (capfile or lines.strip()):  # the captions were for these files: never the gallery's items
        errors.append("the captions were not used: none of the files given could be added")
    elif gal is not None and (capfile or lines.strip()):
        rep = set_captions(gal, capfile, lines)
    elif not errors:
        say.append(("warning", "Choose at least one image or video to add (or captions for the items already "
                               "here)."))
    say.extend(("error", e) for e in errors + (rep.errors if rep else []))
    if rep is None:
        return False
    say.extend(("warning", w) for w in rep.warnings)
    if rep.added:
        say.append(("success", f"Added {rep.added} {kind}(s)."))
    if rep.gallery is not None and rep.gallery is not gal:
        st.session_state["upload_gallery"] = rep.gallery
        st.session_state["upload_gallery_id"] = "upload-" + content_hash(
            "|".join(m["hash"] for m in rep.gallery.meta) + "|" + "|".join(
                c if isinstance(c, str) else "" for c in rep.gallery.captions))
        return True
    return False
