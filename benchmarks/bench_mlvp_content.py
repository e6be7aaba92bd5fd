"""What MLVP's content-shift choices do to video→text retrieval (issue 48, item 8): v2t R@1 of a built-in video model
on the built-in test videos, clean and under

* ``mlvp_occlusion`` on the fixed centred half-frame box (``/centre``) vs on each video's main-object box (the
  default, which the built-in videos know), and
* ``mlvp_event_insertion`` from the 32 synthetic clips (``/synthetic``) vs from the dataset's own most similar other
  video by the model's embeddings (the default with a donor pool),

at severities 3 and 5, through the retrieval task (the path sweeps take). Also the occluded share of each frame's
pixels, for scale.

    python benchmarks/bench_mlvp_content.py            # n = 100; writes benchmarks/results/mlvp_content.json
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROWS = [("occlusion", "centre box", "mlvp_occlusion/centre"), ("occlusion", "main-object box", "mlvp_occlusion"),
        ("event insertion", "synthetic corpus", "mlvp_event_insertion/synthetic"),
        ("event insertion", "own-dataset donor", "mlvp_event_insertion")]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description="v2t R@1 under MLVP's content-shift choices (issue 48, item 8)")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--model", default="builtin:tiny-clip-video-seqtransf")
    ap.add_argument("--severities", default="3,5")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mlvp_content.json"))
    a = ap.parse_args(argv)

    import robustlab as rl
    from robustlab.engine.cache import EmbeddingCache
    from robustlab.metrics import bootstrap
    from robustlab.perturb.condition import Condition
    from robustlab.tasks.retrieval import TASK
    from robustlab.tasks.retrieval_bench import RetrievalBench

    t0 = time.time()
    ds = rl.datasets.build("builtin-videos", split="test", n=a.n)
    model = rl.load_model(a.model)
    bench = RetrievalBench(model, ds, cache=EmbeddingCache(enabled=False), lazy=True)
    sevs = [int(s) for s in a.severities.split(",")]
    conds = [{}] + [{"visual": Condition.parse(f"{name}:{s}")} for _, _, name in ROWS for s in sevs]
    res = TASK.evaluate(model, ds, conds, bench=bench, order=False, directions=["v2t"], keep_ranks=True)
    r1 = [r.metrics["v2t"]["R@1"] for r in res]
    ranks = [r.extra["ranks"]["v2t"] for r in res]
    rows, k, at = [], 1, {}
    for shift, choice, name in ROWS:
        row = {"shift": shift, "choice": choice, "perturbation": name}
        for s in sevs:
            row[f"s{s}"] = round(float(r1[k]), 4)
            at[(shift, choice, s)] = ranks[k]
            recs = bench.visuals(Condition.parse(f"{name}:{s}"))[1]
            p = recs[0]["params"]
            row[f"s{s}_record"] = p.get("box") or p.get("corpus")
            if shift == "occlusion":  # the blackened share of the pixels, over every video's frames
                outs = bench.visuals(Condition.parse(f"{name}:{s}"))[0]
                row[f"s{s}_black_px"] = round(float(np.mean([(o.max(-1) == 0).mean() for o in outs])), 4)
            k += 1
        rows.append(row)
    # the default choice against the named variant, on the same queries: paired bootstrap of the R@1 difference
    paired = []
    for shift in dict.fromkeys(sh for sh, _, _ in ROWS):
        variant, default = [c for sh, c, _ in ROWS if sh == shift]
        for s in sevs:
            p = bootstrap.paired(at[(shift, default, s)], at[(shift, variant, s)])
            paired.append({"shift": shift, "severity": s, "default": default, "variant": variant,
                           **{k_: round(v, 4) if isinstance(v, float) else v for k_, v in p.items()}})
    out = {"what": "v2t R@1 under MLVP occlusion (centre vs main-object box) and event insertion (synthetic corpus "
                   "vs own-dataset donor) on the built-in test videos", "n": a.n, "model": a.model,
           "dataset": "builtin-videos test",
           "clean_v2t_R@1": round(float(r1[0]), 4), "rows": rows,
           "paired_R@1_default_minus_variant": paired, "seconds": round(time.time() - t0, 1),
           "command": "python benchmarks/bench_mlvp_content.py" + (f" --n {a.n}" if a.n != 100 else ""),
           "machine": platform.platform()}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"clean v2t R@1 {out['clean_v2t_R@1']:.3f} (n={a.n}, {a.model})")
    for row in rows:
        print(f"{row['shift']:16s} {row['choice']:18s} " + "  ".join(f"s{s} {row[f's{s}']:.3f}" for s in sevs))
    for p in paired:
        print(f"{p['shift']} s{p['severity']}: {p['default']} - {p['variant']} = {p['diff']:+.3f} "
              f"[{p['lo']:+.3f}, {p['hi']:+.3f}]" + ("" if p["holds"] else " (can't be told apart)"))
    return out


if __name__ == "__main__":
    main()
