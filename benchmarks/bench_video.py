"""Video perturbation speed: a 300-frame 224×224 clip through every per-frame (image) perturbation, severity 3.

For each image perturbation registered now (and available), three timings of the same work:

- **registry**: ``robustlab.perturb.perturb(video, name, 3)``, the path users get: the registry's video map (below)
  plus input checks and the record (two BLAKE2b hashes of 45 MB: ~0.2 s of the total at 300×224²).
- **map**: the registry's video path alone (``registry._map_frames``): fixed chunks of ``VIDEO_CHUNK_ELEMENTS``
  (one frame at 224², more for small frames), one vectorised call per chunk for ``batched`` ops (one call per frame
  otherwise), chunks spread over ``VIDEO_THREADS`` threads.
- **loop**: a plain Python loop calling the image function on each frame with one advancing generator.

ratio = loop / map (> 1: the registry's video path is faster than the frame loop). Then the absolute seconds of
each video-specific perturbation (default variant, severity 3, full ``perturb``) on the same clip. Timings are
wall-clock and sensitive to other load on the machine (the table header prints the load average). Last, the
parallel ceiling: plain per-frame NumPy work in one thread vs split over the video threads, i.e. what threads
alone can give here.

The run first applies ``robustlab.perturb.allocator.tune_allocator()`` (glibc malloc keeps freed temporaries, as
the CLI and dashboard do); ``--no-malloc-tuning`` measures glibc's defaults instead (a separate run: the setting
is process-wide and cannot be undone).

    python benchmarks/bench_video.py [--frames 300] [--size 224] [--repeats 1] [--json out.json]
                                     [--no-malloc-tuning]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def make_clip(frames: int = 300, size: int = 224, seed: int = 0) -> np.ndarray:
    """A smooth, moving synthetic clip (gradients, a moving disc, mild grain)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    out = np.empty((frames, size, size, 3), np.uint8)
    for t in range(frames):
        img = np.stack([120 + 80 * np.sin((xx + 2 * t) / 17), 120 + 70 * np.cos(yy / 13 + t / 20),
                        100 + 60 * np.sin((xx + yy) / 23)], -1)
        cx = (40 + 3 * t) % size
        img[(xx - cx) ** 2 + (yy - size / 2) ** 2 < (size / 8) ** 2] = [220, 40, 40]
        img += rng.normal(0, 2, img.shape).astype(np.float32)
        out[t] = np.clip(img, 0, 255).astype(np.uint8)
    return out


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def parallel_ceiling(clip: np.ndarray, threads: int, repeats: int) -> dict:
    """What threads alone can give on this machine, for two kinds of per-frame NumPy work over the whole clip:
    in one thread, then with the clip split into ``threads`` contiguous parts, one per thread.

    - ``memory``: uint8 -> float32, twenty in-place affine passes, clip, back to uint8 (memory-bound, like the
      blends, blurs and colour ops);
    - ``compute``: one float32 standard normal per element (compute-bound, like the noise ops)."""
    import concurrent.futures

    def memory(part):
        for f in part:
            x = f.astype(np.float32) * np.float32(1 / 255)
            for _ in range(20):
                x *= np.float32(1.1)
                x += np.float32(0.05)
            (np.clip(x, 0, 1) * 255).astype(np.uint8)

    def compute(part):
        rng = np.random.default_rng(0)
        for f in part:
            rng.standard_normal(f.shape, dtype=np.float32)

    parts = np.array_split(clip, threads)
    out = {"threads": threads}
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as ex:
        for name, fn in (("memory", memory), ("compute", compute)):
            serial = _best(lambda: fn(clip), repeats)
            par = _best(lambda: list(ex.map(fn, parts)), repeats)
            out[name] = {"serial_s": serial, "threaded_s": par, "speedup": serial / par}
    return out


def run(frames: int = 300, size: int = 224, severity: int = 3, repeats: int = 1, only: list[str] | None = None) -> dict:
    from robustlab.perturb import list_perturbations, perturb
    from robustlab.perturb import registry
    from robustlab.perturb.allocator import allocator_state

    clip = make_clip(frames, size)
    per_frame, video_ops, skipped = [], [], []
    for spec in list_perturbations("video"):
        if only and spec.name not in only:
            continue
        if not spec.available:
            skipped.append({"name": spec.name, "reason": spec.reason})
            continue
        if spec.modality == "image":
            params = spec.params(severity)

            def loop(spec=spec, params=params):
                rng = np.random.default_rng(0)
                return np.stack([spec.fn(f, dict(params), rng) for f in clip])

            row = {"name": spec.name, "batched": spec.batched}
            try:
                row["registry_s"] = _best(lambda spec=spec: perturb(clip, spec.name, severity, seed=0), repeats)
                row["map_s"] = _best(lambda spec=spec, params=params: registry._map_frames(
                    spec, clip, params, np.random.default_rng(0)), repeats)
            except Exception as e:  # report, keep going
                row["error"] = f"registry path failed: {type(e).__name__}: {' '.join(str(e).split())[:160]}"
            row["loop_s"] = _best(loop, repeats)
            if "registry_s" in row:
                row["ratio"] = row["loop_s"] / row["map_s"]
            per_frame.append(row)
        else:
            row = {"name": spec.name, "variant": spec.default_variant, "category": spec.category}
            try:
                row["seconds"] = _best(lambda spec=spec: perturb(clip, spec.name, severity, seed=0), repeats)
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
            video_ops.append(row)
    ceiling = parallel_ceiling(clip, max(registry.VIDEO_THREADS, 2), repeats)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"frames": frames, "parallel_ceiling": ceiling, "size": size, "severity": severity, "repeats": repeats,
            "per_frame": per_frame,
            "video_ops": video_ops, "skipped": skipped, "cpu_count": os.cpu_count(), "threads": registry.VIDEO_THREADS,
            "chunk_elements": registry.VIDEO_CHUNK_ELEMENTS, "load_average_1min": load,
            "allocator": allocator_state(),
            "machine": platform.machine(), "python": platform.python_version(), "numpy": np.__version__}


def markdown(res: dict) -> str:
    load = res.get("load_average_1min")
    lines = [f"Per-frame perturbations, {res['frames']}×{res['size']}×{res['size']} clip, severity {res['severity']} "
             f"(best of {res['repeats']}; {res['cpu_count']} CPUs, {res['threads']} threads, glibc malloc "
             + ("tuned" if res.get("allocator", {}).get("applied") else "defaults")
             + (f", load average {load:.1f} at the end" if load is not None else "") + "):", "",
             "| perturbation | function | perturb() (s) | video map (s) | frame loop (s) | loop / map |",
             "|---|---|---:|---:|---:|---:|"]
    for r in res["per_frame"]:
        path = "batched: one call per chunk" if r["batched"] else "per frame (not vectorised)"
        if "error" in r:
            lines.append(f"| {r['name']} | {path} | {r['error']} | – | {r['loop_s']:.2f} | – |")
        else:
            lines.append(f"| {r['name']} | {path} | {r['registry_s']:.2f} | {r['map_s']:.2f} | {r['loop_s']:.2f} "
                         f"| {r['ratio']:.2f}× |")
    c = res.get("parallel_ceiling")
    if c:
        m, k = c["memory"], c["compute"]
        lines += ["", f"Parallel ceiling on this machine ({c['threads']} threads over the same 300 frames): "
                      f"memory-bound per-frame NumPy work {m['serial_s']:.2f} s -> {m['threaded_s']:.2f} s "
                      f"(**{m['speedup']:.2f}×**), "
                      f"compute-bound (normal RNG) {k['serial_s']:.2f} s -> {k['threaded_s']:.2f} s "
                      f"(**{k['speedup']:.2f}×**): what threads alone can give a frame loop's own work here."]
    lines += ["", "Video-specific perturbations (default variant):", "",
              "| perturbation | category | variant | seconds |", "|---|---|---|---:|"]
    for r in res["video_ops"]:
        secs = f"{r['seconds']:.2f}" if "seconds" in r else r["error"]
        lines.append(f"| {r['name']} | {r['category']} | {r['variant']} | {secs} |")
    if res["skipped"]:
        lines += ["", "Skipped (unavailable): "
                  + "; ".join(f"{s['name']} ({s['reason'][:80]})" for s in res["skipped"])]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--severity", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--only", nargs="*", help="perturbation names to time (default: all)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--no-malloc-tuning", action="store_true",
                    help="keep glibc's malloc defaults (the CLI and dashboard tune them: robustlab.perturb.allocator)")
    a = ap.parse_args(argv)
    if not a.no_malloc_tuning:
        from robustlab.perturb.allocator import tune_allocator

        tune_allocator()
    res = run(a.frames, a.size, a.severity, a.repeats, a.only)
    print(markdown(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
