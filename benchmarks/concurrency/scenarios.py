"""The scenarios of the pages that run models (one per session): Retrieval, Grounding, Attention, CLAVI,
Hubness, Adaptation, Embeddings."""
from __future__ import annotations

import re

from .browser import choose_radio, click, dataframes, grid_cells, set_number, set_select, set_slider, \
    texts
from .session import Session


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
        await s.expect_value("the question is the chosen scene's", p.get_by_label("Question"), q)
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
        await s.expect_value("the chosen video is selected", p.locator(".st-key-cv_item input"),
                             f"#{j} · {e.clavi_caption[j]}")
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
