"""What the weakest-change search costs against a plain sweep of the same cells (issue 47, item 3).

    python benchmarks/bench_adversarial_search.py [--n 50] [--ks 1,5] [--repeats 2] [--budget 20000] [--threads 1]

On the built-in world (held-out split, ``--n`` images) with builtin:tiny-clip and the search's default catalogue
(``robustlab.failures.adversarial.VISUAL``, the ImageNet-C set but glass_blur, and ``TEXT``,
the gated EDA edits), each run as a subprocess in a fresh folder with a fresh embedding cache, interleaved:

* ``search``: ``robustlab search --n N --k K --budget B --json`` (t2i, pairs up to severity 2), for each K of
  ``--ks`` (k = 1: the tiny model breaks under almost anything; k = 5: the ground truth must leave the top 5, a
  deeper search);
* ``sweep``: ``robustlab bench`` over the same single-axis cells (clean + every visual and every text perturbation
  at severities 1-5, ``--combine none``), which is what a failure map of the catalogue would run.

Reported: CPU seconds (user + system of the command and its children) and model evaluations -- the search counts
its own (one per perturbed input encoded); the sweep's are its cells' inputs: n images or n captions per cell, plus
the clean gallery (2n). Also what the search found (broken / holding examples, the weakness of the changes).
Results: benchmarks/results/adversarial_search.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _harness import ROOT, run_cli, write_results  # this folder; it puts the checkout on sys.path
from robustlab.failures.adversarial import TEXT, VISUAL


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--budget", type=int, default=20000)
    ap.add_argument("--ks", default="1,5", help="the top-k of each search run")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "adversarial_search.json"))
    args = ap.parse_args(argv)
    common = ["--dataset", "builtin", "--n", str(args.n), "--quiet"]
    ks = [int(k) for k in args.ks.split(",")]
    cmds = {**{f"search_k{k}": ["search", "--model", "builtin:tiny-clip", *common, "--k", str(k), "--budget",
                                str(args.budget), "--json"] for k in ks},
            "sweep": ["bench", "--models", "builtin:tiny-clip", *common, "--severities", "1-5", "--perturbations",
                      ",".join(VISUAL), "--text-perturbations", ",".join(TEXT), "--combine", "none"]}
    wall: dict = {k: [] for k in cmds}
    cpu: dict = {k: [] for k in cmds}
    found: dict = {}
    for rep in range(args.repeats):
        tmp = Path(tempfile.mkdtemp(prefix="bench_search_"))
        for which in (list(cmds) if rep % 2 == 0 else list(cmds)[::-1]):
            extra = ["--out", str(tmp / which)] if which == "sweep" else []
            w, c, out = run_cli(cmds[which] + extra, tmp / f"cache_{which}", args.threads)
            wall[which].append(round(w, 2))
            cpu[which].append(round(c, 2))
            print(f"repeat {rep}: {which} {w:.1f} s wall, {c:.1f} s CPU", flush=True)
            if which != "sweep":
                found[which] = json.loads(out)
        cells = len(list((tmp / "sweep" / "cells").glob("*.json")))
    sweep_evals = (cells - 1) * args.n + 2 * args.n  # every perturbed cell: n inputs; clean: n images + n captions
    med = {k: statistics.median(v) for k, v in cpu.items()}
    res = {"n": args.n, "model": "builtin:tiny-clip", "dataset": "builtin (test split)", "direction": "t2i",
           "visual": list(VISUAL), "text": list(TEXT), "pair_max": 2, "budget": args.budget,
           "repeats": args.repeats, "threads": args.threads, "cpus": os.cpu_count(),
           "python": platform.python_version(), "sweep_cells": cells, "sweep_model_evaluations": sweep_evals,
           "wall_s": wall, "cpu_s": cpu, "median_cpu_s": {k: round(v, 2) for k, v in med.items()}, "searches": {}}
    for k in ks:
        f = found[f"search_k{k}"]
        results = f["results"]
        weak = Counter(tuple(r["weakness"]) for r in results if r["status"] == "broken")
        res["searches"][f"k={k}"] = {
            "cpu_ratio_search_over_sweep": round(med[f"search_k{k}"] / med["sweep"], 3),
            "model_evaluations": f["evaluations"], "cache_hits": f["hits"],
            "evaluation_ratio_search_over_sweep": round(f["evaluations"] / sweep_evals, 4),
            "candidates_tried": f["candidates_tried"], "exhausted": f["exhausted"],
            "status": dict(Counter(r["status"] for r in results)),
            "weakness": {",".join(map(str, w)): c for w, c in sorted(weak.items())},
            "parts": {str(p): c for p, c in sorted(Counter(len(r["change"]) for r in results
                                                          if r["status"] == "broken").items())}}
    return write_results(res, args.out)


if __name__ == "__main__":
    sys.exit(main())
