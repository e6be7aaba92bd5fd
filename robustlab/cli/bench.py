"""``robustlab bench``: a robustness sweep (one Result per cell, resumable); ``robustlab bench report DIR``: its
results.csv and report.html."""
from __future__ import annotations

import argparse
import sys

from tqdm.auto import tqdm

from robustlab.bench import SweepError, build_spec, run_sweep
from robustlab.bench.protocol import dry_run_lines, load_protocol
from robustlab.cli.common import err, msg, split
from robustlab.io.params import parse_kv


def _spec(args):
    """The sweep's spec from the flags: a protocol's (the flags given override it) or the plain grid's."""
    dataset = {"name": args.dataset, "root": args.root, "split": args.split, "n": args.n, "seed": args.seed,
               "options": {"trust_pickle": True} if args.trust_pickle else {}}
    if args.protocol:
        proto = load_protocol(args.protocol)
        ds = {k: v for k, v in dataset.items() if v not in (None, {})} or None  # the flags given override
        return proto, proto.build_spec(
            models=split(args.models) or None, dataset=ds, tasks=split(args.tasks) or None,
            directions=split(args.directions) or None, perturbations=args.perturbations,
            text_perturbations=args.text_perturbations, severities=args.severities,
            text_severities=args.text_severities, combine=args.combine, adapt=args.adapt,
            adapt_params=args.adapt_param or [], perturb_seed=args.perturb_seed, worst=args.worst, device=args.device)
    if not args.models:
        raise ValueError("--models is required (or --protocol NAME: `robustlab protocols` lists them)")
    dataset["name"] = dataset["name"] or "builtin"
    return None, build_spec(models=split(args.models), dataset=dataset, tasks=split(args.tasks or "retrieval"),
                            perturbations=args.perturbations if args.perturbations is not None else "all",
                            text_perturbations=args.text_perturbations, severities=args.severities or "1-5",
                            text_severities=args.text_severities, combine=args.combine or "auto",
                            interventions=args.interventions, adapt=args.adapt, adapt_params=args.adapt_param or [],
                            directions=split(args.directions) or None, perturb_seed=args.perturb_seed,
                            worst=args.worst, device=args.device, mix_severities=args.mix_severities,
                            corrupt_fractions=args.corrupt_fraction)


def cmd_bench(args) -> int:
    try:
        # the --adapt parameters first: a bad value (steps=inf) is one line before any work
        parse_kv(args.adapt_param or [], "--adapt-param", example="steps=1, tent.lr=1e-4",
                 form="KEY=VALUE or METHOD.KEY=VALUE")
        proto, spec = _spec(args)
    except (KeyError, ValueError, OSError) as e:
        return err(msg(e))
    if args.protocol and (args.interventions or getattr(args, "mix_severities", False)
                          or getattr(args, "corrupt_fraction", None)):
        return err("--interventions, --mix-severities and --corrupt-fraction with --protocol: a protocol names its "
                   "interventions and mixed settings ([[mix]]); write a protocol file (extends = NAME) with yours")
    if args.dry_run:
        print("\n".join(dry_run_lines(spec, proto)))
        return 0
    if not args.out:
        return err("--out DIR is required (the run folder; rerun with the same folder to resume), or --dry-run")
    if spec.protocol and spec.protocol.get("not_run"):
        nr = spec.protocol["not_run"]
        print(f"protocol {spec.name}: {len(nr)} of its perturbations cannot run here and are left out (the report "
              f"lists them): " + "; ".join(f"{x['perturbation']} ({x['reason']})" for x in nr), file=sys.stderr)
    bars: list = []  # the bar starts with the first cell: a problem found before it (the dataset, a model) is one line

    def progress(st):
        if not bars:
            bars.append(tqdm(total=0, desc=f"bench {args.out}", unit="cell", disable=args.quiet, file=sys.stderr,
                             bar_format="{l_bar}{bar}| {n:.2f}/{total} cells [{elapsed}<{remaining}]"))
        bar = bars[0]
        bar.total = st["total"]
        bar.n = round(st["fraction"] * st["total"], 2)
        bar.update(0)  # redraws at tqdm's own rate (mininterval), not on every item
    try:
        status = run_sweep(spec, args.out, engine=args.engine, progress=progress, address=args.address,
                           num_cpus=args.num_cpus)
    except (SweepError, ValueError) as e:
        for bar in bars:
            bar.close()
        return err(str(e))
    for bar in bars:
        bar.close()
    print(f"{status.done} cells run, {status.skipped} already there, {status.total} in the sweep "
          f"({status.seconds:.1f} s, engine {status.engine}) -> {status.out}"
          + (f"; {len(status.invalid)} damaged cell file(s) recomputed" if status.invalid else ""), file=sys.stderr)
    if args.report:
        return cmd_bench_report(argparse.Namespace(run=args.out, metric=None, out=None, headline=None))
    return 0


def cmd_bench_report(args) -> int:
    try:
        from robustlab.bench.report import write_report  # pandas and plotly: the [report] extra
    except ImportError as e:
        return err(f"the report needs pandas and plotly ({e.name or e} is missing): pip install 'robustlab[report]'")
    try:
        csv_path, html_path = write_report(args.run, out_dir=args.out, metric=args.metric,
                                           headline=getattr(args, "headline", None))
    except (ValueError, OSError) as e:
        return err(msg(e))
    print(f"wrote {csv_path}\nwrote {html_path}")
    extra = csv_path.parent / "adaptation.csv"  # written when the run has adaptation cells
    if extra.is_file():
        print(f"wrote {extra}")
    return 0
