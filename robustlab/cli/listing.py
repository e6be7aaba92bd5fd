"""The listings: ``robustlab models``, ``perturbations``, ``datasets`` and ``tasks``."""
from __future__ import annotations

import json

from robustlab.cli.common import err
from robustlab.datasets.registry import list_datasets
from robustlab.perturb import list_perturbations


def cmd_models(args) -> int:
    from robustlab.models import list_models  # start-up: imports torch, which `perturbations` / `datasets` skip

    try:
        rows = list_models(args.pattern, task=args.task, backends=True)
    except ValueError as e:
        return err(str(e))
    builtin = [r for r in rows if r["kind"] == "builtin"]
    backends = [r for r in rows if r["kind"] == "backend"]
    if args.json:  # the built-ins; the backend rows too with --backends
        print(json.dumps(builtin + (backends if args.backends else []), indent=2))
        return 0
    if not rows:
        print("no model matches" + (f" {args.pattern!r}" if args.pattern else "")
              + (f" for task {args.task}" if args.task else ""))
        return 0
    for r in builtin:
        state = "available" if r["available"] else f"unavailable: {r['reason']}"
        card = f"\n    model card: {r['card']}" if r.get("card") else ""
        print(f"{r['spec']:<24} {r['task']:<10} {state}\n    {r['description']}\n    tasks: {', '.join(r['tasks'])}"
              f"{card}")
    if backends:
        print("\nBackends (hub models need network or a local copy; a local folder or file also works as a bare path):")
        for r in backends:
            state = "" if r["available"] else f"  [unavailable: {r['reason']}]"
            print(f"{r['prefix']:<14} e.g. {r['spec']}{state}\n    {r['description']}\n"
                  f"    tasks: {', '.join(r['tasks'])}")
    return 0


def cmd_perturbations(args) -> int:
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


def cmd_datasets(args) -> int:
    rows = list_datasets(args.pattern, task=args.task)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        return err(f"no dataset matches {args.pattern or '*'}" + (f" for task {args.task}" if args.task else ""), 1)
    for r in rows:
        where = "--root PATH" if r["needs_root"] else "built in"
        print(f"{r['name']:<16} {r['kind']:<6} {','.join(r['tasks']):<28} splits: {', '.join(r['splits'])}"
              f" ({where})\n    {r['description']}\n    needs: {r['needs']}")
    return 0


def cmd_tasks(args) -> int:
    from robustlab.tasks.registry import list_tasks  # start-up: the task modules import torch

    rows = list_tasks(args.pattern)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['name']:<14} {'/'.join(r['kinds']):<12} {r['description']}")
        if args.options:
            for k, v in r["options"].items():
                print(f"{'':<14} --option {k}=...  {v}")
    return 0
