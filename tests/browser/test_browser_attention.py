"""End-to-end in a real headless Chromium: the Attention page runs QUAG ablations on a built-in scene with tiny-vilt
and shows the before/after attention heatmaps (one panel per ablation), the token overlay and the answers."""
import os

import pytest

from browser_helpers import settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_attention_page_before_after_heatmaps(server, browser):
    page = browser.new_page(viewport={"width": 1500, "height": 2600})
    page.set_default_timeout(90_000)
    page.goto(server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    sidebar.get_by_role("link", name="Attention", exact=True).click()
    page.get_by_text("Attention — does the model fuse the modalities?").wait_for()
    settle(page)
    heat = page.locator(".st-key-at_heat .js-plotly-plot")
    heat.wait_for()
    # one panel per ablation, baseline first, on one colour scale
    titles = heat.locator(".annotation-text").all_text_contents()
    assert titles[:5] == ["baseline", "unimodal", "crossmodal", "video", "text"], titles
    drawn = heat.evaluate("el => el.data.filter(t => t.type === 'heatmap' && t.coloraxis === 'coloraxis').length")
    assert drawn == 5  # before + four short-circuits, all on the one colour axis
    assert heat.locator(".colorbar").count() == 1  # one shared scale
    assert heat.locator("image").count() >= 1 or heat.locator(".hm").count() >= 1  # the heatmaps are painted
    page.locator(".st-key-at_overlay .js-plotly-plot").wait_for()
    page.locator(".st-key-at_answers .js-plotly-plot").wait_for()
    page.get_by_text("Table 1 over the dataset").wait_for()
    if os.environ.get("ROBUSTLAB_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["ROBUSTLAB_SCREENSHOTS"], "attention.png"), full_page=True)
    page.close()
