"""Where a cold switch to Built-in videos spends its time (issue 45): the dashboard's own steps, timed one by one in a
fresh process with an empty cache, in the order the Retrieval page runs them.

1. the video gallery (200 event videos of the built-in world, rendered);
2. the video model (the sidebar's counterpart of the default image model);
3. encoding the clean gallery (every video's sampled frames through the visual tower);
4. encoding the clean captions;
5. perturbing and encoding the gallery under the page's default perturbation (the perturbed column).

Each step shows a progress line on the page (the gallery a spinner, the encodes a bar with counts): the benchmark
records the steps' seconds so that the slowest is named.

    python benchmarks/bench_cold_switch.py          # -> benchmarks/results/cold_switch.json
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "cold_switch.json"


def main() -> dict:
    os.environ["ROBUSTLAB_CACHE"] = tempfile.mkdtemp(prefix="rl-cold-")  # cold: nothing cached
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    steps = {}

    def step(name, fn):
        t = time.perf_counter()
        out = fn()
        steps[name] = round(time.perf_counter() - t, 2)
        print(f"{name}: {steps[name]:.2f} s", flush=True)
        return out

    from robustlab.datasets.synthetic.datasets import builtin_video_gallery
    from robustlab.models import load_model
    from robustlab.perturb.condition import Condition
    from robustlab.tasks.retrieval_bench import RetrievalBench
    from ui.state import VIDEO_DEMO_N

    steps["imports"] = round(time.perf_counter() - t0, 2)
    g = step("1 video gallery (200 videos)", lambda: builtin_video_gallery(VIDEO_DEMO_N))
    m = step("2 video model", lambda: load_model("builtin:tiny-vit-clip-video-seqtransf", device="cpu"))
    bench = RetrievalBench(m, g)
    step("3 encode the clean gallery", lambda: bench.visuals(Condition()))
    step("4 encode the clean captions", lambda: bench.texts(Condition()))
    step("5 perturb + encode the gallery (gaussian_noise s3)", lambda: bench.visuals(Condition("gaussian_noise", 3)))
    total = round(time.perf_counter() - t0, 2)
    slowest = max((k for k in steps if k != "imports"), key=steps.get)
    res = {"steps_s": steps, "total_s": total, "slowest": slowest, "threads": 2,
           "what": "a cold switch to Built-in videos, the Retrieval page's steps in one fresh process, empty cache"}
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    return res


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
