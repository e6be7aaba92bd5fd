"""The ``robustlab`` command line.

    robustlab models [PATTERN] [--task T] [--backends] built-in models (and whether their weights are here) and
                                                       the backend prefixes; PATTERN a wildcard ("*video*"),
                                                       T a task (retrieval, grounding, vqa, ...)
    robustlab perturbations [--modality image|text]    the perturbation registry with severity tables
    robustlab train tiny-clip [--seed S] [--out PATH]  train the built-in model on the synthetic world
    robustlab datasets [PATTERN] [--task T]            the datasets and what each needs
    robustlab tasks                                    the evaluation tasks
    robustlab eval TASK --model M [--dataset NAME --root PATH --split S --n N] [--perturb NAME --severity K]
                        [--text-perturb NAME --text-severity K] [--out DIR] [--json]
    robustlab perturb INPUT... --name NAME --severity K [--seed S] [--variant V] --out DIR
                                                       perturb images, videos and caption files (and folders
                                                       of them) into DIR with a manifest.jsonl
    robustlab regenerate EXPORT [--out DIR]            rebuild an export (zip, folder or manifest.jsonl) bit
                                                       for bit and verify it; exit 1 on any mismatch
    robustlab hubness --model M [--dataset NAME --root PATH --split S --n N] --k 15 [--direction t2i|i2t|t2v|v2t]
                      [--perturb NAME --severity K] [--reduce dsl|qbnorm|hsm] [--json]
                                                       k-occurrence hubness indices and R@K, clean vs perturbed
    robustlab bench --models M1,M2 --dataset D [--root R --split S --n N] --tasks retrieval[,...]
                    --perturbations all|category:NAME|NAME,... [--text-perturbations ...] --severities 1-5
                    [--interventions quag:unimodal,input:language-only,...] [--directions t2v,v2t]
                    [--adapt none,tent,tcr,hat-vtr [--adapt-param KEY=VALUE ...]]
                    --out runs/NAME [--engine local|ray [--address auto]]
                                                       a robustness sweep: one Result JSON per (model, task,
                                                       condition) cell; rerun to resume
    robustlab bench report runs/NAME [--metric M]      results.csv and a self-contained report.html
    robustlab adapt --model M [--dataset D --root R --split S --n N --seed S] --direction t2v|v2t|t2i|i2t
                    --perturb NAME --severity K [--method hat-vtr] [--param KEY=VALUE ...] [--json] [--out FILE]
                                                       test-time adaptation of the query side under a query
                                                       shift: clean / shifted / adapted R@K and the time
    robustlab adapt --list [--json]                    the adaptation methods, their parameters and defaults
"""
from __future__ import annotations

import argparse
import json
import sys

from robustlab.io.params import parse_kv


def _msg(e: Exception) -> str:
    """An exception's message (a KeyError's str() would add quotes around it)."""
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)


def _err(msg: str, code: int = 2) -> int:
    print(f"robustlab: {msg}", file=sys.stderr)
    return code


def cmd_models(args) -> int:
    from robustlab.models import list_models

    try:
        rows = list_models(args.pattern, task=args.task, backends=True)
    except ValueError as e:
        return _err(str(e))
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
        print(f"{r['spec']:<24} {r['task']:<10} {state}\n    {r['description']}\n    tasks: {', '.join(r['tasks'])}")
    if backends:
        print("\nBackends (hub models need network or a local copy; a local folder or file also works as a bare path):")
        for r in backends:
            state = "" if r["available"] else f"  [unavailable: {r['reason']}]"
            print(f"{r['prefix']:<14} e.g. {r['spec']}{state}\n    {r['description']}\n    tasks: {', '.join(r['tasks'])}")
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


from robustlab.training import RECIPES as TRAIN_RECIPES  # noqa: E402

def _resolve(target: str):
    import importlib

    mod, fn = target.split(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ModuleNotFoundError, AttributeError):
        return None


def cmd_train(args) -> int:
    fn = _resolve(TRAIN_RECIPES[args.model]) if args.model in TRAIN_RECIPES else None
    if fn is None:
        ok = [k for k, v in TRAIN_RECIPES.items() if _resolve(v) is not None]
        return _err(f"no training recipe for {args.model!r}; available: {', '.join(ok)}")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    kw = dict(out=args.out, seed=args.seed, eval_n=args.eval_n)
    if args.n_train is not None:
        kw["n_train"] = args.n_train
    if args.epochs is not None:
        kw["epochs"] = args.epochs
    import inspect

    if args.threads and "threads" in inspect.signature(fn).parameters:
        kw["threads"] = args.threads
    if getattr(args, "stage3_from", None):
        if "stage3_from" not in inspect.signature(fn).parameters:
            return _err(f"--stage3-from is for tiny-vilt, not {args.model}")
        kw["stage3_from"] = args.stage3_from
    try:
        res = fn(**kw)
    except ValueError as e:
        return _err(str(e))
    print(json.dumps(res, indent=2))
    return 0


def cmd_datasets(args) -> int:
    from robustlab.datasets.registry import list_datasets

    rows = list_datasets(args.pattern, task=args.task)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        return _err(f"no dataset matches {args.pattern or '*'}" + (f" for task {args.task}" if args.task else ""), 1)
    for r in rows:
        where = "--root PATH" if r["needs_root"] else "built in"
        print(f"{r['name']:<16} {r['kind']:<6} {','.join(r['tasks']):<28} splits: {', '.join(r['splits'])}"
              f" ({where})\n    {r['description']}\n    needs: {r['needs']}")
    return 0


def cmd_tasks(args) -> int:
    from robustlab.tasks.registry import list_tasks

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


def _add_dataset_args(p, default: str | None = "builtin") -> None:
    p.add_argument("--dataset", default=default, help="a dataset name (see `robustlab datasets`)")
    p.add_argument("--root", default=None, help="the dataset's folder (datasets on disk)")
    p.add_argument("--split", default=None, help="the split (default: the dataset's test split)")
    p.add_argument("--n", type=int, default=None, help="use the first N items (built-in: generate N)")
    p.add_argument("--seed", type=int, default=None, help="built-in world seed (default: the split's)")
    p.add_argument("--trust-pickle", action="store_true",
                   help="allow reading a pickle annotation file (RefCOCO's refs(*).p): only for files you trust")


def _build_dataset(args, name: str):
    """(dataset, None) or (None, exit code after a one-line message)."""
    from robustlab.datasets.registry import build

    if args.n is not None and args.n < 1:
        return None, _err("--n must be at least 1")
    kw = {k: v for k, v in (("n", args.n), ("seed", args.seed)) if v is not None}
    if args.trust_pickle:
        kw["trust_pickle"] = True
    try:
        return build(name, root=args.root, split=args.split, **kw), None
    except (ValueError, OSError) as e:
        return None, _err(str(e))


def _load(args):
    from robustlab.models import ModelUnavailable, load_model

    try:
        model = load_model(args.model, device=args.device)
    except (ModelUnavailable, ValueError) as e:
        return None, _err(str(e))
    if getattr(model, "random_init", False):
        print("robustlab: warning: this model is randomly initialised (plumbing test only, not a result)",
              file=sys.stderr)
    return model, None


def _bar(args, desc: str):
    from tqdm.auto import tqdm

    bar = tqdm(desc=desc, unit="item", disable=args.json or not sys.stderr.isatty(), file=sys.stderr)

    def progress(done, total):
        bar.total = total
        bar.n = done
        bar.refresh()
    return bar, progress


def cmd_eval(args) -> int:
    from robustlab.perturb.condition import Condition, check
    from robustlab.tasks.registry import get

    task = get(args.task)
    try:
        options = parse_kv(args.option or [], "--option", example="method=render")
        task.check_options(options)
    except ValueError as e:
        return _err(str(e))
    name = args.dataset or ("builtin-videos" if task.kinds == ("video",) else "builtin")
    visual = Condition(args.perturb, args.severity, args.perturb_seed) if args.perturb else Condition()
    text = Condition(args.text_perturb, args.text_severity, args.perturb_seed) if args.text_perturb else Condition()
    try:
        check(text, "text")
        if args.perturb:
            from robustlab.perturb import get_perturbation

            get_perturbation(args.perturb)
    except (KeyError, ValueError) as e:
        return _err(_msg(e))
    dataset, code = _build_dataset(args, name)
    if dataset is None:
        return code
    model, code = _load(args)
    if model is None:
        return code
    conds = [{}] if visual.clean and text.clean else []
    if not visual.clean or not text.clean:
        conds.append({k: c for k, c in (("visual", visual), ("text", text)) if not c.clean})
    bar, progress = _bar(args, f"eval {args.task} on {dataset.name}")
    try:
        results = task.evaluate(model, dataset, conds, progress=progress, **options)
    except (ValueError, TypeError) as e:  # a model or dataset that cannot do this task, a perturbation of the
        # wrong kind, an option value of the wrong type
        bar.close()
        return _err(str(e))
    bar.close()
    if args.out:
        from pathlib import Path

        for r in results:
            path = Path(args.out) / _filename(r)
            r.save(path)
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        out = [r.to_json() for r in results]
        print(json.dumps(out[0] if len(out) == 1 else out))
        return 0
    for r in results:
        from robustlab.tasks.base import label

        print(f"{r.task} · {r.model} · {r.dataset} ({r.split}, n={r.n}) · "
              f"{label({k: Condition.from_dict(v) for k, v in r.conditions.items()})}")
        for k, v in r.flat().items():
            print(f"  {k:<28} {round(v, 4) if isinstance(v, float) else v}")
    return 0


def _filename(r) -> str:
    """One file per (task, dataset, split, items, model, condition): runs of other models or seeds never collide."""
    import re

    cond = "_".join(f"{k}-{v['name']}-s{v['severity']}-seed{v['seed']}" for k, v in r.conditions.items()
                    if v.get("name")) or "clean"
    seed = r.dataset_params.get("seed")
    parts = [r.task, r.dataset, r.split or "", f"n{r.n}" + (f"-seed{seed}" if seed is not None else ""),
             r.model + (f"-{r.model_fingerprint[:8]}" if r.model_fingerprint != r.model else ""), cond]
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", "_".join(p for p in parts if p)) + ".json"


def cmd_perturb(args) -> int:
    from tqdm.auto import tqdm

    from robustlab.export.manifest import FilePerturber, collect_inputs

    try:
        perturber = FilePerturber(args.out, args.name, args.severity, seed=args.seed, variant=args.variant,
                                  same_seed=args.same_seed, max_side=args.max_side)
    except (ValueError, RuntimeError, OSError) as e:
        return _err(_msg(e))
    files, errors, notes = collect_inputs(args.inputs, perturber.kinds)
    for msg in notes:
        print(f"robustlab: {msg}", file=sys.stderr)
    for msg in errors:
        print(f"robustlab: skipped {msg}", file=sys.stderr)
    n_examples = n_ok = 0
    with perturber, tqdm(files, desc=f"{args.name} s{args.severity}", unit="file", disable=args.quiet) as bar:
        for path in bar:
            bar.set_postfix_str(path.name[-40:], refresh=False)
            res = perturber.add(path)
            if res.fatal:  # the output folder is full: stop, the examples written so far are complete
                errors.append(res.error)
                tqdm.write(f"robustlab: stopped: {res.error}; the {n_examples} example(s) written before it are "
                           f"complete and listed in the manifest", file=sys.stderr)
                break
            if res.error:
                errors.append(res.error)
                tqdm.write(f"robustlab: skipped {res.error}", file=sys.stderr)
            else:
                n_ok += 1
                n_examples += len(res.entries)
    print(f"{n_examples} example(s) from {n_ok} file(s) written to {args.out} (manifest.jsonl)"
          + (f"; {len(errors)} input(s) failed" if errors else ""))
    if not files and not errors:
        return _err("no input files found", 1)
    return 1 if errors else 0


def cmd_regenerate(args) -> int:
    from tqdm.auto import tqdm

    from robustlab.export.manifest import regenerate_export

    bar = tqdm(desc="regenerate", unit="example", disable=args.quiet or args.json)

    def progress(r, done, total):
        bar.total = total
        bar.update(1)
        if not args.json:
            tqdm.write(r.line())

    from robustlab.export.manifest import ExportWriteError

    write_error = None
    try:
        results = regenerate_export(args.export, out=args.out, progress=progress)
    except ExportWriteError as e:  # the out folder filled up: every example was verified all the same
        if e.results is None:
            bar.close()
            return _err(str(e))
        results, write_error = e.results, str(e)
    except (OSError, ValueError) as e:
        bar.close()
        return _err(str(e))
    bar.close()
    bad = [r for r in results if not r.ok]
    if args.json:
        print(json.dumps([{"id": r.id, "status": r.status, "message": r.message, "perturbation": r.perturbation,
                           "severity": r.severity, "path": r.path} for r in results], indent=2))
    else:
        into = f" into {args.out}" if args.out and not write_error else ""
        print(f"{len(results) - len(bad)}/{len(results)} example(s) regenerated bit for bit"
              + into + (f"; {len(bad)} failed" if bad else ""))
    if write_error:
        return _err(write_error)
    if not results:
        return _err("the manifest lists no examples", 1)
    return 1 if bad else 0


def cmd_hubness(args) -> int:
    from robustlab.diagnostics.hubness_eval import condition_axis, eval_hubness
    from robustlab.perturb.condition import Condition

    dataset, code = _build_dataset(args, args.dataset)
    if dataset is None:
        return code
    cond = Condition(args.perturb, args.severity, args.perturb_seed) if args.perturb else Condition()
    dirs = ("t2v", "v2t") if dataset.kind == "video" else ("t2i", "i2t")
    if args.direction is not None and args.direction not in dirs:
        return _err(f"--direction {args.direction} does not go with the {dataset.kind} dataset {dataset.name} "
                    f"(use {' or '.join(dirs)})")
    if not 1 <= args.k <= len(dataset):
        return _err(f"--k must be between 1 and the number of items ({len(dataset)})")
    try:
        condition_axis(cond, dataset.kind)
    except (KeyError, ValueError) as e:
        return _err(_msg(e))
    model, code = _load(args)
    if model is None:
        return code
    from tqdm.auto import tqdm

    bar = tqdm(unit="item", disable=args.json or not sys.stderr.isatty(), file=sys.stderr)

    def progress(stage, done, total):
        bar.set_description(stage, refresh=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        res = eval_hubness(model, dataset, args.direction, cond, k=args.k, reduce=args.reduce, progress=progress)
    except ValueError as e:
        bar.close()
        return _err(str(e))
    bar.close()
    if args.json:
        print(json.dumps(res))
        return 0
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
    return 0


def _list_methods(as_json: bool) -> int:
    from robustlab.adapt import list_methods

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
    from robustlab.adapt import QUERY_SIDE, AdaptError, get_method, resolve
    from robustlab.adapt.methods import check_params
    from robustlab.perturb.condition import Condition, check
    from robustlab.tasks.retrieval import DIRECTIONS

    if args.list:
        return _list_methods(args.json)
    if not args.model:
        return _err("adapt needs --model (a retrieval model; see `robustlab models --task retrieval`)")
    try:  # every parameter checked (names, finite values in their declared ranges) before any work
        method = get_method(args.method)
        params = parse_kv(args.param or [], "--param", example="steps=1")
        check_params(method.name, params)
    except (AdaptError, ValueError) as e:
        return _err(str(e))
    if args.direction is not None and args.direction not in QUERY_SIDE:
        return _err(f"--direction must be one of {', '.join(QUERY_SIDE)}, got {args.direction!r}")
    if not 1 <= args.severity <= 5:
        return _err(f"--severity must be 1..5, got {args.severity}")
    name = args.dataset or ("builtin" if args.direction in ("t2i", "i2t") else "builtin-videos")
    dataset, code = _build_dataset(args, name)
    if dataset is None:
        return code
    dirs = DIRECTIONS.get(dataset.kind, ())
    direction = args.direction or (dirs[0] if dirs else "t2v")
    if direction not in dirs:
        return _err(f"--direction {direction} does not go with the {dataset.kind} dataset {dataset.name} "
                    f"(use {' or '.join(dirs) or 'an image or video dataset'})")
    side = QUERY_SIDE[direction]
    cond = Condition(args.perturb, args.severity, args.perturb_seed) if args.perturb else Condition()
    try:
        check(cond, "text" if side == "text" else dataset.kind)
    except (KeyError, ValueError) as e:
        return _err(f"--perturb: {direction} shifts the {side} queries; {_msg(e)}")
    try:
        resolve(method.name, side, len(dataset), params)
    except AdaptError as e:
        return _err(str(e))
    model, code = _load(args)
    if model is None:
        return code
    from tqdm.auto import tqdm

    from robustlab import adapt

    bar = tqdm(desc=f"{method.name} {direction}", unit="batch", disable=args.json or not sys.stderr.isatty(),
               file=sys.stderr)

    def progress(done, total):
        bar.total = total
        bar.n = done
        bar.refresh()
    try:
        res = adapt.run(model, dataset, method.name, direction, cond, progress=progress, keep_arrays=False,
                        **params)
    except (ValueError, TypeError) as e:  # AdaptError (a model or side with nothing to adapt, a bad setting), ...
        bar.close()
        return _err(str(e))
    bar.close()
    payload = {"model": getattr(model, "model_id", args.model), "dataset": dataset.name,
               "split": getattr(dataset, "split", None), "n": len(dataset), "label": method.label, **res.to_json()}
    if args.out:
        from pathlib import Path

        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(payload))
        return 0
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
    return 0


def _split(text) -> list[str]:
    return [p.strip() for p in str(text or "").split(",") if p.strip()]


def cmd_bench(args) -> int:
    from robustlab.bench import SweepError, build_spec, run_sweep

    try:
        # the --adapt parameters first: a bad value (steps=inf) is one line before any work
        parse_kv(args.adapt_param or [], "--adapt-param", example="steps=1, tent.lr=1e-4",
                 form="KEY=VALUE or METHOD.KEY=VALUE")
        spec = build_spec(models=_split(args.models),
                          dataset={"name": args.dataset, "root": args.root, "split": args.split, "n": args.n,
                                   "seed": args.seed, "options": {"trust_pickle": True} if args.trust_pickle else {}},
                          tasks=_split(args.tasks), perturbations=args.perturbations,
                          text_perturbations=args.text_perturbations, severities=args.severities,
                          text_severities=args.text_severities, combine=args.combine,
                          interventions=args.interventions, adapt=args.adapt, adapt_params=args.adapt_param or [],
                          directions=_split(args.directions) or None, perturb_seed=args.perturb_seed,
                          worst=args.worst, device=args.device)
    except (KeyError, ValueError, OSError) as e:
        return _err(_msg(e))
    from tqdm.auto import tqdm

    bar = tqdm(total=0, desc=f"bench {args.out}", unit="cell", disable=args.quiet, file=sys.stderr,
               bar_format="{l_bar}{bar}| {n:.2f}/{total} cells [{elapsed}<{remaining}]")

    def progress(st):
        bar.total = st["total"]
        bar.n = round(st["fraction"] * st["total"], 2)
        bar.update(0)  # redraws at tqdm's own rate (mininterval), not on every item
    try:
        status = run_sweep(spec, args.out, engine=args.engine, progress=progress, address=args.address,
                           num_cpus=args.num_cpus)
    except (SweepError, ValueError) as e:
        bar.close()
        return _err(str(e))
    bar.close()
    print(f"{status.done} cells run, {status.skipped} already there, {status.total} in the sweep "
          f"({status.seconds:.1f} s, engine {status.engine}) -> {status.out}", file=sys.stderr)
    if args.report:
        return cmd_bench_report(argparse.Namespace(run=args.out, metric=None, out=None))
    return 0


def cmd_bench_report(args) -> int:
    try:
        from robustlab.bench.report import write_report  # pandas and plotly: the [report] extra
    except ImportError as e:
        return _err(f"the report needs pandas and plotly ({e.name or e} is missing): pip install 'robustlab[report]'")
    try:
        csv_path, html_path = write_report(args.run, out_dir=args.out, metric=args.metric)
    except (ValueError, OSError) as e:
        return _err(_msg(e))
    print(f"wrote {csv_path}\nwrote {html_path}")
    extra = csv_path.parent / "adaptation.csv"  # written when the run has adaptation cells
    if extra.is_file():
        print(f"wrote {extra}")
    return 0


def _bench_parser(sub) -> None:
    b = sub.add_parser("bench", help="a robustness sweep (one Result per cell, resumable); "
                                     "`robustlab bench report DIR` writes its report")
    b.add_argument("--models", required=True, help="comma-separated model specs (see `robustlab models`)")
    _add_dataset_args(b)
    b.add_argument("--tasks", default="retrieval", help="comma-separated tasks (see `robustlab tasks`)")
    b.add_argument("--perturbations", default="all",
                   help="visual perturbations: all | category:NAME | tag:NAME | NAME,NAME | none")
    b.add_argument("--text-perturbations", default=None, help="text perturbations, same forms (default none)")
    b.add_argument("--interventions", default=None,
                   help="model interventions, each a condition on clean inputs: quag:unimodal|crossmodal|video|text"
                        "|VV+TV..., quag-attention:video-avg|text-avg|text-video-avg[/multiplicative], "
                        "input:language-only|video-only, or all (default none)")
    b.add_argument("--adapt", default=None,
                   help="test-time adaptation methods (robustlab.adapt; `robustlab adapt --list`), e.g. "
                        "none,tent,tcr,hat-vtr, or all: each adds, for every shift of one side, a cell with that "
                        "method adapting that side's queries (visual: i2t/v2t, text: t2i/t2v); none is the "
                        "shifted cell itself (default none)")
    b.add_argument("--adapt-param", action="append", metavar="KEY=VALUE",
                   help="an adaptation parameter, repeatable: KEY=VALUE for every --adapt method that has it, "
                        "METHOD.KEY=VALUE for one (e.g. steps=1, hat-vtr.capacity=50)")
    b.add_argument("--severities", default="1-5", help="e.g. 1-5 or 1,3,5")
    b.add_argument("--text-severities", default=None, help="default: --severities")
    b.add_argument("--combine", default="auto",
                   help="visual × text pairs when both are swept: auto (at severity 3), all, none, or a severity")
    b.add_argument("--directions", default=None, help="retrieval directions to report, e.g. t2v,v2t (default all)")
    b.add_argument("--perturb-seed", type=int, default=0)
    b.add_argument("--worst", type=int, default=3, help="worst examples kept per perturbed cell and direction")
    b.add_argument("--out", required=True, help="the run folder (rerun with the same folder to resume)")
    b.add_argument("--engine", default="local", choices=["local", "ray"])
    b.add_argument("--address", default=None, help="Ray: 'auto' or a cluster address (default: start a local Ray)")
    b.add_argument("--num-cpus", type=int, default=None, help="Ray: CPUs of the local Ray it starts")
    b.add_argument("--device", default=None)
    b.add_argument("--report", action="store_true", help="write the report when the sweep is done")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.set_defaults(fn=cmd_bench)
    r = sub.add_parser("bench-report", help=argparse.SUPPRESS)
    r.add_argument("run", help="a run folder written by `robustlab bench`")
    r.add_argument("--metric", default=None, help="the headline metric (default: R@1 of the first direction)")
    r.add_argument("--out", default=None, help="where to write (default: the run folder)")
    r.set_defaults(fn=cmd_bench_report)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="robustlab", description="Perturb, compare and diagnose vision-language models.")
    sub = p.add_subparsers(dest="cmd", required=True)

    m = sub.add_parser("models", help="list built-in models and backends")
    m.add_argument("pattern", nargs="?", default=None, help='a wildcard on the spec or name, e.g. "*video*"')
    m.add_argument("--task", default=None, help="only models declaring this task (retrieval, video-retrieval, "
                                                "grounding, vqa, clavi, itm, entailment, reasoning)")
    m.add_argument("--backends", action="store_true", help="with --json: list the backend prefixes too")
    m.add_argument("--json", action="store_true")
    m.set_defaults(fn=cmd_models)

    q = sub.add_parser("perturbations", help="list the perturbation registry")
    q.add_argument("--modality", choices=["image", "video", "text"])
    q.add_argument("--json", action="store_true")
    q.set_defaults(fn=cmd_perturbations)

    t = sub.add_parser("train", help="train a built-in model on the synthetic world")
    t.add_argument("model", help="one of: " + ", ".join(TRAIN_RECIPES))
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--n-train", type=int, default=None, help="training examples (default: the recipe's)")
    t.add_argument("--epochs", type=int, default=None, help="epochs (default: the recipe's)")
    t.add_argument("--eval-n", type=int, default=1000)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--out", default=None, help="checkpoint path (default: assets/NAME.safetensors)")
    t.add_argument("--stage3-from", default=None, metavar="CHECKPOINT",
                   help="tiny-vilt only: run the last stage (PEELING's uniqueness questions) on a stage-2 checkpoint")
    t.set_defaults(fn=cmd_train)

    d = sub.add_parser("datasets", help="list the datasets and what each needs")
    d.add_argument("pattern", nargs="?", default=None, help="a wildcard, e.g. 'ref*'")
    d.add_argument("--task", default=None, help="only datasets for this task")
    d.add_argument("--json", action="store_true")
    d.set_defaults(fn=cmd_datasets)

    tk = sub.add_parser("tasks", help="list the evaluation tasks")
    tk.add_argument("pattern", nargs="?", default=None)
    tk.add_argument("--json", action="store_true")
    tk.add_argument("--options", action="store_true", help="also list each task's options (eval --option)")
    tk.set_defaults(fn=cmd_tasks)

    from robustlab.tasks.registry import names as task_names

    e = sub.add_parser("eval", help="evaluate a model on a dataset, clean and perturbed",
                       description="Evaluate a model on a dataset (built-in by default: the held-out test split, "
                                   "1000 items) with a task; prints the metrics of the clean run, or of the "
                                   "perturbed run with --perturb / --text-perturb (item i gets seed "
                                   "--perturb-seed + i). --out DIR writes one JSON Result per run.")
    e.add_argument("task", choices=task_names())
    e.add_argument("--model", default="builtin:tiny-clip")
    _add_dataset_args(e, default=None)
    e.add_argument("--perturb", default=None, help="image or video perturbation of the dataset's visuals")
    e.add_argument("--severity", type=int, default=3, choices=range(1, 6), metavar="K", help="1..5")
    e.add_argument("--text-perturb", default=None, help="text perturbation of captions / questions / expressions")
    e.add_argument("--text-severity", type=int, default=3, choices=range(1, 6), metavar="K", help="1..5")
    e.add_argument("--perturb-seed", type=int, default=0)
    e.add_argument("--device", default=None)
    e.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="a task option, repeatable (`robustlab tasks --options` lists them; e.g. clavi: "
                        "method=render, peeling: wide=true)")
    e.add_argument("--out", default=None, help="write each Result as JSON into this folder")
    e.add_argument("--json", action="store_true")
    e.set_defaults(fn=cmd_eval)

    pp = sub.add_parser("perturb", help="perturb image, video and caption files (and folders) into a folder",
                        description="Perturb files and folders (images, videos, caption .txt/.csv/.json files; "
                                    "folders recursively). Writes clean/ and perturbed/ copies and a "
                                    "manifest.jsonl that `robustlab regenerate` rebuilds. Bad files are reported "
                                    "and skipped (exit code 1). Example i gets seed S+i unless --same-seed.")
    pp.add_argument("inputs", nargs="+", metavar="INPUT", help="files or folders")
    pp.add_argument("--name", required=True, help="perturbation name (see `robustlab perturbations`)")
    pp.add_argument("--severity", type=int, required=True, choices=range(0, 6), metavar="K", help="0..5")
    pp.add_argument("--seed", type=int, default=0)
    pp.add_argument("--variant", default=None, help="a named variant (default: the perturbation's default)")
    pp.add_argument("--same-seed", action="store_true", help="use --seed for every example instead of seed+i")
    pp.add_argument("--max-side", type=int, default=None, help="downscale videos to this long side (px)")
    pp.add_argument("--out", required=True, help="output folder")
    pp.add_argument("--quiet", action="store_true", help="no progress bar")
    pp.set_defaults(fn=cmd_perturb)

    rg = sub.add_parser("regenerate", help="rebuild an export bit for bit and verify it",
                        description="Re-run every example of an export (a zip from the dashboard, a folder from "
                                    "`robustlab perturb`, or a manifest.jsonl) on its clean input and verify the "
                                    "output hashes. Prints OK / MISMATCH / ERROR per example; exit code 1 if any "
                                    "example does not match.")
    rg.add_argument("export", metavar="MANIFEST_OR_ZIP")
    rg.add_argument("--out", default=None, help="write the rebuilt export here")
    rg.add_argument("--json", action="store_true")
    rg.add_argument("--quiet", action="store_true", help="no progress bar")
    rg.set_defaults(fn=cmd_regenerate)

    hb = sub.add_parser("hubness", help="k-occurrence hubness of retrieval, clean vs perturbed",
                        description="Hubness of a model's text-image or text-video retrieval on a dataset: the "
                                    "k-occurrence N_k of every gallery item (how many queries rank it in their "
                                    "top k) and its skewness, truncated-normal skewness, Atkinson, Robin Hood and "
                                    "Gini indices, antihub and hub occurrence, with R@1/5/10, clean and (with "
                                    "--perturb) perturbed; --reduce adds the scores after a hubness reduction.")
    hb.add_argument("--model", default="builtin:tiny-clip")
    _add_dataset_args(hb)
    hb.add_argument("--k", type=int, default=15, help="top-k of the k-occurrence (HAT-VTR uses 15)")
    hb.add_argument("--direction", choices=["t2i", "i2t", "t2v", "v2t"], default=None,
                    help="t2i: captions query images (N_k per image); i2t: images query captions; t2v / v2t for "
                         "a video dataset (default: t2i, or t2v for videos)")
    hb.add_argument("--perturb", default=None, help="an image / video or text perturbation, applied to that "
                                                    "modality")
    hb.add_argument("--perturb-seed", type=int, default=0)
    hb.add_argument("--severity", type=int, default=3, choices=range(1, 6), metavar="K", help="1..5")
    hb.add_argument("--reduce", default=None, choices=["dsl", "qbnorm", "hsm"],
                    help="also report the scores after this hubness reduction (default parameters)")
    hb.add_argument("--device", default=None)
    hb.add_argument("--json", action="store_true")
    hb.set_defaults(fn=cmd_hubness)
    _bench_parser(sub)

    from robustlab.adapt import METHODS, QUERY_SIDE

    ad = sub.add_parser("adapt", help="test-time adaptation of a retrieval model's query side under a query shift",
                        description="Adapt the LayerNorms of the query side online (robustlab.adapt: "
                                    f"{', '.join(METHODS)}) on a dataset's queries under a perturbation of that "
                                    "side and print R@1/5/10, MdR and MnR on clean, shifted and adapted queries, "
                                    "and the time per 1,000 queries. The model itself is never changed. "
                                    "`robustlab adapt --list` gives every method's parameters and defaults.")
    ad.add_argument("--list", action="store_true", help="list the methods with their parameters and defaults")
    ad.add_argument("--model", default=None, help="a retrieval model (see `robustlab models --task retrieval`)")
    _add_dataset_args(ad, default=None)
    ad.add_argument("--direction", default=None, metavar="|".join(QUERY_SIDE),
                    help="t2v / t2i adapt text queries, v2t / i2t visual ones (default: t2v, or t2i for images); "
                         "the dataset defaults to builtin-videos, or builtin for t2i / i2t")
    ad.add_argument("--perturb", default=None, help="the query shift: a perturbation of the query side (text for "
                                                    "t2*, image / video for *2t; default: clean queries)")
    ad.add_argument("--severity", type=int, default=3, metavar="K", help="1..5 (default 3)")
    ad.add_argument("--perturb-seed", type=int, default=0, help="query i gets seed S + i")
    ad.add_argument("--method", default="hat-vtr", metavar="|".join(METHODS), help="default hat-vtr")
    ad.add_argument("--param", action="append", metavar="KEY=VALUE",
                    help="a method parameter, repeatable (e.g. --param steps=1 --param lr=1e-4)")
    ad.add_argument("--device", default=None)
    ad.add_argument("--json", action="store_true", help="print the result as JSON (with the per-step losses)")
    ad.add_argument("--out", default=None, metavar="FILE", help="also write the result as JSON to FILE")
    ad.set_defaults(fn=cmd_adapt)
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["bench", "report"]:  # `robustlab bench report DIR`
        argv = ["bench-report"] + argv[2:]
    args = build_parser().parse_args(argv)
    from robustlab.perturb.allocator import tune_allocator

    tune_allocator()  # keep freed NumPy temporaries (glibc): zoom blur, brightness, elastic up to 3x faster
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        return _err("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
