"""Issue 15: an upload over the size limit is refused twice over, in a real browser.

Streamlit's own limit (``server.maxUploadSize``, 50 MB in .streamlit/config.toml) refuses a file in the browser
before it is sent; robustlab's (``ROBUSTLAB_MAX_UPLOAD_MB``, also 50 MB by default) refuses what reaches the server.
Here the two are set apart (Streamlit 3 MB, robustlab 1 MB) so each layer is seen doing its job: a 4 MB file is
refused by Streamlit, a 2 MB one by robustlab with one line; nothing is added, and the session goes on (a small
image is added afterwards).
"""
import io

import numpy as np
import pytest
from PIL import Image

from browser_helpers import choose_radio, settle
from conftest import run_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def small_limits_server(tmp_path_factory):
    yield from run_server(tmp_path_factory, args=("--server.maxUploadSize", "3"),
                          env={"ROBUSTLAB_MAX_UPLOAD_MB": "1"})


def _noise_png(path, side: int, seed: int = 0) -> int:
    """A PNG of noise (incompressible): side×side×3 bytes and a little more."""
    arr = np.random.default_rng(seed).integers(0, 256, (side, side, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG", compress_level=0)
    path.write_bytes(buf.getvalue())
    return len(buf.getvalue())


def test_uploads_over_either_limit_are_refused_and_the_session_goes_on(small_limits_server, browser, tmp_path):
    big, mid, ok = tmp_path / "big.png", tmp_path / "mid.png", tmp_path / "small.png"
    assert _noise_png(big, 1200) > 4 * 2**20 * 0.98
    assert 2**20 < _noise_png(mid, 850, 1) < 3 * 2**20
    _noise_png(ok, 64, 2)

    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.set_default_timeout(240_000)
    page.goto(small_limits_server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    choose_radio(page, "My uploads (0)", scope=sidebar)
    page.get_by_text("Your gallery is empty").wait_for()
    images = page.locator(".st-key-up_images")

    # Streamlit's limit: refused in the browser, with Streamlit's own message
    images.locator("input[type=file]").set_input_files(str(big))
    images.get_by_text("File must be 3.0MB or smaller.").wait_for()
    settle(page)
    page.get_by_role("button", name="Add to my gallery").click()
    settle(page)
    assert page.get_by_text("Added 1 image(s).").count() == 0

    # robustlab's limit: the file reaches the server and is refused there in one line
    images.locator("input[type=file]").set_input_files(str(mid))
    images.get_by_text("mid.png").first.wait_for()
    settle(page)
    page.locator("textarea").first.fill("a noise picture")
    page.get_by_role("button", name="Add to my gallery").click()
    page.get_by_text("over the 1 MB limit").first.wait_for()
    settle(page)
    assert page.get_by_text("Added 1 image(s).").count() == 0
    assert sidebar.get_by_text("My uploads (0)").count() == 1  # nothing was added
    assert page.locator('[data-testid="stException"]').count() == 0, (
        page.locator('[data-testid="stException"]').all_inner_texts())

    # the session goes on: a small image is added
    images.locator("input[type=file]").set_input_files(str(ok))
    images.get_by_text("small.png").first.wait_for()
    settle(page)
    page.locator("textarea").first.fill("a small noise picture")
    page.get_by_role("button", name="Add to my gallery").click()
    page.get_by_text("Added 1 image(s).").wait_for()
    settle(page)
    assert sidebar.get_by_text("My uploads (1)").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0, (
        page.locator('[data-testid="stException"]').all_inner_texts())
