"""The Benchmark page's state and helpers: the sweep's dataset and run folder, the sweep job (a background thread
owned by ``st.session_state``), and the report of a run folder (plots, tables, worst examples, downloads).

- runs live under one root: the operator's ``runs_dir`` / ``ROBUSTLAB_RUNS``, else ``<cache>/runs`` (the user's
  robustlab cache: ``ROBUSTLAB_CACHE`` or ``~/.cache/robustlab``), never the dashboard's own folder; a run name is a
  plain folder name (no separators, no ``..``), anything else is one line on the page;
- the sweep runs in a thread (:class:`Job`), polled by a fragment; Cancel sets its Event (finished cells stay;
  Resume skips them). ``ROBUSTLAB_SYNC_SWEEP=1`` runs it in the script thread (AppTest has no fragment timers);
- the report is :mod:`robustlab.bench.report`'s (its report.html's figures and tables)."""
from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from robustlab.bench import SweepError, SweepSpec, run_sweep
from robustlab.bench import report  # load_run, report_tables, report_figures, write_report, describe
from ui.media import md_escape, safe_md
from ui.server_guard import current_session_id as session_id  # the browser session of this run
from ui.sidebar_panel import preset_grounding, preset_retrieval
from ui.widget_state import valid

OWNER_GRACE_S = 30.0  # a sweep whose browser session has been gone this long is cancelled

JOB = "bench_job"  # session key of the current Job
SHOWN = "bench_run"  # session key of the run folder shown below the controls
SYNC_ENV = "ROBUSTLAB_SYNC_SWEEP"
BUILTIN = {"builtin": "Built-in images", "builtin-videos": "Built-in videos"}


# ---- run folders ------------------------------------------------------------------------------------------
def runs_root() -> Path:
    """Where run folders live: the operator's ``runs_dir`` / ``ROBUSTLAB_RUNS`` (read with the rest of the operator's
    configuration, once per server), else ``<cache>/runs`` (:func:`ui.operator.default_runs_dir`)."""
    from ui import operator

    return operator.config().runs_root


RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RUN_NAME_RULE = ("1–64 characters: letters, digits, '.', '_' and '-', starting with a letter or a digit; not a "
                 "device name such as CON or NUL")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def run_name_problem(name: str) -> str | None:
    """Why ``name`` can't be a run name (one line), or None: a whitelist of characters and a length limit."""
    if not RUN_NAME.fullmatch(name or "") or name.split(".")[0].lower() in _RESERVED:
        return f"Run name refused: use {RUN_NAME_RULE}."
    return None


def default_run_name(dataset: str, task: str) -> str:
    """``dataset-task`` made a valid run name (``refcoco+`` has a '+')."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"{dataset}-{task}").lstrip("._-")[:64] or "run"


def run_path(name: str) -> Path | None:
    """The run folder ``name`` under :func:`runs_root`, or None after one line saying why the name is refused (the
    name itself is never echoed: it may hold anything a viewer typed)."""
    why = run_name_problem((name or "").strip())
    if why:
        st.error(why)
        return None
    return runs_root() / name.strip()


def run_folders() -> list[str]:
    """Names of the folders under the runs root that hold a sweep.json (newest first)."""
    root = runs_root()
    try:
        found = [p for p in root.iterdir() if (p / "sweep.json").is_file()]
    except OSError:
        return []
    return [p.name for p in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)]


def conflict(spec: SweepSpec, out: Path) -> str | None:
    """Why ``out`` cannot take ``spec`` (a sweep over another dataset, an unreadable sweep.json), else None."""
    path = out / "sweep.json"
    if not path.exists():
        return None
    try:
        old = SweepSpec.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as e:  # named by the run name: never the server's path
        return f"{out.name}/sweep.json is not a readable sweep file ({type(e).__name__}); pick another run name"
    if not old.same_dataset(spec):
        d = old.dataset_key()
        return f"{out.name} holds a sweep over another dataset ({d['name']}, n={d['n']}); pick another run name"
    return None


def with_variants(specs) -> list[str]:
    """Each perturbation's name (its default variant) followed by ``name/variant`` for its other variants."""
    return [n for s in specs for n in [s.name] + [f"{s.name}/{v}" for v in s.variants if v != s.default_variant]]


# ---- the sweep's dataset ----------------------------------------------------------------------------------
def sweep_dataset() -> tuple[dict, str] | None:
    """(SweepSpec dataset dict without ``n``, kind) for the sidebar's dataset. Uploads live in this session's
    memory and cannot be described by a spec: say so and offer the built-in datasets instead."""
    from robustlab.datasets.registry import get_entry

    s = st.session_state
    choice = s.get("dataset", "builtin")
    if choice == "upload":
        st.info("A sweep reads its dataset again from a spec (name, folder, split), and your uploads live only in "
                "this browser session: sweep a built-in dataset instead, or a local folder (sidebar).")
        choice = st.radio("Dataset for the sweep", list(BUILTIN), format_func=BUILTIN.get, key="bench_builtin",
                          horizontal=True, **valid("bench_builtin", list(BUILTIN)))
    if choice in BUILTIN:
        return {"name": choice, "split": "demo"}, get_entry(choice)["kind"]
    from ui.folders import choice as folder_choice

    got = folder_choice()  # the operator's data roots: a folder outside them, missing or unreadable is one line
    if got is None:
        return None
    name, root, split = got
    return {"name": name, "root": root, "split": split}, get_entry(name)["kind"]


# ---- the sweep job ----------------------------------------------------------------------------------------
@dataclass
class Job:
    """One sweep into one folder; ``run()`` works (in a thread or not), the page reads progress, status, error."""

    spec: SweepSpec
    out: Path
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: dict = field(default_factory=dict)
    status: object = None
    error: str | None = None
    thread: threading.Thread | None = None
    seen: bool = False  # the page has said how it ended
    owner: str = ""  # the browser session that started it ("" outside a Streamlit server)
    started: float = field(default_factory=time.time)
    _gone_since: float | None = None  # when its owner's session was first seen gone

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def progress_fn(self, on_progress=None):
        """The work's progress callback: keeps and passes on each report; cancels once the session has gone."""
        def progress(p):
            self.progress = dict(p)
            if on_progress:
                on_progress(p)
            if self.owner_gone():
                self.cancel.set()
        return progress

    def run(self, on_progress=None) -> None:
        progress = self.progress_fn(on_progress)
        try:
            self.status = run_sweep(self.spec, self.out, progress=progress, cancel=self.cancel)
        except (SweepError, ValueError, OSError) as e:
            self.error = self.shown(str(e).replace("use another --out", "pick another run name"))  # the CLI's hint
        except Exception as e:  # noqa: BLE001 - a failing cell must end the job with a message, not kill the page
            self.error = self.shown(f"{type(e).__name__}: {e}")

    def shown(self, text: str) -> str:
        """A sweep's message as a viewer sees it: run folders by their names, never the server's path."""
        root = str(self.out.parent)
        return text.replace(root + os.sep, "").replace(root, "the runs folder") if len(root) > 1 else text

    def owner_gone(self, grace_s: float = OWNER_GRACE_S) -> bool:
        """Whether the starting session has been gone for ``grace_s`` (a network drop reconnects within it)."""
        if not self.owner:
            return False
        try:
            from streamlit.runtime import Runtime

            alive = Runtime.instance().is_active_session(self.owner)
        except Exception:  # noqa: BLE001 - no runtime (AppTest, a notebook): nothing to watch
            return False
        now = time.monotonic()
        if alive:
            self._gone_since = None
            return False
        self._gone_since = self._gone_since or now
        return now - self._gone_since >= grace_s


def progress_text(p: dict) -> str:
    done, total, eta = p.get("done", 0), p.get("total", 0), p.get("eta_s")
    eta = "…" if eta is None else f"{eta:.0f} s" if eta < 120 else f"{eta / 60:.1f} min"
    skipped = f" ({p['skipped']} already there)" if p.get("skipped") else ""
    return f"{done}/{total} cells{skipped} · ETA {eta}"


class ServerJobs:
    """The sweeps of every browser session of this server process: the per-server limit and the list shown."""

    def __init__(self):
        self.lock = threading.Lock()
        self.jobs: list[Job] = []

    def running(self) -> list[Job]:
        with self.lock:
            self.jobs = [j for j in self.jobs if j.running or time.time() - j.started < 3600]
            return [j for j in self.jobs if j.running]

    def admit(self, job: Job, limit: int) -> str | None:
        """Add ``job`` unless ``limit`` sweeps are running already (then one line saying so)."""
        with self.lock:
            busy = [j for j in self.jobs if j.running]
            if len(busy) >= limit:
                return (f"The server is busy: {len(busy)} sweep(s) are running and this dashboard runs at most "
                        f"{limit} at once. Try again when one has finished.")
            self.jobs.append(job)
            return None


# one per server process, a module global: never in a Streamlit cache, which any viewer's clear_cache message would
# empty (and with it the sweep limit and the other sessions' jobs; issue 44)
SERVER_JOBS = ServerJobs()


def server_jobs() -> ServerJobs:
    return SERVER_JOBS


def start(spec: SweepSpec, out: Path) -> None:
    """Run ``spec`` into ``out``: in a thread owned by the session, or here when ``ROBUSTLAB_SYNC_SWEEP=1``. At
    most the operator's ``max_sweeps`` run at once on the server; past that, one "busy" line and nothing starts."""
    from ui import operator

    job = Job(spec, out, owner=session_id())
    why = server_jobs().admit(job, operator.config().max_sweeps)
    if why:
        st.error(why)
        return
    st.session_state[JOB] = job
    if os.environ.get(SYNC_ENV) == "1":
        bar = st.progress(0.0, text="Starting the sweep…")
        job.run(lambda p: bar.progress(min(max(p.get("fraction", 0.0), 0.0), 1.0), text=progress_text(p)))
        bar.empty()
        return
    job.thread = threading.Thread(target=job.run, name=f"sweep-{out.name}", daemon=True)
    job.thread.start()


@st.fragment(run_every=0.5)
def _poll() -> None:
    job = st.session_state.get(JOB)
    if job is None or not job.running:
        st.rerun(scope="app")  # done: the whole page shows how it ended
    p = job.progress
    st.progress(min(max(p.get("fraction", 0.0), 0.0), 1.0),
                text=progress_text(p) if p else "Loading the dataset and the models…")


def job_panel() -> None:
    """The current job: progress and Cancel while it runs; how it ended (and Resume) when it is done."""
    others = [j for j in server_jobs().running() if j is not st.session_state.get(JOB)]
    if others:
        st.caption("Also running on this server: " + "; ".join(
            f"{j.out.name} ({progress_text(j.progress) if j.progress else 'starting'}, "
            f"{'yours' if j.owner and j.owner == session_id() else 'another viewer'})" for j in others))
    job = st.session_state.get(JOB)
    if job is None:
        return
    if job.running:
        _poll()
        st.button("Cancel", key="bench_cancel", on_click=job.cancel.set,
                  help="Stops at the next item; finished cells stay in the folder.")
        return
    s = job.status
    if job.error:
        st.error(f"The sweep stopped: {safe_md(job.error, hide=True)}")
    elif s is not None and s.cancelled:
        st.warning(f"Cancelled: {s.done} cell(s) run, {s.skipped} already there, {s.total} in the sweep.")
    elif s is not None:
        st.success(f"Done: {s.done} cell(s) run, {s.skipped} already there, {s.total} in the sweep "
                   f"({s.seconds:.1f} s) → run {safe_md(job.out.name)}")
    if not job.seen and (job.out / "sweep.json").exists():
        st.session_state[SHOWN] = job.out.name
    job.seen = True
    stopped = job.error or (s is not None and s.cancelled)
    if stopped and st.button("Resume", key="bench_resume", help="Reruns the same sweep into the same folder; "
                                                                "finished cells are skipped."):
        start(job.spec, job.out)
        st.rerun()


# ---- the report -------------------------------------------------------------------------------------------
def report_file(run_dir: Path, which: int) -> bytes:
    """results.csv (0) or report.html (1) of ``run_dir``, written now (a download button's deferred data)."""
    try:
        return Path(report.write_report(run_dir)[which]).read_bytes()
    except Exception as e:  # noqa: BLE001 - a download must not raise in the server
        return f"robustlab could not write the report of {run_dir}: {type(e).__name__}: {e}\n".encode()


def show_report(run_dir: Path) -> None:
    """The report of a run folder: plots, the γ table per category, downloads and the worst examples; any
    problem reading the folder is one line."""
    try:
        run = report.load_run(run_dir)
        tables = report.report_tables(run)
        figs = report.figures(tables)  # the same tables: the bootstrap intervals are computed once
    except Exception as e:  # noqa: BLE001 - an unreadable folder must not take the page down
        st.error(f"Cannot read the run folder {safe_md(run_dir.name)}: {type(e).__name__}: {safe_md(e, hide=True)}")
        return
    st.subheader(f"Report — {md_escape(run.name)}")  # a run name is shown as text, never as Markdown
    st.caption(safe_md(report.describe(run)))
    for w in run.warnings:
        st.warning(safe_md(w))
    if not run.results:
        st.info("No finished cell in this folder yet.")
        return
    show_summary(run, tables)
    d1, d2 = st.columns(2)
    d1.download_button("Download report", lambda: report_file(run_dir, 1), file_name=f"{run.name}-report.html",
                       mime="text/html", key="bench_dl_html", on_click="ignore", icon=":material/description:")
    d2.download_button("Download results.csv", lambda: report_file(run_dir, 0), file_name=f"{run.name}-results.csv",
                       mime="text/csv", key="bench_dl_csv", on_click="ignore", icon=":material/table_chart:")
    for i, (title, note, t) in enumerate(tables.get("protocol") or []):  # the paper's own tables, its layout
        st.markdown(f"**{md_escape(title)}**")
        st.caption(safe_md(note))
        st.dataframe(t, hide_index=True, width="stretch", key=f"bench_protocol_table_{i}")
    ci_tables(tables)
    iv = tables.get("interventions")
    if iv is not None and not iv.empty and not tables.get("protocol"):
        st.markdown("**Model interventions** (Rawal et al.'s Table 1, clean inputs; ↓: a drop of at least 2 points)")
        st.dataframe(iv.dropna(axis=1, how="all"), hide_index=True, width="stretch", key="bench_table1")
    ad = tables.get("adaptation")
    if ad is not None and not ad.empty:
        st.markdown("**Test-time adaptation** (HAT-VTR's Tables 1–5: R@1 clean, shifted, after each method; "
                    "mean rows per severity)")
        st.dataframe(ad.dropna(axis=1, how="all"), hide_index=True, width="stretch", key="bench_adapt_table")
    order = ("heatmap", "severity", "robustness", "scatter", "combinations", "clean")
    keys = sorted(figs, key=lambda k: next((i for i, o in enumerate(order) if k.startswith(o)), len(order)))
    for i, k in enumerate(keys):
        if k.startswith("robustness"):
            gamma_table(tables.get("robustness"))
        st.plotly_chart(figs[k], key=f"bench_fig_{i}")
    try:
        worst_examples(run)
    except (ValueError, TypeError, KeyError, AttributeError, OSError) as e:  # a malformed cell's examples
        st.error(f"Cannot show the worst examples of {safe_md(run_dir.name)}: {type(e).__name__}: "
                 f"{safe_md(e, hide=True)}")


def ci_tables(tables: dict) -> None:
    """The clean scores with their 95 % bootstrap intervals and which differences hold (paired bootstrap), the
    same tables as report.html's (:func:`robustlab.bench.report_html.holds_tables`)."""
    from robustlab.bench.report_html import CI_NOTE, holds_tables, with_ci  # loaded with the report module (jinja2)

    clean = tables.get("clean")
    held = holds_tables(tables)
    if (clean is None or clean.empty or "score_lo" not in clean) and not held:
        return
    with st.expander("Confidence: 95 % intervals and which differences hold", expanded=False):
        st.caption(CI_NOTE)
        if clean is not None and not clean.empty:
            st.markdown("**Clean scores** (value [lo, hi])")
            st.dataframe(with_ci(clean).dropna(axis=1, how="all"), hide_index=True, width="stretch",
                         key="bench_ci_clean")
        for i, (title, t) in enumerate(held):
            st.markdown(f"**{md_escape(title)}**")
            st.dataframe(t, hide_index=True, width="stretch", key=f"bench_ci_{i}")


def show_summary(run, tables: dict) -> None:
    """What the run found, in plain words: the same sentences as the top of report.html
    (:func:`robustlab.bench.report_summary.summary`), shown literally (model names are text, never Markdown)."""
    from robustlab.bench.report_summary import summary

    try:
        lines = summary(run, tables)
    except Exception as e:  # noqa: BLE001 - the summary must not take the report down
        st.warning(f"No summary for this run: {type(e).__name__}: {safe_md(e, hide=True)}")
        return
    with st.container(border=True, key="bench_summary"):
        st.markdown("**What this run found**")
        st.markdown("\n".join(f"- {md_escape(line)}" for line in lines))


def gamma_table(rob) -> None:
    """γᵃ / γʳ / MMI per category (and overall), the report's robustness table."""
    if rob is None or rob.empty:
        return
    st.markdown("**Robustness per category** (γᵃ, γʳ, MMI against the clean cell)")
    level = next((c for c in ("level", "scope", "row") if c in rob.columns), None)
    shown = (rob[rob[level] != "perturbation"] if level else rob).dropna(axis=1, how="all")
    st.dataframe(shown, hide_index=True, width="stretch", key="bench_gamma")


def _thumb(run_dir: Path, rel) -> Path | None:
    if not rel:
        return None
    p = (run_dir / str(rel)).resolve()
    return p if run_dir.resolve() in p.parents and p.is_file() else None


def cond_label(conds: dict) -> str:
    from robustlab.perturb.condition import Condition

    parts = []
    for axis, c in (conds or {}).items():
        c = c if isinstance(c, Condition) else Condition.from_dict(c) if isinstance(c, dict) else Condition()
        if not c.clean:
            parts.append(f"{axis} {c.label()}")
    return ", ".join(parts) or "clean"


def worst_examples(run) -> None:
    """The worst examples of one perturbed cell (picked here), each with its record and an "Open on ..." button."""
    cells = [(r, r.extra.get("worst")) for r in run.results if isinstance(r.extra.get("worst"), list)
             and r.extra["worst"]]
    if not cells:
        return
    st.subheader("Worst examples")
    labels = [f"{r.model} · {r.task} · {cond_label(r.conditions)}" for r, _ in cells]
    idx = st.selectbox("Cell", range(len(cells)), format_func=labels.__getitem__, key="bench_worst_cell",
                       **valid("bench_worst_cell", range(len(cells)), format_func=labels.__getitem__))
    r, worst = cells[idx if idx is not None and idx < len(cells) else 0]
    cols = st.columns(min(len(worst), 4))
    for j, w in enumerate(w for w in worst if isinstance(w, dict)):
        with cols[j % len(cols)]:
            thumb = _thumb(run.root, w.get("thumb"))
            if thumb is not None:
                st.image(str(thumb), width="stretch")
            st.caption(f"{w.get('direction', '')} · item {w.get('item')} · rank {w.get('clean_rank')} → "
                       f"{w.get('perturbed_rank')}")
            st.text(str(w.get("text", "")))  # dataset text: literal, never markdown
            with st.expander("Record"):
                st.json({k: w.get(k) for k in ("visual_record", "text_record") if w.get(k)})
            target = "Grounding" if r.task == "grounding" else "Retrieval"
            if st.button(f"Open on {target}", key=f"bench_open_{idx}_{j}", on_click=open_example,
                         args=(run.sweep, r.model, r.task, r.conditions, w)):
                st.switch_page(f"pages/{target.lower()}.py")


def open_example(sweep: dict, model: str, task: str, conditions: dict, w: dict) -> None:
    """Button callback (it runs before the script, so the sidebar's widgets can still be set): the preset of the
    Retrieval (or Grounding) page for this example."""
    visual, text = (conditions.get(a) or {} for a in ("visual", "text"))
    dataset = sweep.get("dataset") if isinstance(sweep.get("dataset"), dict) else None
    if task == "grounding":
        preset_grounding(model, visual, text, w.get("item"), dataset)
    else:
        preset_retrieval(model, visual, text, w.get("item"), w.get("direction"), dataset)
