"""End-to-end in a real headless Chromium: the Benchmark page runs a tiny sweep in its background thread (progress
polled by a fragment), the report's heatmap renders, and "Download report" gives the report's HTML."""
import os

import pytest

from browser_helpers import choose_radio, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module", autouse=True)
def runs_root(tmp_path_factory):
    """The server (started after this, it copies os.environ) keeps its run folders in a temporary root."""
    root = tmp_path_factory.mktemp("runs")
    old = os.environ.get("ROBUSTLAB_RUNS")
    os.environ["ROBUSTLAB_RUNS"] = str(root)
    yield root
    if old is None:
        os.environ.pop("ROBUSTLAB_RUNS", None)
    else:
        os.environ["ROBUSTLAB_RUNS"] = old


def _type(page, key: str, value: str):
    box = page.locator(f".st-key-{key} input")
    box.fill(value)
    box.press("Enter")
    settle(page)


def test_benchmark_sweep_heatmap_and_download(runs_root, server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 2400}, accept_downloads=True)
    page.set_default_timeout(90_000)
    page.goto(server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    sidebar.get_by_role("link", name="Benchmark", exact=True).click()
    page.get_by_text("Benchmark — a robustness sweep").wait_for()
    settle(page)

    _type(page, "bench_n", "8")
    choose_radio(page, "a category", scope=page.locator(".st-key-bench_pmode"))  # the first category: noise
    _type(page, "bench_name", "browser-run")
    page.get_by_text("on 8 items.", exact=False).wait_for()
    page.get_by_role("button", name="Run sweep").click()

    page.get_by_text("Done:", exact=False).wait_for()
    page.get_by_text("Report — browser-run").wait_for()
    page.locator(".js-plotly-plot").first.wait_for()
    assert (runs_root / "browser-run" / "sweep.json").exists()
    page.get_by_text("Worst examples", exact=True).wait_for()

    with page.expect_download() as dl:
        page.get_by_role("button", name="Download report").click()
    path = tmp_path / "report.html"
    dl.value.save_as(path)
    html = path.read_text(encoding="utf-8")
    assert dl.value.suggested_filename == "browser-run-report.html"
    assert html.lstrip().lower().startswith("<!doctype html") and "browser-run" in html
    assert "plotly" in html.lower() and "gaussian_noise" in html
    assert (runs_root / "browser-run" / "report.html").exists()
    if os.environ.get("ROBUSTLAB_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["ROBUSTLAB_SCREENSHOTS"], "benchmark.png"), full_page=True)
    page.close()


def test_protocol_mode_shows_the_papers_cells(runs_root, server, browser):
    """The Benchmark page's protocol mode in a real browser: a shipped protocol for the sidebar's images, its
    not-run perturbation named with why, and every condition set with its resolved parameters."""
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.set_default_timeout(90_000)
    page.goto(server)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Model", exact=True).wait_for()
    settle(page)
    sidebar.get_by_role("link", name="Benchmark", exact=True).click()
    page.get_by_text("Benchmark — a robustness sweep").wait_for()
    settle(page)
    choose_radio(page, "A paper's protocol", scope=page.locator(".st-key-bench_mode"))
    page.get_by_text("162 cells: 2 model(s) × 81 condition sets", exact=False).wait_for()  # qiu-image: 16 types × 5
    page.get_by_text("stylize/qiu_code", exact=False).first.wait_for()  # unavailable here: named, with why
    page.get_by_text("Every condition set with its resolved parameters").click()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()
