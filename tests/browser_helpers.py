"""Shared helpers for the real-browser tests.

Streamlit (1.67, under st.navigation) can drop a widget change made while a script run is still in progress: the
radio shows the new option for a moment, then the finished run re-renders the old one. On a loaded 2-core CI machine
the first run of a page takes long enough for a test to click into it, so every interaction first waits for the app to
be idle (the app root's ``data-test-script-state``), and a radio choice is checked again after the run it started.
"""
from __future__ import annotations

IDLE = '[data-test-script-state="notRunning"]'


def settle(page, timeout: float = 180_000, quiet_ms: int = 300):
    """Wait until no script run is in progress (and stays so for ``quiet_ms``, so a queued rerun can start)."""
    for _ in range(3):
        page.locator(IDLE).first.wait_for(state="attached", timeout=timeout)
        page.wait_for_timeout(quiet_ms)
        if page.locator(IDLE).count() > 0:
            return
    page.locator(IDLE).first.wait_for(state="attached", timeout=timeout)


def open_app(browser, url: str, width: int = 1500, height: int = 1800, timeout_ms: float = 240_000, before=None):
    """A new page on the app, its sidebar drawn and the first run finished; ``before(page)`` runs before it loads
    (listeners that must see every request)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(timeout_ms)
    if before is not None:
        before(page)
    page.goto(url)
    page.locator('[data-testid="stSidebar"]').get_by_text("Model", exact=True).wait_for()
    settle(page)
    return page


def choose_radio(page, option_text: str, scope=None, attempts: int = 5):
    """Click a radio option and make sure the app kept it after the rerun the click started."""
    root = scope if scope is not None else page
    opt = root.get_by_test_id("stRadioOption").filter(has_text=option_text)
    selected = root.locator('[data-testid="stRadioOption"][data-selected="true"]').filter(has_text=option_text)
    for _ in range(attempts):
        settle(page)
        if selected.count() > 0:
            return
        opt.last.click()
        page.wait_for_timeout(500)
        settle(page)
        if selected.count() > 0:
            return
    raise AssertionError(f"radio option {option_text!r} could not be selected")


# true once every <video> (at least 2, re-rendered when ``srcs`` is the old sources joined by "|") plays
VIDEOS_READY = """(srcs) => {
    const vids = [...document.querySelectorAll('video')];
    if (vids.length < 2) return false;
    if (srcs && vids.map(v => v.currentSrc || v.src).join('|') === srcs) return false;   // not re-rendered yet
    for (const v of vids) { v.muted = true; if (v.paused && v.readyState >= 1) v.play().catch(() => {}); }
    return vids.every(v => !v.error && v.readyState >= 2 && v.duration > 0 && v.currentTime > 0);
}"""


def videos_state(page) -> list[dict]:
    """Every <video> on the page: source, ready state, duration, position, error code, size."""
    return page.evaluate("""() => [...document.querySelectorAll('video')].map(v => ({
        src: v.currentSrc || v.src, readyState: v.readyState, duration: v.duration, currentTime: v.currentTime,
        error: v.error ? v.error.code : null, width: v.videoWidth, height: v.videoHeight}))""")
