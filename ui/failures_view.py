"""The Failures page's form, job panel and map (the page: pages/failures.py; the work: :mod:`ui.failures_run`; the
cell detail, slices, basket and baseline: :mod:`ui.failures_detail`).

Nothing is computed until Run. Every keyed widget is drawn with its kept value (:mod:`ui.widget_state`); what is
shown below the form comes from the :class:`ui.failures_run.Outcome` of the last finished run -- its FailureMap's
model, dataset, perturbations and severities -- never from the widgets, which may have changed since.
"""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from robustlab.failures import TASKS
from robustlab.tasks.retrieval_bench import DIRECTIONS, DIRECTION_LABELS
from ui import bench, failures_run as run
from ui.media import md_escape, safe_md
from ui.state import (DATASETS, DEMO_N, VIDEO_DEMO_N, can_do, follow_data, spec_device, task_model)
from ui.multiselect_state import kept_list
from ui.widget_state import clamp, initial, valid
from ui.widgets import perturbation_names

SEVERITIES = [1, 2, 3, 4, 5]
TASK_NAMES = {"retrieval": "Retrieval", "grounding": "Grounding", "vqa": "VQA"}
METHODS = {"grounding": "ground", "vqa": "vqa"}  # the model method each task needs
WHAT_FAILS = {"grounding": "fails when IoU ≤ 0.5", "vqa": "fails when the answer is wrong"}
# the map's colours: the lower the breaking severity, the darker; "holds" light, a no-op grey, failing clean black
STATUS = ["fails clean", "1", "2", "3", "4", "5", "holds", "no-op"]
COLOURS = ["#111111", "#67000d", "#a50f15", "#ef3b2c", "#fc9272", "#fdd0c2", "#e5f5e0", "#bdbdbd"]
DEFAULT_PERT = {"image": ["gaussian_noise", "defocus_blur", "jpeg_compression"], "video": ["gaussian_noise"],
                "text": []}


def multiselect(label: str, options: list, key: str, default: list, **kw) -> list:
    """A keyed multiselect drawn with its kept value (the choices still offered), else ``default``."""
    return st.multiselect(label, options, key=key, **kept_list(key, options, default), **kw)


# ---- the form ---------------------------------------------------------------------------------------------------
def dataset_choice(task: str) -> tuple[dict, str, str, object] | None:
    """(the sweep's dataset dict without n, its kind, its label, the upload's Dataset object or None) for the
    sidebar's dataset, or None after one line."""
    choice = st.session_state.get("dataset", "builtin")
    if choice == "builtin":
        name = "builtin-refs" if task == "grounding" else "builtin"
        return {"name": name, "split": "demo"}, "image", DATASETS["builtin"], None
    if choice == "builtin-videos":
        if task != "retrieval":
            st.info(f"{task.capitalize() if task != 'vqa' else 'VQA'} runs on images here: pick Built-in images "
                    "or a folder in the sidebar.")
            return None
        return {"name": "builtin-videos", "split": "demo"}, "video", DATASETS["builtin-videos"], None
    if choice == "upload":
        from ui.state import EMPTY_HINT

        g = st.session_state.get("upload_gallery")
        if g is None or len(g) == 0:
            st.info(EMPTY_HINT)
            return None
        return {"name": g.name or "upload", "split": "all", "n": len(g)}, g.kind, DATASETS["upload"], g
    from robustlab.datasets.registry import get_entry
    from ui.folders import choice as folder_choice

    got = folder_choice()  # the operator's data roots: a folder outside them, missing or unreadable is one line
    if got is None:
        return None
    name, root, split = got
    entry = get_entry(name)
    kind = entry["kind"] if entry["kind"] in ("image", "video") else "image"
    return {"name": name, "root": root, "split": split}, kind, f"{DATASETS['folder']} ({name})", None


def form() -> run.Request | None:
    """The form -> the Request the Run button would start, or None after one line saying what is missing."""
    tasks = [t for t in ("retrieval", "grounding", "vqa") if t in TASKS]  # what robustlab.failures supports
    c0, c1, c2 = st.columns([1, 1, 1])
    task = c0.radio("Task", tasks, key="fail_task", horizontal=True, format_func=TASK_NAMES.get,
                    **valid("fail_task", tasks, format_func=TASK_NAMES.get))
    got = dataset_choice(task)
    if got is None:
        return None
    dataset, kind, label, data = got
    if task != "retrieval":
        picked = task_model(task, METHODS[task], key=f"fail_{task}_model")
        if picked is None:
            return None
        model = picked[0]
    else:
        model = follow_data(spec_device()[0], kind)
    base = st.session_state.get("baseline") or "none"
    if base != "none":
        base = follow_data(base, kind, "keep_baseline", "the baseline here is") if task == "retrieval" else base
        if base == model or not can_do(base, "video-retrieval" if task == "retrieval" and kind == "video" else task):
            st.caption(f"Baseline {safe_md(base)}: not compared here (it is this model, or it cannot do {task}).")
            base = "none"
    if "n" in dataset:
        n = int(dataset["n"])
        c1.caption(f"Items: all {n} of the upload")
    else:
        hi = DEMO_N if kind == "image" else VIDEO_DEMO_N
        hi = hi if dataset["name"].startswith("builtin") else 100_000
        clamp("fail_n", 2, hi, default_value=50 if kind == "image" else 30)
        n = int(c1.number_input("Items", 2, hi, key="fail_n", **initial("fail_n", value=50 if kind == "image"
                                                                           else 30),
                                help="The first N items of the dataset (the examples of the map)."))
    direction, k = None, 1
    if task == "retrieval":
        dirs = DIRECTIONS[kind]
        direction = c2.radio("Direction", dirs, key="fail_dir", horizontal=True, format_func=DIRECTION_LABELS.get,
                             **valid("fail_dir", dirs, format_func=DIRECTION_LABELS.get))
        clamp("fail_k", 1, 20, default_value=1)
        k = int(c2.number_input("k (fails when the ground truth leaves the top k)", 1, 20, key="fail_k",
                                **initial("fail_k", value=1)))
    vis = perturbation_names(kind)[0][1:]
    txt = perturbation_names("text")[0][1:]
    p1, p2, p3 = st.columns([2, 2, 1])
    with p1:
        chosen = multiselect(f"{kind.capitalize()} perturbations", vis, f"fail_vis_{kind}", DEFAULT_PERT[kind],
                             help="NAME/VARIANT: another paper's parameters.")
    with p2:
        chosen += multiselect("Text perturbations", txt, "fail_txt", DEFAULT_PERT["text"])
    with p3:
        sev = sorted(multiselect("Severities", SEVERITIES, "fail_sev", SEVERITIES))
    if not chosen:
        st.warning("Pick at least one perturbation.")
        return None
    if not sev:
        st.warning("Pick at least one severity.")
        return None
    device = spec_device()[1]
    req = run.Request(model=model, dataset={**dataset, "n": n}, task=task, perturbations=tuple(chosen),
                      severities=tuple(sev), direction=direction, k=k, baseline=None if base == "none" else base,
                      device=None if device == "auto" else device, label=f"{label} (first {n})", data=data)
    st.caption(f"{req.cells:,} cells (items × perturbations × severities{' × 2 models' if req.baseline else ''}) "
               f"for {safe_md(model)}{f' and the baseline {safe_md(req.baseline)}' if req.baseline else ''}.")
    return req


# ---- the job ----------------------------------------------------------------------------------------------------
@st.fragment(run_every=0.5)
def _poll() -> None:
    job = st.session_state.get(run.JOB)
    if job is None or not job.running:
        st.rerun(scope="app")  # done: the whole page shows how it ended
    p = job.progress
    st.progress(min(max(p.get("fraction", 0.0), 0.0), 1.0),
                text=f"{job.phase}: {bench.progress_text(p)}" if p else job.phase)


def job_panel() -> None:
    """The running map (progress, Cancel) or how the last one ended; a finished map becomes the page's result."""
    job = st.session_state.get(run.JOB)
    if job is None:
        return
    if job.running:
        _poll()
        st.button("Cancel", key="fail_cancel", on_click=job.cancel.set, help="Stops at the next item.")
        return
    if run.ended(job, "The failure map stopped", "Cancelled: nothing is shown for that run.") and \
            job.outcome is not None:
        st.session_state[run.RESULT] = job.outcome


# ---- the map ----------------------------------------------------------------------------------------------------
def status_of(it: dict, noop: bool) -> str:
    at = it["breaks_at"]
    return "no-op" if noop else "holds" if at is None else "fails clean" if at == 0 else str(at)


def example_label(it: dict, fmap) -> str:
    if fmap.task == "grounding":
        return f"#{it['item']} · {it['id']} · expression {it.get('ref', 0)}"
    if fmap.task == "vqa":
        return f"#{it['item']} · {it['id']} · question {it.get('question', 0)}"
    return f"#{it['item']} · {it['id']}" + (f" · caption {it['caption']}" if fmap.direction[0] == "t" else "")


def table(out: run.Outcome) -> pd.DataFrame:
    """One row per example and perturbation: its status, breaking severity and fragility (from the result)."""
    rows = []
    for p, items in run.blocks(out.fmap).items():
        for j, it in enumerate(items):
            rows.append({"example": j, "label": example_label(it, out.fmap), "perturbation": p,
                         "status": status_of(it, (p, j) in out.noops), "breaks_at": it["breaks_at"]})
    df = pd.DataFrame(rows)
    broken = df[df.status.isin(STATUS[1:6])]
    frag = broken.groupby("example").agg(broken=("breaks_at", "size"), mean_severity=("breaks_at", "mean"))
    df = df.join(frag, on="example")
    df["broken"] = df["broken"].fillna(0).astype(int)
    df["mean_severity"] = df["mean_severity"].fillna(np.inf)
    return df


def order(df: pd.DataFrame, how: str) -> list[int]:
    """Examples by fragility (perturbations broken, most first; then mean breaking severity, lowest first), or in
    dataset order."""
    ex = df.drop_duplicates("example")
    if how == "fragility":
        ex = ex.sort_values(["broken", "mean_severity", "example"], ascending=[False, True, True])
    return ex["example"].tolist()


def heading(out: run.Outcome) -> str:
    f = out.fmap
    what = (f"{DIRECTION_LABELS.get(f.direction, f.direction)}, fails when the ground truth leaves the top {f.k}"
            if f.task == "retrieval" else f"{TASK_NAMES.get(f.task, f.task)}, {WHAT_FAILS.get(f.task, '')}")
    return (f"{f.model}{f' vs {f.baseline}' if f.baseline else ''} · {f.dataset.get('name')} "
            f"({f.dataset.get('split')}, {f.n} items, {f.examples} examples) · {what} · severities "
            f"{', '.join(map(str, f.severities))}")


def map_view(out: run.Outcome) -> pd.DataFrame:
    """The summary per perturbation and the map (examples × perturbations, coloured by breaking severity)."""
    f = out.fmap
    st.subheader("Where it breaks")
    st.caption(md_escape(heading(out)) + f" · computed in {out.seconds:.1f} s")
    rows = []
    for s in f.summary:
        noop = sum(1 for p, _ in out.noops if p == s["perturbation"])
        rows.append({"perturbation": s["perturbation"], "axis": s["axis"], "examples": s["examples"],
                     "break": s["broken"], "hold": s["holding"] - noop, "no-op": noop,
                     "fail clean": s["clean_failures"], "median breaking severity": s["median_breaks_at"],
                     **{f"at {k}": v for k, v in s["by_severity"].items()}})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="fail_summary")
    df = table(out)
    hows = ["fragility", "dataset order"]
    how = st.radio("Sort examples by", hows, key="fail_sort", horizontal=True, **valid("fail_sort", hows))
    ranked = order(df, how)
    pos = {e: i for i, e in enumerate(ranked)}
    df["row"] = df["example"].map(pos)
    chart = alt.Chart(df).mark_rect().encode(
        x=alt.X("perturbation:N", title=None, sort=[p["perturbation"] for p in f.perturbations]),
        y=alt.Y("label:N", title=f"examples ({how})", sort=alt.EncodingSortField("row", order="ascending"),
                axis=alt.Axis(labels=len(ranked) <= 60)),
        color=alt.Color("status:N", title="breaks at", scale=alt.Scale(domain=STATUS, range=COLOURS)),
        tooltip=["label", "perturbation", "status"])
    st.altair_chart(chart.properties(height=min(max(12 * len(ranked), 200), 900)), width="stretch",
                    key="fail_map")
    st.caption("Colour: the lowest severity at which the example fails (1 darkest); holds: never within the "
               "swept severities; no-op: the perturbation left its input unchanged at the highest severity (not "
               "robustness); fails clean: it fails before any perturbation.")
    return df


__all__ = ["form", "job_panel", "map_view", "table", "order", "heading", "status_of", "example_label",
           "multiselect"]
