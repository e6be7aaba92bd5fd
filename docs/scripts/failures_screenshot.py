"""Take the Failures page's screenshot (docs/img/failures-page.png): a failure map on the built-in images.

    python docs/scripts/failures_screenshot.py [--n 200] [--out docs/img/failures-page.png]

Starts ``streamlit run app.py`` on a free loopback port with a fresh cache folder (as docs/scripts/screenshots.py),
opens the Failures page in headless Chromium, sets the number of items, presses Run, waits for the map and saves
the page. Not part of the docs build (the build only reads the PNG).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shotlib import ROOT, chromium, serve_app, settle, shrink  # noqa: E402 - the screenshot scripts' shared helpers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="items of the built-in images")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "failures-page.png"))
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=2600)
    args = ap.parse_args()
    with serve_app(cache=os.environ.get("ROBUSTLAB_CACHE")) as url:
        from playwright.sync_api import sync_playwright  # the [test] extra; only the screenshot scripts need it

        with sync_playwright() as pw:
            browser = chromium(pw)
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.set_default_timeout(900_000)
            page.goto(url)
            sidebar = page.locator('[data-testid="stSidebar"]')
            sidebar.get_by_text("Model", exact=True).wait_for()
            settle(page)
            sidebar.get_by_role("link", name="Failures", exact=True).click()
            page.get_by_text("No failure map yet: choose above and press Run.").wait_for()
            settle(page)
            box = page.locator(".st-key-fail_n input")
            box.fill(str(args.n))
            box.press("Enter")
            settle(page)
            page.locator(".st-key-fail_go button").click()
            page.get_by_text("Where it breaks", exact=True).wait_for()
            settle(page)
            page.wait_for_timeout(3000)  # images and charts finish drawing
            page.screenshot(path=args.out)
            shrink(Path(args.out))
            print(args.out, flush=True)
            browser.close()


if __name__ == "__main__":
    main()
