"""Time each v1 image perturbation at severity 3 on one 224×224 RGB image.

    python benchmarks/bench_perturb.py [n]

Reports the median over ``n`` runs (after one warm-up call that pays the lazy imports) of
``robustlab.perturb.perturb`` end to end (input conversion, hashing, record) and of the bare registered
function (the operation alone). Single process, default OpenCV/numpy threading.
"""
from __future__ import annotations

import os
import platform
import statistics
import sys
import time

import numpy as np

SIZE = 224
SEVERITY = 3


def _image(size: int = SIZE) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    img = np.stack([60 + 120 * xx / size, 50 + 110 * yy / size, 90 + 60 * np.sin(xx / 5) * np.cos(yy / 7)], -1)
    img += np.random.default_rng(0).normal(0, 3, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def _median_ms(fn, n: int) -> float:
    fn()  # warm-up: lazy imports, kernel caches
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


V1 = ("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "jpeg_compression", "pixelate")


def run(n: int = 20, names=V1) -> list[dict]:
    from robustlab.perturb import get_perturbation, perturb

    img = _image()
    rows = []
    for spec in (get_perturbation(nm) for nm in names):
        if not spec.available:
            rows.append({"name": spec.name, "ms_per_image": None, "fn_ms": None, "note": spec.reason})
            continue
        params = get_perturbation(spec.name).params(SEVERITY)
        rows.append({
            "name": spec.name,
            "severity": SEVERITY,
            "size": f"{SIZE}x{SIZE}",
            "ms_per_image": round(_median_ms(lambda: perturb(img, spec.name, SEVERITY, seed=0), n), 3),
            "fn_ms": round(_median_ms(lambda: spec.fn(img, dict(params), np.random.default_rng(0)), n), 3),
            "n": n,
        })
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| perturbation (severity 3, 224×224) | ms/image (`perturb`) | ms (operation only) |",
             "|---|---:|---:|"]
    for r in rows:
        if r["ms_per_image"] is None:
            lines.append(f"| {r['name']} | unavailable | {r.get('note', '')} |")
        else:
            lines.append(f"| {r['name']} | {r['ms_per_image']:.2f} | {r['fn_ms']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rows = run(n)
    print(markdown(rows))
    print(f"\nmedian of {n} runs; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
