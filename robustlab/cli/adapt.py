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
from robustlab.cli.common import counting_bar, err, msg, os_message
from robustlab.io.atomic import atomic_write
from robustlab.io.params import parse_kv
from robustlab.perturb.condition import Condition, check
from robustlab.tasks.retrieval_bench import DIRECTIONS


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
    sevs, code = _severities(args)
    if code is not None:
        return code
    for flag, v, lo in (("--query", args.query, 0), ("--top-k", args.top_k, 1), ("--heatmap", args.heatmap, 1)):
        if v is not None and v < lo:
            return err(f"{flag} must be at least {lo}, got {v}")
    model, code = inputs.load_model(args)
    if model is None:
        return code
    if sevs:
        return _curve(args, model, dataset, method, direction, params, sevs)
    bar, progress = counting_bar(args, f"{method.name} {direction}", unit="batch")
    arrays = args.query is not None or args.heatmap is not None
    try:
        res = adapt.run(model, dataset, method.name, direction, cond, progress=progress, keep_arrays=arrays,
                        mdr=args.mdr, **params)
        extra = {}
        if args.query is not None:
            extra["top_k"] = adapt.top_k(res, args.query, args.top_k)
        if args.heatmap is not None:
            extra["heatmap"] = adapt.heatmap(res, args.heatmap)
    except (ValueError, TypeError) as e:  # AdaptError (a model or side with nothing to adapt, a bad setting), ...
        bar.close()
        return err(str(e))
    bar.close()
    payload = {"model": getattr(model, "model_id", args.model), "dataset": dataset.name,
               "split": getattr(dataset, "split", None), "n": len(dataset), "label": method.label, **res.to_json(),
               **extra}
    done = _write(args, payload)
    if done is not None:
        return done
    _print_result(res, payload, method, dataset, direction, side, cond)
    if "top_k" in extra:
        _print_top_k(extra["top_k"], dataset, direction)
    if "heatmap" in extra:
        h = extra["heatmap"]
        print(f"heatmap: {len(h['queries'])} queries × {len(h['items'])} items (shifted and adapted scores) in the "
              "JSON (--json / --out)")
    return 0


def _write(args, payload: dict) -> int | None:
    """``--out`` (atomic: a full disk leaves no half file, and is one line) and ``--json``: the exit code when that
    is all there is to do (a write error, or the JSON printed), else None."""
    if args.out:
        path = Path(args.out)
        try:  # atomic: a full disk leaves no half file, and is one line
            atomic_write(path, json.dumps(payload, indent=1) + "\n")
        except OSError as e:
            return err(f"cannot write {os_message(e, path)}")
        print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(payload))
        return 0
    return None


def _severities(args) -> tuple[list, int | None]:
    """--severities as a sorted list (empty when not given), or an exit code after a one-line message."""
    if args.severities is None:
        return [], None
    try:
        sevs = sorted({int(x) for x in str(args.severities).split(",") if x.strip()})
    except ValueError:
        return [], err(f"--severities must be integers 1..5 separated by commas, got {args.severities!r}")
    if not sevs or sevs[0] < 1 or sevs[-1] > 5:
        return [], err(f"--severities must be integers 1..5 separated by commas, got {args.severities!r}")
    if not args.perturb:
        return [], err("--severities needs --perturb (the query shift whose severities to sweep)")
    if args.query is not None or args.heatmap is not None:
        return [], err("--query and --heatmap show one run: leave out --severities")
    return sevs, None


def _curve(args, model, dataset, method, direction: str, params: dict, sevs: list) -> int:
    """R@K before and after adaptation at each severity of --perturb (HAT-VTR Fig. 13)."""
    bar, progress = counting_bar(args, f"{method.name} {direction} severities", unit="severity")
    try:
        curve = adapt.severity_curve(model, dataset, method.name, direction, args.perturb, sevs,
                                     perturb_seed=args.perturb_seed, progress=progress, mdr=args.mdr, **params)
    except (ValueError, TypeError) as e:
        bar.close()
        return err(str(e))
    bar.close()
    payload = {"model": getattr(model, "model_id", args.model), "dataset": dataset.name,
               "split": getattr(dataset, "split", None), "n": len(dataset), "label": method.label,
               "severity_curve": curve.to_json()}
    done = _write(args, payload)
    if done is not None:
        return done
    print(f"{method.name} ({method.label}) · {payload['model']} · {dataset.name} (n={len(dataset)}) · {direction} · "
          f"{args.perturb} at severities {', '.join(map(str, sevs))}")
    print(f"{'severity':<9}" + "".join(f"{k:>10}" for k in ("clean R@1", "before", "after", "change")))
    for r in curve.rows:
        b, a = r["shifted"]["R@1"], r["adapted"]["R@1"]
        print(f"{r['severity']:<9}{r['clean']['R@1']:>10.3f}{b:>10.3f}{a:>10.3f}{a - b:>+10.3f}")
    print("before: the shifted queries, unadapted model; after: the same queries adapted online (a fresh copy of "
          "the model at each severity)")
    return 0


def _print_top_k(t: dict, dataset, direction: str) -> None:
    """Query I's top-k before and after adaptation, side by side, with the captions where the items are texts."""
    texts = dataset.texts()
    q_text = direction[0] == "t"

    def name(i: int, text: bool) -> str:
        s = f"caption {i}: {texts[i]}" if text and 0 <= i < len(texts) else f"{dataset.kind} {i}"
        return s if len(s) <= 48 else s[:47] + "…"

    print(f"query {t['query']} ({name(t['query'], True) if q_text else dataset.kind + ' query'}); "
          f"true items {t['positives']}; rank of the truth: before {t['before']['gt_rank']}, after "
          f"{t['after']['gt_rank']}")
    print(f"{'rank':<5}{'before (shifted)':<58}{'after (adapted)':<58}")
    for b, a in zip(t["before"]["items"], t["after"]["items"]):
        cell = [f"{'*' if x['positive'] else ' '} {name(x['item'], not q_text):<48} {x['score']:+.3f}" for x in (b, a)]
        print(f"{b['rank']:<5}" + "".join(f"{c:<58}" for c in cell))
    print("* a true item")


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
    rows = adapt.time_breakdown(res)
    if rows:
        print("time per 1,000 queries: " + ", ".join(f"{r['phase']} {r['per_1000_queries']:.3f} s "
                                                    f"({100 * r['share']:.1f} %)" for r in rows))
    acc = [a for a in res.memory_curve("accuracy") if a is not None]
    if acc:
        print(f"Reliable Memory: pseudo-label accuracy {acc[0]:.3f} after the first batch, {acc[-1]:.3f} after the "
              f"last ({len(res.memory)} batches; --json: per batch)")
    if res.mdr != "median":
        print(f"MdR: the {res.mdr} of the two middle ranks (--mdr {res.mdr})")
    if res.params:
        print("params: " + " ".join(f"{k}={v}" for k, v in res.params.items()))
