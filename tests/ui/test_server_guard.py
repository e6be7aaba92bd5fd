"""No client message changes what every viewer shares (issue 44, finding 1).

A real server (app.py's ``st.App`` under uvicorn) and two viewers that speak the raw websocket protocol
(tests/ui/ws_probe.py). Viewer A runs a sweep under ``ROBUSTLAB_MAX_SWEEPS=1``, viewer B is refused as busy, then B
sends ``BackMsg{clear_cache: true}``. On the main of 2026-11-28 that message emptied the jobs registry (A dropped off
"also running", B was admitted beside A) and every loaded model loaded again (two ``model load:`` lines)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def probe(*args: str) -> dict:
    env = {**os.environ, "ROBUSTLAB_MAX_SWEEPS": "1", "ROBUSTLAB_WARM_UP": "0"}
    p = subprocess.run([sys.executable, str(HERE / "ws_probe.py"), *args], env=env, capture_output=True, text=True,
                       timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("PROBE ")]
    assert p.returncode == 0 and lines, p.stdout[-2000:] + p.stderr[-4000:]
    return json.loads(lines[-1][len("PROBE "):])


def check_nothing_shared_changed(out: dict) -> None:
    assert out["admitted_a"] is None, out
    assert out["refused_b_before"] and "busy" in out["refused_b_before"]
    assert out["refused_b_after"] and "busy" in out["refused_b_after"], "B admitted beside A after clear_cache"
    before, after = out["before"], out["after"]
    assert after["jobs_registry"] == before["jobs_registry"] and after["running"] == before["running"] == ["sweep-of-a"]
    assert after["limit"] == before["limit"] == 1
    assert "ui/loaders.py:get_model" in before["pools"]["models"]  # the loaders moved out of ui/state (issue 46)
    assert after["pools"] == before["pools"]  # models, galleries, benches: still there
    assert out["loads_before"] == out["loads_after"] == 1, out["model_load_lines"]  # one line per real load
    assert out["model_load_lines"] == ["model load: builtin:tiny-vit-clip on auto"]


@pytest.mark.slow
def test_clear_cache_from_a_viewer_is_refused_and_changes_nothing_shared():
    out = probe()
    check_nothing_shared_changed(out)
    assert any("refused a clear_cache message" in ln for ln in out["guard_lines"]), out["guard_lines"]


@pytest.mark.slow
def test_without_the_guard_the_shared_state_still_lives_outside_streamlits_caches():
    """The second wall: Streamlit's own handler clears its caches and B's session state, and nothing of the
    dashboard's shared state lives there."""
    out = probe("--no-guard")
    check_nothing_shared_changed(out)
    assert out["guard_lines"] == []


def test_the_guard_refuses_clear_cache_and_git_info_and_passes_everything_else(monkeypatch, caplog):
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.runtime.app_session import AppSession

    from ui import server_guard

    seen = []

    def streamlits_handler(self, msg):  # stands in for Streamlit's own handler
        seen.append(msg.WhichOneof("type"))

    monkeypatch.setattr(AppSession, "handle_backmsg", streamlits_handler)
    assert server_guard.install() and server_guard.install()  # idempotent: wrapped once
    assert AppSession.handle_backmsg.__wrapped__ is streamlits_handler

    class Session:
        id = "0123456789abcdef"

    with caplog.at_level("WARNING", logger="robustlab.ui"):
        for kind in ("clear_cache", "load_git_info", "app_heartbeat", "stop_script", "set_run_on_save"):
            msg = BackMsg()
            setattr(msg, kind, True)
            AppSession.handle_backmsg(Session(), msg)
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        AppSession.handle_backmsg(Session(), msg)
        msg = BackMsg()
        msg.file_urls_request.file_names.extend(["a.png", "b.png", "a.png"])
        AppSession.handle_backmsg(Session(), msg)
    assert seen == ["app_heartbeat", "stop_script", "set_run_on_save", "rerun_script", "file_urls_request"]
    server_guard.arrived(Session.id, ["b.png"])  # reached the Perturb page's uploader: not the form's to miss
    assert server_guard.take_requested(Session.id) == {"a.png": 2}
    assert server_guard.take_requested(Session.id) == {}  # taken once
    refused = [r.getMessage() for r in caplog.records if "server guard" in r.getMessage()]
    assert len(refused) == 2 and "clear_cache" in refused[0] and "load_git_info" in refused[1]
    assert all("01234567" in r and "0123456789" not in r for r in refused)  # a short session id, nothing else


def test_the_upload_bookkeeping_is_bounded_whatever_a_client_sends():
    from ui import server_guard

    for i in range(server_guard.MAX_SESSIONS + 50):
        server_guard._note_upload_request(f"s{i}", ["x.png"])
    assert len(server_guard._REQUESTED) == server_guard.MAX_SESSIONS and "s0" not in server_guard._REQUESTED
    server_guard._note_upload_request("big", (f"f{i}.png" for i in range(server_guard.MAX_NAMES * 2)))
    server_guard._note_upload_request("big", ["y" * 10_000])
    got = server_guard.take_requested("big")
    assert sum(got.values()) == server_guard.MAX_NAMES and all(len(n) <= 512 for n in got)
    server_guard._REQUESTED.clear()
