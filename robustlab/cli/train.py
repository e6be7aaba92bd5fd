"""``robustlab train MODEL``: run a built-in model's training recipe (robustlab.training.RECIPES)."""
from __future__ import annotations

import importlib
import inspect
import json

from robustlab.cli.common import err
from robustlab.models import ModelUnavailable
from robustlab.training import RECIPES as TRAIN_RECIPES


def _resolve(target: str):
    """The recipe function named ``"module:function"``, or None when it is not importable here."""
    mod, fn = target.split(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ModuleNotFoundError, AttributeError):
        return None


def cmd_train(args) -> int:
    fn = _resolve(TRAIN_RECIPES[args.model]) if args.model in TRAIN_RECIPES else None
    if fn is None:
        ok = [k for k, v in TRAIN_RECIPES.items() if _resolve(v) is not None]
        return err(f"no training recipe for {args.model!r}; available: {', '.join(ok)}")
    if args.threads:
        import torch  # start-up: only a run with --threads needs torch before its recipe

        torch.set_num_threads(args.threads)
    kw = dict(out=args.out, seed=args.seed, eval_n=args.eval_n)
    if args.n_train is not None:
        kw["n_train"] = args.n_train
    if args.epochs is not None:
        kw["epochs"] = args.epochs
    if args.threads and "threads" in inspect.signature(fn).parameters:
        kw["threads"] = args.threads
    for stage, owner in (("stage2_from", "tiny-vit-clip and tiny-vit-clip-video"),
                         ("stage3_from", "tiny-vilt and tiny-vit-clip-video")):
        if getattr(args, stage, None):
            if stage not in inspect.signature(fn).parameters:
                return err(f"--{stage.replace('_', '-')} is for {owner}, not {args.model}")
            kw[stage] = getattr(args, stage)
    try:
        res = fn(**kw)
    except (ModelUnavailable, ValueError) as e:  # a missing or unfit checkpoint (--stage2-from, the base model)
        return err(str(e))
    print(json.dumps(res, indent=2))
    return 0
