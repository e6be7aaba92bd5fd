"""``robustlab hubness``: k-occurrence hubness indices and R@K of a model's retrieval, clean vs perturbed."""
from __future__ import annotations

import json

from robustlab.cli import inputs
from robustlab.cli.common import counting_bar, err, msg
from robustlab.diagnostics.hubness_eval import condition_axis, eval_hubness
from robustlab.perturb.condition import Condition


def cmd_hubness(args) -> int:
    dataset, code = inputs.build_dataset(args, args.dataset)
    if dataset is None:
        return code
    cond = Condition(args.perturb, args.severity, args.perturb_seed) if args.perturb else Condition()
    dirs = ("t2v", "v2t") if dataset.kind == "video" else ("t2i", "i2t")
    if args.direction is not None and args.direction not in dirs:
        return err(f"--direction {args.direction} does not go with the {dataset.kind} dataset {dataset.name} "
                   f"(use {' or '.join(dirs)})")
    if not 1 <= args.k <= len(dataset):
        return err(f"--k must be between 1 and the number of items ({len(dataset)})")
    try:
        condition_axis(cond, dataset.kind)
    except (KeyError, ValueError) as e:
        return err(msg(e))
    model, code = inputs.load_model(args)
    if model is None:
        return code
    bar, count = counting_bar(args)

    def progress(stage, done, total):
        bar.set_description(stage, refresh=False)
        count(done, total)

    try:
        res = eval_hubness(model, dataset, args.direction, cond, k=args.k, reduce=args.reduce, progress=progress)
    except ValueError as e:
        bar.close()
        return err(str(e))
    bar.close()
    if args.json:
        print(json.dumps(res))
        return 0
    _print_table(res)
    return 0


def _print_table(res: dict) -> None:
    conds = [c for c in ("clean", "clean_reduced", "perturbed", "perturbed_reduced") if c in res]
    head = f"{res['model']}  {res['direction']} ({res['queries']} query {res['gallery']})  n={res['n']}  " \
           f"k={res['k']}" + (f"  {res['perturb']} s{res['severity']} ({res['perturbed_modality']})"
                              if "perturb" in res else "") + (f"  reduce={res['reduce']}" if "reduce" in res else "")
    print(head)
    print(f"{'':<22}" + "".join(f"{c:>19}" for c in conds))
    for key in res["clean"]:
        if key == "top_hubs":
            continue
        print(f"{key:<22}" + "".join(f"{res[c][key]:>19.4g}" for c in conds))
    for c in conds:
        hubs = ", ".join(f"#{i} ({nk})" for i, nk in res[c]["top_hubs"])
        print(f"top hubs, {c}: {hubs}")
