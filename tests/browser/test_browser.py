"""End-to-end in a real headless Chromium (Debian's chromium, driven by Playwright with executable_path).

Starts ``streamlit run app.py`` on localhost, waits for the page, checks that the ranked lists render, then
uploads a gallery (with one corrupt file) through the real upload widget. Skips with a visible reason when
Chromium or Playwright is missing, except in CI (CI=true), where that is a failure.
"""
import io
import os
import shutil
from pathlib import Path

import pytest

from browser_helpers import choose_radio, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _png(arr) -> bytes:
    from PIL import Image

    b = io.BytesIO()
    Image.fromarray(arr).save(b, format="PNG")
    return b.getvalue()


def test_ranked_lists_render_and_upload_flow(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.set_default_timeout(180_000)
    page.goto(server)
    clean = page.locator(".st-key-ranked_clean")
    pert = page.locator(".st-key-ranked_perturbed")
    from playwright.sync_api import expect

    expect(clean.locator("img")).to_have_count(5, timeout=180_000)
    expect(pert.locator("img")).to_have_count(5, timeout=180_000)
    expect(page.get_by_text("Clean top-k")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Ground-truth rank, perturbed")).to_be_visible(timeout=60_000)
    page.screenshot(path=str(tmp_path / "retrieval.png"), full_page=True)

    # the real upload widget: two good images with captions, one corrupt file
    from robustlab.datasets.synthetic.datasets import builtin_gallery

    g = builtin_gallery(2)
    files = [tmp_path / "one.png", tmp_path / "two.png", tmp_path / "broken.png"]
    files[0].write_bytes(_png(g.images[0]))
    files[1].write_bytes(_png(g.images[1]))
    files[2].write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    choose_radio(page, "My uploads (0)")
    page.get_by_text("Your gallery is empty").wait_for()
    page.locator("input[type=file]").first.set_input_files([str(f) for f in files])
    # one line per file given (issue 24: plain lines pair by position only then); the broken file's goes with it
    page.get_by_role("textbox", name="…or type captions, one per line, in the order of the files").fill(
        g.captions[0] + "\n" + g.captions[1] + "\na broken file")
    settle(page)
    page.get_by_role("button", name="Add to my gallery").click()
    page.get_by_text("broken.png:").first.wait_for()
    page.get_by_text("Added 2 image(s).").wait_for()
    expect(clean.locator("img")).to_have_count(2, timeout=180_000)
    page.screenshot(path=str(tmp_path / "uploads.png"), full_page=True)
    keep = os.environ.get("ROBUSTLAB_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for name in ("retrieval.png", "uploads.png"):
            shutil.copy(tmp_path / name, Path(keep) / name)
