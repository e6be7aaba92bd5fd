"""The end-to-end walk (issue 15): one new user, one browser session, every page of the dashboard in a real headless
Chromium, each checked by what it shows, with a full-page screenshot of every page visited.

The walk: Retrieval on the defaults (built-in images) → Grounding (built-in scene with its ground-truth box; the
example goes to the basket) → Attention (QUAG heatmaps) → CLAVI (a video and its complement play) → Retrieval again
after uploading six images and a captions file as "My uploads" (the ranked lists show the uploaded images) →
Hubness, Adaptation (a run of the default method) and Embeddings (a box selection added to the basket) on the
uploaded gallery →
Perturb on an uploaded image (the perturbation changes it), an uploaded video (both play) and uploaded captions →
Benchmark (a tiny sweep and its report) → Export: the basket downloaded as a zip, regenerated with
:func:`robustlab.export.manifest.regenerate_export` (the page offers the download; regeneration is the CLI's
``robustlab regenerate``), every example bit for bit. No page may show an exception, an error or a warning.

Screenshots go to ``$ROBUSTLAB_SCREENSHOTS`` (CI keeps them as artifacts) or a temporary folder, as ``NN-page.png``.
Debian's chromium driven by Playwright with executable_path (no browser download). Skips with a visible reason when
Chromium or Playwright is missing, except in CI (CI=true), where that is a failure.
"""
from __future__ import annotations

import io
import json
import os
import re
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from browser_helpers import VIDEOS_READY, choose_radio, settle, videos_state

pytestmark = [pytest.mark.browser, pytest.mark.slow]

T = 180_000  # ms: any one step (a cold first page on a loaded 2-core CI machine takes ~1 min)
N_UP = 6  # uploaded images (with captions): a gallery small enough for every page to be quick
RANKED = re.compile(r"^#(\d+) · (-?\d\.\d{3}) · item (\d+)( ✓ ground truth)?$")


@pytest.fixture(scope="module", autouse=True)
def runs_root(tmp_path_factory):
    """The server (started after this, it copies os.environ) keeps the Benchmark page's run folders here."""
    root = tmp_path_factory.mktemp("walk_runs")
    old = os.environ.get("ROBUSTLAB_RUNS")
    os.environ["ROBUSTLAB_RUNS"] = str(root)
    yield root
    if old is None:
        os.environ.pop("ROBUSTLAB_RUNS", None)
    else:
        os.environ["ROBUSTLAB_RUNS"] = old


class Walk:
    """The page, the screenshot folder, and per-step checks shared by every page."""

    def __init__(self, page, server: str, shots: Path):
        self.page, self.server, self.shots = page, server, shots
        self.sidebar = page.locator('[data-testid="stSidebar"]')
        self.taken: list[Path] = []
        self.visited = {"Retrieval"}  # the default page
        self.times: list[tuple[str, float]] = []
        self.t0 = time.monotonic()

    def open(self, link: str, header: str):
        """A page from the sidebar's navigation (client-side: the session, its uploads and basket, stay)."""
        settle(self.page)
        self.sidebar.get_by_role("link", name=link, exact=True).click()
        self.visited.add(link)
        self.page.get_by_text(header).wait_for()
        settle(self.page)

    def clean(self):
        """No exception, no error and no warning on the page, and no note that a model is missing (the defaults
        are built-in models: every one of them must load)."""
        page = self.page
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
            '[data-testid="stException"]').all_inner_texts()
        for kind in ("Error", "Warning"):
            alerts = page.locator(f'[data-testid="stAlertContent{kind}"]').all_inner_texts()
            assert not alerts, (kind, alerts)
        infos = page.locator('[data-testid="stAlertContentInfo"]').all_inner_texts()
        assert not [i for i in infos if re.search(r"unavailable|can.t be loaded", i)], infos

    def shot(self, name: str):
        self.clean()
        path = self.shots / f"{len(self.taken) + 1:02d}-{name}.png"
        # the app scrolls inside its main section, so a "full page" is the viewport: make it as tall as the page
        height = self.page.evaluate("""() => Math.max(...['stMain', 'stAppViewContainer', 'stSidebarContent']
            .map(t => document.querySelector(`[data-testid="${t}"]`)).filter(Boolean).map(e => e.scrollHeight))""")
        size = self.page.viewport_size
        if height > size["height"]:
            self.page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 12_000)})
            self.page.wait_for_timeout(500)  # charts re-lay themselves out (no script run)
        self.page.screenshot(path=str(path), full_page=True)
        self.taken.append(path)
        now = time.monotonic()
        self.times.append((path.name, now - self.t0))
        print(f"[walk] {path.name}: {now - self.t0:.1f} s", file=sys.stderr)
        self.t0 = now

    def image_array(self, img) -> np.ndarray:
        """The pixels of an <img> the app serves (fetched in the page's own context)."""
        from PIL import Image

        img.wait_for()
        self.page.wait_for_function("(el) => el.complete && el.naturalWidth > 0", arg=img.element_handle())
        src = img.get_attribute("src")
        if src.startswith("data:"):
            import base64

            data = base64.b64decode(src.split(",", 1)[1])
        else:
            data = self.page.request.get(src if src.startswith("http") else self.server + src).body()
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(np.int16)


def _traces(page, key: str) -> list[dict]:
    """Name, number of points, Σ y and Σ x·y of every trace of the Plotly chart with widget key ``key``."""
    return page.evaluate("""(sel) => document.querySelector(sel)._fullData.map(t => ({
        name: t.name, n: t.x ? Array.from(t.x).length : 0, sum: t.y ? Array.from(t.y).reduce((a, b) => a + b, 0) : 0,
        weighted: (t.x && t.y) ? Array.from(t.x).reduce((a, x, i) => a + x * t.y[i], 0) : 0}))""",
                         f".st-key-{key} .js-plotly-plot")


def _rows(page, has_text: str) -> list[list[str]]:
    """The cells, row by row, of the dataframe that shows ``has_text``: its grid's accessible table (the rows on
    screen; a dataframe's key is no CSS class in this Streamlit)."""
    grid = page.locator('[data-testid="stDataFrame"]').filter(has_text=has_text).first
    grid.wait_for()
    page.wait_for_function("(el) => el.querySelectorAll('table[role=grid] td').length > 0", arg=grid.element_handle())
    return grid.evaluate("""(el) => [...el.querySelectorAll('table[role=grid] tr')]
        .map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent.trim())).filter(r => r.length)""")


def _cells(page, has_text: str) -> list[str]:
    return [c for row in _rows(page, has_text) for c in row]


def _type(page, key: str, value: str):
    settle(page)
    box = page.locator(f".st-key-{key} input")
    box.fill(value)
    box.press("Enter")
    settle(page)


def _drag(page, chart, fx0: float, fy0: float, fx1: float, fy1: float):
    """A real mouse drag over a Plotly chart's plot area, between fractions of its width and height."""
    chart.scroll_into_view_if_needed()
    area = chart.locator(".nsewdrag").first
    area.wait_for()
    box = area.bounding_box()
    x0, y0 = box["x"] + fx0 * box["width"], box["y"] + fy0 * box["height"]
    x1, y1 = box["x"] + fx1 * box["width"], box["y"] + fy1 * box["height"]
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=8)
    page.mouse.move(x1, y1, steps=8)
    page.mouse.up()


def _pixels(path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(np.int16)


def _inputs(tmp_path: Path):
    """The user's files: six small images and a captions CSV for the gallery, one more image, a short video."""
    from PIL import Image

    from robustlab.datasets.synthetic import world
    from robustlab.io.media import write_mp4

    images, captions = [], []
    for i in range(N_UP):
        scene = world.sample_scene(77, i)
        p = tmp_path / f"my scene {i}.png"
        Image.fromarray(world.render_scene(scene, 64)).save(p)
        images.append(str(p))
        captions.append(scene.caption)
    capfile = tmp_path / "my captions.csv"
    capfile.write_text("name,caption\n" + "".join(f'my scene {i}.png,"{c}"\n' for i, c in enumerate(captions)))
    photo = tmp_path / "my photo.png"
    Image.fromarray(world.render_scene(world.sample_scene(78, 0), 64)).save(photo)
    clip = tmp_path / "my clip.mp4"
    clip.write_bytes(write_mp4(world.render_video(world.sample_video(7, 1, n_frames=8), 64), 8.0))
    lines = tmp_path / "my captions.txt"
    lines.write_text("\n".join(captions) + "\n")
    return images, capfile, captions, photo, clip, lines


def test_walk_every_page(runs_root, server, browser, tmp_path):
    from playwright.sync_api import expect

    from robustlab.export.manifest import regenerate_export, validate_entry

    images, capfile, captions, photo, clip, caption_lines = _inputs(tmp_path)
    shots = Path(os.environ.get("ROBUSTLAB_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1500, "height": 2200}, accept_downloads=True)
    page.set_default_timeout(T)
    w = Walk(page, server, shots)
    sidebar = w.sidebar

    # ---- 1. Retrieval on the defaults: the built-in images, gaussian_noise s3 / keyboard s2 -----------------------
    page.goto(server)
    sidebar.get_by_text("Model", exact=True).wait_for()
    page.get_by_text("Retrieval — clean vs perturbed").wait_for()
    clean, pert = page.locator(".st-key-ranked_clean"), page.locator(".st-key-ranked_perturbed")
    expect(clean.locator("img")).to_have_count(5, timeout=T)
    expect(pert.locator("img")).to_have_count(5, timeout=T)
    settle(page)
    for grid in (clean, pert):
        ranked = [RANKED.match(t) for t in grid.get_by_text(RANKED).all_inner_texts()]
        assert [int(m.group(1)) for m in ranked] == [1, 2, 3, 4, 5]
        scores = [float(m.group(2)) for m in ranked]
        assert scores == sorted(scores, reverse=True), scores  # ranked by score
    page.get_by_text(re.compile(r"^Perturbed top-k \(gaussian_noise s3 / keyboard s2\)$")).wait_for()
    rank = page.locator('[data-testid="stMetric"]').filter(has_text="Ground-truth rank, clean") \
        .locator('[data-testid="stMetricValue"]').inner_text()
    assert rank.isdigit() and int(rank) >= 1
    assert set(_cells(page, "both perturbed")) >= {"clean", "both perturbed"}
    page.locator(".st-key-metrics_chart .js-plotly-plot").wait_for()
    w.shot("retrieval")

    # ---- 2. Grounding on a built-in scene: the boxes, IoU to the ground truth, the sweep; into the basket ---------
    w.open("Grounding", "Grounding — where does the model find the expression?")
    page.get_by_text("IoU to ground truth, clean").wait_for()
    page.wait_for_function("""() => {
        const imgs = [...document.querySelectorAll('[data-testid="stImage"] img')];
        return imgs.length >= 2 && imgs.every(i => i.complete && i.naturalWidth > 0);
    }""")
    for label in ("IoU to ground truth, clean", "IoU to ground truth, perturbed", "IoU clean vs perturbed box"):
        v = page.locator('[data-testid="stMetric"]').filter(has_text=label).locator(
            '[data-testid="stMetricValue"]').inner_text()
        assert 0.0 <= float(v) <= 1.0, (label, v)
    page.get_by_text(re.compile(r"^Perturbed · gaussian_noise s3")).wait_for()
    page.locator(".st-key-gr_sweep .js-plotly-plot").wait_for()
    sweep = _traces(page, "gr_sweep")
    assert any(t["n"] == 6 for t in sweep), sweep  # IoU at severities 0–5
    page.get_by_text("PEELING — does a shorter expression", exact=False).wait_for()
    settle(page)
    page.locator(".st-key-gr_add").get_by_role("button").click()
    page.get_by_text("Added to the basket (1 example(s)).").wait_for()
    w.shot("grounding")

    # ---- 2b. Failures: the form on the built-in images, nothing computed before Run (tests/browser/
    # test_browser_failures.py runs a map and sends a cell to the basket; the basket here stays as the walk counts it)
    w.open("Failures", "Failures — where each example breaks")
    page.get_by_text("No failure map yet: choose above and press Run.").wait_for()
    page.get_by_text(re.compile(r"^\d[\d,]* cells \(items × perturbations × severities\)")).wait_for()
    w.shot("failures")

    # ---- 3. Attention: QUAG before/after heatmaps on a built-in scene, the answers -------------------------------
    w.open("Attention", "Attention — does the model fuse the modalities?")
    heat = page.locator(".st-key-at_heat .js-plotly-plot")
    heat.wait_for()
    titles = heat.locator(".annotation-text").all_text_contents()
    assert titles[:5] == ["baseline", "unimodal", "crossmodal", "video", "text"], titles
    assert heat.evaluate("el => el.data.filter(t => t.type === 'heatmap').length") == 5
    page.locator(".st-key-at_overlay .js-plotly-plot").wait_for()
    answers = _traces(page, "at_answers")
    assert answers and all(t["n"] > 0 for t in answers), answers
    page.get_by_text("Dataset answer:", exact=False).wait_for()
    page.get_by_text("Table 1 over the dataset").wait_for()
    w.shot("attention")

    # ---- 4. CLAVI: a built-in event video and its action-swapped complement play; 19 questions answered ---------
    w.open("CLAVI", "CLAVI — does the model answer by the order of events?")
    page.get_by_text("V′ — the complement").wait_for()
    page.wait_for_function(VIDEOS_READY, arg=None, timeout=120_000)
    vids = videos_state(page)
    assert len(vids) == 2 and vids[0]["src"] != vids[1]["src"], vids
    assert all(v["error"] is None and v["duration"] > 0 and v["width"] > 0 for v in vids), vids
    assert abs(vids[0]["duration"] - vids[1]["duration"]) < 0.2  # the swap keeps every frame
    for label in ("Balanced accuracy", "CAcc_V control", "CAcc_V complement", "CAcc_T complement"):
        v = page.locator('[data-testid="stMetric"]').filter(has_text=label).locator(
            '[data-testid="stMetricValue"]').inner_text()
        assert 0.0 <= float(v) <= 1.0, (label, v)
    rows = _rows(page, "video-consistent")  # a row per question (the first ones on screen)
    assert len(rows) >= 10 and all(r[1].startswith("does ") and set(r) & {"✓", "✗"} for r in rows), rows
    w.shot("clavi")

    # ---- 5. My uploads: six images and a captions file through the real upload form; Retrieval on them ----------
    w.open("Retrieval", "Retrieval — clean vs perturbed")
    choose_radio(page, "My uploads (0)", scope=sidebar)
    page.get_by_text("Your gallery is empty").wait_for()
    page.locator(".st-key-up_images input[type=file]").set_input_files(images)
    page.locator(".st-key-up_captions input[type=file]").set_input_files(str(capfile))
    page.get_by_text("my captions.csv").first.wait_for()
    page.get_by_text("my scene 0.png").first.wait_for()
    settle(page)
    submit = page.get_by_role("button", name="Add to my gallery")
    expect(submit).to_be_enabled(timeout=T)
    submit.click()
    page.get_by_text(f"Added {N_UP} image(s).").wait_for()
    sidebar.get_by_text(f"My uploads ({N_UP})").wait_for()
    expect(clean.locator("img")).to_have_count(5, timeout=T)  # top-5 of the six uploaded images
    expect(pert.locator("img")).to_have_count(5, timeout=T)
    settle(page)
    items = {int(RANKED.match(t).group(3)) for t in clean.get_by_text(RANKED).all_inner_texts()}
    assert len(items) == 5 and items <= set(range(N_UP)), items
    query = page.get_by_test_id("stText").first.inner_text()
    assert query == captions[0], (query, captions[0])  # the query is the uploaded caption of the first image
    # the top-1 image on screen is the uploaded file of the item its caption names
    top = int(RANKED.match(clean.get_by_text(RANKED).first.inner_text()).group(3))
    shown, uploaded = w.image_array(clean.locator("img").first), _pixels(images[top])
    assert shown.shape == uploaded.shape and np.abs(shown - uploaded).mean() < 4, (top, shown.shape)
    w.shot("retrieval-uploads")

    # ---- 6. Hubness on the uploaded gallery: histograms, measures, top hubs, similarity matrix -------------------
    w.open("Hubness", "Hubness — who attracts the queries, clean vs perturbed")
    k = N_UP - 1
    page.get_by_text(re.compile(rf"^{N_UP} queries × {N_UP} images, k = {k}; "
                                r"perturbed: gaussian_noise s3\b")).wait_for()
    page.locator(".st-key-hub_hist .js-plotly-plot").wait_for()
    hist = _traces(page, "hub_hist")
    assert hist[0]["name"] == "clean" and hist[1]["name"].startswith("perturbed (gaussian_noise s3"), hist
    assert all(t["sum"] == N_UP and t["weighted"] == k * N_UP for t in hist), hist  # Σ N_k = k · queries
    cells = _cells(page, "k_skewness")
    assert "k_skewness" in cells and "R@1" in " ".join(cells), cells
    hubs = page.locator(".st-key-hub_top_perturbed").get_by_text(re.compile(r"^#\d+ · item \d+ · N_k = \d+ queries"))
    expect(hubs).to_have_count(N_UP, timeout=T)
    page.locator(".st-key-hub_heatmap .js-plotly-plot").wait_for()
    page.get_by_text("Hubness reduction").wait_for()
    w.shot("hubness")

    # ---- 7. Adaptation on the uploaded gallery: a run of the default method (HAT-VTR against typos in the caption
    # queries); R@K clean / shifted / adapted, k-occurrence before and after, the loss per batch, the query map ----
    w.open("Adaptation", "Adaptation — test-time adaptation against query shift")
    page.get_by_text("press Run adaptation", exact=False).wait_for()
    settle(page)
    page.locator(".st-key-ad_run").get_by_role("button").click()
    page.get_by_text("Retrieval: clean, shifted, adapted").wait_for()
    page.get_by_text(f"text→image · {N_UP} query captions × {N_UP} gallery images · query shift: keyboard s3",
                     exact=False).wait_for()
    page.locator(".st-key-ad_map .js-plotly-plot").wait_for()
    cells = _cells(page, "shifted")
    assert {"clean", "shifted", "adapted"} <= set(cells), cells
    hist = _traces(page, "ad_hist")
    assert [t["name"] for t in hist][0] == "before (shifted)" and hist[1]["name"].startswith("after ("), hist
    assert all(t["sum"] == N_UP and t["weighted"] == k * N_UP for t in hist), hist
    assert [t["name"] for t in _traces(page, "ad_recall")] == ["clean", "shifted", "adapted"]
    page.locator(".st-key-ad_loss .js-plotly-plot").wait_for()
    w.shot("adaptation")

    # ---- 8. Embeddings on the uploaded gallery: the t-SNE map; box-select everything; into the basket ------------
    w.open("Embeddings", "Embeddings — where perturbed inputs move")
    page.get_by_text(re.compile(rf"^{4 * N_UP} points: {N_UP} items · image gaussian_noise s3 · text keyboard s2 · "
                                r"t-SNE \(seed 0\)")).wait_for()
    page.get_by_text("No points selected.").wait_for()
    settle(page)
    _drag(page, page.locator(".st-key-emb_chart"), 0.01, 0.01, 0.99, 0.99)
    add = page.locator(".st-key-emb_add").get_by_role("button").filter(has_text=re.compile(r"Add [1-9]\d* to basket"))
    add.wait_for()
    n_emb = int(re.search(r"Add (\d+) to basket", add.inner_text()).group(1))
    page.get_by_text(f"Selected: {4 * N_UP} point(s), {2 * N_UP} item(s)").wait_for()  # (item, modality) pairs
    assert n_emb == 2 * N_UP  # every perturbed image and caption
    sel = page.locator(".st-key-emb_selection")
    expect(sel.get_by_text(re.compile(r"^item \d+ · image$"))).to_have_count(N_UP, timeout=T)
    expect(sel.locator("img")).to_have_count(2 * N_UP, timeout=T)  # clean and perturbed of each selected image
    settle(page)
    add.click()
    page.get_by_text(f"Added {n_emb} example(s) to the basket (0 already there); the basket holds "
                     f"{n_emb + 1}.").wait_for()
    w.shot("embeddings")
    basket = n_emb + 1

    # ---- 9. Perturb an uploaded image: the severity strip, clean vs perturbed differ; into the basket ----------
    w.open("Perturb", "Perturb — see exactly what a perturbation does")
    choose_radio(page, "Upload", scope=page.locator(".st-key-pt_source_image"))
    page.locator(".st-key-pt_upload_image input[type=file]").set_input_files(str(photo))
    page.get_by_text("my photo.png: 64×64 px").wait_for()
    page.get_by_text("gaussian_noise · imagenet_c · severity 3", exact=True).wait_for()
    expect(page.locator(".st-key-pt_strip img")).to_have_count(5, timeout=T)
    settle(page)
    pair = page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=page.get_by_text("gaussian_noise · imagenet_c · severity 3", exact=True)).last.locator(
        '[data-testid="stImage"] img')
    expect(pair).to_have_count(2, timeout=T)
    a, b = w.image_array(pair.nth(0)), w.image_array(pair.nth(1))
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.abs(a - b).mean() > 5, np.abs(a - b).mean()  # the noise is visible
    page.get_by_text("Resolved parameters").wait_for()
    settle(page)
    page.locator(".st-key-pt_add").get_by_role("button").click()
    basket += 1
    page.get_by_text(f"Added to the basket ({basket} example(s)).").wait_for()
    w.shot("perturb-image")

    # ---- 10. Perturb an uploaded video: clean and perturbed play and differ; into the basket -------------------
    choose_radio(page, "Video", scope=page.locator(".st-key-pt_kind"))
    choose_radio(page, "Upload", scope=page.locator(".st-key-pt_source_video"))
    page.locator(".st-key-pt_upload_video input[type=file]").set_input_files(str(clip))
    page.get_by_text(re.compile(r"my clip\.mp4: 8 frames, 64×64 px")).wait_for()
    heading = page.get_by_text(re.compile(r"^\S+ · \S+ · severity 3$"))
    heading.wait_for()
    vname = heading.inner_text().split(" · ")[0]
    expect(page.locator(".st-key-pt_strip img")).to_have_count(5, timeout=T)  # a filmstrip per severity
    settle(page)
    page.wait_for_function(VIDEOS_READY, arg=None, timeout=120_000)
    vids = videos_state(page)
    assert len(vids) == 2 and vids[0]["src"] != vids[1]["src"], vids
    assert all(v["error"] is None and v["duration"] > 0 for v in vids) and vids[0]["width"] == 64, vids
    settle(page)
    page.locator(".st-key-pt_add").get_by_role("button").click()
    basket += 1
    page.get_by_text(f"Added to the basket ({basket} example(s)).").wait_for()
    w.shot("perturb-video")

    # ---- 11. Perturb uploaded captions: the severity table and the highlighted diff; into the basket -----------
    choose_radio(page, "Caption", scope=page.locator(".st-key-pt_kind"))
    choose_radio(page, "Upload", scope=page.locator(".st-key-pt_source_text"))
    page.locator(".st-key-pt_upload_text input[type=file]").set_input_files(str(caption_lines))
    page.get_by_text("keyboard · qiu_nlpaug · severity 3", exact=True).wait_for()
    page.get_by_text("red: removed · green: inserted", exact=False).wait_for()
    strip = _cells(page, "MiniLM")
    assert captions[0] not in strip and len(strip) >= 5, strip  # every severity changed the caption
    changed = page.locator('[data-testid="stMetric"]').filter(has_text="Words changed").locator(
        '[data-testid="stMetricValue"]').inner_text()
    assert int(changed.split(" of ")[0]) > 0, changed
    settle(page)
    page.locator(".st-key-pt_add").get_by_role("button").click()
    basket += 1
    page.get_by_text(f"Added to the basket ({basket} example(s)).").wait_for()
    w.shot("perturb-caption")

    # ---- 12. Benchmark: a tiny sweep on the built-in images (uploads cannot be swept), its report -------------
    w.open("Benchmark", "Benchmark — a robustness sweep")
    page.get_by_text("A sweep reads its dataset again from a spec", exact=False).wait_for()
    _type(page, "bench_n", "8")
    choose_radio(page, "a category", scope=page.locator(".st-key-bench_pmode"))  # the first category: noise
    _type(page, "bench_name", "walk")
    page.get_by_text("on 8 items.", exact=False).wait_for()
    settle(page)
    page.get_by_role("button", name="Run sweep").click()
    page.get_by_text("Done:", exact=False).wait_for()
    page.get_by_text("Report — walk").wait_for()
    page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.wait_for()
    page.get_by_text("Worst examples", exact=True).wait_for()
    assert (runs_root / "walk" / "sweep.json").exists()
    heat = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(p => p._fullData)
        .filter(t => t.type === 'heatmap').length""")
    assert heat >= 1  # the report's heatmap
    w.shot("benchmark")

    # ---- 13. Export: the basket, downloaded as a zip; every example regenerates bit for bit --------------------
    w.open("Export", "Export — the basket")
    page.get_by_text(re.compile(rf"^{basket} example\(s\)\. ")).wait_for()
    shown = min(basket, 10)  # the Export page lists the basket 10 at a time (issue 45)
    page.get_by_text(f"Showing {shown} of {basket} matching example(s)", exact=False).wait_for()
    expect(page.locator('[class*="st-key-basket_item_"]')).to_have_count(shown, timeout=T)
    _type(page, "ex_filter", "uploaded my scene")  # the uploads, found through the page's filter
    page.get_by_text(f"Showing {min(2 * N_UP, 10)} of {2 * N_UP} matching example(s)", exact=False).wait_for()
    sources = page.locator('[class*="st-key-basket_item_"]').get_by_text(re.compile(r"^(image|video|text) · "))
    expect(sources).to_have_count(min(2 * N_UP, 10), timeout=T)  # the first page of the matching uploads
    described = sources.all_inner_texts()
    assert all("uploaded my scene" in d for d in described), described
    assert not [d for d in described if "None" in d], described  # every upload named with its content hash
    button = page.get_by_role("button", name=re.compile(rf"Download zip \({basket} example\(s\)"))
    button.wait_for()
    page.get_by_text("robustlab regenerate robustlab-export.zip", exact=False).wait_for()
    settle(page)
    with page.expect_download() as dl:
        button.click()
    zpath = tmp_path / "robustlab-export.zip"
    dl.value.save_as(zpath)
    assert dl.value.suggested_filename == "robustlab-export.zip"
    w.shot("export")

    with zipfile.ZipFile(zpath) as zf:
        names = set(zf.namelist())
        entries = [json.loads(line) for line in zf.read("manifest.jsonl").decode().splitlines() if line.strip()]
    assert len(entries) == basket
    for e in entries:
        assert validate_entry(e) == [], e
        assert e["clean"]["path"] in names and e["perturbed"]["path"] in names
    kinds = [e["kind"] for e in entries]
    assert kinds.count("image") == 1 + N_UP + 1 and kinds.count("text") == N_UP + 1 and kinds.count("video") == 1
    assert {e["source"]["type"] for e in entries} >= {"builtin", "upload"}
    assert vname in {e["perturbation"] for e in entries}
    out = tmp_path / "regenerated"
    results = regenerate_export(zpath, out=out)
    assert len(results) == basket
    assert all(r.ok for r in results), [r.line() for r in results if not r.ok]
    with zipfile.ZipFile(zpath) as zf:  # the rebuilt files are the downloaded ones, byte for byte
        for e in entries:
            if e["kind"] != "text":
                assert (out / e["perturbed"]["path"]).read_bytes() == zf.read(e["perturbed"]["path"]), e["id"]

    # every page app.py registers was visited, each with a non-empty PNG screenshot
    app_py = (Path(__file__).resolve().parents[2] / "app.py").read_text(encoding="utf-8")
    assert w.visited == set(re.findall(r'\("pages/\w+\.py", "([^"]+)"', app_py)), w.visited
    assert [p.name for p in w.taken] == [
        "01-retrieval.png", "02-grounding.png", "03-failures.png", "04-attention.png", "05-clavi.png",
        "06-retrieval-uploads.png", "07-hubness.png", "08-adaptation.png", "09-embeddings.png", "10-perturb-image.png",
        "11-perturb-video.png", "12-perturb-caption.png", "13-benchmark.png", "14-export.png"]
    for p in w.taken:
        assert p.stat().st_size > 1000 and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p
    print("[walk] " + ", ".join(f"{n} {s:.0f}s" for n, s in w.times), file=sys.stderr)
    page.close()
