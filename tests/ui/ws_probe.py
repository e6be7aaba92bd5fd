"""A real dashboard server and two raw websocket viewers (tests/ui/test_server_guard.py; issue 44).

Run as ``python tests/ui/ws_probe.py [--no-guard]``: serves app.py's ``st.App`` with uvicorn in a thread of this
process (so the probe can read what the server shares), connects viewers A and B over ``/_stcore/stream`` with
nothing but the protocol's BackMsg / ForwardMsg protobufs, has A run a sweep job, then B sends
``BackMsg{clear_cache: true}``. Prints one JSON object: what was shared before and after, and the server log's lines.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def viewer(port: int):
    import websockets

    return await websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                                    max_size=None, open_timeout=60)


async def run_once(ws, timeout: float = 240.0) -> list[str]:
    """Send rerun_script and read ForwardMsgs until script_finished; the kinds of message seen."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = BackMsg()
    msg.rerun_script.query_string = ""
    msg.rerun_script.page_script_hash = ""
    await ws.send(msg.SerializeToString())
    seen = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        fm = ForwardMsg()
        fm.ParseFromString(await asyncio.wait_for(ws.recv(), timeout=end - time.monotonic()))
        kind = fm.WhichOneof("type")
        seen.append(kind)
        if kind == "script_finished":
            return seen
    raise TimeoutError("no script_finished")


def shared_state() -> dict:
    from ui import bench, operator

    jobs = bench.server_jobs()
    try:
        from ui import cache

        pools = {n: sorted(str(k[0]) for k in p.keys()) for n, p in cache._POOLS.items()}
    except ImportError:  # a dashboard from before the shared pools (the "before" column of issue 44's table)
        pools = None
    return {"jobs_registry": id(jobs), "running": [j.out.name for j in jobs.running()],
            "limit": operator.config().max_sweeps, "pools": pools}


async def main(guard: bool) -> dict:
    import uvicorn

    log = Lines()
    for name in ("robustlab", "streamlit"):
        logging.getLogger(name).addHandler(log)
        logging.getLogger(name).setLevel(logging.INFO)
    import app as app_module  # imported as a module: app.py installs the server guard, then makes st.App

    if not guard:  # the second wall alone: Streamlit's own clear_cache handler runs
        from streamlit.runtime.app_session import AppSession

        import ui.server_guard

        ui.server_guard.install = lambda: False  # app.py's runs install it again otherwise
        AppSession.handle_backmsg = getattr(AppSession.handle_backmsg, "__wrapped__", AppSession.handle_backmsg)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app_module.app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", ws="websockets"))
    threading.Thread(target=server.run, name="probe-server", daemon=True).start()
    for _ in range(600):
        if server.started:
            break
        await asyncio.sleep(0.1)
    a, b = await viewer(port), await viewer(port)
    await run_once(a)
    await run_once(b)

    from streamlit.runtime import Runtime
    from ui.bench import Job, server_jobs

    sessions = [s.session.id for s in Runtime.instance()._session_mgr.list_active_sessions()]
    release = threading.Event()
    job_a = Job(spec=None, out=Path("sweep-of-a"), owner=sessions[0])  # a sweep of viewer A, running until released
    job_a.thread = threading.Thread(target=release.wait, daemon=True)
    job_a.thread.start()
    from ui import operator

    limit = operator.config().max_sweeps
    admitted_a = server_jobs().admit(job_a, limit)
    job_b = Job(spec=None, out=Path("sweep-of-b"), owner=sessions[-1])
    refused_b_before = server_jobs().admit(job_b, limit)
    before = shared_state()
    loads_before = sum("model load:" in line for line in log.lines)

    from streamlit.proto.BackMsg_pb2 import BackMsg

    clear = BackMsg()
    clear.clear_cache = True
    await b.send(clear.SerializeToString())  # viewer B, over the raw protocol
    await asyncio.sleep(1.0)
    await run_once(b)
    await run_once(a)
    job_b2 = Job(spec=None, out=Path("sweep-of-b-again"), owner=sessions[-1])
    refused_b_after = server_jobs().admit(job_b2, operator.config().max_sweeps)
    after = shared_state()
    release.set()
    await a.close()
    await b.close()
    server.should_exit = True
    return {"admitted_a": admitted_a, "refused_b_before": refused_b_before, "refused_b_after": refused_b_after,
            "before": before, "after": after, "loads_before": loads_before,
            "loads_after": sum("model load:" in line for line in log.lines),
            "model_load_lines": [ln for ln in log.lines if "model load:" in ln],
            "guard_lines": [ln for ln in log.lines if "server guard" in ln]}


if __name__ == "__main__":
    out = asyncio.run(main(guard="--no-guard" not in sys.argv))
    print("PROBE " + json.dumps(out), flush=True)
    os._exit(0)  # the server thread, the warm-up and PyTorch's pools: nothing to wait for
