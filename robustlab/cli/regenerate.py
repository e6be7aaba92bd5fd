"""``robustlab regenerate EXPORT``: rebuild an export bit for bit and verify it (exit 1 on any mismatch)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tqdm.auto import tqdm

from robustlab.cli.common import err
from robustlab.export.manifest import ExportWriteError, regenerate_export


def cmd_regenerate(args) -> int:
    bar = tqdm(desc="regenerate", unit="example", disable=args.quiet or args.json)

    def progress(r, done, total):
        bar.total = total
        bar.update(1)
        if not args.json:
            tqdm.write(r.line())

    write_error = None
    try:
        results = regenerate_export(args.export, out=args.out, progress=progress)
    except ExportWriteError as e:  # the out folder filled up: every example was verified all the same
        if e.results is None:
            bar.close()
            return err(str(e))
        results, write_error = e.results, str(e)
    except (OSError, ValueError) as e:
        bar.close()
        return err(str(e))
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
        return err(write_error)
    if not results:
        return err("the manifest lists no examples", 1)
    if (Path(args.export) / "suite.json").is_file() and not bad:  # an adversarial suite: re-score it too
        return _rescore(args.export, args.json)
    return 1 if bad else 0


def _rescore(src, as_json: bool) -> int:
    """Re-score a suite (robustlab.failures.suite): each example's rank from its regenerated inputs."""
    from robustlab.failures.suite import rescore_suite  # start-up: torch, only for a suite folder

    try:
        rows = rescore_suite(src)
    except (OSError, ValueError, KeyError) as e:  # FailureError is a ValueError (a SweepError)
        return err(f"re-scoring the suite: {e}")
    same = [r for r in rows if r["same"] and r["breaks"]]
    what = "iou" if rows and "iou" in rows[0] else "rank"  # a grounding suite re-scores IoUs
    if as_json:
        print(json.dumps({"rescored": rows}), file=sys.stderr)  # stdout holds the regeneration's JSON
    else:
        print(f"{len(same)}/{len(rows)} suite example(s) re-scored: the same {'IoU' if what == 'iou' else 'rank'}, "
              "still broken")
        for r in rows:
            if not (r["same"] and r["breaks"]):
                print(f"  {r['id']}: {what} {r[what]}, recorded {r['recorded']}")
    return 0 if len(same) == len(rows) else 1
