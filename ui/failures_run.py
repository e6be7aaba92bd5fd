"""The Failures page's work: what Run asked (:class:`Request`), the background job that computes a failure map on
the sweep engine (:class:`FailureJob`), and what the page shows (:class:`Outcome`).

- A failure map is :func:`robustlab.failures` (a sweep of the clean cell and every (perturbation, severity) cell,
  then its slices: :mod:`robustlab.failures.slicing`) and the no-op check below. It runs in a thread owned by the
  session, like a Benchmark sweep: it is admitted through :data:`ui.bench.SERVER_JOBS` (so it counts against the
  operator's ``max_sweeps``), shows its progress, has a Cancel button, and is cancelled when its browser session
  has been gone :data:`ui.bench.OWNER_GRACE_S` seconds. ``ROBUSTLAB_SYNC_SWEEP=1`` runs it in the script thread
  (AppTest has no fragment timers).
- The operator's budget (:attr:`ui.operator.OperatorConfig.failure_max_cells`, ``ROBUSTLAB_FAILURE_MAX_CELLS``):
  items × perturbations × severities × models; a larger request is refused in one line before anything runs.
- The cells go to a temporary folder of the job, removed when the map has been read (nothing a viewer computes
  stays on the server's disk besides the embedding cache; the FailureMap holds everything the page shows, and every
  perturbed input is regenerated from its seed).
- An upload lives in this session's memory: the Request carries it (``data``) and the map runs on that Dataset
  object as it is (:func:`robustlab.failures` takes one and hands it to the sweep engine: nothing is registered).
- A perturbation that changed nothing is a no-op, never "holds": every example that holds is perturbed once more
  at the highest swept severity, and a record whose output is its input (:func:`robustlab.perturb.record.is_no_op`)
  marks it "no-op".
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

import robustlab as rl
from robustlab.bench.spec import SweepCancelled, SweepError
from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import build as build_dataset
from robustlab.failures import FailureMap
from robustlab.perturb.record import is_no_op
from ui import bench
from ui.media import safe_md

JOB = "failures_job"  # session key of the Failures page's job
RESULT = "failures_result"  # session key of the Outcome shown


@dataclass(frozen=True)
class Request:
    """What Run asked, frozen when it was pressed (the page labels a result with its FailureMap, not this)."""

    model: str
    dataset: dict  # the sweep's dataset dict (name, split, root, n, options)
    task: str
    perturbations: tuple
    severities: tuple
    direction: str | None
    k: int
    baseline: str | None = None
    device: str | None = None
    label: str = ""  # the dataset as the viewer knows it ("Built-in images (first 50)")
    data: object = field(default=None, compare=False, repr=False)  # an upload: the Dataset object swept as it is

    @property
    def cells(self) -> int:
        """The budget's unit: items × perturbations × severities × models."""
        return (int(self.dataset.get("n") or 0) * len(self.perturbations) * len(self.severities)
                * (2 if self.baseline else 1))


def request_dataset(d: dict):
    """The registered dataset a Request's dataset dict names (the built-in data or a Local folder)."""
    return build_dataset(d["name"], root=d.get("root"), split=d.get("split"),
                         **{k: d[k] for k in ("n", "seed") if d.get(k) is not None}, **(d.get("options") or {}))


def budget_problem(req: Request, limit: int) -> str | None:
    """One line when ``req`` is over the operator's budget (else None)."""
    if req.cells > limit:
        return (f"Refused: this map is {req.dataset.get('n')} items × {len(req.perturbations)} perturbations × "
                f"{len(req.severities)} severities{' × 2 models' if req.baseline else ''} = {req.cells:,} cells, "
                f"and this dashboard runs at most {limit:,} (failure_max_cells): fewer items, perturbations or "
                "severities.")
    return None


@dataclass
class Outcome:
    """What the page shows: the map, its slices per perturbation, the no-ops, and the dataset it ran on."""

    fmap: FailureMap
    request: Request
    dataset: object = field(repr=False)
    slices: dict = field(default_factory=dict)  # perturbation -> {"discovered": [dict], "metadata": [dict]}
    noops: set = field(default_factory=set)  # (perturbation, example position) that changed nothing
    seconds: float = 0.0
    notes: list = field(default_factory=list)


# ---- the per-example tables ---------------------------------------------------------------------------------------
def blocks(fmap: FailureMap) -> dict:
    """perturbation -> its items in example order (every perturbation has the same examples, in the same order)."""
    out: dict = {}
    for it in fmap.items:
        out.setdefault(it["perturbation"], []).append(it)
    return out


ALL = "all perturbations together"


def slice_groups(fmap: FailureMap) -> dict:
    """The map's slices (:func:`robustlab.failures.slicing.failure_slices`, computed by ``robustlab.failures``) by
    perturbation (:data:`ALL` for ``null``: every perturbation together), discovered and metadata apart, best
    first as the library orders them."""
    out: dict = {}
    for s in fmap.slices or []:
        got = out.setdefault(s.get("perturbation") or ALL, {"discovered": [], "metadata": []})
        got.setdefault(s.get("kind") or "discovered", []).append(s)
    return out


def find_noops(fmap: FailureMap, ds, cancel: threading.Event) -> set:
    """(perturbation, example position) of every example that holds although its input was not changed at the
    highest swept severity (text: its caption or expression; visual: its image or video)."""
    top = max(fmap.severities)
    texts = ds.texts() if fmap.task == "retrieval" else None
    out = set()
    for p, items in blocks(fmap).items():
        for j, it in enumerate(items):
            if cancel.is_set():
                return out
            if it["breaks_at"] is not None:
                continue
            if it["axis"] == "visual":
                x = ds.visual(int(it["item"]))
            elif texts is not None:
                x = texts[int(it["caption"])]
            elif fmap.task == "vqa":
                x = ds.item(int(it["item"])).questions[int(it.get("question", 0))].question
            else:
                x = ds.item(int(it["item"])).refs[int(it.get("ref", 0))].expression
            if is_no_op(rl.perturb(x, p, top, seed=int(it["seed"])).record):
                out.add((p, j))
    return out


# ---- the job ------------------------------------------------------------------------------------------------------
@dataclass
class FailureJob(bench.Job):
    """A failure map as a server job (a :class:`ui.bench.Job`: listed with the sweeps, counted by ``max_sweeps``)."""

    request: Request | None = None
    outcome: Outcome | None = None
    cancelled: bool = False
    phase: str = "Loading the dataset and the models…"

    def run(self, on_progress=None) -> None:
        t0 = time.perf_counter()
        progress = self.progress_fn(on_progress)  # cancels the map once its browser session has gone
        req = self.request
        try:
            self.phase = "Running the cells, then the slices"
            source = req.data if req.data is not None else dict(req.dataset)
            fmap = rl.failures(req.model, source, task=req.task, perturbations=list(req.perturbations),
                               severities=list(req.severities), direction=req.direction, k=req.k,
                               baseline=req.baseline, out=self.out, device=req.device, progress=progress,
                               cancel=self.cancel, worst=0)
            ds = req.data if req.data is not None else request_dataset(req.dataset)
            self.phase = "Checking for no-ops"
            progress({**self.progress, "fraction": 1.0})
            noops = find_noops(fmap, ds, self.cancel)
            if self.cancel.is_set():
                raise SweepCancelled("cancelled")
            self.outcome = Outcome(fmap, req, ds, slice_groups(fmap), noops, time.perf_counter() - t0)
        except SweepCancelled:
            self.cancelled = True
        except (SweepError, DatasetError, ValueError, OSError) as e:
            self.error = self.shown(" ".join(str(e).split()))
        except Exception as e:  # noqa: BLE001 - a failing cell must end the job with a message, not kill the page
            self.error = self.shown(f"{type(e).__name__}: {e}")
        finally:
            shutil.rmtree(self.out, ignore_errors=True)  # the FailureMap holds what the page shows

    def shown(self, text: str) -> str:
        """A message as a viewer sees it: never the job's temporary folder (a server path)."""
        return text.replace(str(self.out), "the job's folder").replace(str(Path(self.out).parent), "the server")


def ended(job, stopped: str, cancelled: str) -> bool:
    """Once, when ``job`` has finished: its error (``stopped: <error>``) or its cancellation (``cancelled``) in one
    line, and False; True when it finished with a result for the page to keep. False while it runs or once seen."""
    if job is None or job.running or job.seen:
        return False
    job.seen = True
    if job.error:
        st.error(f"{stopped}: {safe_md(job.error, hide=True)}")
    elif job.cancelled:
        st.warning(cancelled)
    return not (job.error or job.cancelled)


def start(req: Request) -> str | None:
    """Run ``req`` (in a thread owned by the session, or here under ``ROBUSTLAB_SYNC_SWEEP=1``); one line back when
    it is refused (over budget, the server busy)."""
    from ui import operator

    cfg = operator.config()
    why = budget_problem(req, cfg.failure_max_cells)
    if why:
        return why
    out = Path(tempfile.mkdtemp(prefix="robustlab-failures-"))
    job = FailureJob(spec=None, out=out, owner=bench.session_id(), request=req)
    why = bench.server_jobs().admit(job, cfg.max_sweeps)
    if why:
        shutil.rmtree(out, ignore_errors=True)
        return why
    st.session_state[JOB] = job
    if os.environ.get(bench.SYNC_ENV) == "1":
        bar = st.progress(0.0, text="Starting the failure map…")
        job.thread = threading.current_thread()  # counted as running meanwhile
        job.run(lambda p: bar.progress(min(max(p.get("fraction", 0.0), 0.0), 1.0), text=bench.progress_text(p)))
        job.thread = None
        bar.empty()
        return None
    job.thread = threading.Thread(target=job.run, name="failure-map", daemon=True)
    job.thread.start()
    return None


__all__ = ["Request", "Outcome", "FailureJob", "start", "budget_problem", "blocks", "slice_groups", "find_noops",
           "request_dataset", "ended", "JOB", "RESULT", "ALL"]
