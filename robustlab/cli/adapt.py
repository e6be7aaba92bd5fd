"""``robustlab adapt``: test-time adaptation of a retrieval model's query side under a query shift;
``robustlab adapt --list``: the methods with their parameters and defaults."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from robustlab import adapt
from robustlab.adapt import QUERY_SIDE, AdaptError, get_method, list_methods, resolve
from robustlab.adapt.methods import check_params
from robustlab.cli import inputs
from robustlab.cli.common import counting_bar, err, msg
from robustlab.io.params import parse_kv
from robustlab.perturb.condition import Condition, check
from robustlab.tasks.retrieval import DIRECTIONS


def _list_methods(as_json: bool) -> int:
    rows = list_methods()
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        tag = "  [diagnostic: trains with the ground truth; never in a sweep's --adapt all]" if r.get("diagnostic") \
            else ""
        print(f"{r['name']:<10} {r['label']}{tag}\n    {r['description']}\n    source: {r['source']}")
        if not r["params"]:
            print("    (no parameters)")
        for q in r["params"]:
            default = "by method and direction" if q["default"] is None else json.dumps(q["default"])
            if q["choices"]:
                rng = f"; one of {', '.join(q['choices'])}"
            elif q["min"] is not None and q["max"] is not None:
                lo, hi = (int(q["min"]), int(q["max"])) if q["type"] == "int" else (q["min"], q["max"])
                rng = f"; {q['type']} in [{lo}, {hi}]"
            else:
                rng = f"; {q['type']}"
            print(f"    --param {q['name']}=  default {default}{rng}  {q['help']}")
    return 0


def cmd_adapt(args) -> int:
    if args.list:
        return _list_methods(args.json)
    if not args.model:
        return err("adapt needs --model (a retrieval model; see `robustlab models --task retrieval`)")
    try:  # every parameter checked (names, finite values in their declared ranges) before any work
        method = get_method(args.method)
        params = parse_kv(args.param or [], "--param", example="steps=1")
        check_params(method.name, params)
    except (AdaptError, ValueError) as e:
        return err(str(e))
    if args.direction is not None and args.direction not in QUERY_SIDE:
        return err(f"--direction must be one of {', '.join(QUERY_SIDE)}, got {args.direction!r}")
    if not 1 <= args.severity <= 5:
        return err(f"--severity must be 1..5, got {args.severity}")
    name = args.dataset or ("builtin" if args.direction in ("t2i", "i2t") else "builtin-videos")
    dataset, code = inputs.build_dataset(args, name)
    if dataset is None:
        return code
    dirs = DIRECTIONS.get(dataset.kind, ())
    direction = args.direction or (dirs[0] if dirs else "t2v")
    if direction not in dirs:
        return err(f"--direction {direction} does not go with the {dataset.kind} dataset {dataset.name} "
                   f"(use {' or '.join(dirs) or 'an image or video dataset'})")
    side = QUERY_SIDE[direction]
    cond = Condition(args.perturb, args.severity, args.perturb_seed) if args.perturb else Condition()
    try:
        check(cond, "text" if side == "text" else dataset.kind)
    except (KeyError, ValueError) as e:
        return err(f"--perturb: {direction} shifts the {side} queries; {msg(e)}")
    try:
        resolve(method.name, side, len(dataset), params)
    except AdaptError as e:
        return err(str(e))
    model, code = inputs.load_model(args)
    if model is None:
        return code
    bar, progress = counting_bar(args, f"{method.name} {direction}", unit="batch")
    try:
        res = adapt.run(model, dataset, method.name, direction, cond, progress=progress, keep_arrays=False,
                        **params)
    except (ValueError, TypeError) as e:  # AdaptError (a model or side with nothing to adapt, a bad setting), ...
        bar.close()
        return err(str(e))
    bar.close()
    payload = {"model": getattr(model, "model_id", args.model), "dataset": dataset.name,
               "split": getattr(dataset, "split", None), "n": len(dataset), "label": method.label, **res.to_json()}
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(payload))
        return 0
    _print_result(res, payload, method, dataset, direction, side, cond)
    return 0


def _print_result(res, payload: dict, method, dataset, direction: str, side: str, cond: Condition) -> None:
    shift = f"{side} queries under {cond.label()}" if not cond.clean else f"clean {side} queries"
    print(f"{method.name} ({method.label}) · {payload['model']} · {dataset.name} ({payload['split']}, "
          f"n={len(dataset)}) · {direction} · {shift}")
    print(f"{'':<9}" + "".join(f"{k:>9}" for k in ("R@1", "R@5", "R@10", "MdR", "MnR")))
    for row in ("clean", "shifted", "adapted"):
        m = res.metrics[row]
        print(f"{row:<9}" + "".join(f"{m[k]:>9.3f}" for k in ("R@1", "R@5", "R@10")) +
              "".join(f"{m[k]:>9.1f}" for k in ("MdR", "MnR")))
    d = res.metrics["adapted"]["R@1"] - res.metrics["shifted"]["R@1"]
    print(f"R@1 adapted − shifted: {d:+.3f} ({res.n_queries} queries, gallery {res.n_gallery})")
    sec = res.seconds
    print(f"time: {sec['per_1000_queries']:.2f} s per 1,000 queries (adaptation), {sec['total']:.2f} s in all; "
          f"{res.adapted_parameters:,} LayerNorm parameters adapted")
    if res.params:
        print("params: " + " ".join(f"{k}={v}" for k, v in res.params.items()))
