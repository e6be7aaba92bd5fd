"""Constants of the concurrency benchmark and the app's pages, read from app.py and pages/*.py."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Bounds (see benchmarks/bench_concurrency.py's docstring and benchmarks/README.md): the server's peak RSS and its
# growth after warm-up
PEAK_BOUND_MB = 4096
GROWTH_BOUND_MB = 200
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
