"""Helpers shared by the docs' screenshot scripts (screenshots.py, failures_screenshot.py, protocol_screenshots.py).

- :func:`serve_app`: ``streamlit run app.py`` on a free loopback port with a fresh cache folder, waited for until its
  health endpoint answers, stopped on exit;
- :func:`chromium`: Debian's headless Chromium through Playwright's ``executable_path`` (no browser download);
- :func:`settle`: wait until a Streamlit page's script run has finished;
- :func:`shrink`: rewrite a PNG as a 256-colour palette image.

Not part of the docs build (the build only reads the PNGs).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
IDLE = '[data-test-script-state="notRunning"]'
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(cache: str | None = None, wait_s: int = 180) -> Iterator[str]:
    """Start ``streamlit run app.py`` (loopback, headless, a fresh ``ROBUSTLAB_CACHE`` unless ``cache`` names one),
    yield its URL once ``/_stcore/health`` answers, and stop it on exit."""
    port = free_port()
    env = dict(os.environ, ROBUSTLAB_CACHE=cache or tempfile.mkdtemp(prefix="rl-shot-"))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(wait_s):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def chromium(pw):
    """Headless Chromium from the system (``/usr/bin/chromium`` or whichever ``chromium`` is on PATH)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    return pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)


def settle(page, timeout: float = 240_000) -> None:
    """Wait until the Streamlit page's script run has finished (and stayed finished for 1.5 s)."""
    for _ in range(3):
        page.locator(IDLE).first.wait_for(state="attached", timeout=timeout)
        page.wait_for_timeout(1500)
        if page.locator(IDLE).count() > 0:
            return


def shrink(path: Path) -> None:
    """A 256-colour palette PNG: a third of the size, indistinguishable for a UI screenshot."""
    from PIL import Image

    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(path, optimize=True)
