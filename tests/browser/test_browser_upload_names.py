"""Upload file names are text, never Markdown (issue 44, finding 6), and an upload form says how many files arrived
(finding 7), in a real headless Chromium.

A pixel server on loopback counts requests. Files are uploaded through the real form under names that are Markdown
images, links and HTML pointing at it; one of them is not an image, so an error line names it. Then every page that
shows the gallery is opened. On the main of 2026-11-28 the browser fetched the pixel (the names went through
Markdown); now no request reaches it and every name is shown literally.
"""
from __future__ import annotations

import http.server
import io
import socket
import threading

import pytest

from browser_helpers import choose_radio, open_app, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture()
def pixel_server():
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    httpd = http.server.HTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield port, hits
    httpd.shutdown()


def my_uploads(browser, server, before=None):
    """A page on the app with "My uploads" picked and its empty gallery shown."""
    page = open_app(browser, server, width=1400, height=2200, before=before)
    choose_radio(page, "My uploads (0)", scope=page.locator('[data-testid="stSidebar"]'))
    page.get_by_text("Your gallery is empty").wait_for()
    return page


def _png(seed: int) -> bytes:
    from PIL import Image

    from robustlab.datasets.synthetic.datasets import builtin_gallery

    b = io.BytesIO()
    Image.fromarray(builtin_gallery(3).images[seed]).save(b, format="PNG")
    return b.getvalue()


def test_hostile_upload_names_are_shown_literally_and_fetch_nothing(server, browser, pixel_server, tmp_path):
    port, hits = pixel_server
    names = [f"![px](http://127.0.0.1:{port}/pixel.png).png",
             f"[link](http://127.0.0.1:{port}/link) <img src=http://127.0.0.1:{port}/img.png>.png",
             "ok :red[x] $x$ {}.png"]
    files = [{"name": names[0], "mimeType": "image/png", "buffer": _png(0)},
             {"name": names[1], "mimeType": "image/png", "buffer": b"not an image at all"},
             {"name": names[2], "mimeType": "image/png", "buffer": _png(2)}]
    page = my_uploads(browser, server)
    page.locator(".st-key-up_images input[type=file]").set_input_files(files)
    page.locator(".st-key-up_lines textarea").fill("a red circle\na blue square\na green triangle")
    page.get_by_text("{}.png").first.wait_for()
    settle(page)
    page.get_by_role("button", name="Add to my gallery").click()
    page.get_by_text("Added 2 image(s).").wait_for()
    settle(page)
    said = page.locator("body").inner_text().replace("\u200b", "")
    assert names[1] + ": not an image" in said, said[-3000:]  # the refused file's name, literally
    seen_links, seen_imgs = [], []
    for view in ("Retrieval", "Perturb", "Grounding", "Hubness", "Embeddings", "Export"):
        page.get_by_role("link", name=view).first.click()
        settle(page)
        if view == "Perturb":
            choose_radio(page, "Upload", scope=page.locator(".st-key-pt_source_image"))
            settle(page)
        page.wait_for_timeout(1500)
        seen_links += page.evaluate("() => [...document.querySelectorAll('a')].map(a => a.href)")
        seen_imgs += page.evaluate("() => [...document.querySelectorAll('img')].map(i => i.src)")
        page.screenshot(path=str(tmp_path / f"upload_names_{view}.png"), full_page=True)
    assert not [h for h in seen_links + seen_imgs if f":{port}" in h], (seen_links, seen_imgs)
    assert hits == [], hits  # the browser fetched nothing the names point at


def test_the_form_says_which_chosen_files_did_not_arrive(server, browser, tmp_path):
    """Finding 7: two of five uploads fail on the way (the browser's PUT is aborted); Add says 3 of 5 arrived and
    names the two left out, instead of adding three in silence."""
    failed = []

    def flaky(route):
        if len(failed) < 2:
            failed.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page = my_uploads(browser, server, before=lambda p: p.route("**/_stcore/upload_file/**", flaky))
    files = [{"name": f"shot {i}.png", "mimeType": "image/png", "buffer": _png(i % 3)} for i in range(5)]
    page.locator(".st-key-up_images input[type=file]").set_input_files(files)
    page.get_by_text("shot 4.png").first.wait_for()
    settle(page)
    page.wait_for_timeout(2000)
    page.get_by_role("button", name="Add to my gallery").click()
    line = page.get_by_text("3 of the 5 files chosen arrived; 2 did not")
    line.wait_for()
    text = line.inner_text()
    assert len(failed) == 2 and "Choose them again" in text
    assert sum(f"shot {i}.png" in text for i in range(5)) == 2  # the two that did not arrive, by name
    page.screenshot(path=str(tmp_path / "left_out.png"), full_page=True)
