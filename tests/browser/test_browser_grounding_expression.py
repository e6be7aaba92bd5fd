"""Issue 45 item 6 in a real headless Chromium: the referring expression belongs to the image it was typed for. An
expression typed for one upload is not shown, nor grounded, for the next upload (the box the browser shows is empty
again and the page asks for the new image's expression)."""
import re

import pytest

from browser_helpers import choose_radio, open_app, settle
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                 reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")]


def test_a_new_upload_does_not_keep_the_last_expression(server, browser, tmp_path):
    from PIL import Image

    from robustlab.datasets.synthetic import world

    a, b = tmp_path / "first.png", tmp_path / "second.png"
    Image.fromarray(world.render_scene(world.sample_scene(1000, 4), 128)).save(a)
    Image.fromarray(world.render_scene(world.sample_scene(1000, 5), 128)).save(b)

    page = open_app(browser, server, width=1400, height=2200, timeout_ms=120_000)
    page.locator('[data-testid="stSidebar"]').get_by_role("link", name="Grounding", exact=True).click()
    page.get_by_text("Grounding — where does the model find the expression?").wait_for()
    settle(page)
    choose_radio(page, "Upload", scope=page.locator(".st-key-gr_source"))
    page.locator(".st-key-gr_upload input[type=file]").set_input_files(str(a))
    page.get_by_text(re.compile(r"first\.png: 128×128 px")).wait_for()
    settle(page)
    box = page.locator(".st-key-gr_expr_upload input")
    box.fill("the large star")
    box.press("Enter")
    settle(page)
    page.get_by_text("“the large star”").first.wait_for()
    page.get_by_text("IoU clean vs perturbed box").wait_for()

    page.locator(".st-key-gr_upload input[type=file]").set_input_files(str(b))
    page.get_by_text(re.compile(r"second\.png: 128×128 px")).wait_for()
    settle(page)
    assert box.input_value() == ""  # what the browser shows is what the page uses: nothing typed for this image
    page.get_by_text("Type a referring expression").first.wait_for()
    assert page.get_by_text("“the large star”").count() == 0
    assert page.get_by_text("IoU clean vs perturbed box").count() == 0  # nothing grounded with the old expression
    box.fill("the small circle")
    box.press("Enter")
    settle(page)
    page.get_by_text("“the small circle”").first.wait_for()
    assert page.locator('[data-testid="stException"]').count() == 0
