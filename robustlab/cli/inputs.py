"""The dataset and the model that ``eval``, ``hubness`` and ``adapt`` run on: each built from the command's flags,
or a one-line message and exit code 2.

The registries are read through their modules at call time (``registry.build``, ``models.load_model``), so a test
that replaces them reaches the commands too.
"""
from __future__ import annotations

import sys

from robustlab import models
from robustlab.cli.common import err
from robustlab.datasets import registry as datasets
from robustlab.models import ModelUnavailable


def build_dataset(args, name: str, check_n: bool = True):
    """(dataset, None) or (None, exit code after a one-line message). ``--n`` is checked before any work: at least
    1, at most the built-in world's maximum (the dataset refuses more before generating anything) and, with
    ``check_n``, no more than the dataset holds (a folder's loader stops at what it has)."""
    if args.n is not None and args.n < 1:
        return None, err("--n must be at least 1")
    kw = {k: v for k, v in (("n", args.n), ("seed", args.seed)) if v is not None}
    if args.trust_pickle:
        kw["trust_pickle"] = True
    try:
        ds = datasets.build(name, root=args.root, split=args.split, **kw)
    except (ValueError, OSError) as e:
        return None, err(str(e))
    if check_n and args.n is not None and len(ds) < args.n:
        where = ds.name + (f" ({ds.split} split)" if getattr(ds, "split", None) else "")
        return None, err(f"--n {args.n}: {where} holds {len(ds)} items; pass --n {len(ds)} or less")
    return ds, None


def load_model(args):
    """(model, None) or (None, exit code after a one-line message); a warning on stderr for a random-init model."""
    try:
        model = models.load_model(args.model, device=args.device)
    except (ModelUnavailable, ValueError) as e:
        return None, err(str(e))
    if getattr(model, "random_init", False):
        print("robustlab: warning: this model is randomly initialised (plumbing test only, not a result)",
              file=sys.stderr)
    return model, None
