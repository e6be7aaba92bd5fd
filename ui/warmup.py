"""Warm-up at server start: the default Retrieval view's work, begun before the first browser connects.

``streamlit run app.py`` serves app.py through ``st.App`` (app.py's ``app``), whose lifespan starts
:func:`warm_up` in a thread as the server comes up (a thread: the server answers meanwhile). It imports PyTorch
and robustlab and computes what a new session's first page (Retrieval, on the built-in images, with the operator's
default model) computes first: the model, the gallery, its clean and perturbed embeddings and the default query's.
Everything goes through the same cached loaders and per-condition locks as the page (:mod:`ui.state`,
:func:`ui.widgets.compute`), so a session that arrives meanwhile waits for that work instead of repeating it, and
what its page shows is computed by the same code either way. Nothing is shown from the warm-up itself: it only
fills the caches a session reads.

The operator turns it off with ``warm_up = false`` in robustlab.toml or ``ROBUSTLAB_WARM_UP=0``
(:mod:`ui.operator`); then nothing is imported before a session asks. A failure is one logged line: a session then
computes the same things itself and shows whatever went wrong as its page would.
"""
from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("robustlab.ui")

# the Retrieval page's default conditions per dataset kind: {kind: {modality: (perturbation, severity)}}, and its
# seed; pages/retrieval.py reads them from here, so the warm-up computes exactly what the page asks for first
RETRIEVAL_DEFAULTS = {"image": {"image": ("gaussian_noise", 3), "text": ("keyboard", 2)},
                      "video": {"video": ("reverse_sampling", 1), "text": (None, 2)}}
RETRIEVAL_SEED = 0
THREAD = "robustlab-warm-up"  # the name of the thread app.py starts it in
STATE: dict = {"status": "not started", "steps": []}  # what the warm-up did: (step, seconds since its start)


class _NoContextLine(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" line for the warm-up's own thread only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return threading.current_thread().name != THREAD or "ScriptRunContext" not in record.getMessage()


def warm_up() -> dict:
    """Compute the default Retrieval view (see the module docstring); returns :data:`STATE`. Never raises."""
    t0 = time.perf_counter()
    STATE.clear()
    STATE.update(status="running", steps=[])

    def step(name: str) -> None:
        STATE["steps"].append((name, round(time.perf_counter() - t0, 3)))

    try:
        from ui import operator  # light: the configuration decides before PyTorch is imported

        if not operator.config().warm_up:
            STATE.update(status="off")
            return STATE
        from robustlab.perturb.allocator import tune_allocator
        from robustlab.perturb.condition import Condition
        from ui import state
        from ui.widgets import _encoding

        step("imports")
        # the cached loaders look for a session's context to show their spinners; this thread has none, by design
        logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_NoContextLine())
        tune_allocator()  # as app.py does, before anything is perturbed
        spec, device = state.default_model(), "auto"
        ds = state.get_builtin_gallery(state.DEMO_N)
        bench = state.get_bench(spec, device, f"builtin-{state.DEMO_N}", ds)
        step("model")
        conds = {m: Condition(n, s, RETRIEVAL_SEED) for m, (n, s) in RETRIEVAL_DEFAULTS[bench.kind].items()}
        for cond in (Condition(), conds[bench.kind]):
            with _encoding(bench, "visual", cond):
                bench.visuals(cond)
        step("gallery")
        j = bench.caption_of[sorted(bench.caption_of)[0]]  # the page's first query: the first captioned item's
        for cond in (Condition(), conds["text"]):
            bench.one_text(j, cond)
        step("query")
        STATE.update(status="done", model=spec)
    except Exception as e:  # noqa: BLE001 - a warm-up must never take the server down: the session does the work
        STATE.update(status="failed", error=f"{type(e).__name__}: {e}")
        log.warning("warm-up failed (sessions compute the same themselves): %s: %s", type(e).__name__, e)
    return STATE
