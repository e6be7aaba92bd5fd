"""The Export page's pieces: how a basket example's source and scores read, and which examples the list shows
(filter, sort, one page at a time: a basket of hundreds stays a short page with the download on top)."""
from __future__ import annotations

import math

import streamlit as st

from ui.multiselect_state import kept_list
from ui.widget_state import clamp, initial, valid

PAGE = 10  # examples shown at once


def describe_source(src: dict) -> str:
    t = src.get("type")
    if t == "builtin":
        return f"built-in {src.get('collection')} · world seed {src.get('seed')} · item {src.get('index')}"
    if t in ("upload", "file"):
        line = f" · line {src['line'] + 1}" if src.get("line") is not None else ""
        digest = src.get("sha256") or src.get("content_hash")  # an item of "My uploads" keeps its content hash
        return f"{'uploaded' if t == 'upload' else 'file'} {src.get('name')}{line}" + (
            f" · {str(digest)[:19]}…" if digest else "")
    return str(src.get("name") or t or "—")


SCORE_LABELS = {"iou": "IoU", "iou_clean": "IoU clean", "iou_perturbed": "IoU perturbed",
                "iou_clean_vs_perturbed": "IoU clean vs perturbed", "reduce_iou": "IoU (reduced expression)",
                "orig_iou": "IoU (original expression)", "rank": "rank"}


def score_value(v) -> str:
    """One score for reading: 3 decimals for a fraction-like number, integers as they are, "—" for none."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, dict):
        return ", ".join(f"{score_label(k)} {score_value(x)}" for k, x in v.items()) or "—"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(score_value(x) for x in v) + "]"
    return str(v)


def score_label(key) -> str:
    return SCORE_LABELS.get(str(key), str(key).replace("_", " "))


def describe_scores(scores) -> str:
    """A model's scores as "name: value" pairs (e.g. "IoU clean: 0.812 · IoU perturbed: 0.431"), "" for none."""
    if not scores:
        return ""
    if not isinstance(scores, dict):
        return score_value(scores)
    return " · ".join(f"{score_label(k)}: {score_value(v)}" for k, v in scores.items())


SORTS = {"added": None, "perturbation": lambda ex: ex.title().lower(),
         "severity (high first)": lambda ex: -int(ex.record.get("severity") or 0), "kind": lambda ex: ex.kind}


def shown_examples(basket) -> list:
    """The examples the list shows: filtered by kind and by text (a perturbation, a source), sorted, one page."""
    items = list(basket)
    f1, f2, f3 = st.columns([2, 3, 2])
    kind_options = sorted({ex.kind for ex in items})
    kinds = f1.multiselect("Kind", kind_options, key="ex_kinds", placeholder="all kinds",
                           **kept_list("ex_kinds", kind_options))
    text = f2.text_input("Filter (perturbation or source contains)", key="ex_filter", max_chars=200,
                         **initial("ex_filter", value="")).strip().lower()
    order = f3.selectbox("Sort by", list(SORTS), key="ex_sort", **valid("ex_sort", list(SORTS)))
    items = [ex for ex in items if (not kinds or ex.kind in kinds)
             and (not text or text in ex.title().lower() or text in describe_source(ex.source).lower())]
    if SORTS[order] is not None:
        items.sort(key=SORTS[order])
    pages = max(1, math.ceil(len(items) / PAGE))
    if pages > 1:
        clamp("ex_page", 1, pages)
        page = int(st.number_input(f"Page (of {pages}, {PAGE} examples each)", 1, pages, key="ex_page",
                                   **initial("ex_page", value=1)))
    else:
        page = 1
    out = items[(page - 1) * PAGE: page * PAGE]
    st.caption(f"Showing {len(out)} of {len(items)} matching example(s) ({len(basket)} in the basket).")
    return out
