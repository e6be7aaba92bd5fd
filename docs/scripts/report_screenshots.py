"""Screenshot the sections of a sweep's report.html (docs/img/report-*.png): each section whose title matches.

    python docs/scripts/report_screenshots.py runs/msrvtt-p --match "Table" --prefix protocol-msrvtt-p

Opens the report in headless Chromium (Debian's, through Playwright's ``executable_path``, as the browser tests do;
the report is self-contained, so nothing is fetched) and saves one PNG per matching ``<section>``. Not part of the
docs build (the build only reads the PNGs).
"""
from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a run folder holding report.html")
    ap.add_argument("--match", default="Table", help="a regular expression on the section titles")
    ap.add_argument("--prefix", default="report", help="file names: docs/img/PREFIX-N.png")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--width", type=int, default=1300)
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright  # the [test] extra; only this script needs it

    html = Path(a.run) / "report.html"
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    saved = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": a.width, "height": 900})
        page.goto(html.resolve().as_uri())
        page.wait_for_timeout(1500)
        sections = page.locator("section")
        for i in range(sections.count()):
            sec = sections.nth(i)
            title = sec.locator("h2").first.inner_text() if sec.locator("h2").count() else ""
            if re.search(a.match, title):
                path = out / f"{a.prefix}-{len(saved) + 1}.png"
                sec.screenshot(path=str(path))
                saved.append((path, title))
        browser.close()
    for path, title in saved:
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {title}")
    return 0 if saved else 1


if __name__ == "__main__":
    raise SystemExit(main())
