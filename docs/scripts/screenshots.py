"""Take the dashboard screenshots of the docs (docs/img/page-*.png): one per page of app.py, on its defaults.

    python docs/scripts/screenshots.py [--pages Retrieval,Perturb] [--out docs/img]

Starts ``streamlit run app.py`` on a free loopback port with a fresh cache folder, opens each page in headless
Chromium (Debian's, through Playwright's ``executable_path``, as the browser tests do) and saves the viewport
once the page's script run has finished. Not part of the docs build (the build only reads the PNGs).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shotlib import ROOT, chromium, serve_app, settle, shrink  # noqa: E402 - the screenshot scripts' shared helpers


def page_titles() -> list[str]:
    """The pages app.py registers, in its order (its VIEWS list)."""
    return re.findall(r'\("pages/\w+\.py", "([^"]+)"', (ROOT / "app.py").read_text())


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

    with serve_app(wait_s=120) as url:
        from playwright.sync_api import sync_playwright  # the [test] extra; only the screenshot scripts need it

        with sync_playwright() as pw:
            browser = chromium(pw)
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


if __name__ == "__main__":
    main()
