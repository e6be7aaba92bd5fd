"""``robustlab search``: the weakest change that breaks each example, a budgeted search over the catalogue
(:mod:`robustlab.failures.adversarial`); ``--out DIR`` exports the broken ones as a suite that
``robustlab regenerate DIR`` rebuilds bit for bit and re-scores."""
from __future__ import annotations

import json
import sys

from tqdm.auto import tqdm

from robustlab.bench import SweepError
from robustlab.cli.common import err, msg
from robustlab.failures.adversarial import search
from robustlab.failures.suite import export_suite


def cmd_search(args) -> int:
    if args.budget < 1:
        return err(f"--budget must be at least 1 model evaluation, got {args.budget}")
    if args.k < 1:
        return err(f"--k must be at least 1, got {args.k}")
    if args.task == "grounding" and args.direction:
        return err("--direction is a retrieval option; grounding has none")
    if args.n is not None and args.n < 1:
        return err("--n must be at least 1")
    bars: list = []

    def progress(st):
        if not bars:
            bars.append(tqdm(total=st["budget"], desc="search", unit="eval", disable=args.quiet or args.json,
                             file=sys.stderr))
        bars[0].n = st["evaluations"]
        bars[0].set_postfix(broken=st["broken"], open=st["open"], refresh=False)
        bars[0].update(0)
    try:
        res = search(args.model, args.dataset or ("builtin-refs" if args.task == "grounding" else "builtin"),
                     task=args.task, n=args.n, split=args.split, seed=args.seed,
                     root=args.root, direction=args.direction, k=args.k, visual=args.visual, text=args.text,
                     pair_max=args.pair_max, budget=args.budget, perturb_seed=args.perturb_seed, device=args.device,
                     progress=progress)
        if args.out and res.broken():
            export_suite(res, args.out, top=args.top)
    except (SweepError, KeyError, ValueError, OSError) as e:
        return err(msg(e))
    finally:
        for bar in bars:
            bar.close()
    broken = res.broken()
    print(f"{len(broken)} of {sum(1 for r in res.results if r['status'] != 'fails clean')} examples broken; "
          f"{res.evaluations} of {res.budget} model evaluations ({res.hits} from the cache), {res.seconds:.1f} CPU s"
          + ("; budget spent" if res.exhausted else ""), file=sys.stderr)
    if args.out:
        print(f"wrote the suite of {len(broken[:args.top] if args.top else broken)} example(s) to {args.out} "
              f"(robustlab regenerate {args.out})" if broken else "nothing broke: no suite written", file=sys.stderr)
    if args.json:
        print(json.dumps(res.to_json()))
        return 0
    for r in broken[: max(args.list, 0)]:
        change = " + ".join(f"{c['perturbation']} s{c['severity']}" for c in r["change"])
        if res.task == "grounding":
            print(f"{r['rank_in_suite']:>3}. {r['id']} expression {r['ref']} ({r['expression']!r}): {change} -> "
                  f"IoU {r['clean_iou']:.3f} -> {r['iou']:.3f}")
        else:
            print(f"{r['rank_in_suite']:>3}. {r['id']}: {change} -> rank {r['clean_rank']} -> {r['rank']} "
                  f"(thief {r['thief_id']})")
    return 0
