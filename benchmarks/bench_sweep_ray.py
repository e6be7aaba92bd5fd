"""Ray local vs the local engine on the same machine, for the same sweep (issue 12 target: overhead ≤ 15%).

    python benchmarks/bench_sweep_ray.py [--n 100] [--repeats 2]

The sweep: builtin-videos (held-out split) × builtin:tiny-clip-video-meanp and -seqtransf × clean, gaussian_noise,
defocus_blur, jumble and box_jumble at severities 2 and 4 (18 cells). Each run writes into a fresh folder with a
fresh embedding cache (so no run reads another's embeddings). Ray's start-up (``ray.init`` of a local cluster) is
timed apart: ``overhead`` compares the sweep alone, ``overhead_with_startup`` includes starting Ray.
Results: benchmarks/results/sweep_ray.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _harness import ROOT, write_results  # this folder; it puts the checkout on sys.path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sweep_ray.json"))
    args = ap.parse_args(argv)
    import ray

    from robustlab.bench import ray_runner as ray_engine
    from robustlab.engine.cache import EmbeddingCache
    from robustlab.bench import SweepSpec, condition_grid, run_sweep

    spec = SweepSpec(models=["builtin:tiny-clip-video-meanp", "builtin:tiny-clip-video-seqtransf"],
                     dataset={"name": "builtin-videos", "split": "test", "n": args.n},
                     conditions=condition_grid(["gaussian_noise", "defocus_blur", "jumble", "box_jumble"], [2, 4]))
    runs = {"local": [], "ray": [], "ray_start": []}
    for rep in range(args.repeats):
        for engine in ("local", "ray"):
            tmp = Path(tempfile.mkdtemp(prefix=f"bench_ray_{engine}_"))
            os.environ["ROBUSTLAB_CACHE"] = str(tmp / "cache")
            if engine == "ray":
                t0 = time.perf_counter()
                ray_engine.start()  # timed apart; run_sweep finds it running
                runs["ray_start"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            st = run_sweep(spec, tmp / "run", engine=engine, cache=EmbeddingCache(tmp / "cache"))
            runs[engine].append(time.perf_counter() - t0)
            assert st.done == st.total, st
            if engine == "ray":
                ray.shutdown()
            print(f"repeat {rep}: {engine} {runs[engine][-1]:.1f} s", flush=True)
    best = {k: min(v) for k, v in runs.items()}
    res = {"n": args.n, "cells": len(spec.cells()), "cpus": os.cpu_count(), "ray": ray.__version__,
           "seconds": {k: [round(x, 2) for x in v] for k, v in runs.items()},
           "best_s": {k: round(v, 2) for k, v in best.items()},
           "overhead": round(best["ray"] / best["local"] - 1, 3),
           "overhead_with_startup": round((best["ray"] + best["ray_start"]) / best["local"] - 1, 3)}
    return write_results(res, args.out)


if __name__ == "__main__":
    sys.exit(main())
