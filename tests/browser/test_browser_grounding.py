"""End-to-end in a real headless Chromium: the Grounding page on a built-in scene, then an uploaded image through
the page's real file input and a typed expression; the boxed images, the IoU metrics and the sweep chart render.
"""
import re

import pytest

from browser_helpers import choose_radio, settle
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                 reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")]


def _images_loaded(page, n: int):
    page.wait_for_function("""(n) => {
        const imgs = [...document.querySelectorAll('[data-testid="stImage"] img')];
        return imgs.length >= n && imgs.every(i => i.complete && i.naturalWidth > 0);
    }""", arg=n)


def test_grounding_upload_and_typed_expression(server, browser, tmp_path):
    from PIL import Image

    from robustlab.datasets.synthetic import world

    png = tmp_path / "my scene.png"
    Image.fromarray(world.render_scene(world.sample_scene(1000, 4), 128)).save(png)

    page = browser.new_page(viewport={"width": 1400, "height": 2200})
    page.set_default_timeout(120_000)
    page.goto(server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    sidebar.get_by_role("link", name="Grounding", exact=True).click()
    page.get_by_text("Grounding — where does the model find the expression?").wait_for()
    settle(page)
    # built-in scene: ground truth, so IoU to it is shown
    page.get_by_text("IoU to ground truth, clean").wait_for()
    _images_loaded(page, 2)
    page.locator('.st-key-gr_sweep [data-testid="stPlotlyChart"], .st-key-gr_sweep .js-plotly-plot').first.wait_for()

    choose_radio(page, "Upload", scope=page.locator(".st-key-gr_source"))
    page.get_by_text("Upload an image, or pick an item of the sidebar's dataset.").wait_for()
    page.locator(".st-key-gr_upload input[type=file]").set_input_files(str(png))
    page.get_by_text(re.compile(r"my scene\.png: 128×128 px")).wait_for()
    settle(page)
    box = page.locator(".st-key-gr_expr_upload input")
    box.fill("the large star")
    box.press("Enter")
    settle(page)
    page.get_by_text("“the large star”").first.wait_for()
    page.get_by_text("IoU clean vs perturbed box").wait_for()
    assert page.get_by_text("IoU to ground truth, clean").count() == 0  # no ground truth for an upload
    _images_loaded(page, 2)
    value = page.locator('[data-testid="stMetric"]').filter(has_text="IoU clean vs perturbed box") \
        .locator('[data-testid="stMetricValue"]').inner_text()
    assert 0.0 <= float(value) <= 1.0
    page.locator('.st-key-gr_sweep [data-testid="stPlotlyChart"], .st-key-gr_sweep .js-plotly-plot').first.wait_for()
    assert page.locator('[data-testid="stException"]').count() == 0
    page.screenshot(path=str(tmp_path / "grounding.png"), full_page=True)
