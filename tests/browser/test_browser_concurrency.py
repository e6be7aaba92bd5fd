"""Concurrency and load in a real headless Chromium (issue 15): one ``streamlit run app.py`` server, 16 browser
sessions at once, each on its own page with its own choices, for a short bounded time.

The driver is benchmarks/bench_concurrency.py (its ``run``; the benchmark runs the same for 10 minutes and writes
benchmarks/results/concurrency.json). Asserted here: no error (no stException, no error alert, no failed step, no
Traceback in the server's log), every content check passed and every session did at least one step with its
checks (each session sees the results of its own choices: echo checks, the ledger of results per choice across
sessions, two sessions on one page not seeing the same results), every model loaded once, and the server's peak
RSS within the stated bound. Skips with a visible reason when Chromium or Playwright is missing, except in CI
(CI=true), where that is a failure.
"""
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SESSIONS, SECONDS = 16, 80  # then every session finishes its step (at least one each), within a hard deadline
GRACE_S = 240  # the driver's own default: a step not done 120 s after SECONDS + GRACE_S is stuck


def _bench():
    spec = importlib.util.spec_from_file_location("bench_concurrency", ROOT / "benchmarks" / "bench_concurrency.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _need_or_skip(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser test cannot run in CI: {reason}")
    pytest.skip(reason)


def test_sixteen_sessions_each_see_their_own_results(tmp_path):
    bc = _bench()
    if bc._chromium() is None:
        _need_or_skip("Chromium is not installed (apt-get install chromium, or ROBUSTLAB_BROWSER=1 bash setup.sh)")
    if importlib.util.find_spec("playwright") is None:
        _need_or_skip("the playwright Python package is not installed")

    # GRACE_S is a hang detector, not a speed claim (speed is bench_concurrency's): 16 sessions opening at once on
    # 2 cores took 302 s with tiny-clip as the default against a limit of 320 s (80 + 120 + 120), and one more
    # session's first step than that with the ViT default, whose gallery encodes cost ~5x the CNN's per image
    res = bc.run(SESSIONS, SECONDS, min_steps=1, grace_s=GRACE_S, workdir=tmp_path / "run",
                 screenshots=tmp_path / "shots", log=lambda *a: None)
    (tmp_path / "concurrency.json").write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
    keep = os.environ.get("ROBUSTLAB_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "concurrency.json", Path(keep) / "concurrency_ci.json")
    summary = bc.summary(res)

    assert len(res["per_session"]) == SESSIONS
    assert res["errors"]["count"] == 0, summary
    checks = res["content_checks"]
    assert checks["done"] == checks["passed"] > 0, summary
    assert checks["ledger_keys"] >= SESSIONS - 2, summary  # results recorded per choice (Export: basket checks)
    for s in res["per_session"]:
        assert s["steps"] >= 1 and s["passed"] >= 3, summary  # every session saw its own results
    pages = {s["page"] for s in res["per_session"]}
    assert pages == set(bc.app_pages()), pages  # every page of the app, some twice with other choices
    assert all(p["ok"] for p in checks["distinct_pairs"]), checks["distinct_pairs"]

    loads = res["model_loads"]
    assert {"builtin:tiny-vit-clip on auto", "builtin:tiny-vilt on auto"} <= set(loads), loads  # the default
    assert all(n == 1 for n in loads.values()), loads  # st.cache_resource: one load per model per process
    assert res["server_tracebacks"] == 0
    assert res["memory_mb"]["server_rss_peak"] <= res["bounds"]["server_rss_peak_mb"], summary
