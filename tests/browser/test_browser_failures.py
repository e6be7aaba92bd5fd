"""End-to-end in a real headless Chromium: open the Failures page from the sidebar, run a small failure map on the
built-in images (in a background thread, with the progress bar the page polls), pick a cell (an example and a
perturbation), send it to the basket, and find it on the Export page.

Debian's chromium driven by Playwright with executable_path (no browser download). Skips with a visible reason
when Chromium or Playwright is missing, except in CI (CI=true), where that is a failure.
"""
import re

import pytest

from browser_helpers import open_app, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _select(page, key: str, option: str):
    """Pick ``option`` in the selectbox keyed ``key`` (Streamlit's element class ``st-key-KEY``)."""
    settle(page)
    page.locator(f".st-key-{key}").click()
    page.get_by_role("option", name=option, exact=True).first.click()
    settle(page)


def test_run_pick_a_cell_and_send_it_to_the_basket(server, browser, tmp_path):
    page = open_app(browser, server)
    page.locator('[data-testid="stSidebar"]').get_by_role("link", name="Failures", exact=True).click()
    page.get_by_text("Failures — where each example breaks").wait_for()
    page.get_by_text("No failure map yet: choose above and press Run.").wait_for()
    settle(page)
    items = page.locator(".st-key-fail_n input")
    items.fill("20")
    items.press("Enter")
    settle(page)
    page.get_by_text(re.compile(r"^300 cells \(items × perturbations × severities\)")).wait_for()
    page.locator(".st-key-fail_go button").click()
    page.get_by_text("Where it breaks", exact=True).wait_for(timeout=600_000)
    settle(page)
    summary = page.get_by_text(re.compile(r"builtin:tiny-vit-clip · builtin \(demo, 20 items, 20 examples\)"))
    summary.wait_for()
    page.locator(".vega-embed").first.wait_for()  # the map (an Altair chart)

    # the cell: the second perturbation of the map for the first (most fragile) example
    _select(page, "fail_cell_pert", "defocus_blur")
    page.get_by_text(re.compile(r"under defocus_blur \(visual\)")).first.wait_for()
    page.screenshot(path=str(tmp_path / "failures_cell.png"), full_page=True)
    page.locator(".st-key-fail_add_one button").click()
    page.get_by_text(re.compile(r"^Added 1 example\(s\) to the basket \(0 already there\); it holds 1\.$")).wait_for()

    page.locator('[data-testid="stSidebar"]').get_by_role("link", name="Export", exact=True).click()
    page.get_by_text("Export — the basket").wait_for()
    settle(page)
    page.get_by_text(re.compile(r"defocus_blur")).first.wait_for()
    assert page.get_by_text("Your basket is empty").count() == 0
    page.screenshot(path=str(tmp_path / "failures_export.png"), full_page=True)
