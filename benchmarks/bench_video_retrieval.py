"""Held-out quality of the built-in video retrieval models, clean and under video perturbations.

    python benchmarks/bench_video_retrieval.py [--n 1000] [--seed 1000] [--threads 1]

Writes benchmarks/results/tiny_clip_video_quality.json: for builtin:tiny-clip-video-meanp and -seqtransf, text→video
and video→text R@1/5/10, MdR, MnR on ``n`` freshly generated held-out event videos (world seed 1000 by default,
64 px), plus R@1 with every video played backwards (``*_reversed``) and the own-caption-vs-reversed-caption
accuracy (``order_acc``), clean and under a few video perturbations (temporal ones at severity 3 and 5, and
frame-level noise/blur). The same numbers come from
``robustlab eval video-retrieval --model builtin:tiny-clip-video-seqtransf --dataset builtin --n 1000 --seed 1000
--json [--perturb NAME --severity K]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONDITIONS = [
    (None, 0),
    ("reverse_sampling", 1), ("reverse_sampling", 3), ("reverse_sampling", 5),
    ("jumble", 3), ("jumble", 5),
    ("box_jumble", 3), ("box_jumble", 5),
    ("mlvp_temporal_scrambling", 3), ("mlvp_temporal_scrambling", 5),
    ("gaussian_noise", 3), ("defocus_blur", 5),
]
MODELS = ("builtin:tiny-clip-video-meanp", "builtin:tiny-clip-video-seqtransf")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "tiny_clip_video_quality.json"))
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from robustlab.datasets import build
    from robustlab.models import load_model
    from robustlab.perturb.condition import Condition
    from robustlab.tasks import get
    from robustlab.perturb import get_perturbation

    import tempfile

    from robustlab.engine.cache import EmbeddingCache

    # one cache for the run: the captions (and the clean gallery) are encoded once, not once per condition
    cache = EmbeddingCache(root=tempfile.mkdtemp(prefix="rl-bench-video-"))
    rows = []
    t0 = time.time()
    models = {s: load_model(s, device="cpu") for s in MODELS}
    ds = build("builtin-videos", split="test", n=args.n, seed=args.seed)
    for name, sev in CONDITIONS:
        if name is not None:
            try:
                spec = get_perturbation(name)
            except KeyError:
                print(f"skip {name}: not registered", file=sys.stderr)
                continue
            if not spec.available:
                print(f"skip {name}: unavailable ({spec.reason})", file=sys.stderr)
                continue
        for s, m in models.items():
            t = time.time()
            res = get("retrieval").evaluate(m, ds, {"visual": Condition(name, sev)} if name else None, cache=cache)[0]
            r = {k: round(v, 4) if isinstance(v, float) else v for k, v in res.flat().items()}
            r.update(model=s, n=res.n)
            r["condition"] = "clean" if name is None else f"{name} s{sev}"
            r["seconds"] = round(time.time() - t, 1)
            rows.append(r)
            print(f"{s:<36} {r['condition']:<30} t2v R@1 {r['t2v_R@1']:.3f}  v2t R@1 {r['v2t_R@1']:.3f}  "
                  f"reversed t2v R@1 {r['t2v_R@1_reversed']:.3f}  order_acc {r['order_acc']:.3f}/"
                  f"{r['order_acc_reversed']:.3f}  "
                  f"({r['seconds']}s)", flush=True)
    meta = {m: {k: v for k, v in models[m].info().extra.items() if k in ("train", "aggregator", "num_frames")}
            for m in MODELS}
    out = dict(n=args.n, seed=args.seed, frame_size=64, threads=args.threads,
               seconds=round(time.time() - t0, 1), models=meta, rows=rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
