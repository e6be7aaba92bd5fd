"""Take the dashboard screenshots of the docs (docs/img/page-*.png): one per page of app.py, on its defaults.

    python docs/scripts/screenshots.py [--pages Retrieval,Perturb] [--out docs/img]

Starts ``streamlit run app.py`` on a free loopback port with a fresh cache folder, opens each page in headless
Chromium (Debian's, through Playwright's ``executable_path``, as the browser tests do) and saves the viewport
once the page's script run has finished. Not part of the docs build (the build only reads the PNGs).
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IDLE = '[data-test-script-state="notRunning"]'


def page_titles() -> list[str]:
    """The pages app.py registers, in its order (its VIEWS list)."""
    return re.findall(r'\("pages/\w+\.py", "([^"]+)"', (ROOT / "app.py").read_text())


def settle(page, timeout: float = 240_000) -> None:
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default="", help="comma-separated page titles (default: all of app.py's)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1150)
    args = ap.parse_args()
    titles = [t for t in args.pages.split(",") if t] or page_titles()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, ROBUSTLAB_CACHE=tempfile.mkdtemp(prefix="robustlab-shots-"))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(1)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.set_default_timeout(240_000)
            page.goto(url)
            sidebar = page.locator('[data-testid="stSidebar"]')
            sidebar.get_by_text("Model", exact=True).wait_for()
            settle(page)
            for title in titles:
                t0 = time.monotonic()
                sidebar.get_by_role("link", name=title, exact=True).click()
                settle(page)
                page.wait_for_timeout(2000)  # images and charts finish drawing (no script run)
                path = out / f"page-{title.lower()}.png"
                page.screenshot(path=str(path))
                shrink(path)
                print(f"{path.name}: {time.monotonic() - t0:.1f} s", flush=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
