"""Wall time of test-time adaptation per 1,000 queries vs encoding the same queries without it (issue 14).

One shift per direction on 1,000 held-out videos; every method run ``--repeats`` times interleaved with the
reference (the model's own encoder on the same shifted queries, through no cache), medians reported with their
ratio to the reference of the same run. CPU by default; ``--device cuda`` where there is one.

    python benchmarks/bench_adapt_time.py --threads 2
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="builtin:tiny-clip-video-seqtransf,builtin:tiny-clip-video-meanp")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "adapt_time.json"))
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(a.threads)
    import robustlab as rl
    from robustlab import adapt
    from robustlab.perturb.condition import Condition
    from robustlab.tasks.retrieval_bench import RetrievalBench

    rows = []
    for spec in a.models.split(","):
        model = rl.load_model(spec, device=a.device)
        ds = rl.datasets.build("builtin-videos", n=a.n)
        bench = RetrievalBench(model, ds, lazy=True)
        for d, shift in (("v2t", "mlvp_elastic:3"), ("t2v", "char_swap:3")):
            c = Condition.parse(shift)
            if d == "v2t":
                inputs = bench.visuals(c)[0]
                ref = lambda: model.encode_videos(inputs)  # noqa: E731
            else:
                inputs = bench.texts(c)[0]
                ref = lambda: model.encode_texts(inputs)  # noqa: E731
            times = {"reference": []}
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                ref()
                times["reference"].append(time.perf_counter() - t0)
                for m in ("tent", "tcr", "hat-vtr"):
                    r = adapt.run(model, ds, m, d, shift, bench=bench, keep_arrays=False)
                    times.setdefault(m, []).append(r.seconds["prepare"] + r.seconds["adapt"])
            nq = len(inputs)
            med = {k: statistics.median(v) * 1000 / nq for k, v in times.items()}
            row = {"model": spec, "direction": d, "shift": shift, "queries": nq,
                   "s_per_1000_queries": {k: round(v, 3) for k, v in med.items()},
                   "ratio_to_reference": {k: round(v / med["reference"], 2) for k, v in med.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = {"rows": rows, "repeats": a.repeats, "threads": a.threads, "device": str(a.device or "cpu"),
           "machine": platform.machine(), "cpus": os.cpu_count()}
    Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
