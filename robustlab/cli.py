"""The ``robustlab`` command line.

    robustlab models [PATTERN] [--task T] [--backends] built-in models (and whether their weights are here) and
                                                       the backend prefixes; PATTERN a wildcard ("*video*"),
                                                       T a task (retrieval, grounding, vqa, ...)
    robustlab perturbations [--modality image|text]    the perturbation registry with severity tables
    robustlab train tiny-clip [--seed S] [--out PATH]  train the built-in model on the synthetic world
    robustlab eval retrieval --model M --dataset builtin --n N --seed S [--perturb NAME --severity K]
                             [--text-perturb NAME --text-severity K] [--json]
    robustlab perturb INPUT... --name NAME --severity K [--seed S] [--variant V] --out DIR
                                                       perturb images, videos and caption files (and folders
                                                       of them) into DIR with a manifest.jsonl
    robustlab regenerate EXPORT [--out DIR]            rebuild an export (zip, folder or manifest.jsonl) bit
                                                       for bit and verify it; exit 1 on any mismatch
    robustlab hubness --model M --dataset builtin|demo|videos --k 15 [--n N] [--seed S] [--direction t2i|i2t|t2v|v2t]
                      [--perturb NAME --severity K] [--reduce dsl|qbnorm|hsm] [--json]
                                                       k-occurrence hubness indices and R@K, clean vs perturbed
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

# evaluation tasks: name -> "module:function"; each takes (model, n, seed, progress=..., **task options) -> dict
EVAL_TASKS = {
    "retrieval": "robustlab.tasks.evaluate:eval_retrieval",
    "video-retrieval": "robustlab.tasks.evaluate_video:eval_video_retrieval",
    "vqa": "robustlab.tasks.evaluate_fusion:eval_vqa",
    "grounding": "robustlab.tasks.evaluate_fusion:eval_grounding",
    "clavi": "robustlab.tasks.evaluate_fusion:eval_clavi",
}


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
    res = fn(**kw)
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
    fn = _resolve(EVAL_TASKS[args.task])
    if fn is None:
        return _err(f"evaluation task {args.task!r} is not available in this checkout")

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

    bar = tqdm(total=args.n, desc=f"eval {args.task}", unit="item", disable=args.json or not sys.stderr.isatty())

    def progress(done, total):
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        if args.task == "retrieval":
            res = fn(model, n=args.n, seed=args.seed, image_perturb=args.perturb, image_severity=args.severity,
                     text_perturb=args.text_perturb, text_severity=args.text_severity, progress=progress)
        else:  # every other task takes the visual perturbation as perturb/severity (image or video, per task)
            res = fn(model, n=args.n, seed=args.seed, perturb=args.perturb, severity=args.severity,
                     text_perturb=args.text_perturb, text_severity=args.text_severity, progress=progress)
    except ValueError as e:  # e.g. a model that cannot do this task: say so, no traceback
        bar.close()
        return _err(str(e))
    bar.close()
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:<16} {v}")
    return 0


def cmd_perturb(args) -> int:
    from tqdm.auto import tqdm

    from robustlab.export.manifest import FilePerturber, collect_inputs

    try:
        perturber = FilePerturber(args.out, args.name, args.severity, seed=args.seed, variant=args.variant,
                                  same_seed=args.same_seed, max_side=args.max_side)
    except (ValueError, RuntimeError, OSError) as e:
        return _err(str(e).strip("'\""))
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

    try:
        results = regenerate_export(args.export, out=args.out, progress=progress)
    except (OSError, ValueError) as e:
        bar.close()
        return _err(str(e))
    bar.close()
    bad = [r for r in results if not r.ok]
    if args.json:
        print(json.dumps([{"id": r.id, "status": r.status, "message": r.message, "perturbation": r.perturbation,
                           "severity": r.severity, "path": r.path} for r in results], indent=2))
    else:
        print(f"{len(results) - len(bad)}/{len(results)} example(s) regenerated bit for bit"
              + (f" into {args.out}" if args.out else "") + (f"; {len(bad)} failed" if bad else ""))
    if not results:
        return _err("the manifest lists no examples", 1)
    return 1 if bad else 0


def cmd_hubness(args) -> int:
    from robustlab.diagnostics.hubness_eval import eval_hubness
    from robustlab.models import ModelUnavailable, load_model

    if args.n < 2:
        return _err("--n must be at least 2")
    video = args.dataset == "videos"
    if args.direction is None:
        args.direction = "t2v" if video else "t2i"
    if video != (args.direction in ("t2v", "v2t")):
        return _err(f"--direction {args.direction} does not go with --dataset {args.dataset} "
                    f"(use {'t2v or v2t' if video else 't2i or i2t'})")
    if not 1 <= args.k <= args.n:
        return _err(f"--k must be between 1 and --n ({args.n})")
    if args.perturb:
        try:
            from robustlab.diagnostics.hubness_eval import _perturb_modality

            _perturb_modality(args.perturb, "video" if video else "image")
        except (KeyError, ValueError) as e:
            return _err(str(e).strip("'\""))
    try:
        model = load_model(args.model, device=args.device)
    except (ModelUnavailable, ValueError) as e:
        return _err(str(e))
    if model.random_init:
        print("robustlab: warning: this model is randomly initialised (plumbing test only, not a result)",
              file=sys.stderr)
    from tqdm.auto import tqdm

    bar = tqdm(total=args.n, unit="item", disable=not sys.stderr.isatty(), file=sys.stderr)

    def progress(stage, done, total):
        bar.set_description(stage, refresh=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        res = eval_hubness(model, n=args.n, seed=args.seed, k=args.k, direction=args.direction,
                           perturb=args.perturb, severity=args.severity, reduce=args.reduce, dataset=args.dataset,
                           progress=progress)
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
    t.set_defaults(fn=cmd_train)

    e = sub.add_parser("eval", help="evaluate a model on a freshly generated held-out split")
    e.add_argument("task", choices=list(EVAL_TASKS))
    e.add_argument("--model", default="builtin:tiny-clip")
    e.add_argument("--dataset", default="builtin")
    e.add_argument("--n", type=int, default=1000)
    e.add_argument("--seed", type=int, default=1000)
    e.add_argument("--perturb", default=None, help="image (or, for video tasks, video) perturbation name")
    e.add_argument("--severity", type=int, default=3)
    e.add_argument("--text-perturb", default=None, help="text perturbation name")
    e.add_argument("--text-severity", type=int, default=3)
    e.add_argument("--device", default=None)
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
                        description="Hubness of a model's text-image retrieval on the synthetic world: the "
                                    "k-occurrence N_k of every gallery item (how many queries rank it in their "
                                    "top k) and its skewness, truncated-normal skewness, Atkinson, Robin Hood and "
                                    "Gini indices, antihub and hub occurrence, with R@1/5/10, clean and (with "
                                    "--perturb) perturbed; --reduce adds the scores after a hubness reduction.")
    hb.add_argument("--model", default="builtin:tiny-clip")
    hb.add_argument("--dataset", default="builtin", choices=["builtin", "demo", "videos"],
                    help="builtin: n freshly generated held-out scenes (world seed --seed); demo: the dashboard's "
                         "demo gallery; videos: n freshly generated held-out event videos (needs a video model, "
                         "e.g. builtin:tiny-clip-video-seqtransf, or an image model that pools frames)")
    hb.add_argument("--k", type=int, default=15, help="top-k of the k-occurrence (HAT-VTR uses 15)")
    hb.add_argument("--n", type=int, default=1000)
    hb.add_argument("--seed", type=int, default=None, help="world seed (default: 1000 held-out, 7 demo)")
    hb.add_argument("--direction", choices=["t2i", "i2t", "t2v", "v2t"], default=None,
                    help="t2i: captions query images (N_k per image); i2t: images query captions; with --dataset "
                         "videos, t2v / v2t (default: t2i, or t2v for videos)")
    hb.add_argument("--perturb", default=None, help="an image (video, with --dataset videos) or text perturbation, "
                                                    "applied to that modality")
    hb.add_argument("--severity", type=int, default=3, choices=range(1, 6), metavar="K", help="1..5")
    hb.add_argument("--reduce", default=None, choices=["dsl", "qbnorm", "hsm"],
                    help="also report the scores after this hubness reduction (default parameters)")
    hb.add_argument("--device", default=None)
    hb.add_argument("--json", action="store_true")
    hb.set_defaults(fn=cmd_hubness)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from robustlab.perturb.allocator import tune_allocator

    tune_allocator()  # keep freed NumPy temporaries (glibc): zoom blur, brightness, elastic up to 3x faster
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        return _err("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
