"""Concurrency and load (issue 15): one ``streamlit run app.py`` server, N simultaneous browser sessions.

One server (its own temporary ROBUSTLAB_CACHE and ROBUSTLAB_RUNS, as the tests' ``server`` fixture), one headless
Chromium (Debian's, driven by Playwright's async API with ``executable_path``) with one browser context per
session, all driven concurrently from one asyncio loop for ``--minutes``. Every session stays on its own page with
its own choices (two sessions on one page choose differently), cycles through a small fixed set of choices and
checks, after every change, that the page shows results that are specific to *its* choices:

- echo checks: what the page says it computed names the session's choice (the Retrieval query text is the caption
  of the query index it picked, the perturbation and severity it picked are in the result's title, the item it
  added is in its own basket...), with the expected text computed here from the library where it can be;
- a ledger: every result signature (metric values, ranked items, media content hashes) is recorded under the exact
  choices that produced it; the same choices must always show the same result, whichever session asks (a crossed
  session, or a cache entry served for the wrong key, shows up as a conflict);
- distinctness: two sessions on one page with different choices must not have seen exactly the same results.

Every change waits for the script run it started (a counter of the app's run-state changes in the page), so no
check reads the previous choices' results on a loaded server.

Every so often a session switches to another page through the sidebar and comes back (the soak). Errors: any
``stException`` element, error alert, failed content check, timed-out step, and any Traceback in the server log.
Model loads are counted from the line ``model load: SPEC on DEVICE`` that ``ui.state.get_model`` logs (once per
``st.cache_resource`` miss). Memory: the server's RSS (with its children) every second from /proc; peak, after
warm-up, at the end, and growth = mean RSS over the last 20% of the soak minus the mean over its first 20%: after the
run, every session only switches to other pages and back for ``--soak-minutes`` (default 3), from when the last
session has finished its step (without a soak, the run after warm-up is the stretch). Chromium's RSS (and PSS) is
reported separately. Exits non-zero when there is an error or a bound is exceeded.

    python benchmarks/bench_concurrency.py --minutes 10            # 16 sessions, then a 3-min soak → results/

``tests/browser/test_browser_concurrency.py`` runs :func:`run` with 16 sessions for 80 s (image galleries only:
``videos`` off); the benchmark's second Hubness session works on the built-in videos with a video model.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's robustlab (the driver computes expected texts with it)
sys.path.insert(0, str(HERE))  # the concurrency/ package beside this script

from concurrency.common import GROWTH_BOUND_MB, PEAK_BOUND_MB, ROOT, app_pages  # noqa: E402,F401  (the test reads app_pages)
from concurrency.driver import _chromium, _drive, run  # noqa: E402,F401  (the test drives run; _chromium, _drive)
from concurrency.report import summary  # noqa: E402
from concurrency.scenarios_tools import plan  # noqa: E402,F401

RESULTS = ROOT / "benchmarks" / "results" / "concurrency.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--soak-minutes", type=float, default=3,
                    help="after the run, every session only switches pages for this long: the memory growth window")
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--peak-bound-mb", type=float, default=PEAK_BOUND_MB)
    ap.add_argument("--growth-bound-mb", type=float, default=GROWTH_BOUND_MB)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--screenshots", type=Path, default=None, help="a folder for screenshots of failed steps")
    ap.add_argument("--only", default=None, help="comma-separated session numbers of the plan to run (debugging)")
    ap.add_argument("--no-videos", action="store_true", help="the second Hubness session on images (as the CI test)")
    a = ap.parse_args(argv)
    only = [int(x) for x in a.only.split(",")] if a.only else None
    res = run(a.sessions, a.minutes * 60, peak_bound_mb=a.peak_bound_mb, growth_bound_mb=a.growth_bound_mb,
              screenshots=a.screenshots, only=only, videos=not a.no_videos,
              soak_s=a.soak_minutes * 60, log=lambda *x: print(*x, flush=True))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(summary(res))
    print(f"→ {a.out}")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
