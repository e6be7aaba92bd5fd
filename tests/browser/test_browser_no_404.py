"""Real browser (issue 24): the pages with videos never ask the server for a media file it does not have.

The 404 this guards against: Streamlit's media file manager forgets a file at the end of every script run that has
not drawn it again, including a run cut short by the viewer's next change (each full run starts by dropping the
session's media references). A player one run had drawn, whose file the next, interrupted run released before the
browser had fetched it, asked for ``/media/<id>.mp4``: 404, and "Client Error: Video source error" in the console;
the player stayed broken. Quick successive changes hit it now and then (Retrieval's top-k slider on the built-in
videos, Perturb's severity slider on a video); ui.media now gives every player its mp4 inside the page (a ``data:``
URL), so no player depends on a file the server may have released.

The race is made deterministic here: the browser's mp4 requests are held back (``page.route``) while a player is
drawn, then a slow run is started and interrupted by a second change before it draws the players again; once the
held files are gone from the server (probed with ``page.request``), the held requests go on. With players served
from the media file manager this fails every time; with ``data:`` URLs nothing is held and nothing can go missing.

Every response of the session is recorded (``page.on("response")``): none may have a status ≥ 400, and no console
error may mention a media URL or a video source. Every player left on the page must play.
"""
from __future__ import annotations

import re
import time

import pytest

from browser_helpers import VIDEOS_READY, choose_radio, open_app, settle, videos_state

pytestmark = [pytest.mark.browser, pytest.mark.slow]

T = 180_000  # ms: a cold page (the built-in video gallery encoded on first use) on a loaded 2-core machine
MEDIA = re.compile(r"/media/|\.mp4|video source|failed to load resource", re.I)
MP4 = re.compile(r"/media/[^/?#]*\.mp4")


class Net:
    """What the browser saw: every response ≥ 400 and every console error."""

    def __init__(self, page):
        self.bad: list[tuple[int, str]] = []
        self.errors: list[str] = []
        page.on("response", lambda r: self.bad.append((r.status, r.url)) if r.status >= 400 else None)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)

    def check(self, where: str):
        media_errors = [e for e in self.errors if MEDIA.search(e)]
        assert not self.bad, (where, self.bad)
        assert not media_errors, (where, media_errors)


class Held:
    """The page's mp4 requests to the server, held back until :meth:`release` (a viewer on a slow link)."""

    def __init__(self, page):
        self.page, self.routes = page, []
        page.route(MP4, lambda route: self.routes.append(route))

    def urls(self) -> list[str]:
        return [r.request.url for r in self.routes]

    def wait_gone(self, urls: list[str], timeout_s: float = 120) -> bool:
        """Whether one of ``urls`` (held) is, or becomes within ``timeout_s`` and before the page is idle again,
        missing on the server: the page's own request for it would then get a 404."""
        t0 = time.monotonic()
        while urls and time.monotonic() - t0 < timeout_s:
            if any(self.page.request.get(u).status == 404 for u in urls):
                return True
            if self.page.locator('[data-test-script-state="notRunning"]').count():
                return False
            self.page.wait_for_timeout(20)
        return False

    def release(self):
        self.page.unroute(MP4)  # what is still held goes on to the server
        for r in self.routes:
            try:
                r.continue_()
            except Exception:  # noqa: BLE001 - already let through by unroute, or the player is gone
                pass


def _interrupted(page, draw, slow, interrupt, gap_ms: int = 300):
    """``draw()``: a change that draws new players (their files held back); then ``slow()``, a change whose run
    takes a while before it draws the players, interrupted ``gap_ms`` later by ``interrupt()``; the held requests
    go on once the interrupted run has released what it did not draw again."""
    held = Held(page)
    draw()
    settle(page)
    page.wait_for_timeout(500)
    drawn = held.urls()
    slow()
    page.wait_for_timeout(gap_ms)
    interrupt()
    held.wait_gone(drawn)
    held.release()
    page.wait_for_timeout(1000)  # the released requests answered


def _direction(page, label: str, shown, attempts: int = 4):
    """Pick a Retrieval direction and wait until the page shows its results (``shown()``), choosing again if a
    run that was under way when the choice was made drew the other direction."""
    for _ in range(attempts):
        choose_radio(page, label, scope=page.locator(".st-key-direction"))
        settle(page, quiet_ms=1000)
        if shown():
            return
    raise AssertionError(f"the Retrieval page did not show {label}")


def _press(page, key: str, *keys: str, gap_ms: int = 150):
    """Keys on the widget ``key`` (a slider: arrows move it one step each)."""
    page.locator(f".st-key-{key}").get_by_role("slider").focus()
    for k in keys:
        page.keyboard.press(k)
        page.wait_for_timeout(gap_ms)


def _value(page, key: str) -> int:
    return int(page.locator(f".st-key-{key}").get_by_role("slider").input_value())


def _players_ok(page, n_min: int = 2):
    settle(page)
    page.wait_for_function(VIDEOS_READY, arg=None, timeout=T)
    vids = videos_state(page)
    assert len(vids) >= n_min, vids
    assert all(v["error"] is None and v["duration"] > 0 and v["width"] > 0 for v in vids), vids
    return vids


def test_video_pages_request_no_missing_media(server, browser):
    nets = []
    page = open_app(browser, server, 1500, 2200, T, before=lambda p: nets.append(Net(p)))
    net = nets[0]
    sidebar = page.locator('[data-testid="stSidebar"]')

    # ---- Retrieval on the built-in videos: the text→video top-k grids ------------------------------------------------
    choose_radio(page, "Built-in videos", scope=sidebar)
    page.locator(".st-key-direction").wait_for()
    _direction(page, "text→video", lambda: page.locator(".st-key-ranked_clean video").count() >= 1)
    _players_ok(page, 2 * _value(page, "topk"))  # clean and perturbed top-k
    net.check("Retrieval, built-in videos")
    if _value(page, "topk") >= 10:
        _press(page, "topk", "ArrowLeft", "ArrowLeft")
        settle(page)
    k = _value(page, "topk")
    # one more video in each grid (held back); a new video severity (the gallery perturbed and encoded again before
    # the grids) interrupted by a new text severity
    _interrupted(page, lambda: _press(page, "topk", "ArrowRight"), lambda: _press(page, "vid_sev", "ArrowRight"),
                 lambda: _press(page, "txt_sev", "ArrowRight"))
    net.check("Retrieval, a run interrupted while a player was loading")
    _players_ok(page, 2 * (k + 1))  # and every player plays (a 404 left its player broken for good)
    _press(page, "topk", *(["ArrowRight"] * 2 + ["ArrowLeft"] * 3) * 2)  # quick steps: runs cut short
    _players_ok(page, 2 * _value(page, "topk"))
    net.check("Retrieval, top-k changed quickly")
    _direction(page, "video→text", lambda: page.locator(".st-key-ranked_clean").count() == 0)
    _players_ok(page, 2)  # the query video, clean and perturbed
    net.check("Retrieval, video→text")

    # ---- CLAVI: a video and its complement; a new seed (38 questions answered before the players) interrupted ------
    settle(page)
    sidebar.get_by_role("link", name="CLAVI", exact=True).click()
    page.get_by_text("V′ — the complement").wait_for()
    _players_ok(page, 2)
    net.check("CLAVI")
    plus = page.locator(".st-key-cv_seed").get_by_test_id("stNumberInputStepUp")
    other = page.locator(".st-key-cv_method").get_by_test_id("stRadioOption").filter(has_text="not in the paper")
    _interrupted(page, plus.click, plus.click, other.click)
    net.check("CLAVI, a run interrupted while the players were loading")
    _players_ok(page, 2)

    # ---- Perturb: a built-in video, clean and perturbed players ------------------------------------------------------
    settle(page)
    sidebar.get_by_role("link", name="Perturb", exact=True).click()
    page.get_by_text("Perturb — see exactly what a perturbation does").wait_for()
    choose_radio(page, "Video", scope=page.locator(".st-key-pt_kind"))
    # Perturb starts from the sidebar's dataset when it holds videos (issue 45): the built-in world's videos here
    choose_radio(page, "Built-in world", scope=page.locator(".st-key-pt_source_video"))
    _players_ok(page, 2)
    net.check("Perturb, a video")
    # a new severity (held back); another built-in video (its five severities computed before the players)
    # interrupted by the next one
    step = page.locator(".st-key-pt_video_idx").get_by_test_id("stNumberInputStepUp")
    _interrupted(page, lambda: _press(page, "pt_severity", "ArrowLeft"), step.click, step.click)
    net.check("Perturb, a run interrupted while a player was loading")
    _players_ok(page, 2)
    _press(page, "pt_severity", *(["ArrowLeft"] * 3 + ["ArrowRight"] * 3) * 2)  # quick steps: runs cut short
    _players_ok(page, 2)
    net.check("Perturb, a video, changes while the players were loading")
    page.close()
