"""Issue 27 (cold start): ``streamlit run app.py`` serves the dashboard as an ``st.App`` whose lifespan starts the
server-start warm-up (ui/warmup.py): the default Retrieval view computed before the first browser connects.

What must hold: the server finds the App in app.py; importing app.py for it is light (PyTorch comes in the
warm-up's thread, so the server answers meanwhile); the warm-up computes exactly what the default page asks for
first (after it, the page perturbs and encodes no image); the operator can turn it off, and then nothing heavy is
imported; a failure is one logged line, never an exception. The time it saves: benchmarks/bench_cold_start.py
``--warm-up off,on``.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.web.server.app_discovery import discover_asgi_app

import robustlab.tasks.retrieval_bench as retrieval
import ui
from robustlab.perturb.condition import Condition
from ui import operator, warmup

from apptest_helpers import fresh

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, **env) -> str:
    import os

    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, **env))
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_streamlit_run_finds_the_app_with_the_warm_up_lifespan():
    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app"
    # imported as a module (what the server does), app.py builds the App and imports neither PyTorch nor the
    # dashboard's pages: the server starts answering at once
    out = _python("import sys; sys.path.insert(0, '.'); import app; "
                  "print(type(app.app).__name__, app.app.lifespan is not None, app.warm_up_lifespan.__name__, "
                  "'torch' in sys.modules, 'ui.state' in sys.modules)")
    assert out.splitlines()[-1] == "App True warm_up_lifespan False False"


def test_the_light_part_of_ui_imports_without_pytorch():
    assert _python("import sys, ui.operator, ui.warmup; print('torch' in sys.modules)").splitlines()[-1] == "False"


def test_ui_names_resolve_lazily_and_unknown_ones_say_so():
    for name in ui.__all__:
        assert getattr(ui, name) is not None
    assert ui.state.begin_run and ui.widgets.compute is ui.compute
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        ui.nothing_here  # noqa: B018


def test_the_operator_turns_it_off_and_then_nothing_heavy_is_imported():
    assert operator.load_config(env={"ROBUSTLAB_WARM_UP": "0"}, path=ROOT / "none.toml").warm_up is False
    assert operator.load_config(env={}, path=ROOT / "none.toml").warm_up is True
    bad = operator.load_config(env={"ROBUSTLAB_WARM_UP": "maybe"}, path=ROOT / "none.toml")
    assert bad.warm_up is False and any("warm_up='maybe'" in p for p in bad.problems)
    out = _python("import sys; from ui.warmup import warm_up; s = warm_up(); "
                  "print(s['status'], 'torch' in sys.modules)", ROBUSTLAB_WARM_UP="0")
    assert out.splitlines()[-1] == "off False"


def test_after_the_warm_up_the_default_page_perturbs_and_encodes_no_image(monkeypatch):
    state = warmup.warm_up()
    assert state["status"] == "done", state
    assert [s for s, _ in state["steps"]] == ["imports", "model", "gallery", "query"]
    bench = ui.get_bench(state["model"], "auto", f"builtin-{ui.DEMO_N}", ui.get_builtin_gallery(ui.DEMO_N))
    (name, sev), = [v for m, v in warmup.RETRIEVAL_DEFAULTS["image"].items() if m == "image"]
    assert {Condition().key(), Condition(name, sev, warmup.RETRIEVAL_SEED).key()} <= set(bench._visuals)
    images = []
    real = retrieval.perturb_many

    def counting(items, cond, modality, *a, **k):
        if modality == "image":
            images.append(cond.label())
        return real(items, cond, modality, *a, **k)

    monkeypatch.setattr(retrieval, "perturb_many", counting)
    at = fresh()
    ranks = {m.label: m.value for m in at.metric}
    assert ranks["Ground-truth rank, clean"].isdigit() and ranks["Ground-truth rank, perturbed"].isdigit()
    assert images == [], f"the default page computed image conditions the warm-up did not: {images}"


def test_a_failing_warm_up_is_one_logged_line(monkeypatch, caplog):
    from ui import state as ui_state

    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ui_state, "get_builtin_gallery", broken)
    out = warmup.warm_up()
    assert out["status"] == "failed" and "disk on fire" in out["error"]
    assert any("warm-up failed" in r.getMessage() and "disk on fire" in r.getMessage() for r in caplog.records)


def test_a_session_that_finds_the_work_under_way_says_it_is_waiting():
    import threading
    import time

    from ui.widgets import _encoding, _turn

    class Bar:
        def __init__(self):
            self.texts = []

        def progress(self, value, text=""):
            self.texts.append(text)

    bench, cond = object.__new__(retrieval.RetrievalBench), Condition("gaussian_noise", 3, 0)
    bar = Bar()
    with _turn(bench, "visual", cond, bar, "Perturbing and encoding the images"):
        pass
    assert bar.texts == []  # free: nothing to say
    lock, held = _encoding(bench, "visual", cond), threading.Event()

    def holder():
        with lock:
            held.set()
            time.sleep(0.3)

    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    t0 = time.perf_counter()
    with _turn(bench, "visual", cond, bar, "Perturbing and encoding the images"):
        waited = time.perf_counter() - t0
    t.join()
    assert waited > 0.1 and len(bar.texts) == 1
    assert bar.texts[0].startswith("Perturbing and encoding the images: the same work is under way")
    assert not lock.locked()
