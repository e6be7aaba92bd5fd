"""What a failure map costs against a sweep of the same cells (issue 47, item 1: ≤ 1.5×, refinement excluded).

    python benchmarks/bench_failures_cost.py [--repeats 5] [--n 200] [--video-n 100] [--threads 1]

Two configurations, each run as ``robustlab failures`` and as ``robustlab bench`` over the same cells (clean + every
perturbation × severity 1-5; ``bench --combine none`` so it runs no pairs), interleaved, every run in a fresh folder
with a fresh embedding cache, as a subprocess (start-up included for both) with ``--threads`` OMP threads:

* images: builtin (held-out split, ``--n``) × builtin:tiny-clip × gaussian_noise, defocus_blur (visual) and
  keyboard (text): 16 cells;
* videos: builtin-videos (``--video-n``, lazy: the frames the model samples) × builtin:tiny-clip-video-seqtransf ×
  gaussian_noise, jumble: 11 cells.

``robustlab failures`` runs twice: as it is by default (the slices computed too) and with ``--no-slices``. The
script checks that the commands wrote the same cell files (same keys), then reports the seconds of each run, wall
and CPU (user + system of the command and its children: the shared machine's load moves wall time by ±40 %), the
medians per command, ``ratio = failures / bench`` of the median CPU seconds (slices included),
``ratio_no_slices`` and ``ratio_wall`` of the wall seconds. Results: benchmarks/results/failures_cost.json.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from _harness import ROOT, run_cli, write_results  # this folder (python benchmarks/bench_x.py puts it on sys.path)

CONFIGS = {
    "images": {"model": "builtin:tiny-clip", "dataset": "builtin", "visual": "gaussian_noise,defocus_blur",
               "text": "keyboard"},
    "videos": {"model": "builtin:tiny-clip-video-seqtransf", "dataset": "builtin-videos",
               "visual": "gaussian_noise,jumble", "text": None},
}


def _commands(cfg: dict, n: int, out: Path) -> dict:
    common = ["--dataset", cfg["dataset"], "--n", str(n), "--severities", "1-5", "--quiet"]
    pert = cfg["visual"] + (f",{cfg['text']}" if cfg["text"] else "")
    return {"failures": ["failures", "--model", cfg["model"], *common, "--perturbations", pert,
                         "--out", str(out / "failures")],
            "failures_no_slices": ["failures", "--model", cfg["model"], *common, "--perturbations", pert,
                                   "--no-slices", "--out", str(out / "failures_no_slices")],
            "bench": ["bench", "--models", cfg["model"], *common, "--perturbations", cfg["visual"],
                      *(["--text-perturbations", cfg["text"]] if cfg["text"] else []), "--combine", "none",
                      "--out", str(out / "bench")]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--n", type=int, default=200, help="built-in images")
    ap.add_argument("--video-n", type=int, default=100, help="built-in videos")
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP threads of each command (1: CPU seconds are the work, not a busy wait on a loaded host)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "failures_cost.json"))
    args = ap.parse_args(argv)
    res: dict = {"repeats": args.repeats, "threads": args.threads, "cpus": os.cpu_count(),
                 "python": platform.python_version(),
                 "configs": {}}
    for name, cfg in CONFIGS.items():
        n = args.n if name == "images" else args.video_n
        secs: dict = {"failures": [], "failures_no_slices": [], "bench": []}
        cpu: dict = {"failures": [], "failures_no_slices": [], "bench": []}
        cells = None
        for rep in range(args.repeats):
            order = ("failures", "bench", "failures_no_slices") if rep % 2 == 0 else \
                ("failures_no_slices", "bench", "failures")  # interleaved
            tmp = Path(tempfile.mkdtemp(prefix=f"bench_failures_{name}_"))
            cmds = _commands(cfg, n, tmp)
            for which in order:
                wall, c, _ = run_cli(cmds[which], tmp / f"cache_{which}", args.threads)
                secs[which].append(round(wall, 2))
                cpu[which].append(round(c, 2))
                print(f"{name} repeat {rep}: {which} {wall:.1f} s wall, {c:.1f} s CPU", flush=True)
            keys = {w: sorted(p.name for p in (tmp / w / "cells").glob("*.json")) for w in secs}
            if not keys["failures"] == keys["failures_no_slices"] == keys["bench"]:
                raise SystemExit(f"{name}: the two commands ran different cells: {keys}")
            cells = len(keys["bench"])
        med = {w: statistics.median(v) for w, v in secs.items()}
        mcpu = {w: statistics.median(v) for w, v in cpu.items()}
        res["configs"][name] = {"model": cfg["model"], "dataset": cfg["dataset"], "n": n, "cells": cells,
                                "perturbations": [p for p in (cfg["visual"], cfg["text"]) if p],
                                "severities": [1, 2, 3, 4, 5], "wall_s": secs, "cpu_s": cpu,
                                "median_wall_s": {w: round(v, 2) for w, v in med.items()},
                                "median_cpu_s": {w: round(v, 2) for w, v in mcpu.items()},
                                "ratio_wall": round(med["failures"] / med["bench"], 3),
                                "ratio": round(mcpu["failures"] / mcpu["bench"], 3),
                                "ratio_no_slices": round(mcpu["failures_no_slices"] / mcpu["bench"], 3)}
    res["ratio_max"] = max(c["ratio"] for c in res["configs"].values())
    res["target"] = 1.5
    res["met"] = res["ratio_max"] <= res["target"]
    return write_results(res, args.out)


if __name__ == "__main__":
    sys.exit(main())
