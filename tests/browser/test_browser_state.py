"""Issue 24: what the browser shows is what the page computed, in a real browser.

Named regressions of the reviewer's reproductions (a dataset switch, an upload, Hubness's k and controls), then a
seeded "monkey" run: random dataset switches, uploads (one file rejected), page switches, direction, perturbation,
severity and seed changes, and (issue 45) a baseline model and main models of either kind, so that image and video
models meet image and video data; after every step the page is read back and every condition it displays must equal
what its widgets show, and the models it used must be the ones the sidebar's choices lead to (:func:`check_models`).
Bounded in steps and time (``ROBUSTLAB_MONKEY_STEPS``, default 14; ``ROBUSTLAB_MONKEY_SEED``).
"""
from __future__ import annotations

import os
import random
import re
import time

import pytest
from PIL import Image

from browser_helpers import choose_radio, open_app, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SIDEBAR = '[data-testid="stSidebar"]'


def _open(browser, url):
    return open_app(browser, url)


def _dataset(page, label_start: str):
    sidebar = page.locator(SIDEBAR)
    opt = sidebar.get_by_test_id("stRadioOption").filter(has_text=re.compile("^" + re.escape(label_start)))
    choose_radio(page, opt.first.inner_text().strip(), scope=sidebar)
    settle(page)


def _goto(page, title: str):
    page.locator(SIDEBAR).get_by_role("link", name=title, exact=True).click()
    settle(page)


def _select(page, key: str, option: str):
    settle(page)
    page.locator(f".st-key-{key}").click()
    page.get_by_role("option", name=option, exact=True).first.click()
    settle(page)


def _selected_radio(page, key: str) -> list[str]:
    return [t.strip() for t in page.locator(f'.st-key-{key} [data-testid="stRadioOption"][data-selected="true"]')
            .all_inner_texts()]


def _shown_select(page, key: str) -> str:
    """The text a selectbox displays (its current value's label)."""
    return page.locator(f".st-key-{key} input[role='combobox']").first.input_value().strip()


def _slider(page, key: str) -> int | None:
    el = page.locator(f".st-key-{key} input[type='range']")
    if el.count() == 0:
        return None
    return int(float(el.first.input_value()))


def _number(page, key: str) -> int:
    return int(float(page.locator(f".st-key-{key} input").first.input_value()))


def _cond_label(pert_shown: str, sev: int | None) -> str:
    """What the page should title a condition shown as ``category · name`` with severity ``sev``."""
    if pert_shown in ("(none)", ""):
        return "clean"
    return f"{pert_shown.split(' · ')[-1]} s{sev}"


def check_retrieval(page) -> list[str]:
    """Every displayed condition of the Retrieval page against its widgets; the problems found."""
    problems = []
    if page.locator(".st-key-direction").count() == 0:
        return problems
    sel = _selected_radio(page, "direction")
    if len(sel) != 1:
        problems.append(f"direction: {len(sel)} options selected ({sel})")
    vis_key = "vid_pert" if page.locator(".st-key-vid_pert").count() else "img_pert"
    vis = _cond_label(_shown_select(page, vis_key), _slider(page, vis_key.replace("pert", "sev")))
    txt = _cond_label(_shown_select(page, "txt_pert"), _slider(page, "txt_sev"))
    heads = [h.strip() for h in page.locator("h3").all_inner_texts() if h.strip().startswith("Perturbed top-k")]
    want = f"({vis} / {txt})"
    if heads and not heads[0].endswith(want):
        problems.append(f"results titled {heads[0]!r}, controls say {want}")
    if page.locator(".st-key-query_idx").count() and page.locator(".st-key-query_mode").count():
        shown = _shown_select(page, "query_idx")
        query = page.locator('[data-testid="stText"]').first.inner_text().strip()
        if " · " in shown and shown.split(" · ", 1)[1].rstrip("…") and \
                not query.startswith(shown.split(" · ", 1)[1].rstrip("… ")[:40]):
            problems.append(f"caption box {shown!r} but the query used is {query!r}")
    return problems


def check_hubness(page) -> list[str]:
    problems = []
    if page.locator(".st-key-hub_direction").count() == 0:
        return problems
    if len(_selected_radio(page, "hub_direction")) != 1:
        problems.append("hubness direction: not exactly one option selected")
    cap = page.get_by_text(re.compile(r"queries × \d+ .* k = \d+; perturbed: ")).first
    if cap.count() == 0:
        return problems
    text = cap.inner_text()
    k_shown = int(re.search(r"k = (\d+)", text).group(1))
    if k_shown != _number(page, "hub_k"):
        problems.append(f"hubness computed k = {k_shown}, the box shows {_number(page, 'hub_k')}")
    pert = _shown_select(page, "hub_pert")
    label = re.search(r"perturbed: (.*?)\.?$", text.splitlines()[0]).group(1)
    name = pert.split(" · ")[-1]
    if pert != "(none)" and not label.startswith(f"{name} s{_slider(page, 'hub_sev')}"):
        problems.append(f"hubness computed {label!r}, the controls show {pert} s{_slider(page, 'hub_sev')}")
    return problems


# ---- the models a retrieval page uses (issue 45): the sidebar's, unless made for the other kind of data -------
VIDEO_OF = {"builtin:tiny-clip": "builtin:tiny-clip-video-seqtransf",
            "builtin:tiny-vit-clip": "builtin:tiny-vit-clip-video-seqtransf"}
MODEL_CAPTION = re.compile(r"^Model (\S+) · dataset .*\((\d+) (image|video)s\)$")


def follows(spec: str, kind: str) -> str | None:
    """The built-in a page uses instead of ``spec`` on data of ``kind`` (restated here, not imported from ui.state):
    an image model's video model on videos, a video model's image model on still images; None when ``spec`` fits."""
    if kind == "video":
        return VIDEO_OF.get(spec)
    return spec.split("-video-")[0] if spec.startswith("builtin:") and "-video-" in spec else None


def page_model(page) -> tuple[str, str] | None:
    """(model, kind of data) that the page's caption says it computed with, or None (no such caption)."""
    for text in page.locator('[data-testid="stCaptionContainer"]').all_inner_texts():
        m = MODEL_CAPTION.match(text.strip())
        if m:
            return m.group(1), m.group(3)
    return None


def expected_baseline(chosen: str, ours: str, kind: str) -> str | None:
    """The model "Ours vs baseline" should show for the sidebar's ``chosen`` baseline (None: no comparison)."""
    if chosen in ("none", "", ours):
        return None
    other = follows(chosen, kind)
    base = chosen if other is None or other == ours else other
    return None if base == ours else base


def _alerts(page) -> list[str]:
    return [t.strip() for t in page.locator('[data-testid="stAlert"]').all_inner_texts()]


def check_models(page) -> list[str]:
    """The page's model and its baseline against the sidebar's choices and the kind of data, and the lines that say
    why a model was switched."""
    problems = []
    got = page_model(page)
    if got is None or (page.locator(".st-key-direction").count() == 0
                       and page.locator(".st-key-hub_direction").count() == 0):
        return problems
    ours, kind = got
    chosen = _shown_select(page, "model_choice")
    want = follows(chosen, kind) or chosen
    if ours != want:
        problems.append(f"the page used {ours} on {kind}s, the sidebar's {chosen} leads to {want}")
    if want != chosen and not any(f"so this page uses {want}" in a for a in _alerts(page)):
        problems.append(f"no line says why the page uses {want} instead of {chosen}")
    base_chosen = _shown_select(page, "baseline")
    base = expected_baseline(base_chosen, ours, kind)
    heads = [h.strip() for h in page.locator("h3").all_inner_texts() if h.strip().startswith("Ours vs baseline")]
    if base is None:
        if heads:
            problems.append(f"ours vs baseline shown for the baseline {base_chosen!r} on {kind}s (expected none)")
        if base_chosen not in ("none", "") and not any("nothing to compare" in a for a in _alerts(page)):
            problems.append(f"the baseline {base_chosen} is the page's own model and no line says so")
        return problems
    if not heads:
        problems.append(f"no ours vs baseline for the baseline {base_chosen} ({base}) on {kind}s")
        return problems
    if base != base_chosen and not any(f"so the baseline here is {base}" in a for a in _alerts(page)):
        problems.append(f"no line says why the baseline is {base} instead of {base_chosen}")
    models = _compared(page, ours)
    if models != {ours, base}:
        problems.append(f"ours vs baseline compares {sorted(models)}, expected {sorted({ours, base})}")
    return problems


def _compared(page, ours: str) -> set[str] | None:
    """The models the "ours vs baseline" table compares (its rows' first cells), None when no table has ``ours``."""
    for grid in page.locator('[data-testid="stDataFrame"]').filter(has_text=ours).all():
        page.wait_for_function("(el) => el.querySelectorAll('table[role=grid] td').length > 0",
                               arg=grid.element_handle(), timeout=30_000)
        firsts = {r[0] for r in grid.evaluate(ROWS) if r}
        if ours in firsts:
            return firsts
    return None


ROWS = """(el) => [...el.querySelectorAll('table[role=grid] tr')]
    .map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent.trim())).filter(r => r.length)"""


def _rows(page, has_text: str) -> list[list[str]]:
    """The cells, row by row, of the first dataframe that shows ``has_text`` (its grid's accessible table)."""
    grid = page.locator('[data-testid="stDataFrame"]').filter(has_text=has_text).first
    grid.wait_for()
    page.wait_for_function("(el) => el.querySelectorAll('table[role=grid] td').length > 0", arg=grid.element_handle())
    return grid.evaluate(ROWS)


def check(page) -> list[str]:
    return check_retrieval(page) + check_hubness(page) + check_models(page)


def _pngs(tmp_path, n: int, bad: bool = False) -> tuple[list, object]:
    from robustlab.datasets.synthetic.datasets import builtin_gallery

    g = builtin_gallery(n)
    files = []
    for i, im in enumerate(g.images):
        p = tmp_path / f"up{i}.png"
        Image.fromarray(im).save(p)
        files.append(p)
    if bad:
        p = tmp_path / "fake_photo.png"
        p.write_bytes(b"this is text, not a picture")
        files.insert(0, p)
    csv = tmp_path / "captions.csv"
    csv.write_text("file,caption\n" + "".join(f"up{i}.png,{c}\n" for i, c in enumerate(g.captions)))
    return files, csv


def _upload(page, files, csv):
    _dataset(page, "My uploads")
    form = page.locator(".st-key-up_images")
    form.locator("input[type=file]").set_input_files([str(f) for f in files])
    page.locator(".st-key-up_captions input[type=file]").set_input_files(str(csv))
    settle(page)
    page.get_by_role("button", name="Add to my gallery").click()
    page.get_by_text(re.compile(r"Added \d+ image")).first.wait_for()
    settle(page)


# ---- the six reproductions ------------------------------------------------------------------------------------
def test_dataset_switch_updates_caption_and_direction(server, browser):
    """Reproduction 1: Retrieval → Built-in videos: the Caption box shows the query actually used and one Direction
    is selected."""
    page = _open(browser, server)
    page.get_by_text("Ground-truth rank, clean").first.wait_for()
    _dataset(page, "Built-in videos")
    page.get_by_text("Ground-truth rank, clean").first.wait_for()
    settle(page)
    assert check_retrieval(page) == []
    assert _selected_radio(page, "direction") == ["text→video"]


def test_upload_keeps_controls_equal_to_results(server, browser, tmp_path):
    """Reproduction 2: text perturbation (none), image severity 1, then an upload: the controls still show what the
    results are titled with, and the next click keeps them."""
    page = _open(browser, server)
    page.get_by_text("Ground-truth rank, clean").first.wait_for()
    _select(page, "txt_pert", "(none)")
    slider = page.locator(".st-key-img_sev input[type='range']")
    slider.focus()
    for _ in range(2):
        slider.press("ArrowLeft")
    settle(page)
    assert _slider(page, "img_sev") == 1
    files, csv = _pngs(tmp_path, 4)
    _upload(page, files, csv)
    page.get_by_text("Ground-truth rank, clean").first.wait_for()
    assert check_retrieval(page) == []
    assert (_slider(page, "img_sev"), _shown_select(page, "txt_pert")) == (1, "(none)")
    seed = page.locator(".st-key-seed input")
    seed.fill("1")
    seed.press("Enter")
    settle(page)
    assert check_retrieval(page) == [] and _slider(page, "img_sev") == 1


def test_hubness_k_and_controls_follow_the_dataset(server, browser, tmp_path):
    """Reproduction 3: Hubness on a 3-item upload, then Built-in images: k is back to 15; Built-in videos: one
    Direction selected and the perturbation box shows what is computed."""
    page = _open(browser, server)
    files, csv = _pngs(tmp_path, 3)
    _upload(page, files, csv)
    _goto(page, "Hubness")
    page.get_by_text(re.compile(r"k = \d+; perturbed")).first.wait_for()
    assert _number(page, "hub_k") == 2
    _dataset(page, "Built-in images")
    page.get_by_text(re.compile(r"k = 15; perturbed")).first.wait_for()
    assert _number(page, "hub_k") == 15 and check_hubness(page) == []
    _dataset(page, "Built-in videos")
    page.get_by_text(re.compile(r"k = \d+; perturbed: .*video")).first.wait_for()
    assert check_hubness(page) == [] and len(_selected_radio(page, "hub_direction")) == 1
    # the image pick is gone with the data: the box falls back to the session's video choice, the same default on
    # every page (ui.choice.DEFAULTS, issue 45), not to "none"
    assert _shown_select(page, "hub_pert") == "video · reverse_sampling"


# reproduction 4 (captions of a rejected upload): tests/io/test_upload_pairing.py::
#     test_rejected_upload_keeps_captions_on_their_files; 5 (the model follows the data) and 6 (the caption table
#     keeps its ground-truth column in view): tests/ui/test_app_state.py


# ---- the monkey ----------------------------------------------------------------------------------------------
def test_monkey(server, browser, tmp_path):
    rng = random.Random(int(os.environ.get("ROBUSTLAB_MONKEY_SEED", "24")))
    steps = int(os.environ.get("ROBUSTLAB_MONKEY_STEPS", "14"))
    deadline = time.monotonic() + float(os.environ.get("ROBUSTLAB_MONKEY_SECONDS", "900"))
    page = _open(browser, server)
    page.get_by_text("Ground-truth rank, clean").first.wait_for()
    files, csv = _pngs(tmp_path, 4, bad=True)
    log = []

    def direction():
        opts = page.locator('.st-key-direction [data-testid="stRadioOption"], '
                            '.st-key-hub_direction [data-testid="stRadioOption"]')
        if opts.count():
            opts.nth(rng.randrange(opts.count())).click()
            settle(page)

    def perturbation():
        for key in ("img_pert", "vid_pert", "txt_pert", "hub_pert"):
            if page.locator(f".st-key-{key}").count():
                page.locator(f".st-key-{key}").click()
                options = page.get_by_role("option")
                options.nth(rng.randrange(min(options.count(), 8))).click()
                settle(page)
                return

    def severity():
        for key in ("img_sev", "vid_sev", "txt_sev", "hub_sev"):
            s = page.locator(f".st-key-{key} input[type='range']")
            if s.count() and s.first.is_enabled():
                s.first.focus()
                s.first.press(rng.choice(["ArrowLeft", "ArrowRight"]))
                settle(page)
                return

    def seed():
        for key in ("seed", "hub_seed"):
            box = page.locator(f".st-key-{key} input")
            if box.count():
                box.fill(str(rng.randrange(5)))
                box.press("Enter")
                settle(page)
                return

    uploaded = []

    def upload():
        if uploaded:  # the gallery is there: switch to it (the form is folded once it has items)
            _dataset(page, "My uploads")
            return
        _upload(page, files, csv)  # fake_photo.png is rejected with its caption; the four others are added
        assert page.get_by_text("fake_photo.png").count() > 0
        uploaded.append(True)

    images_m, videos_m = ["builtin:tiny-vit-clip", "builtin:tiny-clip"], ["builtin:tiny-clip-video-meanp",
                                                                         "builtin:tiny-vit-clip-video-seqtransf"]

    def pick(key: str, options: list[str]) -> list[str]:
        """A random one of ``options`` (never the box's current value) in the sidebar box ``key``; a problem when the
        box does not keep it (issue 45 item 9: the first pick in a box fell back to its first option)."""
        now = _shown_select(page, key)
        choice = rng.choice([o for o in options if o != now])
        _select(page, key, choice)
        shown = _shown_select(page, key)
        return [] if shown == choice else [f"{key}: picked {choice}, the box shows {shown}"]

    def baseline(options=None):
        main = _shown_select(page, "model_choice")
        return pick("baseline", [m for m in options or ["none"] + images_m + videos_m if m != main])

    def failures():
        """The Failures page on whatever the sidebar holds: a small map run to its end (or one line saying why
        not); the map's heading names the model and dataset it ran on, whatever the form shows since."""
        _goto(page, "Failures")
        page.get_by_text("Failures — where each example breaks").wait_for()
        box = page.locator(".st-key-fail_n input")
        if box.count():
            box.fill("6")
            box.press("Enter")
            settle(page)
        go = page.locator(".st-key-fail_go button")
        if not (go.count() and go.is_enabled()):
            return []
        go.click()
        for _ in range(600):  # the map runs in a thread the page polls: its end reruns the page
            page.wait_for_timeout(500)
            if page.get_by_text("Where it breaks", exact=True).count() or page.locator(
                    '[data-testid="stAlertContentError"]').count():
                break
        settle(page)
        errors = page.locator('[data-testid="stAlertContentError"]')
        return [f"failures: {errors.first.inner_text()}"] if errors.count() and not page.get_by_text(
            "Where it breaks", exact=True).count() else []

    actions = {
        "failures": failures,
        "images": lambda: _dataset(page, "Built-in images"),
        "videos": lambda: _dataset(page, "Built-in videos"),
        "upload": upload,
        "retrieval": lambda: _goto(page, "Retrieval"),
        "hubness": lambda: _goto(page, "Hubness"),
        "direction": direction, "perturbation": perturbation, "severity": severity, "seed": seed,
        "model": lambda: pick("model_choice", images_m + videos_m), "baseline": baseline,
    }
    names = list(actions)
    # first issue 45's cases: an image baseline, then videos (both models follow the data), a video model there,
    # then images (a video model on still images follows them back); then random steps
    actions["an image baseline"] = lambda: baseline(images_m)
    actions["a video model"] = lambda: pick("model_choice", videos_m)
    first = ["an image baseline", "videos", "a video model", "images"]
    for i in range(steps):
        if time.monotonic() > deadline:
            break
        what = first[i] if i < len(first) else rng.choice(names)
        problems = actions[what]() or []
        page.wait_for_timeout(300)
        settle(page)
        problems += check(page)
        log.append((i, what, problems))
        assert page.locator('[data-testid="stException"]').count() == 0, log
        assert problems == [], log
    if not any(what == "failures" for _, what, _ in log):  # the Failures page is visited at least once
        problems = failures() + check(page)
        log.append((len(log), "failures", problems))
        assert page.locator('[data-testid="stException"]').count() == 0, log
        assert problems == [], log
    print("monkey:", [(i, what) for i, what, _ in log])
    assert len(log) >= min(steps, 5), log
