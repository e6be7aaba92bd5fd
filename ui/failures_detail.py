"""The Failures page below the map: one cell in detail (clean vs perturbed at the breaking severity, the rank or
IoU at each severity, the thief and whether it is a hub), the slices that break together, sending examples to the
basket, and the comparison with the baseline. Everything is read from the :class:`ui.failures_run.Outcome`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import robustlab as rl
from robustlab.export.basket import filmstrip, make_example
from robustlab.export.selection import gallery_source
from robustlab.metrics.bootstrap import paired
from robustlab.perturb.record import is_no_op
from ui import failures_run as run
from ui.failures_view import example_label, status_of
from ui.media import md_escape
from ui.widget_state import valid
from ui.widgets import basket, export_link

MAX_SLICE_TO_BASKET = 50  # examples one "send the slice" adds at most


def _visual(ds, x, kind: str, caption: str) -> None:
    if kind == "video":
        st.image(filmstrip(np.asarray(x), n=4), caption=f"{caption} · {len(x)} frames", width=480)
    else:
        st.image(np.asarray(x), caption=caption, width=240)


def regenerate(out: run.Outcome, it: dict, severity: int):
    """(clean input, PerturbResult or None, kind) of one example's own perturbed input at ``severity``, from its
    seed (bit for bit what the cell saw)."""
    ds = out.dataset
    if it["axis"] == "visual":
        x, kind = ds.visual(int(it["item"])), ds.kind
    elif out.fmap.task == "retrieval":
        x, kind = ds.texts()[int(it["caption"])], "text"
    elif out.fmap.task == "vqa":
        x, kind = ds.item(int(it["item"])).questions[int(it.get("question", 0))].question, "text"
    else:
        x, kind = ds.item(int(it["item"])).refs[int(it.get("ref", 0))].expression, "text"
    res = rl.perturb(x, it["perturbation"], severity, seed=int(it["seed"])) if severity > 0 else None
    return x, res, kind


def shown_severity(out: run.Outcome, it: dict) -> int:
    """The breaking severity, else (holds or fails clean) the highest swept severity."""
    at = it["breaks_at"]
    return int(at) if at else int(max(out.fmap.severities))


def as_example(out: run.Outcome, it: dict):
    """A basket Example of one item's perturbed input at its breaking (or highest) severity, None for a no-op."""
    sev = shown_severity(out, it)
    x, res, kind = regenerate(out, it, sev)
    if res is None or is_no_op(res.record):
        return None
    f, ds = out.fmap, out.dataset
    values = it.get("ranks") or it.get("scores") or {}
    m = {"rank": "rank", "iou": "iou"}.get(f.metric, "right")
    scores = {"breaks_at": it["breaks_at"], f"{m}_clean": values.get("0"), f"{m}_at_{sev}": values.get(str(sev))}
    model = {"id": f.model, "view": "failures", "task": f.task, "direction": f.direction, "k": f.k, "scores": scores}
    field = None if kind != "text" else {"retrieval": "caption", "vqa": "question"}.get(f.task, "expression")
    return make_example(kind, x, res, gallery_source(ds, int(it["item"]), field), model=model,
                        label=f"{it['id']} {it['perturbation']} s{sev}",
                        fps=float(getattr(ds, "fps", 8.0)) if kind == "video" else None)


def add_to_basket(out: run.Outcome, items: list) -> None:
    got = [as_example(out, it) for it in items[:MAX_SLICE_TO_BASKET]]
    examples = [e for e in got if e is not None]
    new = sum(basket().add(e) for e in examples)
    skipped = len(got) - len(examples)
    st.success(f"Added {new} example(s) to the basket ({len(examples) - new} already there"
               + (f"; {skipped} no-op(s) left out" if skipped else "") + f"); it holds {len(basket())}.")


# ---- one cell ---------------------------------------------------------------------------------------------------
def detail(out: run.Outcome, ranked: list[int]) -> None:
    """Pick an example and a perturbation (the map's rows by its order, its columns): the cell in detail."""
    f, ds = out.fmap, out.dataset
    by = run.blocks(f)
    perts = list(by)
    st.subheader("One example")
    c1, c2 = st.columns([3, 2])
    first = by[perts[0]]
    lab = lambda j: example_label(first[j], f)  # noqa: E731
    j = c1.selectbox("Example (the map's order)", ranked, key="fail_ex", format_func=lab,
                     **valid("fail_ex", ranked, format_func=lab))
    p = c2.selectbox("Perturbation", perts, key="fail_cell_pert", **valid("fail_cell_pert", perts))
    if j is None or p is None or j >= len(by[p]):
        return
    it = by[p][j]
    status = status_of(it, (p, j) in out.noops)
    sev = shown_severity(out, it)
    st.markdown(f"**{md_escape(example_label(it, f))}** under **{md_escape(p)}** ({it['axis']}): "
                + {"holds": f"holds at every swept severity (shown at {sev})", "no-op": f"a no-op (shown at {sev})",
                   "fails clean": f"fails on the clean input already (shown at {sev})"}.get(
                    status, f"breaks at severity {sev}" + ("" if it["monotone"] else " (not at every higher one)")))
    x, res, kind = regenerate(out, it, sev)
    left, right = st.columns(2)
    if kind == "text":
        left.caption("Clean")
        left.text(x)
        right.caption(f"Perturbed ({p}, severity {sev})")
        right.text(res.output if res is not None else x)
        if f.task == "retrieval" and f.direction[0] != "t":
            _visual(ds, ds.visual(int(it["item"])), ds.kind, "the query")
    else:
        with left:
            _visual(ds, x, kind, "clean")
        with right:
            _visual(ds, res.output, kind, f"{p}, severity {sev}")
        if f.task == "retrieval" and f.direction[0] == "t":
            st.caption("Query caption")
            st.text(ds.texts()[int(it["caption"])])
    if f.task == "grounding":
        st.caption("Expression")
        st.text(ds.item(int(it["item"])).refs[int(it.get("ref", 0))].expression)
    if f.task == "vqa":
        st.caption(f"Question (expected answer: {it.get('expected')})")
        st.text(ds.item(int(it["item"])).questions[int(it.get("question", 0))].question)
    if res is not None and is_no_op(res.record):
        st.info("This perturbation left the input unchanged at this severity: a no-op, not robustness.")
    values = "ranks" if f.metric == "rank" else "scores"
    row = {"model": f.model, **{("clean" if s == "0" else f"severity {s}"): v for s, v in it[values].items()}}
    rows = [row]
    if it.get("baseline"):
        rows.append({"model": f.baseline, **{("clean" if s == "0" else f"severity {s}"): v
                                             for s, v in it["baseline"][values].items()}})
    if it.get("answers"):
        rows.append({"model": f"{f.model} (answer)", **{("clean" if s == "0" else f"severity {s}"): a
                                                        for s, a in it["answers"].items()}})
    if f.metric == "answer":  # words and 0/1 in one column: all as text
        rows = [{k: str(v) for k, v in r.items()} for r in rows]
    what = {"rank": "Ground-truth rank", "iou": "IoU", "answer": "Right (1) or wrong (0), and the answer"}
    st.markdown(f"**{what.get(f.metric, f.metric)} at each severity**")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="fail_ranks")
    if it.get("thief") is not None:
        thief(out, it)
    if st.button("Add this example to the basket", key="fail_add_one", icon=":material/shopping_basket:",
                 disabled=res is None):
        add_to_basket(out, [it])


def thief(out: run.Outcome, it: dict) -> None:
    f, ds = out.fmap, out.dataset
    st.markdown(f"**The thief**: what ranked first at severity {it['breaks_at']}")
    c1, c2 = st.columns([1, 2])
    with c1:
        if f.direction[0] == "t":
            _visual(ds, ds.visual(int(it["thief"])), ds.kind, f"#{it['thief']} · {it['thief_id']}")
        else:
            st.text(ds.texts()[int(it["thief_caption"])])
    hub = "a **hub**" if it.get("thief_is_hub") else "not a hub"
    c2.markdown(f"#{it['thief']} · {md_escape(it['thief_id'])}: ranked first by {it['thief_k_occurrence']} "
                f"queries of that cell (its k-occurrence at k = 1): {hub} (a hub: at least twice the mean).")
    c2.page_link("pages/hubness.py", label="Hubness: who else it steals from", icon=":material/hub:")


# ---- slices -----------------------------------------------------------------------------------------------------
def _slice_line(s: dict) -> str:
    lo, hi = s["ci"]
    sev = s.get("mean_breaking_severity")
    at = f" by severity {s['severity']}" if s.get("severity") else ""
    return (f"{s['size']} items; {s['failure_rate']:.0%} fail{at} vs {s['rest_rate']:.0%} of the rest (difference "
            f"{s['failure_rate'] - s['rest_rate']:+.0%}, 95 % CI [{lo:+.0%}, {hi:+.0%}])"
            + (f"; mean breaking severity {sev:.1f}" if sev is not None else "")
            + ("" if s.get("significant", True) else "; not significant after the correction for the values tried"))


def _slice_column(out: run.Outcome, title: str, slices: list, key: str, p: str) -> None:
    st.markdown(f"**{title}**")
    if not slices:
        st.caption("None found (too few examples, no failure, or nothing above the rest with confidence).")
        return
    ds = out.dataset
    for i, s in enumerate(slices[:4]):
        with st.container(border=True):
            st.markdown(f"*{md_escape(s['description'])}*")
            st.caption(_slice_line(s))
            ex = [int(m) for m in s.get("examples", [])][:4]
            if ex and ds.kind == "image":
                st.image([np.asarray(ds.visual(m)) for m in ex], width=72, caption=[f"#{m}" for m in ex])
            if st.button("Send this slice to the basket", key=f"fail_slice_{key}_{i}",
                         help=f"Its failing examples at their breaking severity (at most {MAX_SLICE_TO_BASKET})."):
                members = set(int(m) for m in s["members"])
                by = run.blocks(out.fmap)
                add_to_basket(out, [it for q in ([p] if p in by else by) for it in by[q]
                                    if int(it["item"]) in members and it["breaks_at"]])


def slices_view(out: run.Outcome) -> None:
    st.subheader("Slices that break together")
    perts = list(out.slices)
    if not perts:
        st.caption("No slices for this map.")
        return
    p = st.selectbox("Perturbation", perts, key="fail_slice_pert", **valid("fail_slice_pert", perts))
    got = out.slices.get(p) or {}
    st.caption("Discovered from the model's own embeddings and the captions' words, never the metadata; beside "
               "them, the dataset's own attributes where it has any. An item fails when it breaks at the slice "
               "severity or below (the swept severity nearest a 35 % failure rate); the interval is a 95 % "
               "bootstrap CI of the difference in failure rate.")
    c1, c2 = st.columns(2)
    with c1:
        _slice_column(out, "Discovered (no metadata)", got.get("discovered") or [], "d", p)
    with c2:
        _slice_column(out, "By the dataset's attributes", got.get("metadata") or [], "m", p)


# ---- the baseline -----------------------------------------------------------------------------------------------
def baseline_view(out: run.Outcome) -> None:
    """Which examples break for one model and not the other, per perturbation, and the difference in break rate
    with its paired bootstrap interval."""
    f = out.fmap
    if not f.baseline:
        return
    st.subheader(f"Compared with {f.baseline}")
    rows, only = [], []
    for p, items in run.blocks(f).items():
        a = np.array([1 + (it["breaks_at"] is not None) for it in items])
        b = np.array([1 + (it["baseline"]["breaks_at"] is not None) for it in items])
        d = paired(b, a, "R@1")  # R@1 of "holds = rank 1": baseline's hold rate − ours = our break rate − theirs
        said = (f"{f.model} breaks more often" if d["lo"] > 0 else f"{f.baseline} breaks more often"
                if d["hi"] < 0 else "can't be told apart")
        counts = {w: sum(1 for it in items if it["breaks_for"] == w) for w in ("model", "baseline", "both",
                                                                               "neither")}
        rows.append({"perturbation": p, f"breaks for {f.model} only": counts["model"],
                     f"breaks for {f.baseline} only": counts["baseline"], "both": counts["both"],
                     "neither": counts["neither"], "break-rate difference": round(d["diff"], 3),
                     "95 % CI": f"[{d['lo']:+.3f}, {d['hi']:+.3f}]", "verdict": said})
        only += [{"perturbation": p, "example": example_label(it, f), "breaks for": it["breaks_for"],
                  f"{f.model} breaks at": it["breaks_at"], f"{f.baseline} breaks at": it["baseline"]["breaks_at"]}
                 for it in items if it["breaks_for"] in ("model", "baseline")]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="fail_base_table")
    st.caption("Break-rate difference: the share of examples that break for the model minus for the baseline, with "
               "its paired bootstrap 95 % interval over the examples; a verdict only where it excludes 0.")
    if only:
        st.markdown("**Examples that break for one model only**")
        st.dataframe(pd.DataFrame(only), hide_index=True, width="stretch", key="fail_base_only")


def send_all(out: run.Outcome) -> None:
    st.subheader("Export")
    c1, c2 = st.columns([2, 1])
    broken = [it for it in out.fmap.items if it["breaks_at"]]
    if c1.button(f"Send the {min(len(broken), MAX_SLICE_TO_BASKET)} most fragile breaking examples to the basket",
                 key="fail_add_all", disabled=not broken):
        add_to_basket(out, sorted(broken, key=lambda it: (it["breaks_at"], it["item"])))
    with c2:
        export_link()


__all__ = ["detail", "slices_view", "baseline_view", "send_all", "as_example", "regenerate"]
