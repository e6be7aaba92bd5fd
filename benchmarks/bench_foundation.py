"""Foundation benchmarks, all in one run, as ratios against a reference measured in the same process.

    python benchmarks/bench_foundation.py [--n 1000] [--quality] [--out benchmarks/results/foundation.json]

1. Embedding cache: cold vs warm encoding of an n-image gallery through ``cached_encode_images`` with
   builtin:tiny-clip (cold = empty cache: hash + encode + write; warm = hash + read). Target: warm ≥ 50× faster.
   The plain model pass (``model.encode_images``, no cache) is reported too, so the cache's own cost on the
   cold path shows.
2. Per-image time of each v1 image perturbation at 224×224 (severity 3), from bench_perturb.
3. With --quality: the tiny-clip quality figures on 1,000 held-out scenes, clean and under strong noise,
   blur and text perturbations (what the README reports).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def bench_cache(n: int = 1000, repeats: int = 3) -> dict:
    import numpy as np

    from robustlab.engine import EmbeddingCache, cached_encode_images
    from robustlab.datasets import build
    from robustlab.models import load_model

    model = load_model("builtin:tiny-clip", device="cpu")
    imgs = build("builtin", n=n, seed=4242, cache=False).visuals()
    model.encode_images(imgs[:64])  # warm-up of kernels, outside the timings
    plain, cold, warm = [], [], []
    for r in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            cache = EmbeddingCache(d)
            t = time.perf_counter()
            ref = model.encode_images(imgs)
            plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            a = cached_encode_images(model, imgs, cache=cache)
            cold.append(time.perf_counter() - t)
            for _ in range(3):
                t = time.perf_counter()
                b = cached_encode_images(model, imgs, cache=cache)
                warm.append(time.perf_counter() - t)
            assert np.array_equal(a, b) and np.allclose(a, ref, atol=1e-5)
    c, w, p = statistics.median(cold), statistics.median(warm), statistics.median(plain)
    return {"n_images": n, "image_px": int(imgs[0].shape[0]), "plain_encode_s": round(p, 4),
            "cold_s": round(c, 4), "warm_s": round(w, 5), "warm_speedup": round(c / w, 1),
            "images_per_s_plain": round(n / p, 1), "target_speedup": 50, "pass": c / w >= 50}


def bench_quality(n: int = 1000) -> list[dict]:
    from robustlab.datasets.synthetic import world
    from robustlab.tasks.retrieval import eval_retrieval
    from robustlab.models import load_model

    model = load_model("builtin:tiny-clip", device="cpu")
    rows = []
    conds = [dict(), dict(image_perturb="gaussian_noise", image_severity=1),
             dict(image_perturb="gaussian_noise", image_severity=3),
             dict(image_perturb="gaussian_noise", image_severity=5),
             dict(image_perturb="defocus_blur", image_severity=3), dict(image_perturb="defocus_blur", image_severity=5),
             dict(image_perturb="jpeg_compression", image_severity=5), dict(image_perturb="pixelate", image_severity=5),
             dict(text_perturb="keyboard", text_severity=3), dict(text_perturb="char_swap", text_severity=5)]
    for c in conds:
        r = eval_retrieval(model, n=n, seed=world.HELDOUT_SEED, **c)
        label = "clean" if not c else " + ".join(f"{v}" for k, v in c.items() if k.endswith("perturb")) + \
            " s" + str(c.get("image_severity", c.get("text_severity")))
        rows.append({"condition": label, **{k: r[k] for k in ("t2i_R@1", "t2i_R@5", "t2i_R@10", "i2t_R@1",
                                                               "i2t_R@5", "i2t_R@10")}})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "foundation.json"))
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                       "torch": torch.__version__, "threads": torch.get_num_threads()}}
    out["cache"] = bench_cache(args.n)
    c = out["cache"]
    print(f"cache: cold {c['cold_s']:.3f}s (plain model pass {c['plain_encode_s']:.3f}s), "
          f"warm {c['warm_s'] * 1e3:.1f}ms"
          f" -> {c['warm_speedup']}x (target >= 50x: {'PASS' if c['pass'] else 'FAIL'})")
    import bench_perturb

    out["perturb"] = bench_perturb.run(20)
    print("\n| perturbation | ms/image (224×224, s3) |\n|---|---:|")
    for r in out["perturb"]:
        print(f"| {r['name']} | {r['ms_per_image']} |")
    if args.quality:
        out["quality"] = bench_quality()
        print("\n| condition | t2i R@1 | t2i R@5 | t2i R@10 | i2t R@1 | i2t R@5 | i2t R@10 |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
        for r in out["quality"]:
            print("| " + " | ".join([r["condition"]] + [f"{r[k]:.3f}" for k in list(r)[1:]]) + " |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    quality = out.pop("quality", None)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"\nwrote {args.out}")
    if quality is not None:  # kept apart: the quality table changes only when the model does
        q = Path(args.out).with_name("tiny_clip_quality.json")
        q.write_text(json.dumps({"machine": out["machine"], "n": 1000, "rows": quality}, indent=2))
        print(f"wrote {q}")
    return 0 if c["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
