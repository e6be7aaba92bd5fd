"""The run: one server, the sessions driven concurrently from one asyncio loop in one headless Chromium."""
from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from .common import BROWSER_ARGS, GROWTH_BOUND_MB, PEAK_BOUND_MB, app_pages
from .report import results
from .scenarios_tools import plan
from .server import Sampler, Server
from .session import Expect, Session, Shared


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


async def _drive(shared: Shared, sessions: list[Session], exe: str, stagger_s: float) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=exe, headless=True, args=BROWSER_ARGS)
        version = browser.version

        async def start(s: Session, delay: float):
            await asyncio.sleep(delay)
            await s.run(browser)

        tasks = [asyncio.ensure_future(start(s, i * stagger_s)) for i, s in enumerate(sessions)]
        done, pending = await asyncio.wait(tasks, timeout=max(1.0, shared.hard_deadline + shared.soak_s + 120
                                                               - time.time()))
        for t, s in zip(tasks, sessions):  # a step stuck past every deadline: an error, and the session is stopped
            if t in pending:
                s.error("stuck", "the session's step did not end 120 s after the hard deadline")
                t.cancel()
        if pending:
            await asyncio.wait(pending, timeout=30)
        await browser.close()
    return {"chromium": version}


def run(sessions: int = 16, seconds: float = 600, *, min_steps: int = 2, grace_s: float = 240, stagger_s: float = 0.5,
        peak_bound_mb: float = PEAK_BOUND_MB, growth_bound_mb: float = GROWTH_BOUND_MB, videos: bool = False,
        workdir: Path | None = None, screenshots: Path | None = None, only: list[int] | None = None,
        soak_s: float = 0.0, log=print) -> dict:
    """Start the server, drive ``sessions`` sessions for ``seconds`` (each then finishes its step, and does at least
    ``min_steps`` before ``seconds + grace_s``), stop, and return the results (see benchmarks/bench_concurrency.py's
    docstring)."""
    exe = _chromium()
    if exe is None:
        raise RuntimeError("Chromium is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="rl-concurrency-")) if workdir is None else Path(workdir)
    tmp.mkdir(parents=True, exist_ok=True)
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    expect = Expect()
    server = Server(tmp)
    t_start = time.time()
    url = server.start()
    log(f"server {url} (pid {server.proc.pid}) up in {time.time() - t_start:.1f} s; log {server.log_path}")
    sampler = Sampler(server.proc.pid)
    sampler.start()
    t0 = time.time()
    shared = Shared(url=url, pages=app_pages(), expect=expect, deadline=t0 + seconds,
                    hard_deadline=t0 + seconds + grace_s, min_steps=min_steps, shots=screenshots, t0=t0,
                    soak_s=soak_s)
    scen = plan(sessions, videos)
    sess = [Session(i, sc, shared) for i, sc in enumerate(scen) if only is None or i in only]
    shared.n_sessions = len(sess)
    info: dict = {}
    try:
        info = asyncio.run(_drive(shared, sess, exe, stagger_s))
    finally:
        t_end = time.time() - t0
        try:
            time.sleep(1.5)
            sampler.stop()
        finally:
            server.stop()
    load_end = os.getloadavg()
    text = server.log()
    return results(sessions, seconds, sess, shared, sampler, server, text, t0, t_end, info, load_start, load_end,
                   peak_bound_mb, growth_bound_mb)
