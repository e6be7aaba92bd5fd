"""builtin:tiny-vilt quality on freshly generated held-out splits (what the README reports).

    python benchmarks/bench_fusion.py [--n 1000] [--seed 1000] [--clean-only]
                                      [--out benchmarks/results/tiny_vilt_quality.json]

Through the task layer (``rl.tasks.get(task).evaluate``). Clean: image and video VQA (n scenes + n videos, one
question each, per question type), grounding (acc at
IoU > 0.5, mean IoU), order reversal (a video and its time reversal: accuracy, pair consistency), CLAVI (n pairs; the
paper's swapped complement and the seamless re-rendered one), PEELING on the over-specified expressions of
``builtin-refs`` (grounding accuracy on original vs PEELING expressions, MMI), and image–text matching
(caption vs a hard negative; not a quality bar of the issue, reported for honesty).
Perturbed rows: grounding under an image noise, an image blur and a text perturbation.
Also the checkpoint's size and recipe (training time) as recorded in its metadata. Single-threaded.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's robustlab
ROWS = [  # (task, dataset, condition set)
    ("vqa", "builtin", {}),
    ("vqa", "builtin-videos", {}),
    ("grounding", "builtin", {}),
    ("order-reversal", "builtin-videos", {}),
    ("clavi", "builtin-videos", {}),
    ("clavi", "builtin-videos", {}, {"method": "render"}),
    ("peeling", "builtin-refs", {}),
    ("itm", "builtin", {}),
    ("itm", "builtin-videos", {}),
    ("grounding", "builtin", {"visual": "gaussian_noise:3"}),
    ("grounding", "builtin", {"visual": "defocus_blur:5"}),
    ("grounding", "builtin", {"text": "keyboard:3"}),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--clean-only", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (accuracies do not depend on it)")
    ap.add_argument("--out", default=str(HERE / "results" / "tiny_vilt_quality.json"))
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from robustlab.datasets import build
    from robustlab.models import load_model
    from robustlab.tasks import get
    from robustlab.models.checkpoints import checkpoint_path
    from robustlab.models.tiny_vilt import CHECKPOINT

    model = load_model("builtin:tiny-vilt", device="cpu")
    ck = checkpoint_path(CHECKPOINT)
    out = {"model": model.model_id, "n": args.n, "seed": args.seed, "threads": args.threads,
           "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
           "checkpoint_mb": round(ck.stat().st_size / 1e6, 2), "train": model.meta.get("train", {}), "rows": []}
    for task, name, cond, *opts in ROWS[:9] if args.clean_only else ROWS:
        t = time.time()
        # order reversal: n pairs from the first videos that have one (about 1 in 2.2 has a before/after question);
        # CLAVI: n pairs from the first videos whose two events concern two objects (about 1 in 2.1)
        n_items = {"order-reversal": 20 * args.n + 100, "clavi": 3 * args.n}.get(task, args.n)
        ds = build(name, split="test", seed=args.seed, n=n_items)
        res = get(task).evaluate(model, ds, cond, **({"n": args.n} if task in ("clavi", "order-reversal") else {}),
                                 **(opts[0] if opts else {}))[0]
        r = {"task": task, **res.to_json(), "seconds": round(time.time() - t, 1)}
        r.pop("versions")
        out["rows"].append(r)
        print(json.dumps({k: v for k, v in r.items() if k not in ("metrics", "extra")} | {
            k: v for k, v in res.flat().items() if "per_type" not in k and "by_expression" not in k
            and not k.startswith("fine")}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
