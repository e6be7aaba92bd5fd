"""End-to-end in a real headless Chromium: pick "My uploads" in the sidebar, upload three videos and a captions file
through the real upload form, and run text→video retrieval on them: the ranked grids show the uploaded videos, and
they play. Then video→text on the same gallery.

Debian's chromium driven by Playwright with executable_path (no browser download). Skips with a visible reason
when Chromium or Playwright is missing, except in CI (CI=true), where that is a failure.
"""
import os
import re
import shutil
from pathlib import Path

import pytest

from browser_helpers import VIDEOS_READY, choose_radio, settle, videos_state

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_upload_three_videos_and_retrieve_them(server, browser, tmp_path):
    from playwright.sync_api import expect

    from robustlab.datasets.synthetic import world
    from robustlab.io.media import write_mp4

    clips, captions = [], ["name,caption"]
    for i in range(3):
        v = world.sample_video(7, 10 + i, n_frames=16)
        p = tmp_path / f"my clip {i}.mp4"
        p.write_bytes(write_mp4(world.render_video(v, 64), 8.0))
        clips.append(str(p))
        captions.append(f'my clip {i}.mp4,"{v.caption}"')
    capfile = tmp_path / "captions.csv"
    capfile.write_text("\n".join(captions) + "\n")

    page = browser.new_page(viewport={"width": 1400, "height": 2200})
    page.set_default_timeout(240_000)
    page.goto(server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    choose_radio(page, "My uploads (0)", scope=sidebar)
    page.get_by_text("Your gallery is empty").wait_for()

    page.locator(".st-key-up_images input[type=file]").set_input_files(clips)
    page.locator(".st-key-up_captions input[type=file]").set_input_files(str(capfile))
    page.get_by_text("my clip 2.mp4").first.wait_for()
    settle(page)
    page.get_by_role("button", name="Add to my gallery").click()
    page.get_by_text("Added 3 video(s).").wait_for()

    # text→video (the default direction on a video gallery): clean and perturbed top-3, every one a playing video
    expect(page.get_by_text("Clean top-k")).to_be_visible()
    clean, pert = page.locator(".st-key-ranked_clean"), page.locator(".st-key-ranked_perturbed")
    expect(clean.locator("video")).to_have_count(3)
    expect(pert.locator("video")).to_have_count(3)
    ranked = clean.get_by_text(re.compile(r"^#\d · -?\d\.\d{3} · item \d( ✓ ground truth)?$"))
    expect(ranked).to_have_count(3)
    assert [t.split(" · ")[0] for t in ranked.all_inner_texts()] == ["#1", "#2", "#3"]
    expect(page.get_by_text("Ground-truth rank, perturbed")).to_be_visible()
    settle(page)
    page.wait_for_function(VIDEOS_READY, arg=None, timeout=120_000)
    vids = videos_state(page)
    assert len(vids) == 6 and all(v["error"] is None and v["duration"] > 0 and v["width"] > 0 for v in vids), vids
    page.screenshot(path=str(tmp_path / "uploaded_videos_t2v.png"), full_page=True)

    # video→text on the same gallery: the query video (clean and perturbed) and two caption tables
    choose_radio(page, "video→text", scope=page.locator(".st-key-direction"))
    page.get_by_text("Clean top-k captions").wait_for()
    expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(3)  # clean, perturbed top-k; metrics
    settle(page)
    page.wait_for_function(VIDEOS_READY, arg=None, timeout=120_000)
    assert len(videos_state(page)) == 2
    assert page.locator('[data-testid="stException"]').count() == 0
    page.screenshot(path=str(tmp_path / "uploaded_videos_v2t.png"), full_page=True)
    keep = os.environ.get("ROBUSTLAB_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for f in ("uploaded_videos_t2v.png", "uploaded_videos_v2t.png"):
            shutil.copy(tmp_path / f, Path(keep) / f)
