"""The Failures page's search: the weakest change that breaks each example (:func:`robustlab.failures.search`),
run as a server job like a failure map (:mod:`ui.failures_run`): admitted through :data:`ui.bench.SERVER_JOBS`
(``max_sweeps``), its budget in model evaluations capped by the operator's ``failure_search_budget``
(``ROBUSTLAB_FAILURE_SEARCH_BUDGET``; a larger request is refused in one line), progress and Cancel, cancelled
when its browser session has gone. Images only (t2i / i2t), as the library's search; the built-in images or a
Local folder (an upload is not a registered dataset the search can rebuild). What is shown comes from the
SearchResult (its model, dataset and budget), never from the widgets.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

import robustlab as rl
from robustlab.bench.spec import SweepCancelled, SweepError
from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import build as build_dataset
from robustlab.export.basket import combined_example
from robustlab.export.selection import gallery_source
from ui import bench
from ui.media import md_escape, safe_md
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
        report = self.progress_fn(on_progress)  # cancels once the browser session has gone

        def progress(p):
            report({"fraction": p["candidate"] / max(p["candidates"], 1), "done": p["evaluations"],
                    "total": p["budget"]})
            if self.cancel.is_set():
                raise SweepCancelled("cancelled")  # the search takes no cancel event: stop it from its callback
        try:
            self.result = rl.failures.search(**self.args, progress=progress)
        except SweepCancelled:
            self.cancelled = True
        except (SweepError, DatasetError, ValueError, OSError) as e:
            self.error = " ".join(str(e).split())
        except Exception as e:  # noqa: BLE001 - a failing search must end the job with a message
            self.error = f"{type(e).__name__}: {e}"


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
    ok = req is not None and req.task == "retrieval" and req.direction in ("t2i", "i2t") and \
        req.dataset.get("name") != "dashboard-upload"
    clamp("fail_budget", 1, top, default_value=min(2000, top))
    c1, c2 = st.columns([1, 2])
    budget = int(c1.number_input("Budget (model evaluations)", 1, top, key="fail_budget",
                                 **initial("fail_budget", value=min(2000, top))))
    c2.caption("Every image corruption and the gated text edits alone at severities 1–5, then image × text pairs up "
               "to severity 2, weakest first, for every example together; retrieval on the built-in images or a "
               "Local folder (t2i or i2t).")
    job = st.session_state.get(JOB)
    busy = job is not None and job.running
    if st.button("Search", key="fail_search_go", disabled=busy or not ok):
        d = req.dataset
        why = start({"model": req.model, "dataset": d["name"], "n": d.get("n"), "split": d.get("split"),
                     "root": d.get("root"), "direction": req.direction, "k": req.k, "budget": budget,
                     "device": req.device})
        if why:
            st.error(why)
    job = st.session_state.get(JOB)
    if job is not None and job.running:
        _poll()
        st.button("Cancel the search", key="fail_search_cancel", on_click=job.cancel.set)
    elif job is not None and not job.seen:
        job.seen = True
        if job.error:
            st.error(f"The search stopped: {safe_md(job.error)}")
        elif job.cancelled:
            st.warning("Search cancelled: nothing is shown for it.")
        elif job.result is not None:
            st.session_state[RESULT] = job.result
    res = st.session_state.get(RESULT)
    if res is not None:
        show(res)


def show(res) -> None:
    broken = res.broken()
    d = res.dataset
    st.caption(md_escape(f"{res.model} · {d.get('name')} ({d.get('split')}, {d.get('n')} items) · {res.direction}, "
                         f"top {res.k} · {res.evaluations:,} of {res.budget:,} model evaluations"
                         + (" (the budget ran out)" if res.exhausted else "")))
    counts = pd.Series([r["status"] for r in res.results]).value_counts().to_dict()
    st.markdown(", ".join(f"{v} {k}" for k, v in counts.items()))
    if not broken:
        return
    rows = [{"#": r["rank_in_suite"], "example": f"#{r['item']} · {r['id']}",
             "weakest breaking change": " + ".join(f"{c['axis']} {c['perturbation']} at {c['severity']}"
                                                   for c in r["change"]),
             "rank clean → broken": f"{r['clean_rank']} → {r['rank']}", "thief": r.get("thief_id")} for r in broken]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="fail_search_table")
    if st.button(f"Send the {min(len(broken), 50)} weakest changes to the basket", key="fail_search_basket"):
        ds = build_dataset(d["name"], root=d.get("root"), split=d.get("split"),
                           **{k: d[k] for k in ("n", "seed") if d.get(k) is not None})
        new = sum(basket().add(ex) for ex in (example(res, ds, r) for r in broken[:50]) if ex is not None)
        st.success(f"Added {new} example(s) to the basket; it holds {len(basket())}.")


def example(res, ds, r: dict):
    """One broken result as a basket Example: each part regenerated from its seed (the input the search scored)."""
    parts = []
    for c in r["change"]:
        visual = c["axis"] == "visual"
        clean = ds.visual(int(r["item"])) if visual else ds.texts()[int(r["caption"])]
        out = rl.perturb(clean, c["perturbation"], int(c["severity"]), seed=int(c["seed"]))
        parts.append(("image" if visual else "text", clean, out, gallery_source(ds, int(r["item"]),
                                                                                None if visual else "caption"),
                      f"{r['id']}-{c['axis']}"))
    model = {"id": res.model, "view": "search", "direction": res.direction, "k": res.k, "change": r["change"],
             "weakness": r["weakness"], "scores": {"clean_rank": r["clean_rank"], "rank": r["rank"]},
             "thief_id": r.get("thief_id")}
    return combined_example(parts, model=model, label=str(r["id"]))


__all__ = ["panel", "show", "start", "example", "SearchJob", "JOB", "RESULT"]
