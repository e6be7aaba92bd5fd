"""End-to-end in a real headless Chromium: the CLAVI page plays a built-in video and its action-swapped complement
side by side and shows the 19 questions answered on both."""
import os

import pytest

from browser_helpers import VIDEOS_READY, settle, videos_state

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_clavi_pair_plays(server, browser):
    page = browser.new_page(viewport={"width": 1500, "height": 2200})
    page.set_default_timeout(90_000)
    page.goto(server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    sidebar.get_by_role("link", name="CLAVI", exact=True).click()
    page.get_by_text("CLAVI — does the model answer by the order of events?").wait_for()
    settle(page)
    page.get_by_text("V′ — the complement").wait_for()
    page.wait_for_function(VIDEOS_READY, arg=None, timeout=120_000)
    vids = videos_state(page)
    assert len(vids) == 2, vids  # V and V'
    assert all(v["error"] is None and v["duration"] > 0 and v["width"] > 0 for v in vids)
    assert vids[0]["src"] != vids[1]["src"]
    assert abs(vids[0]["duration"] - vids[1]["duration"]) < 0.2  # the same length: the swap keeps every frame
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.wait_for()
    # every column has a header that says what it holds (the two ✓/✗ columns had none); no cell reads "None"
    page.wait_for_function("(el) => el.querySelectorAll('table[role=grid] td').length > 0", arg=grid.element_handle())
    heads = grid.evaluate("el => [...el.querySelectorAll('table[role=grid] th')].map(th => th.textContent.trim())")
    assert heads[:8] == ["question type", "question", "truth on V", "model on V", "right on V", "truth on V′",
                         "model on V′", "right on V′"], heads
    assert all(heads), heads
    cells = grid.evaluate("el => [...el.querySelectorAll('table[role=grid] td')].map(td => td.textContent.trim())")
    assert cells and "None" not in cells, cells
    page.get_by_text("Balanced accuracy").first.wait_for()
    page.get_by_text("Over the built-in event videos").wait_for()
    if os.environ.get("ROBUSTLAB_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["ROBUSTLAB_SCREENSHOTS"], "clavi.png"), full_page=True)
    page.close()
