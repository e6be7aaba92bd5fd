"""One session of the benchmark (a browser context on one page), what the driver expects from the built-in data, and
what the sessions share (deadlines, the ledger)."""
from __future__ import annotations

import asyncio
import json
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from robustlab.datasets import build
from robustlab.datasets.synthetic.clavi import eligible
from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.perturb import get_perturbation

from .browser import RUN_COUNTER, click, settle, texts
from .common import ROOT, SOAK_PAGES, THINK_S


# ---- what the driver knows about the built-in data (computed here, independently of the server) ---------------------
class Expect:
    """Expected texts, computed from the library in this process."""

    def __init__(self):
        loaders = (ROOT / "ui" / "loaders.py").read_text(encoding="utf-8")  # the dashboard's demo gallery size
        demo_n = int(re.search(r"^DEMO_N, VIDEO_DEMO_N = (\d+)", loaders, re.M).group(1))
        g = builtin_gallery(demo_n)
        self.gallery_n = len(g)
        self.texts = list(g.texts())
        first: dict[int, int] = {}
        for j, i in enumerate(g.text_items()):
            first.setdefault(int(i), j)
        self.first_caption = {i: self.texts[j] for i, j in first.items()}  # item -> its query caption
        self.names = list(g.names)
        self.item_id = {i: g.item(i).id for i in range(len(g))}
        qa = build("builtin", split="test", n=300)
        self.qa = {i: (qa.item(i).questions[0].question, qa.item(i).questions[0].answer) for i in range(40)
                   if qa.item(i).questions}
        vids = build("builtin-videos", split="test", n=200)
        self.clavi_items = [i for i in range(len(vids)) if eligible(vids.scene(i))]
        self.clavi_caption = {i: vids.scene(i).caption for i in self.clavi_items[:40]}
        self.variant = {n: get_perturbation(n).default_variant for n in ("gaussian_noise", "keyboard")}


# ---- results shared by the sessions ----------------------------------------------------------------------------------
@dataclass
class Shared:
    url: str
    pages: dict
    expect: Expect
    deadline: float
    hard_deadline: float
    min_steps: int
    shots: Path | None
    t0: float = field(default_factory=time.time)
    n_sessions: int = 0
    soak_s: float = 0.0  # the soak phase after the run: page switches only, until soak_end
    soak_entered: dict = field(default_factory=dict)  # session -> when it entered the soak
    soak_start: float | None = None  # when the last session entered it (every session soaking from then on)
    soak_end: float | None = None
    ledger: dict = field(default_factory=dict)  # (page, choices) -> (signature, session, t)


@dataclass
class Stats:
    actions: int = 0
    steps: int = 0
    switches: int = 0
    checks: int = 0
    passed: int = 0
    errors: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)  # choices -> signature (this session's)
    warm_at: float | None = None
    step_at: list = field(default_factory=list)  # seconds since the start at the end of each step
    soak_switches: int = 0
    timeline: list = field(default_factory=list)  # (seconds since the start, what was done), the first ones


class Session:
    """One browser context on one page of the app, with its own choices."""

    def __init__(self, idx: int, scenario, shared: Shared):
        self.idx, self.sc, self.sh = idx, scenario, shared
        self.stats = Stats()
        self.page = None
        self.step_no = 0

    # -- checks --------------------------------------------------------------------------------------------------
    def error(self, kind: str, detail: str, **extra) -> None:
        self.stats.errors.append({"session": self.idx, "page": self.sc.title, "kind": kind, "detail": detail[:2000],
                                  "step": self.step_no, "t": round(time.time() - self.sh.t0, 1), **extra})

    def mark(self, what: str) -> None:
        if len(self.stats.timeline) < 40:
            self.stats.timeline.append((round(time.time() - self.sh.t0, 1), what))

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        self.stats.checks += 1
        if ok:
            self.stats.passed += 1
        else:
            self.error("content", f"{what}: {detail}")
        return ok

    async def expect_text(self, what: str, pattern, where=None, timeout: float = 30_000) -> bool:
        """A check that an element showing exactly ``pattern`` (a string, or a compiled regex; or a locator) is on
        the page."""
        root = where if where is not None else self.page
        if isinstance(pattern, str):
            loc = root.get_by_text(pattern, exact=True)
        elif isinstance(pattern, re.Pattern):
            loc = root.get_by_text(pattern)
        else:
            loc = pattern
        try:
            await loc.first.wait_for(state="attached", timeout=timeout)
            return self.check(True, what)
        except Exception:  # noqa: BLE001 - a missing text is a failed check, with what is there instead
            main = await texts(self.page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"], '
                                                 '[data-testid="stMain"] [data-testid="stText"]'))
            shot = await self.screenshot(f"check{self.step_no}") if len(self.stats.errors) < 3 else None
            ok = self.check(False, what, f"expected {pattern!r}; page shows {main[:80]!r}")
            self.stats.errors[-1]["screenshot"] = shot
            return ok

    async def expect_value(self, what: str, box, expected: str, timeout: float = 30.0) -> bool:
        """A check that the input ``box`` (a locator) holds ``expected``, polled until ``timeout`` seconds: under load
        the browser can read a box between its mounting and its value (CI once read '' there while the same rerun's
        caption below it was already the chosen scene's)."""
        got, end = None, time.time() + timeout
        while True:
            try:
                got = await box.first.input_value(timeout=2_000)
            except Exception:  # noqa: BLE001 - detached or replaced mid-rerun: read it again
                got = None
            if got == expected or time.time() >= end:
                break
            await asyncio.sleep(0.25)
        return self.check(got == expected, what, f"expected {expected!r}, shows {got!r}")

    def record(self, choices: tuple, signature) -> None:
        """Ledger: the same choices must show the same result in every session, at every time."""
        key = (self.sc.title,) + tuple(choices)
        sig = json.dumps(signature, sort_keys=True, default=str)
        self.stats.seen[json.dumps(key, default=str)] = sig
        old = self.sh.ledger.get(key)
        if old is None:
            self.sh.ledger[key] = (sig, self.idx, round(time.time() - self.sh.t0, 1))
            self.check(True, "ledger")
        else:
            self.check(old[0] == sig, "ledger: the same choices show the same result",
                       f"{key}: session {old[1]} saw {old[0]} at {old[2]} s, session {self.idx} sees {sig}")

    async def page_errors(self) -> None:
        """stException elements and error alerts on the page (each one an error)."""
        for sel, kind in (('[data-testid="stException"]', "exception"),
                          ('[data-testid="stAlertContentError"]', "error alert")):
            for t in await texts(self.page.locator(sel)):
                self.error(kind, t)

    # -- navigation ----------------------------------------------------------------------------------------------
    async def open(self) -> None:
        self.page.set_default_timeout(120_000)
        await self.page.goto(self.sh.url, timeout=300_000)
        sidebar = self.page.locator('[data-testid="stSidebar"]')
        await sidebar.get_by_text("Model", exact=True).wait_for(timeout=300_000)
        await settle(self.page)
        self.mark("landed")
        await self.goto(self.sc.title)
        self.mark(f"on {self.sc.title}")
        await self.sc.sidebar(self)

    async def goto(self, title: str) -> None:
        sidebar = self.page.locator('[data-testid="stSidebar"]')
        await click(self.page, sidebar.get_by_role("link", name=title, exact=True))
        self.stats.actions += 1
        await self.page.get_by_text(self.sh.pages[title], exact=True).wait_for()
        await settle(self.page)

    def soak_pages(self) -> list[str]:
        """The other pages this session visits in turn (``SOAK_PAGES`` of them; sessions start at different ones)."""
        others = [t for t in self.sh.pages if t != self.sc.title]
        return [others[(self.idx + j) % len(others)] for j in range(min(SOAK_PAGES, len(others)))]

    async def switch_away_and_back(self) -> None:
        """The soak: another page (the next of :meth:`soak_pages`), its header and no error, then back."""
        soak = self.soak_pages()
        other = soak[self.stats.switches % len(soak)]
        await self.goto(other)
        await self.page_errors()
        self.check(await self.page.get_by_text(self.sh.pages[other], exact=True).count() == 1, f"header of {other}")
        await self.goto(self.sc.title)
        self.stats.switches += 1

    async def screenshot(self, name: str) -> str | None:
        if self.sh.shots is None:
            return None
        path = self.sh.shots / f"s{self.idx:02d}-{name}.png"
        try:
            await self.page.screenshot(path=str(path), full_page=True, timeout=30_000)
            return str(path)
        except Exception:  # noqa: BLE001 - a screenshot is best effort
            return None

    # -- the loop ------------------------------------------------------------------------------------------------
    async def run(self, browser) -> None:
        ctx = await browser.new_context(viewport={"width": 1400, "height": 1800}, accept_downloads=False)
        await ctx.add_init_script(RUN_COUNTER)
        self.page = await ctx.new_page()
        try:
            await self._run()
        finally:
            await ctx.close()

    def _enter_soak(self) -> None:
        """Counts this session in; the last one in starts the soak's clock."""
        sh = self.sh
        sh.soak_entered[self.idx] = time.time()
        if len(sh.soak_entered) == sh.n_sessions:
            sh.soak_start = time.time()
            sh.soak_end = sh.soak_start + sh.soak_s

    async def _soak(self) -> None:
        """After the run: switch away and back over and over (no new choices) until every session has entered the
        soak and ``soak_s`` more seconds have passed; the server's memory over that stretch is the soak's growth."""
        sh = self.sh
        self._enter_soak()
        self.mark("soak")
        while sh.soak_end is None or time.time() < sh.soak_end:
            if time.time() > sh.hard_deadline + sh.soak_s:
                return
            try:
                await self.switch_away_and_back()
                self.stats.soak_switches += 1
                await self.page_errors()
            except Exception as e:  # noqa: BLE001 - a failed switch is an error; the session reloads and goes on
                self.error("soak switch failed", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                           trace=traceback.format_exc()[-1500:])
                try:
                    await self.open()
                except Exception:  # noqa: BLE001 - the next switch reports it again
                    pass
            await asyncio.sleep(THINK_S)

    async def _run(self) -> None:
        opened = False
        switch_every = self.sc.switch_every
        while True:
            now = time.time()
            if now > self.sh.hard_deadline or (now > self.sh.deadline and self.stats.steps >= self.sh.min_steps):
                if self.sh.soak_s > 0 and opened:
                    await self._soak()
                elif self.sh.soak_s > 0:  # never got its page open: counted in, so the others' soak can start
                    self._enter_soak()
                return
            try:
                if not opened:
                    await self.open()
                    opened = True
                    self.mark("opened")
                choice = self.sc.choices[self.step_no % len(self.sc.choices)]
                await self.sc.apply(self, choice)
                await settle(self.page)
                self.mark(f"applied {choice}")
                await self.page_errors()
                await self.sc.check(self, choice)
                self.mark("checked")
                self.stats.steps += 1
                self.stats.step_at.append(round(time.time() - self.sh.t0, 1))
                await asyncio.sleep(THINK_S)  # a user reads the result
                self.step_no += 1
                if self.step_no % switch_every == 0:
                    await self.switch_away_and_back()
                    self.mark("switched away and back")
                if (self.stats.warm_at is None and self.stats.steps >= len(self.sc.choices)
                        and self.stats.switches >= len(self.soak_pages())):
                    self.stats.warm_at = time.time()  # every choice and every soak page seen once
            except Exception as e:  # noqa: BLE001 - a failed step is an error; the session reloads and goes on
                shot = await self.screenshot(f"step{self.step_no}")
                self.error("step failed", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                           trace=traceback.format_exc()[-1500:], screenshot=shot)
                self.step_no += 1
                opened = False
