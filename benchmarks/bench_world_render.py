"""Rendering the built-in gallery: the 300 scenes a new session's first page renders before it can rank.

The background is the larger part of a scene's rendering (a 256 × 256 ramp, drawn at twice the size and reduced).
``world._background_u8`` computes it a channel at a time, in place, into uint8; the reference in the same run is
the original formula (a float64 image of all three channels, clipped, then cast), patched in for the comparison.
Both give the same pixels (asserted here and in tests/datasets/test_world.py); the ratio is the saving.

    python benchmarks/bench_world_render.py [--n 300] [--repeats 5] [--out benchmarks/results/world_render.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from robustlab.datasets.synthetic import world

ROOT = Path(__file__).resolve().parents[1]


def reference_background_u8(bg: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """The formula before the change: all three channels in float64, clipped, then cast."""
    base = np.array(world.BACKGROUNDS[bg], np.float32)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / max(size - 1, 1)
    ang = rng.uniform(0, 2 * np.pi)
    grad = (np.cos(ang) * (xx - 0.5) + np.sin(ang) * (yy - 0.5)) * rng.uniform(20, 45)
    return np.clip(base[None, None, :] + grad[..., None], 0, 255).astype(np.uint8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/world_render.json"))
    args = ap.parse_args()
    scenes = world.make_scenes(args.n, world.DEMO_SEED)
    fast_fn = world._background_u8
    times: dict = {"reference": [], "current": []}
    out = {}
    for r in range(args.repeats + 1):  # the first round warms up and is not counted
        for name, fn in (("reference", reference_background_u8), ("current", fast_fn))[:: 1 if r % 2 else -1]:
            world._background_u8 = fn
            try:
                t = time.perf_counter()
                out[name] = world.render_scenes(scenes)
                dt = time.perf_counter() - t
            finally:
                world._background_u8 = fast_fn
            if r:
                times[name].append(dt)
    assert np.array_equal(out["reference"], out["current"]), "the fast background changed the pixels"
    ref, cur = statistics.median(times["reference"]), statistics.median(times["current"])
    res = {"what": f"render {args.n} built-in scenes (128 px, world seed {world.DEMO_SEED}), median of "
                   f"{args.repeats}, interleaved", "reference_s": round(ref, 3), "current_s": round(cur, 3),
           "speedup": round(ref / cur, 2), "identical_pixels": True, "per_repeat": times,
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__}}
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(json.dumps({k: res[k] for k in ("reference_s", "current_s", "speedup", "identical_pixels")}))


if __name__ == "__main__":
    main()
