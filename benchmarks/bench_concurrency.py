"""Concurrency and load (issue 15): one ``streamlit run app.py`` server, N simultaneous browser sessions.

One server (its own temporary ROBUSTLAB_CACHE and ROBUSTLAB_RUNS, as the tests' ``server`` fixture), one headless
Chromium (Debian's, driven by Playwright's async API with ``executable_path``) with one browser context per
session, all driven concurrently from one asyncio loop for ``--minutes``. Every session stays on its own page with
its own choices (two sessions on one page choose differently), cycles through a small fixed set of choices and
checks, after every change, that the page shows results that are specific to *its* choices:

- echo checks: what the page says it computed names the session's choice (the Retrieval query text is the caption
  of the query index it picked, the perturbation and severity it picked are in the result's title, the item it
  added is in its own basket...), with the expected text computed here from the library where it can be;
- a ledger: every result signature (metric values, ranked items, media content hashes) is recorded under the exact
  choices that produced it; the same choices must always show the same result, whichever session asks (a crossed
  session, or a cache entry served for the wrong key, shows up as a conflict);
- distinctness: two sessions on one page with different choices must not have seen exactly the same results.

Every change waits for the script run it started (a counter of the app's run-state changes in the page), so no
check reads the previous choices' results on a loaded server.

Every so often a session switches to another page through the sidebar and comes back (the soak). Errors: any
``stException`` element, error alert, failed content check, timed-out step, and any Traceback in the server log.
Model loads are counted from the line ``model load: SPEC on DEVICE`` that ``ui.state.get_model`` logs (once per
``st.cache_resource`` miss). Memory: the server's RSS (with its children) every second from /proc; peak, after
warm-up, at the end, and growth = mean RSS over the last 20% of the soak minus the mean over its first 20%: after the
run, every session only switches to other pages and back for ``--soak-minutes`` (default 3), from when the last
session has finished its step (without a soak, the run after warm-up is the stretch). Chromium's RSS (and PSS) is
reported separately. Exits non-zero when there is an error or a bound is exceeded.

    python benchmarks/bench_concurrency.py --minutes 10            # 16 sessions, then a 3-min soak → results/

``tests/test_browser_concurrency.py`` runs :func:`run` with 16 sessions for 80 s (image galleries only: ``videos``
off); the benchmark's second Hubness session works on the built-in videos with a video model.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "concurrency.json"
IDLE = '[data-test-script-state="notRunning"]'
# Bounds (see the module docstring and benchmarks/README.md): the server's peak RSS and its growth after warm-up
PEAK_BOUND_MB = 4096
GROWTH_BOUND_MB = 200
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows", "--autoplay-policy=no-user-gesture-required"]
MODEL_LOAD = re.compile(r"model load: (\S+) on (\S+)")
SOAK_PAGES = 3  # other pages each session visits in turn, and comes back from
THINK_S = 2.0  # a pause after each step
DATAFRAMES = '[data-testid="stMain"] [data-testid="stDataFrame"]'


# ---- the app's pages (read from app.py and pages/*.py, so a renamed header does not silently break this) ----------
def app_pages() -> dict[str, str]:
    """Navigation title -> the page's st.header text, in app.py's order."""
    views = re.findall(r'\("(pages/\w+\.py)", "([^"]+)", "[^"]*"\)', (ROOT / "app.py").read_text(encoding="utf-8"))
    out = {}
    for path, title in views:
        m = re.search(r'st\.header\("([^"]+)"\)', (ROOT / path).read_text(encoding="utf-8"))
        out[title] = m.group(1) if m else title
    return out


# ---- the server ----------------------------------------------------------------------------------------------------
class Server:
    """``streamlit run app.py`` on a free localhost port with its own cache and run folders."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.log_path = workdir / "streamlit.log"
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, timeout: float = 180) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        (self.workdir / "cache").mkdir(parents=True, exist_ok=True)
        (self.workdir / "runs").mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, ROBUSTLAB_CACHE=str(self.workdir / "cache"), ROBUSTLAB_RUNS=str(self.workdir / "runs"))
        env.pop("ROBUSTLAB_SYNC_SWEEP", None)
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                      "--server.address", "127.0.0.1", "--server.headless", "true",
                                      "--browser.gatherUsageStats", "false"],
                                     cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.time() + timeout
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if urllib.request.urlopen(self.url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                    return self.url
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError("streamlit did not start:\n" + self.log()[-3000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


# ---- memory, from /proc --------------------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _tree(pid: int, kids: dict[int, list[int]]) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _status_kb(pid: int, field_name: str = "VmRSS") -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


class Sampler(threading.Thread):
    """Every ``every`` s: RSS of the server and its children, and of the Chromium processes under this process
    (their PSS too, every 10th sample: it double-counts nothing, but costs more to read)."""

    def __init__(self, server_pid: int, every: float = 1.0):
        super().__init__(daemon=True, name="rss-sampler")
        self.server_pid, self.every = server_pid, every
        self.samples: list[tuple[float, float, float, float | None]] = []  # (t, server MB, chromium RSS MB, PSS MB)
        self.loads: list[tuple[float, float]] = []
        self._halt = threading.Event()
        self.t0 = time.time()

    def run(self) -> None:
        i = 0
        while not self._halt.is_set():
            kids = _children()
            server = set(_tree(self.server_pid, kids))
            s_kb = sum(_status_kb(p) for p in server)
            chrome = [p for p in _tree(os.getpid(), kids) if p not in server and _comm(p).startswith("chrom")]
            c_kb = sum(_status_kb(p) for p in chrome)
            pss = sum(_pss_kb(p) for p in chrome) / 1024 if i % 10 == 0 else None
            t = time.time() - self.t0
            self.samples.append((t, s_kb / 1024, c_kb / 1024, pss))
            if i % 10 == 0:
                self.loads.append((t, os.getloadavg()[0]))
            i += 1
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


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


async def select_value(page, key: str) -> str:
    """The option shown by the selectbox with widget key ``key`` (Streamlit 1.67: a combobox input's value)."""
    return await page.locator(f".st-key-{key} input").input_value()


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


# ---- what the driver knows about the built-in data (computed here, independently of the server) ---------------------
class Expect:
    """Expected texts, computed from the library in this process."""

    def __init__(self):
        from robustlab.datasets import build
        from robustlab.datasets.synthetic.clavi import eligible
        from robustlab.datasets.synthetic.datasets import builtin_gallery
        from robustlab.perturb import get_perturbation
        demo_n = int(re.search(r"^DEMO_N, VIDEO_DEMO_N = (\d+)", (ROOT / "ui" / "state.py").read_text(encoding="utf-8"),
                               re.M).group(1))
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
            ok = self.check(False, what, f"expected {pattern!r}; page shows {main[:40]!r}")
            self.stats.errors[-1]["screenshot"] = shot
            return ok

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


# ---- the scenarios: one per session ----------------------------------------------------------------------------------
class Scenario:
    title = ""
    switch_every = 1  # steps between two page switches
    choices: list = []

    def describe(self) -> dict:
        return {"page": self.title, "choices": [list(c) for c in self.choices]}

    async def sidebar(self, s: Session) -> None:  # sidebar choices, once per (re)load
        return None

    async def apply(self, s: Session, choice) -> None:
        raise NotImplementedError

    async def check(self, s: Session, choice) -> None:
        raise NotImplementedError


def _count(s: Session, changed: bool) -> None:
    s.stats.actions += int(changed)


class RetrievalT2I(Scenario):
    """Text→image: a gallery caption as query (its index) and the image perturbation's severity."""
    title = "Retrieval"

    def __init__(self, queries, severities):
        self.choices = [(q, sv) for q, sv in zip(queries, severities * len(queries))]

    async def apply(self, s, choice):
        q, sev = choice
        p, e = s.page, s.sh.expect
        _count(s, await choose_radio(p, "text→image", scope=p.locator(".st-key-direction")))
        _count(s, await choose_radio(p, "gallery caption", scope=p.locator(".st-key-query_mode")))
        _count(s, await set_select(p, "query_idx", f"#{q} · {e.first_caption[q]}"))
        _count(s, await set_slider(p, "img_sev", sev))

    async def check(self, s, choice):
        q, sev = choice
        p, e = s.page, s.sh.expect
        await s.expect_text("the query shown is the caption of the chosen item", e.first_caption[q],
                            where=p.locator('[data-testid="stText"]'))
        title = f"Perturbed top-k (gaussian_noise s{sev} / keyboard s2)"
        await s.expect_text("the perturbed ranking names the chosen perturbation and severity", title)
        await p.locator('[data-testid="stMetric"]').filter(has_text="R@1").first.wait_for(state="attached")
        ranked = await texts(p.locator('.st-key-ranked_clean [data-testid="stImageCaption"], '
                                       '.st-key-ranked_perturbed [data-testid="stImageCaption"]'))
        s.check(len(ranked) >= 2, "the ranked lists are drawn", str(ranked))
        # ranks and items, not the scores: a query encoded alone may differ from its batch row in the last digit
        ranked = [re.sub(r" · -?\d+\.\d+ · ", " · ", r) for r in ranked]
        s.record(("t2i", q, sev), {"metrics": await texts(p.locator('[data-testid="stMetricValue"]')),
                                   "ranked": ranked})


class RetrievalI2T(Scenario):
    """Image→text: a gallery image as query and the image perturbation's severity."""
    title = "Retrieval"

    def __init__(self, items, severities):
        self.choices = [(i, sv) for i, sv in zip(items, severities * len(items))]

    async def apply(self, s, choice):
        i, sev = choice
        p, e = s.page, s.sh.expect
        _count(s, await choose_radio(p, "image→text", scope=p.locator(".st-key-direction")))
        _count(s, await set_select(p, "query_visual", f"#{i} · {e.names[i]}"))
        _count(s, await set_slider(p, "img_sev", sev))

    async def check(self, s, choice):
        i, sev = choice
        p = s.page
        await s.expect_text("the perturbed query names the chosen perturbation", f"Query image, perturbed "
                                                                                 f"(gaussian_noise s{sev})")
        await s.expect_text("the ranked captions name the perturbation",
                            f"Perturbed top-k captions (gaussian_noise s{sev} / keyboard s2)")
        await p.locator('[data-testid="stMetric"]').filter(has_text="R@1").first.wait_for(state="attached")
        frames = await dataframes(p, 2)
        s.check(len(frames) >= 2 and all(len(f) >= 5 for f in frames[:2]), "the top-k captions are drawn",
                str(frames)[:300])
        # the ranked captions without their scores (see RetrievalT2I)
        ranked = [[c for c in f if not re.fullmatch(r"-?\d+\.\d+", c)] for f in frames[:2]]
        s.record(("i2t", i, sev), {"metrics": await texts(p.locator('[data-testid="stMetricValue"]')),
                                   "captions": ranked})


class Grounding(Scenario):
    title = "Grounding"

    def __init__(self, scenes, severities):
        self.choices = [(i, sv) for i, sv in zip(scenes, severities * len(scenes))]

    async def apply(self, s, choice):
        i, sev = choice
        p = s.page
        _count(s, await choose_radio(p, "From the sidebar's dataset", scope=p.locator(".st-key-gr_source")))
        _count(s, await set_number(p, "gr_scene", i))
        _count(s, await set_slider(p, "gr_img_sev", sev))

    async def check(self, s, choice):
        i, sev = choice
        p, e = s.page, s.sh.expect
        await s.expect_text("the item shown is the chosen one", f"#{i} · {e.item_id[i]} · “{e.first_caption[i]}”")
        await s.expect_text("the perturbed box names the chosen severity", f"Perturbed · gaussian_noise s{sev}")
        await p.get_by_text("IoU clean vs perturbed box").first.wait_for(state="attached")
        s.record((i, sev), {"metrics": await texts(p.locator('[data-testid="stMetricValue"]'))})


class Attention(Scenario):
    title = "Attention"

    def __init__(self, items, layers):
        self.choices = [(i, la) for i, la in zip(items, layers * len(items))]

    async def apply(self, s, choice):
        i, layer = choice
        p = s.page
        _count(s, await choose_radio(p, "Built-in scene", scope=p.locator(".st-key-at_source")))
        _count(s, await set_number(p, "at_item_scene", i))
        _count(s, await set_select(p, "at_layer", str(layer)))

    async def check(self, s, choice):
        i, layer = choice
        p, e = s.page, s.sh.expect
        q, a = e.qa[i]
        box = p.get_by_label("Question")
        got = await box.input_value()
        s.check(got == q, "the question is the chosen scene's", f"expected {q!r}, shows {got!r}")
        await s.expect_text("the dataset answer is the chosen scene's", f"Dataset answer: {a}")
        mass = p.get_by_text(re.compile(r"^Attention mass per quadrant in this layer"))
        await mass.first.wait_for(state="attached")
        s.record((i, layer), {"mass": (await mass.first.inner_text())[:200]})


class Clavi(Scenario):
    title = "CLAVI"

    def __init__(self, positions, seeds):
        self.positions = positions
        self.seeds = seeds
        self.choices = [(k, sd) for k, sd in zip(positions, seeds * len(positions))]

    def describe(self):
        return {"page": self.title, "choices": [["eligible video #k", k, "seed", sd] for k, sd in self.choices]}

    async def apply(self, s, choice):
        k, seed = choice
        p, e = s.page, s.sh.expect
        j = e.clavi_items[k]
        _count(s, await choose_radio(p, "Built-in event video", scope=p.locator(".st-key-cv_source")))
        _count(s, await set_number(p, "cv_seed", seed))
        _count(s, await set_select(p, "cv_item", f"#{j} · {e.clavi_caption[j]}"))

    async def check(self, s, choice):
        k, seed = choice
        p, e = s.page, s.sh.expect
        j = e.clavi_items[k]
        shown = await select_value(p, "cv_item")
        s.check(shown == f"#{j} · {e.clavi_caption[j]}", "the chosen video is selected", shown)
        caps = p.get_by_text(re.compile(r"^(A: frames|B: frames) \d+"))
        await caps.first.wait_for(state="attached")
        metrics = await texts(p.locator('[data-testid="stMetricValue"]'))
        s.check(len(metrics) >= 4, "the four CLAVI metrics are drawn", str(metrics))
        s.record((j, seed), {"frames": await texts(caps), "metrics": metrics})


class Hubness(Scenario):
    title = "Hubness"

    def __init__(self, direction, ks, severities):
        self.direction = direction
        self.choices = [(k, sv) for k, sv in zip(ks, severities * len(ks))]

    async def apply(self, s, choice):
        k, sev = choice
        p = s.page
        label = {"t2i": "text→image", "i2t": "image→text"}[self.direction]
        _count(s, await choose_radio(p, label, scope=p.locator(".st-key-hub_direction")))
        _count(s, await set_number(p, "hub_k", k))
        _count(s, await set_slider(p, "hub_sev", sev))

    async def check(self, s, choice):
        k, sev = choice
        p, e = s.page, s.sh.expect
        n = e.gallery_n
        what = "images" if self.direction == "t2i" else "captions"
        await s.expect_text("the k-occurrence caption names the chosen k and perturbation", re.compile(
            rf"^{n} queries × {n} {what}, k = {k}; perturbed: gaussian_noise s{sev} \(image\)\."))
        hubs = await texts(p.locator('.st-key-hub_top_perturbed [data-testid="stImageCaption"]'))
        hubs = list(dict.fromkeys(h for h in hubs if h.startswith("#")))
        s.check(bool(hubs) and all(re.match(r"^#\d+ · item \d+ · N_k = \d+ queries", h) for h in hubs),
                "the top hubs are drawn", str(hubs[:3]))
        s.record((self.direction, k, sev), {"hubs": hubs})


class HubnessVideos(Hubness):
    """Hubness on the built-in videos with a video model chosen in the sidebar (a third model, video galleries)."""
    MODEL = "builtin:tiny-clip-video-meanp"

    def __init__(self, ks, severities):
        super().__init__("t2v", ks, severities)

    def describe(self):
        return {**super().describe(), "sidebar": {"model": self.MODEL, "dataset": "Built-in videos"}}

    async def sidebar(self, s):
        p = s.page
        _count(s, await set_select(p, "model_choice", self.MODEL))
        _count(s, await choose_radio(p, "Built-in videos", scope=p.locator(".st-key-dataset")))

    async def apply(self, s, choice):
        k, sev = choice
        p = s.page
        _count(s, await choose_radio(p, "text→video", scope=p.locator(".st-key-hub_direction")))
        _count(s, await set_number(p, "hub_k", k))
        _count(s, await set_slider(p, "hub_sev", sev))

    async def check(self, s, choice):
        k, sev = choice
        p = s.page
        await s.expect_text("the k-occurrence caption names the chosen k and video perturbation", re.compile(
            rf"^\d+ queries × \d+ videos, k = {k}; perturbed: gaussian_noise s{sev} \(video\)\."))
        await p.locator('.st-key-hub_top_perturbed [data-testid="stCaptionContainer"]').first.wait_for(
            state="attached")
        hubs = list(dict.fromkeys(h for h in await texts(p.locator(
            '.st-key-hub_top_perturbed [data-testid="stCaptionContainer"]')) if h.startswith("#")))
        s.check(bool(hubs) and all(re.match(r"^#\d+ · item \d+ · N_k = \d+ queries", h) for h in hubs),
                "the top hub videos are drawn", str(hubs[:3]))
        s.record(("t2v", k, sev), {"hubs": hubs})


class Adaptation(Scenario):
    title = "Adaptation"

    def __init__(self, severities):
        self.choices = [(sv,) for sv in severities]

    async def apply(self, s, choice):
        (sev,) = choice
        p = s.page
        _count(s, await choose_radio(p, "text→image", scope=p.locator(".st-key-ad_direction")))
        _count(s, await set_select(p, "ad_method", "Tent"))
        _count(s, await set_number(p, "ad_tent_steps", 1))
        _count(s, await set_slider(p, "ad_txt_sev", sev))
        if await p.locator(".st-key-ad_proj").count():  # the map of the last run: PCA (t-SNE is the Embeddings')
            _count(s, await choose_radio(p, "PCA (instant)", scope=p.locator(".st-key-ad_proj")))
        await click(p, p.get_by_role("button", name="Run adaptation"))
        s.stats.actions += 1

    async def check(self, s, choice):
        (sev,) = choice
        p, e = s.page, s.sh.expect
        n = e.gallery_n
        await s.expect_text("the run names the chosen method and shift", re.compile(
            rf"^Tent · text→image · {n} query captions × {n} gallery images · query shift: keyboard s{sev} · "),
            timeout=300_000)
        cells = await grid_cells(p, ".st-key-ad_metrics_box", 21)
        s.check(all(c in cells for c in ("clean", "shifted", "adapted")), "the metrics table has its three rows",
                str(cells))
        # clean and shifted rows: no adaptation in them, so the same shift always gives the same numbers
        rows = [cells[i:i + 7] for i, c in enumerate(cells) if c in ("clean", "shifted")]
        s.record((sev,), {"rows": rows})


class Embeddings(Scenario):
    title = "Embeddings"

    def __init__(self, method, severities):
        self.method = method
        self.choices = [(sv,) for sv in severities]

    async def apply(self, s, choice):
        (sev,) = choice
        p = s.page
        label = "t-SNE" if self.method == "tsne" else "PCA (instant)"
        _count(s, await choose_radio(p, label, scope=p.locator(".st-key-emb_method")))
        _count(s, await set_slider(p, "emb_img_sev", sev))

    async def check(self, s, choice):
        (sev,) = choice
        p = s.page
        name = "t-SNE" if self.method == "tsne" else "PCA"
        await s.expect_text("the map names the chosen projection and perturbation", re.compile(
            rf"^800 points: 200 items · image gaussian_noise s{sev} · text keyboard s2 · {name} \(seed 0\)\."))
        chart = p.locator(".st-key-emb_chart .js-plotly-plot")
        await chart.wait_for(state="attached")
        sig = await chart.evaluate("""el => (el._fullData || []).map(t => [t.name, t.x ? Array.from(t.x).length : 0,
            t.x ? Math.round(Array.from(t.x).reduce((a, b) => a + b, 0) * 100) / 100 : 0])""")
        s.check(sum(t[1] for t in sig) >= 800, "the map has its 800 points", str(sig)[:300])
        s.record((self.method, sev), {"traces": sig})


class PerturbImage(Scenario):
    title = "Perturb"

    def __init__(self, items, severities):
        self.choices = list(zip(items, severities))

    async def apply(self, s, choice):
        i, sev = choice
        p = s.page
        _count(s, await choose_radio(p, "Image", scope=p.locator(".st-key-pt_kind")))
        _count(s, await choose_radio(p, "Built-in world", scope=p.locator(".st-key-pt_source_image")))
        _count(s, await set_number(p, "pt_image_idx", i))
        _count(s, await set_slider(p, "pt_severity", sev))

    async def check(self, s, choice):
        i, sev = choice
        p, e = s.page, s.sh.expect
        await s.expect_text("the scene shown is the chosen one", f"#{i} · “{e.first_caption[i]}”")
        head = f"gaussian_noise · {e.variant['gaussian_noise']} · severity {sev}"
        await s.expect_text("the perturbed image names the chosen severity", head)
        imgs = p.locator('[data-testid="stMain"] [data-testid="stImage"] img')
        srcs = [await imgs.nth(j).get_attribute("src") for j in range(await imgs.count())]
        s.check(len(srcs) >= 7, "the severity strip and the two images are drawn", str(len(srcs)))
        # media URLs are content hashes: the clean and perturbed pixels of this (scene, severity)
        s.record((i, sev), {"media": [Path(x or "").name for x in srcs[-2:]]})


class PerturbText(Scenario):
    title = "Perturb"

    def __init__(self, items, severities):
        self.choices = list(zip(items, severities))

    async def apply(self, s, choice):
        i, sev = choice
        p, e = s.page, s.sh.expect
        _count(s, await choose_radio(p, "Caption", scope=p.locator(".st-key-pt_kind")))
        _count(s, await choose_radio(p, "Built-in world", scope=p.locator(".st-key-pt_source_text")))
        _count(s, await set_select(p, "pt_caption_idx", f"#{i} · {e.first_caption[i]}"))
        _count(s, await set_slider(p, "pt_severity", sev))

    async def check(self, s, choice):
        i, sev = choice
        p, e = s.page, s.sh.expect
        await s.expect_text("the clean caption is the chosen one", e.first_caption[i],
                            where=p.locator('[data-testid="stText"]'))
        await s.expect_text("the perturbed caption names the chosen severity",
                            f"keyboard · {e.variant['keyboard']} · severity {sev}")
        await p.get_by_text("Words changed").first.wait_for(state="attached")
        metrics = await texts(p.locator('[data-testid="stMetricValue"]'))
        s.record((i, sev), {"metrics": metrics})


class Benchmark(Scenario):
    """The sweep's configuration (items, category) and, every other step, a small sweep to its end."""
    title = "Benchmark"

    def __init__(self, sizes):
        self.choices = [(n, run) for n in sizes for run in (False, True)]

    async def apply(self, s, choice):
        n, run = choice
        p = s.page
        _count(s, await choose_radio(p, "New sweep", scope=p.locator(".st-key-bench_mode")))
        _count(s, await set_number(p, "bench_n", n))
        _count(s, await choose_radio(p, "a category", scope=p.locator(".st-key-bench_pmode")))
        box = p.locator(".st-key-bench_name input")
        name = f"cc-s{s.idx}-n{n}"
        if await box.input_value() != name:
            await settle(p)
            n0 = await runs(p)
            await box.fill(name)
            await box.press("Enter")
            s.stats.actions += 1
            await ran(p, n0)
        if run:
            await click(p, p.get_by_role("button", name="Run sweep"))
            s.stats.actions += 1
            # this run's end (an earlier run's "Done" stays on the page until the new job has started)
            await p.get_by_text(re.compile(rf"^Done: \d+ cell.*cc-s{s.idx}-n{n}$")).first.wait_for(timeout=600_000)
            await settle(p)

    async def check(self, s, choice):
        n, run = choice
        p = s.page
        from robustlab.engine.sweep import parse_perturbations

        cells = 1 + 5 * len(parse_perturbations("category:noise", "image"))
        size = p.get_by_text(re.compile(rf"^{cells} cells: 1 model\(s\) × {cells} condition sets .* on {n} items\.$"))
        if await s.expect_text("the sweep's size names the chosen items", size):
            s.record((n, "config"), {"size": await size.first.inner_text()})
        if run:
            done = p.get_by_text(re.compile(rf"^Done: \d+ cell.*cc-s{s.idx}-n{n}$"))
            t = await done.first.inner_text()
            m = re.match(r"Done: (\d+) cell\(s\) run, (\d+) already there, (\d+) in the sweep", t)
            s.check(bool(m) and int(m.group(1)) + int(m.group(2)) == int(m.group(3)) == cells,
                    "the sweep ran every cell", t)
            s.check(f"cc-s{s.idx}-n{n}" in t, "the sweep wrote into this session's run folder", t)
            await s.expect_text("the report is this session's run", f"Report — cc-s{s.idx}-n{n}")
            s.record((n, "sweep"), {"cells": cells})


class Export(Scenario):
    """Add a scene of its own to its basket on the Perturb page, then check the Export page lists exactly its own
    scenes (a basket is per session); empty it after three."""
    title = "Export"
    switch_every = 2  # each step already goes to the Perturb page and back

    def __init__(self, items, severities):
        self.choices = list(zip(items, severities))
        self.added: list[tuple[int, int]] = []

    async def apply(self, s, choice):
        i, sev = choice
        p = s.page
        if len(self.added) >= 3:
            await click(p, p.get_by_role("button", name="Empty the basket"))
            s.stats.actions += 1
            await s.expect_text("the basket is empty after Empty the basket", re.compile(r"^Your basket is empty"))
            self.added = []
        await s.goto("Perturb")
        _count(s, await choose_radio(p, "Image", scope=p.locator(".st-key-pt_kind")))
        _count(s, await choose_radio(p, "Built-in world", scope=p.locator(".st-key-pt_source_image")))
        _count(s, await set_number(p, "pt_image_idx", i))
        _count(s, await set_slider(p, "pt_severity", sev))
        await click(p, p.get_by_role("button", name="Add to basket"))
        s.stats.actions += 1
        if (i, sev) not in self.added:
            self.added.append((i, sev))
        await p.get_by_text(f"Added to the basket ({len(self.added)} example(s)).", exact=True).wait_for()
        await click(p, p.get_by_role("link", name=f"Export the basket ({len(self.added)})"))
        s.stats.actions += 1
        await p.get_by_text(s.sh.pages["Export"], exact=True).wait_for()
        await settle(p)

    async def check(self, s, choice):
        p, e = s.page, s.sh.expect
        n = len(self.added)
        await s.expect_text("the basket holds this session's examples", re.compile(rf"^{n} example\(s\)\. "))
        rows = await texts(p.locator('[class*="st-key-basket_item_"] [data-testid="stCaptionContainer"]'))
        item = re.compile(r"built-in gallery · world seed \d+ · item (\d+)")
        listed = sorted({int(m.group(1)) for m in map(item.search, rows) if m})
        s.check(listed == sorted(i for i, _ in self.added), "the basket lists exactly this session's scenes",
                f"expected items {sorted(i for i, _ in self.added)}, listed {listed}")
        for i, sev in self.added:
            await s.expect_text("each example keeps its severity", re.compile(
                rf"^gaussian_noise · {e.variant['gaussian_noise']} · severity {sev} · seed 0$"))
        await s.expect_text("the zip holds this session's examples",
                            re.compile(rf"^Download zip \({n} example\(s\), "), where=p.get_by_role("button"))


def plan(sessions: int = 16, videos: bool = False) -> list[Scenario]:
    """The sessions' pages and choices: every page of the app, six of them twice with other choices. ``videos``: the
    second Hubness session works on the built-in videos with a video model (a third model, video galleries)."""
    base = [RetrievalT2I([5, 17, 42, 123], [3, 1]),
            Grounding([3, 11, 25, 40], [3, 5]),
            Attention([0, 4, 9, 21], [0, 1]),
            Clavi([0, 2, 5, 9], [0, 3]),
            Hubness("t2i", [5, 10, 15, 20], [3, 5]),
            Adaptation([2, 4]),
            Embeddings("pca", [1, 2]),
            PerturbImage([2, 9, 30, 77], [1, 4, 2, 5]),
            Benchmark([4, 6]),
            Export([101, 102, 103, 104], [2, 3, 4, 5]),
            RetrievalI2T([8, 33, 77, 150], [2, 4]),
            Grounding([7, 19, 50, 64], [1, 4]),
            HubnessVideos([5, 10, 15, 8], [2, 4]) if videos else Hubness("i2t", [3, 8, 12, 6], [2, 4]),
            Embeddings("tsne", [3, 5]),
            PerturbText([1, 6, 40, 99], [1, 3, 5, 2]),
            Export([201, 202, 203, 204], [5, 1, 2, 3])]
    return [base[i % len(base)] for i in range(sessions)]


# ---- the run -------------------------------------------------------------------------------------------------------
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


async def _drive(shared: Shared, sessions: list[Session], exe: str, stagger_s: float) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=exe, headless=True, args=BROWSER_ARGS)
        version = browser.version

        async def start(s: Session, delay: float):
            await asyncio.sleep(delay)
            await s.run(browser)

        tasks = [asyncio.ensure_future(start(s, i * stagger_s)) for i, s in enumerate(sessions)]
        done, pending = await asyncio.wait(tasks, timeout=max(1.0, shared.hard_deadline + shared.soak_s + 120
                                                               - time.time()))
        for t, s in zip(tasks, sessions):  # a step stuck past every deadline: an error, and the session is stopped
            if t in pending:
                s.error("stuck", "the session's step did not end 120 s after the hard deadline")
                t.cancel()
        if pending:
            await asyncio.wait(pending, timeout=30)
        await browser.close()
    return {"chromium": version}


def _window_mean(samples, lo: float, hi: float) -> float | None:
    xs = [m for t, m, *_ in samples if lo <= t <= hi]
    return sum(xs) / len(xs) if xs else None


def _fifths(samples, lo: float, hi: float) -> tuple[float | None, dict]:
    """Growth over [lo, hi]: mean RSS over its last fifth minus its first; the two windows as [from, to, mean]."""
    span = hi - lo
    first = _window_mean(samples, lo, lo + 0.2 * span)
    last = _window_mean(samples, hi - 0.2 * span, hi)
    if first is None or last is None:
        return None, {}
    return last - first, {"first": [round(lo, 1), round(lo + 0.2 * span, 1), round(first, 1)],
                          "last": [round(hi - 0.2 * span, 1), round(hi, 1), round(last, 1)]}


def run(sessions: int = 16, seconds: float = 600, *, min_steps: int = 2, grace_s: float = 240, stagger_s: float = 0.5,
        peak_bound_mb: float = PEAK_BOUND_MB, growth_bound_mb: float = GROWTH_BOUND_MB, videos: bool = False,
        workdir: Path | None = None, screenshots: Path | None = None, only: list[int] | None = None,
        soak_s: float = 0.0, log=print) -> dict:
    """Start the server, drive ``sessions`` sessions for ``seconds`` (each then finishes its step, and does at least
    ``min_steps`` before ``seconds + grace_s``), stop, and return the results (see the module docstring)."""
    exe = _chromium()
    if exe is None:
        raise RuntimeError("Chromium is not installed")
    sys.path.insert(0, str(ROOT))
    tmp = Path(tempfile.mkdtemp(prefix="rl-concurrency-")) if workdir is None else Path(workdir)
    tmp.mkdir(parents=True, exist_ok=True)
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    expect = Expect()
    server = Server(tmp)
    t_start = time.time()
    url = server.start()
    log(f"server {url} (pid {server.proc.pid}) up in {time.time() - t_start:.1f} s; log {server.log_path}")
    sampler = Sampler(server.proc.pid)
    sampler.start()
    t0 = time.time()
    shared = Shared(url=url, pages=app_pages(), expect=expect, deadline=t0 + seconds,
                    hard_deadline=t0 + seconds + grace_s, min_steps=min_steps, shots=screenshots, t0=t0,
                    soak_s=soak_s)
    scen = plan(sessions, videos)
    sess = [Session(i, sc, shared) for i, sc in enumerate(scen) if only is None or i in only]
    shared.n_sessions = len(sess)
    info: dict = {}
    try:
        info = asyncio.run(_drive(shared, sess, exe, stagger_s))
    finally:
        t_end = time.time() - t0
        try:
            time.sleep(1.5)
            sampler.stop()
        finally:
            server.stop()
    load_end = os.getloadavg()
    text = server.log()

    # errors: the sessions', then every Traceback in the server's log
    errors = [e for s in sess for e in s.stats.errors]
    tb = [m.start() for m in re.finditer(r"Traceback \(most recent call last\)", text)]
    for pos in tb[:5]:
        errors.append({"session": None, "page": None, "kind": "server traceback", "detail": text[pos:pos + 2000]})
    if len(tb) > 5:
        errors.append({"session": None, "page": None, "kind": "server traceback", "detail": f"{len(tb) - 5} more"})
    loads: dict[str, int] = {}
    for spec, device in MODEL_LOAD.findall(text):
        loads[f"{spec} on {device}"] = loads.get(f"{spec} on {device}", 0) + 1

    # distinctness: two sessions on one page with other choices must not have seen the same results
    distinct = []
    by_page: dict[str, list[Session]] = {}
    for s in sess:
        by_page.setdefault(s.sc.title, []).append(s)
    for title, group in by_page.items():
        for a in range(len(group)):
            for b in range(a + 1, len(group)):
                sa, sb = set(group[a].stats.seen.values()), set(group[b].stats.seen.values())
                if sa and sb:
                    ok = sa != sb  # other choices, so not all the same results
                    distinct.append({"page": title, "sessions": [group[a].idx, group[b].idx], "ok": ok,
                                     "shared_results": len(sa & sb)})
                    if not ok:
                        errors.append({"session": group[b].idx, "page": title, "kind": "content",
                                       "detail": f"sessions {group[a].idx} and {group[b].idx} chose differently "
                                                 f"but saw the same {len(sa)} result(s)"})

    # memory
    smp = sampler.samples
    server_mb = [m for _, m, _, _ in smp]
    chrome_mb = [c for _, _, c, _ in smp]
    pss = [p for *_, p in smp if p is not None]
    # warm-up ends when every session has done each of its choices once and switched page; a session too slow to
    # get there (a page whose every step is long, on a loaded machine) is named and left out when at least 3/4 did
    warm = [s.stats.warm_at - t0 for s in sess if s.stats.warm_at is not None]
    not_warmed = [s.idx for s in sess if s.stats.warm_at is None]
    warm_rule = None
    warm_t = None
    if warm and not not_warmed:
        warm_t, warm_rule = max(warm), "every session"
    elif warm and len(warm) >= 0.75 * len(sess):
        warm_t, warm_rule = max(warm), f"every session but {not_warmed} (too few steps to warm up)"
    growth = None
    windows = None
    if warm_t is not None and t_end - warm_t < 0.3 * t_end:
        warm_rule = f"{warm_rule}: too late ({warm_t:.0f} of {t_end:.0f} s) to measure growth"
    if warm_t is not None and t_end - warm_t >= 0.3 * t_end:
        growth, w = _fifths(smp, warm_t, t_end)
        windows = {"after_warmup": w["first"], "last": w["last"]} if w else None
    growth_rule = None if growth is None else "after warm-up"
    soak = None
    if shared.soak_start is not None:  # the soak phase: every session switching pages, nothing new computed
        lo, hi = shared.soak_start - t0, min(shared.soak_end - t0, t_end)
        g, w = _fifths(smp, lo, hi)
        soak = {"from_s": round(lo, 1), "to_s": round(hi, 1),
                "page_switches": sum(s_.stats.soak_switches for s_ in sess),
                "first_fifth_mb": w["first"][2] if w else None, "last_fifth_mb": w["last"][2] if w else None,
                "growth_mb": _r(g)}
        if g is not None:
            growth, growth_rule = g, "soak phase (every session switching pages, after the run)"
            windows = {"soak_first": w["first"], "soak_last": w["last"]}
    peak = max(server_mb) if server_mb else None
    after_warm = next((m for t, m, *_ in smp if warm_t is not None and t >= warm_t), None)
    checks = sum(s.stats.checks for s in sess)
    passed = sum(s.stats.passed for s in sess) + sum(d["ok"] for d in distinct)
    checks += len(distinct)
    within = {"server_peak": peak is not None and peak <= peak_bound_mb,
              "growth": None if growth is None else growth <= growth_bound_mb}  # None: not measured
    try:
        import importlib.metadata as md

        versions = {p: md.version(p) for p in ("streamlit", "playwright", "torch")}
    except Exception:  # noqa: BLE001 - versions are informative only
        versions = {}
    mem_total = _status_meminfo()
    res = {
        "issue": 15,
        "what": "one streamlit server, N concurrent headless-Chromium sessions (one browser context each), each on its "
                "own page with its own choices; content checks, ledger, soak of page switches",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "sessions": sessions,
        "minutes": round(seconds / 60, 2),
        "duration_s": round(t_end, 1),
        "plan": [{"session": s.idx, **s.sc.describe(), "switch_every_steps": s.sc.switch_every,
                  "soak_pages": s.soak_pages()} for s in sess],
        "per_session": [{"session": s.idx, "page": s.sc.title, "steps": s.stats.steps, "actions": s.stats.actions,
                         "page_switches": s.stats.switches, "checks": s.stats.checks, "passed": s.stats.passed,
                         "errors": len(s.stats.errors), "steps_done_at_s": s.stats.step_at,
                         "timeline": s.stats.timeline, "soak_switches": s.stats.soak_switches,
                         "warm_at_s": None if s.stats.warm_at is None else round(s.stats.warm_at - t0, 1)}
                        for s in sess],
        "actions_total": sum(s.stats.actions for s in sess),
        "errors": {"count": len(errors), "details": errors},
        "content_checks": {"done": checks, "passed": passed, "ledger_keys": len(shared.ledger),
                           "distinct_pairs": distinct},
        "model_loads": loads,
        "server_tracebacks": len(tb),
        "memory_mb": {
            "server_rss_peak": _r(peak), "server_rss_after_warmup": _r(after_warm),
            "server_rss_end": _r(server_mb[-1] if server_mb else None), "warmup_s": _r(warm_t), "warmup_rule": warm_rule,
            "sessions_not_warmed": not_warmed,
            "growth": _r(growth), "growth_rule": growth_rule, "growth_windows": windows, "soak": soak,
            "growth_definition": "mean server RSS over the last 20% of a stretch minus the mean over its first 20%; "
                                 "the stretch is the soak phase when there is one (after the run, every session "
                                 "switching to other pages and back, from when the last session entered it), else "
                                 "the run after warm-up (every session has done each of its choices once and switched "
                                 "page at least once)",
            "chromium_rss_peak": _r(max(chrome_mb) if chrome_mb else None),
            "chromium_rss_end": _r(chrome_mb[-1] if chrome_mb else None),
            "chromium_pss_peak": _r(max(pss) if pss else None),
            "chromium_note": "sum over Chromium's processes (RSS counts shared pages once per process; PSS does not)",
            "series_10s": [[round(t), round(m), round(c)] for t, m, c, _ in smp[::10]],
        },
        "bounds": {"server_rss_peak_mb": peak_bound_mb, "growth_mb": growth_bound_mb, "within": within},
        "machine": {"cpus": os.cpu_count(), "mem_total_gb": mem_total, "platform": platform.platform(),
                    "python": platform.python_version(), **versions, **info,
                    "loadavg_start": [round(x, 2) for x in load_start], "loadavg_end": [round(x, 2) for x in load_end],
                    "loadavg_1min_mean_during": _r(sum(x for _, x in sampler.loads) / len(sampler.loads)
                                                   if sampler.loads else None)},
        "server_log": str(server.log_path),
    }
    res["ok"] = not errors and all(v is not False for v in within.values())  # growth may be unmeasured (short run)
    return res


def _r(x, nd: int = 1):
    return None if x is None else round(float(x), nd)


def _status_meminfo() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            return round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None


def summary(res: dict) -> str:
    m = res["memory_mb"]
    c = res["content_checks"]
    lines = [
        f"{res['sessions']} sessions × {res['duration_s']:.0f} s on one server "
        f"(load avg {res['machine']['loadavg_start'][0]} → {res['machine']['loadavg_end'][0]})",
        f"errors: {res['errors']['count']} · content checks {c['passed']}/{c['done']} passed · ledger keys "
        f"{c['ledger_keys']} · server tracebacks {res['server_tracebacks']}",
        f"model loads: {res['model_loads']}",
        f"server RSS peak {m['server_rss_peak']} MB (bound {res['bounds']['server_rss_peak_mb']}) · after warm-up "
        f"{m['server_rss_after_warmup']} MB (warm-up {m['warmup_s']} s) · end {m['server_rss_end']} MB · growth "
        + (f"{m['growth']} MB over the {m.get('growth_rule')} (bound {res['bounds']['growth_mb']})"
           if m['growth'] is not None
         else f"not measured ({m.get('warmup_rule') or 'not every session warmed up'})"),
        f"chromium RSS peak {m['chromium_rss_peak']} MB (PSS {m['chromium_pss_peak']} MB)",
        "per session (page: steps/actions/switches/checks passed/errors): " + "; ".join(
            f"{p['session']} {p['page']}: {p['steps']}/{p['actions']}/{p['page_switches']}/{p['passed']}/{p['errors']}"
            for p in res["per_session"]),
    ]
    for e in res["errors"]["details"][:10]:
        lines.append(f"  ERROR s{e.get('session')} {e.get('page')} {e['kind']}: {e['detail'][:300]}")
    lines.append("OK" if res["ok"] else "FAILED")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--soak-minutes", type=float, default=3,
                    help="after the run, every session only switches pages for this long: the memory growth window")
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--peak-bound-mb", type=float, default=PEAK_BOUND_MB)
    ap.add_argument("--growth-bound-mb", type=float, default=GROWTH_BOUND_MB)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--screenshots", type=Path, default=None, help="a folder for screenshots of failed steps")
    ap.add_argument("--only", default=None, help="comma-separated session numbers of the plan to run (debugging)")
    ap.add_argument("--no-videos", action="store_true", help="the second Hubness session on images (as the CI test)")
    a = ap.parse_args(argv)
    only = [int(x) for x in a.only.split(",")] if a.only else None
    res = run(a.sessions, a.minutes * 60, peak_bound_mb=a.peak_bound_mb, growth_bound_mb=a.growth_bound_mb,
              screenshots=a.screenshots, only=only, videos=not a.no_videos,
              soak_s=a.soak_minutes * 60, log=lambda *x: print(*x, flush=True))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(summary(res))
    print(f"→ {a.out}")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
