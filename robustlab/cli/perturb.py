"""``robustlab perturb INPUT... --name N --severity K --out DIR``: perturb files and folders into an export."""
from __future__ import annotations

import sys

from tqdm.auto import tqdm

from robustlab.cli.common import err, msg
from robustlab.export.manifest import FilePerturber, collect_inputs


def cmd_perturb(args) -> int:
    try:
        perturber = FilePerturber(args.out, args.name, args.severity, seed=args.seed, variant=args.variant,
                                  same_seed=args.same_seed, max_side=args.max_side)
    except (ValueError, RuntimeError, OSError) as e:
        return err(msg(e))
    files, errors, notes = collect_inputs(args.inputs, perturber.kinds)
    for note in notes:
        print(f"robustlab: {note}", file=sys.stderr)
    for line in errors:
        print(f"robustlab: skipped {line}", file=sys.stderr)
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
        return err("no input files found", 1)
    return 1 if errors else 0
