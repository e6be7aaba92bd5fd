"""t-SNE of 10,000 points: robustlab's openTSNE path vs scikit-learn's Barnes-Hut t-SNE, same data, equal threads.

    python benchmarks/bench_tsne.py [--n 10000] [--threads 1,2] [--reps 2] [--out benchmarks/results/tsne.json]

Data: a 10-cluster Gaussian mixture in 64-d (clusters of different spread; seed 0), float32.

Compared, at each thread count T in ``--threads`` (both sides get T: ``threadpoolctl`` limits OpenMP and BLAS to T,
openTSNE gets ``n_jobs=T``, scikit-learn ``n_jobs=T``):

* robustlab: ``robustlab.diagnostics.embedding.tsne(X, perplexity=30, seed=0, n_jobs=T, gradient="fft")`` with its
  defaults — openTSNE, FFT-accelerated interpolation gradient with grid cells of 2 map units
  (``ints_in_interval=2``; at least ``min_num_intervals=40`` cells a side), affinities from the exact 90 nearest
  neighbours (``neighbors="auto"`` = exact at this size), PCA initialisation, learning rate N/exaggeration,
  250 early-exaggeration (12) + 500 further iterations;
* scikit-learn: ``sklearn.manifold.TSNE(perplexity=30, init="pca", learning_rate="auto", max_iter=750,
  random_state=0, method="barnes_hut", angle=0.5)`` — the same 750 iterations (250 exaggerated + 500), exact
  91 nearest neighbours.

Runs are interleaved (robustlab T=1, scikit-learn T=1, robustlab T=2, scikit-learn T=2, then again) ``--reps`` times;
the table gives the median wall-clock seconds and the ratio of medians. The machine is shared, so the load average
(``os.getloadavg``) is recorded before and after every run.

Quality, computed identically on both maps so that speed is not bought with a worse map:
``knn10_agreement`` (fraction of each point's 10 nearest map neighbours from its own cluster; saturates on these
clusters), ``trustworthiness`` (``sklearn.manifold.trustworthiness`` on a fixed random subsample of 2,000 points,
seed 0, n_neighbors=10) and ``knn10_preservation`` (fraction of each point's 10 nearest neighbours in the 64-d input
that are among its 10 nearest in the map, all 10,000 points). Target: robustlab ≥ 3× faster at equal threads,
quality within 0.01 of scikit-learn's.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def data(n: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, size=(10, 64))
    lab = rng.integers(0, 10, n)
    spread = np.linspace(0.6, 1.6, 10)[lab][:, None]
    return (centres[lab] + spread * rng.normal(size=(n, 64))).astype(np.float32), lab


def _knn(a, k=10):
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=k + 1).fit(a).kneighbors(a, return_distance=False)[:, 1:]


def knn_agreement(y, lab, k=10) -> float:
    return float((lab[_knn(y, k)] == lab[:, None]).mean())


def quality(X, y, lab, nn_x, sub) -> dict:
    import numpy as np
    from sklearn.manifold import trustworthiness

    nn_y = _knn(y)
    pres = float((np.sort(nn_x, 1)[:, :, None] == nn_y[:, None, :]).any(2).mean())
    return {"knn10_agreement": round(knn_agreement(y, lab), 4),
            "trustworthiness": round(float(trustworthiness(X[sub], y[sub], n_neighbors=10)), 4),
            "knn10_preservation": round(pres, 4)}


def load() -> float:
    return round(os.getloadavg()[0], 2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--threads", default="1,2", help="thread counts, each used by both sides (comma-separated)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "tsne.json"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import openTSNE
    import sklearn
    from sklearn.manifold import TSNE as SKTSNE
    from threadpoolctl import threadpool_limits

    from robustlab.diagnostics.embedding import tsne

    X, lab = data(args.n)
    nn_x = _knn(X)
    sub = np.random.default_rng(0).choice(args.n, min(2000, args.n), replace=False)
    threads = [int(t) for t in args.threads.split(",")]
    impls = {
        "robustlab": lambda t: tsne(X, perplexity=30, seed=0, n_jobs=t, gradient="fft"),
        "sklearn": lambda t: SKTSNE(n_components=2, perplexity=30, init="pca", learning_rate="auto", max_iter=750,
                                    random_state=0, method="barnes_hut", angle=0.5, n_jobs=t).fit_transform(X),
    }
    runs = []
    for rep in range(args.reps):
        for t in threads:
            for name, fn in impls.items():
                l0 = load()
                with threadpool_limits(limits=t):
                    t0 = time.perf_counter()
                    y = fn(t)
                    sec = time.perf_counter() - t0
                run = {"rep": rep, "impl": name, "threads": t, "seconds": round(sec, 2), "load_before": l0,
                       "load_after": load(), **quality(X, np.asarray(y, dtype=np.float64), lab, nn_x, sub)}
                runs.append(run)
                print(json.dumps(run), flush=True)
    table = []
    for t in threads:
        row = {"threads": t}
        for name in impls:
            rs = [r for r in runs if r["impl"] == name and r["threads"] == t]
            row[f"{name}_seconds_median"] = round(statistics.median(r["seconds"] for r in rs), 2)
            row[f"{name}_seconds_all"] = [r["seconds"] for r in rs]
            for key in ("knn10_agreement", "trustworthiness", "knn10_preservation"):
                row[f"{name}_{key}"] = rs[0][key]
        row["speedup"] = round(row["sklearn_seconds_median"] / row["robustlab_seconds_median"], 2)
        table.append(row)
    res = {"benchmark": f"t-SNE of {args.n} points (64-d, 10 clusters, float32), perplexity 30, "
                        "750 iterations (250 exaggerated + 500) on both sides",
           "robustlab": "robustlab.diagnostics.embedding.tsne defaults "
                        f"(openTSNE {openTSNE.__version__}, FFT gradient, "
                        "ints_in_interval=2, min_num_intervals=40, n_interpolation_points=3, exact neighbours)",
           "sklearn": f"sklearn.manifold.TSNE (scikit-learn {sklearn.__version__}, Barnes-Hut, angle 0.5, "
                      "max_iter=750, init pca, learning_rate auto)",
           "cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "note": "runs interleaved, medians of --reps wall-clock seconds; load = 1-minute load average before/after "
                   "each run (other jobs on the machine show there)",
           "reps": args.reps, "target_speedup": 3.0, "table": table, "runs": runs}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
