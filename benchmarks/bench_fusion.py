"""builtin:tiny-vilt quality on freshly generated held-out splits (what the README reports).

    python benchmarks/bench_fusion.py [--n 1000] [--seed 1000] [--clean-only]
                                      [--out benchmarks/results/tiny_vilt_quality.json]

Clean: image and video VQA (n scenes + n videos, one question each, per question type), grounding (acc at
IoU > 0.5, mean IoU) and CLAVI complement pairs (accuracy on originals / complements, pair consistency), and image–text matching
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
ROWS = [  # (task, kwargs)
    ("vqa", {}),
    ("grounding", {}),
    ("clavi", {}),
    ("itm", {}),
    ("grounding", {"perturb": "gaussian_noise", "severity": 3}),
    ("grounding", {"perturb": "defocus_blur", "severity": 5}),
    ("grounding", {"text_perturb": "keyboard", "text_severity": 3}),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--clean-only", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "tiny_vilt_quality.json"))
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from robustlab.tasks.evaluate_fusion import eval_clavi, eval_grounding, eval_itm, eval_vqa
    from robustlab.models import load_model
    from robustlab.models.checkpoints import checkpoint_path
    from robustlab.models.tiny_vilt import CHECKPOINT

    fns = {"vqa": eval_vqa, "grounding": eval_grounding, "clavi": eval_clavi, "itm": eval_itm}
    model = load_model("builtin:tiny-vilt", device="cpu")
    ck = checkpoint_path(CHECKPOINT)
    out = {"model": model.model_id, "n": args.n, "seed": args.seed, "threads": 1,
           "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
           "checkpoint_mb": round(ck.stat().st_size / 1e6, 2), "train": model.meta.get("train", {}), "rows": []}
    for task, kw in ROWS[:4] if args.clean_only else ROWS:
        t = time.time()
        r = fns[task](model, n=args.n, seed=args.seed, **kw)
        r.update(task=task, seconds=round(time.time() - t, 1))
        out["rows"].append(r)
        print(json.dumps({k: v for k, v in r.items() if k not in ("per_type", "by_expression")}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
