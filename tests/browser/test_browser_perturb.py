"""End-to-end in a real headless Chromium: upload a video on the Perturb page, apply a temporal and a codec
perturbation, see both videos play, add them to the basket, export, download the zip and check its manifest.

Debian's chromium driven by Playwright with executable_path (no browser download). Skips with a visible reason
when Chromium or Playwright is missing, except in CI (CI=true), where that is a failure.
"""
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from browser_helpers import VIDEOS_READY, choose_radio, settle, videos_state

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _video_perturbations() -> tuple[str, str]:
    """(temporal name, codec name): the first available video-native ones from the registry."""
    from robustlab.perturb import list_perturbations

    native = [s for s in list_perturbations("video") if s.modality == "video" and s.available]
    temporal = [s.name for s in native if s.category.lower() == "temporal"]
    codec = [s.name for s in native if re.search(r"codec|mpeg|h264|h\.264", s.name, re.I)]
    assert temporal and codec, "the registry has no temporal or codec video perturbation"
    return temporal[0], codec[0]


def _pick(page, kind: str, name: str, group: str):
    settle(page)
    box = page.locator(f".st-key-pt_name_{kind}")
    box.click()
    page.keyboard.type(name)
    page.get_by_role("option", name=f"{group} › {name}", exact=True).click()
    page.get_by_text(re.compile(rf"^{re.escape(name)} · .* · severity \d$")).wait_for()


def test_video_perturb_play_basket_export(server, browser, tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from robustlab.datasets.synthetic import world
    from robustlab.io.media import write_mp4
    from robustlab.export.manifest import regenerate_export, validate_entry
    from robustlab.perturb import get_perturbation

    temporal, codec = _video_perturbations()
    frames = world.render_video(world.sample_video(7, 1, n_frames=24), 64)
    clip = tmp_path / "my clip.mp4"
    clip.write_bytes(write_mp4(frames, 8.0))
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 200)

    page = browser.new_page(viewport={"width": 1400, "height": 2000}, accept_downloads=True)
    page.set_default_timeout(120_000)
    # through app.py's st.navigation: wait for its sidebar first. (While pages/ exists, Streamlit briefly shows
    # its legacy pages-folder navigation, whose lower-case links and deep links run a page without app.py.)
    page.goto(server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    sidebar.get_by_role("link", name="Perturb", exact=True).click()
    page.get_by_text("Perturb — see exactly what a perturbation does").wait_for()
    choose_radio(page, "Video", scope=page.locator(".st-key-pt_kind"))
    choose_radio(page, "Upload", scope=page.locator(".st-key-pt_source_video"))
    upload = page.locator(".st-key-pt_upload_video input[type=file]")
    upload.set_input_files(str(broken))
    page.get_by_text(re.compile(r"^broken\.mp4: ")).first.wait_for()
    upload.set_input_files(str(clip))
    page.get_by_text(re.compile(r"my clip\.mp4: 24 frames, 64×64 px")).wait_for()

    shown = []
    for i, name in enumerate((temporal, codec), start=1):
        spec = get_perturbation(name)
        before = "|".join(v["src"] for v in videos_state(page))
        _pick(page, "video", name, f"{spec.modality} · {spec.category}")
        try:  # first wait for the new perturbation's videos to replace the previous ones...
            page.wait_for_function(VIDEOS_READY, arg=before or None, timeout=60_000)
        except PlaywrightTimeout:  # ...but a re-used media URL never changes: then they must simply play
            page.wait_for_function(VIDEOS_READY, arg=None)
        vids = videos_state(page)
        assert len(vids) == 2 and all(v["readyState"] >= 2 and v["duration"] > 0 and v["error"] is None
                                      for v in vids), vids
        assert vids[0]["width"] == 64 and vids[1]["width"] > 0
        shown.append(vids)
        page.screenshot(path=str(tmp_path / f"perturb_{i}.png"), full_page=True)
        settle(page)
        page.get_by_role("button", name=re.compile("Add to basket")).click()
        page.get_by_text(f"Added to the basket ({i} example(s)).").wait_for()
    assert shown[0][1]["src"] != shown[1][1]["src"]

    # the Export page in the same session (client-side navigation keeps the basket)
    page.get_by_role("link", name=re.compile(r"Export the basket \(2\)")).click()
    page.get_by_text("Export — the basket").wait_for()
    button = page.get_by_role("button", name=re.compile(r"Download zip \(2 example\(s\)"))
    button.wait_for()
    with page.expect_download() as dl:
        button.click()
    zpath = tmp_path / "export.zip"
    dl.value.save_as(zpath)
    assert dl.value.suggested_filename == "robustlab-export.zip"
    page.screenshot(path=str(tmp_path / "export.png"), full_page=True)

    with zipfile.ZipFile(zpath) as zf:
        names = zf.namelist()
        entries = [json.loads(line) for line in zf.read("manifest.jsonl").decode().splitlines()]
        zf.extractall(tmp_path / "unzipped")
    assert [e["perturbation"] for e in entries] == [temporal, codec]
    for e in entries:
        assert validate_entry(e) == [] and e["kind"] == "video" and e["severity"] == 3
        assert e["source"]["type"] == "upload" and e["source"]["name"] == "my clip.mp4"
        assert e["video"]["frames"] == 24 and e["video"]["width"] == 64
        for ref in (e["clean"], e["clean_preview"], e["perturbed"]):
            assert ref["path"] in names and (tmp_path / "unzipped" / ref["path"]).stat().st_size > 0
    assert all(r.ok for r in regenerate_export(zpath)), "the downloaded export does not regenerate"

    keep = os.environ.get("ROBUSTLAB_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for f in ("perturb_1.png", "perturb_2.png", "export.png"):
            shutil.copy(tmp_path / f, Path(keep) / f)
