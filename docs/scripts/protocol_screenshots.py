"""Run every shipped protocol on the built-ins at a small n and screenshot its report's paper tables
(docs/img/protocols/<name>.png), for docs/protocols-vs-papers.md.

    python docs/scripts/protocol_screenshots.py [--only msrvtt-p,qiu-image] [--runs /tmp/protocol-runs]
                                                [--skip-bench] [--nice 5]

For each protocol (``robustlab protocols``): ``robustlab bench --protocol NAME --dataset <built-in> --n N --models
<one built-in> --out RUNS/NAME`` (a run folder that already holds the cells resumes, so a rerun is cheap; with
``--skip-bench`` an existing run is only re-rendered), then ``robustlab bench-report RUNS/NAME``, then opens the
report in headless Chromium (Debian's, through Playwright's ``executable_path``; the report is self-contained) and
saves the ``<section>``s that mirror the paper's tables, stacked top to bottom into one PNG. The sections' side
scrolling is switched off first, so a wide table is photographed whole. Not part of the docs build (the build only
reads the PNGs); docs/protocols-vs-papers.md names the command, n and model of each image from :data:`PLAN`.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shotlib import ROOT, chromium, shrink  # noqa: E402 - the screenshot scripts' shared helpers

# protocol -> how it runs here: the built-in dataset standing in for the paper's, n (small: `--dry-run` gives each
# one's cell count; measured on the 2-core machine, the nine runs took about 17 min of CPU time in all, hat-vtr's 289
# adaptation cells most of it, before peeling ran FIP's 15 corruptions: about 9 min more), one of the protocol's own
# models, and the report sections (a regular expression on their titles) that mirror the paper's tables.
PLAN: dict[str, dict] = {
    "msrvtt-p": {"dataset": "builtin-videos", "n": 20, "model": "builtin:tiny-clip-video-seqtransf",
                 "sections": r"^Table [234] —"},
    "youcook2-p": {"dataset": "builtin-videos", "n": 20, "model": "builtin:tiny-clip-video-seqtransf",
                   "sections": r"^Table [34] —"},
    "qiu-image": {"dataset": "builtin", "n": 20, "model": "builtin:tiny-clip", "sections": r"^Table 2 —"},
    # qiu-text: n = 10, as its similarity gate (up to 100 tries per caption) costs ~1 min per gated cell at n = 20
    "qiu-text": {"dataset": "builtin", "n": 10, "model": "builtin:tiny-clip", "sections": r"^Table 1 —"},
    "mlvp": {"dataset": "builtin-videos", "n": 20, "model": "builtin:tiny-clip-video-seqtransf",
             "sections": r"^MLVP —"},
    "hat-vtr": {"dataset": "builtin-videos", "n": 20, "model": "builtin:tiny-clip-video-seqtransf",
                "sections": r"^HAT-VTR"},
    "quag-table1": {"dataset": None, "n": 40, "model": "builtin:tiny-vilt", "sections": r"^QUAG Table 1"},
    "clavi": {"dataset": None, "n": 40, "model": "builtin:tiny-vilt", "sections": r"^CLAVI Table 3"},
    "peeling": {"dataset": None, "n": 40, "model": "builtin:tiny-vilt", "sections": r"^PEELING Table II"},
}
LAST = ("hat-vtr", "mlvp")  # the MLVP shifts run last (their content shifts were being changed while these ran)
WIDE_CSS = ("body{max-width:none!important;margin:1rem!important} .scroll{overflow:visible!important}"
            " section{width:max-content;max-width:none!important}")


def bench_command(name: str, out: Path) -> list[str]:
    """The ``robustlab bench`` arguments that made ``docs/img/protocols/<name>.png`` (as the docs page prints them)."""
    p = PLAN[name]
    cmd = ["robustlab", "bench", "--protocol", name]
    if p["dataset"]:
        cmd += ["--dataset", p["dataset"]]
    return cmd + ["--n", str(p["n"]), "--models", p["model"], "--out", str(out)]


def order(names: list[str]) -> list[str]:
    return [n for n in names if n not in LAST] + [n for n in LAST if n in names]


def run_cli(args: list[str], nice: int) -> None:
    pre = ["nice", "-n", str(nice)] if nice else []
    subprocess.run(pre + [sys.executable, "-m", "robustlab", *args[1:]], cwd=ROOT, check=True)


def shoot(html: Path, pattern: str, dest: Path, width: int = 2200) -> list[str]:
    """Screenshot the report's sections whose ``<h2>`` (without its number) matches ``pattern``, stacked into
    ``dest``; returns their titles."""
    from PIL import Image
    from playwright.sync_api import sync_playwright  # the [test] extra; only the screenshot scripts need it

    parts, titles = [], []
    with sync_playwright() as pw:
        browser = chromium(pw)
        page = browser.new_page(viewport={"width": width, "height": 1200})
        page.goto(html.resolve().as_uri())
        page.add_style_tag(content=WIDE_CSS)
        page.wait_for_timeout(1000)
        sections = page.locator("section")
        for i in range(sections.count()):
            sec = sections.nth(i)
            if not sec.locator("h2").count():
                continue
            title = re.sub(r"^\d+\.\s*", "", sec.locator("h2").first.inner_text().strip())
            if re.search(pattern, title):
                path = dest.with_name(f"{dest.stem}.part{len(parts)}.png")
                sec.screenshot(path=str(path))
                parts.append(path)
                titles.append(title)
        browser.close()
    if not parts:
        return titles
    ims = [Image.open(p).convert("RGB") for p in parts]
    gap = 12
    canvas = Image.new("RGB", (max(im.width for im in ims), sum(im.height for im in ims) + gap * (len(ims) - 1)),
                       "white")
    y = 0
    for im in ims:
        canvas.paste(im, (0, y))
        y += im.height + gap
    canvas.save(dest)
    for p in parts:
        p.unlink()
    shrink(dest)
    return titles


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated protocol names (default: all of PLAN)")
    ap.add_argument("--runs", default="/tmp/protocol-runs", help="the run folders' parent (one folder per protocol)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "protocols"))
    ap.add_argument("--skip-bench", action="store_true", help="re-render and screenshot existing runs only")
    ap.add_argument("--nice", type=int, default=5, help="run the benchmarks under nice -n N (0: not)")
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n] or list(PLAN)
    unknown = [n for n in names if n not in PLAN]
    if unknown:
        print(f"unknown protocol(s): {', '.join(unknown)} (known: {', '.join(PLAN)})", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in order(names):
        run = Path(a.runs) / name
        t0 = time.monotonic()
        try:
            if not (a.skip_bench and (run / "sweep.json").exists()):
                run_cli(bench_command(name, run) + ["--quiet"], a.nice)
            t1 = time.monotonic()
            run_cli(["robustlab", "bench-report", str(run)], a.nice)
            titles = shoot(run / "report.html", PLAN[name]["sections"], out / f"{name}.png")
        except subprocess.CalledProcessError as e:
            print(f"{name}: failed ({e})", flush=True)
            failed.append(name)
            continue
        if not titles:
            print(f"{name}: no section matches {PLAN[name]['sections']!r} in {run / 'report.html'}", flush=True)
            failed.append(name)
            continue
        print(f"{name}: bench {t1 - t0:.0f} s, report + screenshot {time.monotonic() - t1:.0f} s -> "
              f"{(out / f'{name}.png').relative_to(ROOT) if (out / f'{name}.png').is_relative_to(ROOT) else out}: "
              + "; ".join(titles), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
