"""The scenarios of the tool pages (one per session): Perturb (image, text), Benchmark, Export; and
:func:`plan`, the sessions' scenarios."""
from __future__ import annotations

import re
from pathlib import Path

from robustlab.bench.spec import parse_perturbations

from .browser import choose_radio, click, ran, runs, set_number, set_select, set_slider, settle, texts
from .scenarios import (Adaptation, Attention, Clavi, Embeddings, Grounding, Hubness, HubnessVideos, RetrievalI2T,
                        RetrievalT2I, Scenario, _count)


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


class Failures(Scenario):
    """A small failure map of its own (the page's default perturbations and severities on the first n built-in
    images): the map shown is the one this session asked for (its n, in the heading computed from the result)."""
    title = "Failures"
    switch_every = 2  # a map is a server job: fewer page switches while it runs

    def __init__(self, items):
        self.choices = [(n,) for n in items]

    async def apply(self, s, choice):
        (n,) = choice
        p = s.page
        _count(s, await set_number(p, "fail_n", n))
        await click(p, p.locator(".st-key-fail_go").get_by_role("button"))
        s.stats.actions += 1

    async def check(self, s, choice):
        (n,) = choice
        heading = re.compile(rf" · builtin \([a-z]+, {n} items, \d+ examples\) · ")  # the dashboard's split
        if await s.expect_text("the map is this session's (its items)", heading, timeout=240_000):
            s.record((n,), {"heading": (await s.page.get_by_text(heading).first.inner_text())[:200]})
        await s.expect_text("the map's summary is shown", "Where it breaks")
        await s.expect_text("one example of the map is shown in detail",
                            re.compile(rf"^#[0-{n - 1}] · scene-\d+-\d+ · caption \d+ under "))


def plan(sessions: int = 16, videos: bool = False) -> list[Scenario]:
    """The sessions' pages and choices: every page of the app, five of them twice with other choices. ``videos``: the
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
            Failures([6, 8, 6, 10])]
    return [base[i % len(base)] for i in range(sessions)]
