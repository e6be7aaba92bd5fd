"""The Failures page's search: the weakest change that breaks each example (:func:`robustlab.failures.search`),
run as a server job like a failure map (:mod:`ui.failures_run`): admitted through :data:`ui.bench.SERVER_JOBS`
(``max_sweeps``), its budget in model evaluations capped by the operator's ``failure_search_budget``
(``ROBUSTLAB_FAILURE_SEARCH_BUDGET``; a larger request is refused in one line), progress and Cancel, cancelled
when its browser session has gone (the job's cancel event, which the search checks between examples). Where the
map runs and the search can: retrieval on images (t2i / i2t) or videos (t2v / v2t) and grounding; the built-in
data, a Local folder or an upload (its Dataset object, searched as it is). What is shown comes from the
SearchResult (its model, dataset, task and budget), never from the widgets.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

import robustlab as rl
from robustlab.bench.spec import SweepError
from robustlab.datasets.base import DatasetError
from robustlab.export.basket import combined_example
from robustlab.export.selection import gallery_source
from robustlab.failures.adversarial import SEARCH_TASKS
from ui import bench, failures_run as run
from ui.media import md_escape
from ui.widget_state import clamp, initial
from ui.widgets import basket

JOB, RESULT = "failures_search_job", "failures_search_result"


@dataclass
class SearchJob(bench.Job):
    """A search as a server job (a :class:`ui.bench.Job`: listed with the sweeps, counted by ``max_sweeps``)."""

    args: dict | None = None
    result: object = None
    cancelled: bool = False

    def run(self, on_progress=None) -> None:
        report = self.progress_fn(on_progress)  # sets the cancel event once the browser session has gone

        def progress(p):
            report({"fraction": p["candidate"] / max(p["candidates"], 1), "done": p["evaluations"],
                    "total": p["budget"]})
        try:
            self.result = rl.failures.search(**self.args, progress=progress, cancel=self.cancel)
            self.cancelled = self.result.cancelled
        except (SweepError, DatasetError, ValueError, OSError) as e:
            self.error = " ".join(str(e).split())
        except Exception as e:  # noqa: BLE001 - a failing search must end the job with a message
            self.error = f"{type(e).__name__}: {e}"


def search_args(req, budget: int) -> dict:
    """The search's arguments for the Failures form's Request: its model, dataset (an upload: its Dataset object),
    task, direction, k and items."""
    d = req.dataset
    where = {"dataset": req.data} if req.data is not None else \
        {"dataset": d["name"], "n": d.get("n"), "split": d.get("split"), "root": d.get("root")}
    return {"model": req.model, **where, "task": req.task, "direction": req.direction, "k": req.k or 1,
            "budget": budget, "device": req.device}


def start(args: dict) -> str | None:
    from ui import operator

    cfg = operator.config()
    if args["budget"] > cfg.failure_search_budget:
        return (f"Refused: a search of {args['budget']:,} model evaluations, and this dashboard allows at most "
                f"{cfg.failure_search_budget:,} (failure_search_budget).")
    job = SearchJob(spec=None, out=Path("search"), owner=bench.session_id(), args=args)
    why = bench.server_jobs().admit(job, cfg.max_sweeps)
    if why:
        return why
    st.session_state[JOB] = job
    if os.environ.get(bench.SYNC_ENV) == "1":
        job.thread = threading.current_thread()
        job.run()
        job.thread = None
        return None
    job.thread = threading.Thread(target=job.run, name="failure-search", daemon=True)
    job.thread.start()
    return None


@st.fragment(run_every=0.5)
def _poll() -> None:
    job = st.session_state.get(JOB)
    if job is None or not job.running:
        st.rerun(scope="app")
    p = job.progress
    st.progress(min(max(p.get("fraction", 0.0), 0.0), 1.0),
                text=f"{p.get('done', 0)}/{p.get('total', '?')} model evaluations" if p else "Encoding the gallery…")


def panel(req) -> None:
    """The search's form (on the Failures form's model, dataset, direction, k and items), its job and result."""
    st.subheader("The weakest change that breaks each example")
    from ui import operator

    top = operator.config().failure_search_budget
    ok = req is not None and req.task in SEARCH_TASKS
    clamp("fail_budget", 1, top, default_value=min(2000, top))
    c1, c2 = st.columns([1, 2])
    budget = int(c1.number_input("Budget (model evaluations)", 1, top, key="fail_budget",
                                 **initial("fail_budget", value=min(2000, top))))
    c2.caption("Every image (or video) perturbation of the catalogue and the gated text edits alone at severities "
               "1–5, then visual × text pairs up to severity 2, weakest first, for every example together; "
               "retrieval (images or videos) and grounding (fails when IoU ≤ 0.5)."
               + ("" if req is None or ok else f" Not for {req.task}."))
    job = st.session_state.get(JOB)
    busy = job is not None and job.running
    if st.button("Search", key="fail_search_go", disabled=busy or not ok):
        why = start(search_args(req, budget))
        if why:
            st.error(why)
    job = st.session_state.get(JOB)
    if job is not None and job.running:
        _poll()
        st.button("Cancel the search", key="fail_search_cancel", on_click=job.cancel.set)
    elif run.ended(job, "The search stopped", "Search cancelled: nothing is shown for it.") and \
            job.result is not None:
        st.session_state[RESULT] = job.result
    res = st.session_state.get(RESULT)
    if res is not None:
        show(res)


def show(res) -> None:
    broken = res.broken()
    d = res.dataset
    what = (f"{res.direction}, top {res.k}" if res.task == "retrieval" else "grounding, fails when IoU ≤ 0.5")
    st.caption(md_escape(f"{res.model} · {d.get('name')} ({d.get('split')}, {d.get('n')} items) · {what} · "
                         f"{res.evaluations:,} of {res.budget:,} model evaluations"
                         + (" (the budget ran out)" if res.exhausted else "")))
    counts = pd.Series([r["status"] for r in res.results]).value_counts().to_dict()
    st.markdown(", ".join(f"{v} {k}" for k, v in counts.items()))
    if not broken:
        return
    rows = [{"#": r["rank_in_suite"], "example": _label(res, r),
             "weakest breaking change": " + ".join(f"{c['axis']} {c['perturbation']} at {c['severity']}"
                                                   for c in r["change"]),
             **({"IoU clean → broken": f"{r['clean_iou']:.3f} → {r['iou']:.3f}"} if res.task == "grounding" else
                {"rank clean → broken": f"{r['clean_rank']} → {r['rank']}", "thief": r.get("thief_id")})}
            for r in broken]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="fail_search_table")
    if st.button(f"Send the {min(len(broken), 50)} weakest changes to the basket", key="fail_search_basket"):
        ds = res.source if res.source is not None else run.request_dataset(d)
        new = sum(basket().add(ex) for ex in (example(res, ds, r) for r in broken[:50]) if ex is not None)
        st.success(f"Added {new} example(s) to the basket; it holds {len(basket())}.")


def _label(res, r: dict) -> str:
    return f"#{r['item']} · {r['id']}" + (f" · expression {r['ref']}" if res.task == "grounding" else "")


def example(res, ds, r: dict):
    """One broken result as a basket Example: each part regenerated from its seed (the input the search scored)."""
    parts = []
    for c in r["change"]:
        visual = c["axis"] == "visual"
        clean = ds.visual(int(r["item"])) if visual else r["expression"] if res.task == "grounding" \
            else ds.texts()[int(r["caption"])]
        out = rl.perturb(clean, c["perturbation"], int(c["severity"]), seed=int(c["seed"]))
        field = None if visual else "expression" if res.task == "grounding" else "caption"
        parts.append((ds.kind if visual else "text", clean, out, gallery_source(ds, int(r["item"]), field),
                      f"{r['id']}-{c['axis']}"))
    scores = ({"clean_iou": r["clean_iou"], "iou": r["iou"]} if res.task == "grounding"
              else {"clean_rank": r["clean_rank"], "rank": r["rank"]})
    model = {"id": res.model, "view": "search", "task": res.task, "direction": res.direction, "k": res.k,
             "change": r["change"], "weakness": r["weakness"], "scores": scores, "thief_id": r.get("thief_id")}
    return combined_example(parts, model=model, label=str(r["id"]))


__all__ = ["panel", "show", "start", "example", "search_args", "SearchJob", "JOB", "RESULT"]
