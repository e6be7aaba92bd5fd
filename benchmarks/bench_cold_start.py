"""Cold start of the dashboard: ``streamlit run app.py`` with an empty cache to a usable Retrieval page.

Issue 15 asks for a usable Retrieval page in under 10 s on the 2-core machine, with progress shown for every step.
Timed from the moment the server process is spawned (the browser is already open, as a user's would be):

- ``health``: the server answers ``/_stcore/health``;
- ``usable``: the Retrieval page shows the default query's clean and perturbed top-k images (the ranking;
  the page is usable: every control works and the results are on screen);
- ``complete``: the gallery metrics table is drawn too (every caption perturbed and encoded; the whole page).

Reference in the same run: the same three times on a warm start (a new server process on the cache the cold run
filled), so the cold / warm ratio is machine-independent. With ``--models A,B`` the same runs for each model as the
session's first model (the operator's ``ROBUSTLAB_DEFAULT_MODEL``), interleaved run by run, so two defaults are
compared on the same machine in the same minutes (``paired``: B − A per run, and B / A). The texts of every
progress bar, spinner and boot caption seen while loading are recorded (polled every 100 ms), which shows that each
step says what it is doing.

    python benchmarks/bench_cold_start.py [--runs 3] [--out benchmarks/results/cold_start.json]
    python benchmarks/bench_cold_start.py --models builtin:tiny-clip,builtin:tiny-vit-clip --runs 3 \
        --out benchmarks/results/cold_start_paired.json
    python benchmarks/bench_cold_start.py --warm-up off,on --runs 5 --out benchmarks/results/cold_start_warm_up.json

``--warm-up off,on`` compares the server-start warm-up (ui.warmup: the default view computed while the browser
loads) with none, run by run, the order alternating (``ROBUSTLAB_WARM_UP=0`` / ``1``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRESS_JS = """() => [...document.querySelectorAll(
    '[data-testid="stProgress"], [data-testid="stSpinner"], [data-testid="stCaptionContainer"]')]
    .map(e => e.innerText.trim()).filter(t => t)"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    sys.exit("bench_cold_start: Chromium is not installed (ROBUSTLAB_BROWSER=1 bash setup.sh)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MARKERS = {"Retrieval": lambda p: p.locator(".st-key-ranked_clean img"),  # what each page shows when it is done
           "Hubness": lambda p: p.get_by_text("Top hubs", exact=True),
           "Grounding": lambda p: p.get_by_text("IoU clean vs perturbed box")}
IDLE = '[data-test-script-state="notRunning"]'


def page_switches(page, rounds: int = 2) -> list[dict]:
    """Sidebar page switches after the Retrieval page is complete: each of Hubness, Grounding and Retrieval visited
    ``rounds`` times; the time from the click until the page's result is on screen and the script is idle. The
    first visit of a page computes (cold for that page); later visits are the warm page switches."""
    rows, visited = [], set()
    for _ in range(rounds):
        for name in ("Hubness", "Grounding", "Retrieval"):
            t = time.perf_counter()
            page.locator('[data-testid="stSidebar"]').get_by_role("link", name=name, exact=True).click()
            page.wait_for_timeout(50)
            MARKERS[name](page).first.wait_for(timeout=300_000)
            page.locator(IDLE).first.wait_for(state="attached", timeout=300_000)
            rows.append({"page": name, "warm": name in visited, "seconds": round(time.perf_counter() - t, 2)})
            visited.add(name)
    return rows


def one_start(browser, cache: Path, timeout_s: float = 300.0, switches: bool = False,
              model: str | None = None, warm_up: bool | None = None) -> dict:
    """Spawn a server on ``cache``, open the Retrieval page, time health / usable / complete."""
    port = free_port()
    env = dict(os.environ, ROBUSTLAB_CACHE=str(cache))
    if model:
        env["ROBUSTLAB_DEFAULT_MODEL"] = model  # the operator's choice of the model a session opens with
    if warm_up is not None:
        env["ROBUSTLAB_WARM_UP"] = "1" if warm_up else "0"  # the server-start warm-up (ui.warmup), on or off
    log = tempfile.TemporaryFile("w+")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    out: dict = {"steps_seen": []}
    try:
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read().strip() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.perf_counter() - t0 > timeout_s:
                log.seek(0)
                raise RuntimeError("streamlit did not start:\n" + log.read()[-2000:])
            time.sleep(0.05)
        out["health_s"] = time.perf_counter() - t0
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.goto(url)
        ranked = page.locator(".st-key-ranked_clean img, .st-key-ranked_perturbed img")
        table = page.locator(".st-key-metrics_chart")  # drawn right after the metrics table
        seen: list[list] = []  # [seconds since spawn, text] the first time each text is on screen
        texts: set[str] = set()
        while time.perf_counter() - t0 < timeout_s:
            for t in page.evaluate(PROGRESS_JS):
                t = " ".join(t.split())[:90]
                if t not in texts and not t.startswith("#"):  # (ranked results' captions left out)
                    texts.add(t)
                    seen.append([round(time.perf_counter() - t0, 2), t])
            if "usable_s" not in out and ranked.count() >= 2:
                out["usable_s"] = time.perf_counter() - t0
            if table.count() > 0 and "usable_s" in out:  # (the table can be drawn before the ranked images)
                out["complete_s"] = time.perf_counter() - t0
                break
            page.wait_for_timeout(100)
        else:
            raise RuntimeError("the Retrieval page did not finish loading")
        out["steps_seen"] = seen
        if switches:
            out["page_switches"] = page_switches(page)
        errors = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').count()
        out["errors_on_page"] = errors
        ctx.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    log.seek(0)
    out["traceback_in_log"] = "Traceback" in log.read()
    return out


def _default_model() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ui.state import DEFAULT_MODEL  # the dashboard's own default, whatever it is

    return DEFAULT_MODEL


def summary(model: str, cold: list, warm: list) -> dict:
    def med(rows, k):
        return round(statistics.median(r[k] for r in rows), 2)

    return {
        "what": f"streamlit run app.py (empty cache) to a usable Retrieval page: default model {model}, "
                "built-in gallery of 300 images, gaussian_noise s3 / keyboard s2",
        "model": model,
        "runs": len(cold),
        "cold": {k: med(cold, k) for k in ("health_s", "usable_s", "complete_s")},
        "warm": {k: med(warm, k) for k in ("health_s", "usable_s", "complete_s")},
        "cold_over_warm_usable": round(med(cold, "usable_s") / med(warm, "usable_s"), 2),
        "warm_page_switch_s": {"median": statistics.median(r["seconds"] for w in warm for r in w["page_switches"]
                                                          if r["warm"]),
                               "max": max(r["seconds"] for w in warm for r in w["page_switches"] if r["warm"]),
                               "target": 2.0},
        "target_usable_s": 10.0,
        "steps_seen_cold": cold[0]["steps_seen"],
        "errors": sum(r["errors_on_page"] for r in cold + warm),
        "tracebacks": sum(r["traceback_in_log"] for r in cold + warm),
        "per_run": {"cold": cold, "warm": warm},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", default="",
                    help="comma-separated specs, each run as the session's first model (default: the dashboard's)")
    ap.add_argument("--warm-up", default="",
                    help="off,on: each run with the server-start warm-up off and on (ROBUSTLAB_WARM_UP), paired")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/cold_start.json"))
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    models = [m.strip() for m in args.models.split(",") if m.strip()] or [None]
    warm_ups = [{"on": True, "off": False}[w.strip()] for w in args.warm_up.split(",") if w.strip()] or [None]
    # the variants compared run by run: (label, model, warm-up)
    variants = [((m or _default_model()) + ("" if w is None else f" warm-up {'on' if w else 'off'}"), m, w)
                for m in models for w in warm_ups]
    cold: dict = {v[0]: [] for v in variants}
    warm: dict = {v[0]: [] for v in variants}
    load0 = os.getloadavg()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        for i in range(args.runs):
            for label, m, w_up in (variants if i % 2 == 0 else variants[::-1]):  # interleaved, alternating order
                with tempfile.TemporaryDirectory() as d:
                    c = one_start(b, Path(d) / "cache", model=m, warm_up=w_up)
                    w = one_start(b, Path(d) / "cache", switches=True, model=m, warm_up=w_up)
                cold[label].append(c)
                warm[label].append(w)
                print(f"run {i + 1} {label}: cold health {c['health_s']:.1f}s usable "
                      f"{c['usable_s']:.1f}s complete {c['complete_s']:.1f}s | warm usable {w['usable_s']:.1f}s "
                      f"complete {w['complete_s']:.1f}s", flush=True)
        b.close()

    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "loadavg_start": load0, "loadavg_end": os.getloadavg()}
    labels = [v[0] for v in variants]
    if len(labels) == 1:
        res = summary(labels[0], cold[labels[0]], warm[labels[0]]) | {"machine": machine}
    else:
        a, z = labels[0], labels[-1]
        res = {"models": {m: summary(m, cold[m], warm[m]) for m in labels}, "machine": machine,
               "paired": {f"{z} - {a}": {k: [round(cz[k] - ca[k], 2) for ca, cz in zip(cold[a], cold[z])]
                                         for k in ("usable_s", "complete_s")},
                   f"{z} / {a} usable, cold (median of per-run ratios)": round(statistics.median(
                       cz["usable_s"] / ca["usable_s"] for ca, cz in zip(cold[a], cold[z])), 3)}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))
    show = res["models"].values() if "models" in res else [res]
    print(json.dumps([{k: r[k] for k in ("model", "cold", "warm", "cold_over_warm_usable", "warm_page_switch_s",
                                         "errors")} for r in show] + [res.get("paired", {})], indent=1))


if __name__ == "__main__":
    main()
