"""``robustlab eval TASK``: a model on a dataset with a task, clean and perturbed; one Result per run."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from robustlab.cli import inputs
from robustlab.cli.common import counting_bar, err, msg, os_message
from robustlab.io.params import parse_kv
from robustlab.perturb import get_perturbation
from robustlab.perturb.condition import Condition, check
from robustlab.tasks.conditions import label
from robustlab.tasks.registry import get


def cmd_eval(args) -> int:
    task = get(args.task)
    try:
        options = parse_kv(args.option or [], "--option", example="method=render")
        task.check_options(options)
    except ValueError as e:
        return err(str(e))
    name = args.dataset or ("builtin-videos" if task.kinds == ("video",) else "builtin")
    visual = Condition(args.perturb, args.severity, args.perturb_seed) if args.perturb else Condition()
    text = Condition(args.text_perturb, args.text_severity, args.perturb_seed) if args.text_perturb else Condition()
    try:
        check(text, "text")
        if args.perturb:
            get_perturbation(args.perturb)
    except (KeyError, ValueError) as e:
        return err(msg(e))
    dataset, code = inputs.build_dataset(args, name)
    if dataset is None:
        return code
    model, code = inputs.load_model(args)
    if model is None:
        return code
    conds = [{}] if visual.clean and text.clean else []
    if not visual.clean or not text.clean:
        conds.append({k: c for k, c in (("visual", visual), ("text", text)) if not c.clean})
    bar, progress = counting_bar(args, f"eval {args.task} on {dataset.name}")
    try:
        results = task.evaluate(model, dataset, conds, progress=progress, **options)
    except (ValueError, TypeError) as e:  # a model or dataset that cannot do this task, a perturbation of the
        # wrong kind, an option value of the wrong type
        bar.close()
        return err(str(e))
    bar.close()
    if args.out:
        for i, r in enumerate(results):
            path = Path(args.out) / _filename(r)
            try:
                r.save(path)
            except OSError as e:  # a full disk: one line; the results written before it are whole (atomic)
                return err(f"cannot write {os_message(e, path)}" + (f"; the {i} result(s) before it were written"
                                                                    if i else ""))
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        out = [r.to_json() for r in results]
        print(json.dumps(out[0] if len(out) == 1 else out))
        return 0
    for r in results:
        print(f"{r.task} · {r.model} · {r.dataset} ({r.split}, n={r.n}) · "
              f"{label({k: Condition.from_dict(v) for k, v in r.conditions.items()})}")
        for k, v in r.flat().items():
            print(f"  {k:<28} {round(v, 4) if isinstance(v, float) else v}")
    return 0


def _filename(r) -> str:
    """One file per (task, dataset, split, items, model, condition): runs of other models or seeds never collide."""
    cond = "_".join(f"{k}-{v['name']}-s{v['severity']}-seed{v['seed']}" for k, v in r.conditions.items()
                    if v.get("name")) or "clean"
    seed = r.dataset_params.get("seed")
    parts = [r.task, r.dataset, r.split or "", f"n{r.n}" + (f"-seed{seed}" if seed is not None else ""),
             r.model + (f"-{r.model_fingerprint[:8]}" if r.model_fingerprint != r.model else ""), cond]
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", "_".join(p for p in parts if p)) + ".json"
