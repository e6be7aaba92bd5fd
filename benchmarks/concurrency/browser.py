"""Async page helpers (async versions of tests/browser_helpers.py)."""
from __future__ import annotations

from .common import DATAFRAMES, IDLE


# ---- browser helpers (async versions of tests/browser_helpers.py) ---------------------------------------------------
# In every page: counts the script runs the page has started (the app root's data-test-script-state turning to
# rerunRequested or running), so that a change can be followed by a wait for the run it started: on a loaded server
# that run can start seconds after the change, and a page read before it shows the previous choices' results.
RUN_COUNTER = """
window.__rlRuns = 0;
new MutationObserver(ms => {
    for (const m of ms) {
        const busy = v => v === 'running' || v === 'rerunRequested';
        if (busy(m.target.getAttribute('data-test-script-state')) && !busy(m.oldValue)) window.__rlRuns++;
    }
}).observe(document, {attributes: true, attributeOldValue: true, subtree: true,
                      attributeFilter: ['data-test-script-state']});
// the videos load (the server serves them) but do not play: 16 looping players decoding in software would take
// the 2 cores from the server, where a real viewer's browser decodes on the viewer's own machine
document.addEventListener('play', e => { if (e.target && e.target.pause) e.target.pause(); }, true);
"""


async def settle(page, timeout: float = 480_000, quiet_ms: int = 300) -> None:
    """Wait until no script run is in progress (and stays so for ``quiet_ms``, so a queued rerun can start)."""
    for _ in range(3):
        await page.locator(IDLE).first.wait_for(state="attached", timeout=timeout)
        await page.wait_for_timeout(quiet_ms)
        if await page.locator(IDLE).count() > 0:
            return
    await page.locator(IDLE).first.wait_for(state="attached", timeout=timeout)


async def runs(page) -> int:
    return await page.evaluate("() => window.__rlRuns || 0")


async def ran(page, before: int, timeout: float = 60_000) -> bool:
    """Wait for a script run started after the count ``before`` (see RUN_COUNTER), then for the app to be idle.
    False when none started within ``timeout`` (the change changed nothing the server needed to know)."""
    try:
        await page.wait_for_function("(n) => (window.__rlRuns || 0) > n", arg=before, timeout=timeout)
        started = True
    except Exception:  # noqa: BLE001 - Playwright's TimeoutError: no run started
        started = False
    await settle(page)
    return started


async def choose_radio(page, option_text: str, scope=None, attempts: int = 5) -> bool:
    """Click a radio option, and wait for the run it starts; True when it changed anything."""
    root = scope if scope is not None else page
    opt = root.get_by_test_id("stRadioOption").filter(has_text=option_text)
    selected = root.locator('[data-testid="stRadioOption"][data-selected="true"]').filter(has_text=option_text)
    changed = False
    for _ in range(attempts):
        await settle(page)
        if await selected.count() > 0:
            return changed
        n = await runs(page)
        await opt.last.click()
        changed = True
        await ran(page, n)
        if await selected.count() > 0:
            return changed
    raise AssertionError(f"radio option {option_text!r} could not be selected")


async def set_number(page, key: str, value, attempts: int = 5) -> bool:
    """Type ``value`` into the number input with widget key ``key``; True when it changed anything."""
    box = page.locator(f".st-key-{key} input")
    changed = False
    for _ in range(attempts):
        await settle(page)
        if await box.input_value() == str(value):
            return changed
        n = await runs(page)
        await box.fill(str(value))
        await box.press("Enter")
        changed = True
        await ran(page, n)
    if await box.input_value() != str(value):
        raise AssertionError(f"number input {key} could not be set to {value}")
    return changed


async def set_select(page, key: str, label: str, attempts: int = 5) -> bool:
    """Pick the option ``label`` (its full displayed text) of the selectbox with widget key ``key``."""
    box = page.locator(f".st-key-{key} input")
    changed = False
    for _ in range(attempts):
        await settle(page)
        if await box.input_value() == label:
            return changed
        n = await runs(page)
        await box.click()
        await box.fill(label[:40])
        await page.get_by_role("option", name=label, exact=True).click()
        changed = True
        await ran(page, n)
    if await box.input_value() != label:
        raise AssertionError(f"selectbox {key} could not be set to {label!r}")
    return changed


async def set_slider(page, key: str, value: int, attempts: int = 5) -> bool:
    """Move the slider with widget key ``key`` to ``value`` with the keyboard (arrow keys step by one)."""
    thumb = page.locator(f".st-key-{key} input[type=range]")
    changed = False
    for _ in range(attempts):
        await settle(page)
        now = int(float(await thumb.input_value()))
        if now == value:
            return changed
        n = await runs(page)
        await thumb.focus()
        for _ in range(abs(value - now)):
            await thumb.press("ArrowRight" if value > now else "ArrowLeft")
        changed = True
        await ran(page, n)
    if int(float(await thumb.input_value())) != value:
        raise AssertionError(f"slider {key} could not be set to {value}")
    return changed


async def click(page, locator) -> None:
    """Click a button or link and wait for the run it starts."""
    await settle(page)
    n = await runs(page)
    await locator.click()
    await ran(page, n)


async def texts(locator) -> list[str]:
    return [t.strip() for t in await locator.all_inner_texts()]


async def dataframes(page, at_least: int = 1) -> list[list[str]]:
    """The cells of every dataframe on the page, in page order (Glide's accessible table, drawn after the element
    itself; a dataframe's key does not reach the DOM). Waits for ``at_least`` dataframes with cells."""
    frames = """(sel) => [...document.querySelectorAll(sel)]
        .map(df => [...df.querySelectorAll('table[role=grid] td')].map(td => td.textContent.trim()))
        .filter(cells => cells.length > 0)"""
    await page.wait_for_function(f"([sel, n]) => ({frames})(sel).length >= n", arg=[DATAFRAMES, at_least])
    return await page.evaluate(frames, DATAFRAMES)


async def grid_cells(page, scope: str, at_least: int = 1) -> list[str]:
    """The cells of the dataframes under ``scope`` (Glide's accessible table, drawn after the element itself)."""
    cells = "(sel) => [...document.querySelectorAll(sel + ' table[role=grid] td')].map(td => td.textContent.trim())"
    await page.wait_for_function(f"([sel, n]) => ({cells})(sel).length >= n", arg=[scope, at_least])
    return await page.evaluate(cells, scope)
