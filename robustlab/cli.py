"""The ``robustlab`` command line.

    robustlab models                                   built-in models and whether their weights are here
    robustlab perturbations [--modality image|text]    the perturbation registry with severity tables
    robustlab train tiny-clip [--seed S] [--out PATH]  train the built-in model on the synthetic world
    robustlab eval retrieval --model M --dataset builtin --n N --seed S [--perturb NAME --severity K]
                             [--text-perturb NAME --text-severity K] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys


def _err(msg: str, code: int = 2) -> int:
    print(f"robustlab: {msg}", file=sys.stderr)
    return code


def cmd_models(args) -> int:
    from robustlab.models import list_models

    rows = list_models()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        state = "available" if r["available"] else f"unavailable: {r['reason']}"
        print(f"{r['spec']:<24} {r['task']:<10} {state}\n    {r['description']}")
    print("\nHub models (need network or a local checkpoint): open_clip:ARCH/TAG, hf:REPO_ID, /local/path")
    return 0


def cmd_perturbations(args) -> int:
    from robustlab.perturb import list_perturbations

    specs = list_perturbations(modality=args.modality)
    if args.json:
        print(json.dumps([s.to_dict() for s in specs], indent=2, default=str))
        return 0
    for s in specs:
        avail = "" if s.available else f"  [unavailable: {s.reason}]"
        print(f"{s.name:<22} {s.modality:<6} {s.category:<10} {s.source}{avail}")
        for variant, table in s.variants.items():
            mark = "*" if variant == s.default_variant else " "
            cells = "  ".join(f"{k}:{json.dumps(v, separators=(',', ':'))}" for k, v in sorted(table.items()))
            print(f"    {mark}{variant:<16} {cells}")
    return 0


def cmd_train(args) -> int:
    if args.model != "tiny-clip":
        return _err(f"no training recipe for {args.model!r}; available: tiny-clip")
    from robustlab.train import train_tiny_clip

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    res = train_tiny_clip(out=args.out, seed=args.seed, n_train=args.n_train, epochs=args.epochs,
                          eval_n=args.eval_n)
    print(json.dumps(res, indent=2))
    return 0


def cmd_eval(args) -> int:
    from robustlab.models import ModelUnavailable, load_model

    if args.dataset != "builtin":
        return _err(f"dataset {args.dataset!r} is not supported yet; use --dataset builtin")
    if args.n < 2:
        return _err("--n must be at least 2")
    try:
        model = load_model(args.model, device=args.device)
    except (ModelUnavailable, ValueError) as e:
        return _err(str(e))
    if model.random_init:
        print("robustlab: warning: this model is randomly initialised (plumbing test only, not a result)",
              file=sys.stderr)
    from robustlab.evaluate import eval_retrieval

    try:
        if args.perturb:
            from robustlab.perturb import get_perturbation

            get_perturbation(args.perturb)
        if args.text_perturb:
            from robustlab.perturb import get_perturbation

            get_perturbation(args.text_perturb)
    except (KeyError, ValueError) as e:
        return _err(str(e).strip("'\""))
    from tqdm.auto import tqdm

    bar = tqdm(total=args.n, desc="encode gallery", unit="img", disable=args.json or not sys.stderr.isatty())

    def progress(done, total):
        bar.n = done
        bar.refresh()

    res = eval_retrieval(model, n=args.n, seed=args.seed, image_perturb=args.perturb, image_severity=args.severity,
                         text_perturb=args.text_perturb, text_severity=args.text_severity, progress=progress)
    bar.close()
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:<16} {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="robustlab", description="Perturb, compare and diagnose vision-language models.")
    sub = p.add_subparsers(dest="cmd", required=True)

    m = sub.add_parser("models", help="list built-in models")
    m.add_argument("--json", action="store_true")
    m.set_defaults(fn=cmd_models)

    q = sub.add_parser("perturbations", help="list the perturbation registry")
    q.add_argument("--modality", choices=["image", "video", "text"])
    q.add_argument("--json", action="store_true")
    q.set_defaults(fn=cmd_perturbations)

    t = sub.add_parser("train", help="train a built-in model on the synthetic world")
    t.add_argument("model", help="tiny-clip")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--n-train", type=int, default=20000)
    t.add_argument("--epochs", type=int, default=10)
    t.add_argument("--eval-n", type=int, default=1000)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--out", default=None, help="checkpoint path (default: assets/tiny-clip.safetensors)")
    t.set_defaults(fn=cmd_train)

    e = sub.add_parser("eval", help="evaluate a model on a freshly generated held-out split")
    e.add_argument("task", choices=["retrieval"])
    e.add_argument("--model", default="builtin:tiny-clip")
    e.add_argument("--dataset", default="builtin")
    e.add_argument("--n", type=int, default=1000)
    e.add_argument("--seed", type=int, default=1000)
    e.add_argument("--perturb", default=None, help="image perturbation name")
    e.add_argument("--severity", type=int, default=3)
    e.add_argument("--text-perturb", default=None, help="text perturbation name")
    e.add_argument("--text-severity", type=int, default=3)
    e.add_argument("--device", default=None)
    e.add_argument("--json", action="store_true")
    e.set_defaults(fn=cmd_eval)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        return _err("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
