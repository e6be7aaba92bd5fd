"""Two sweep folders cell by cell: the largest |difference| in R@1/R@5/R@10 and each cell's R@1 side by side.

    python benchmarks/compare_sweeps.py RUN_A RUN_B

Used by ``gpu_check.sh`` (cuda fp16 against cpu fp32, same cells); any two runs of the same grid compare.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def load(run: Path) -> dict:
    out = {}
    for f in sorted((run / "cells").glob("*.json")):
        r = json.loads(f.read_text())
        out[r["extra"]["cell"]] = {k: v for k, v in r["metrics"].items() if isinstance(v, dict)}
    return out


def main(argv=None) -> int:
    a_dir, b_dir = (Path(p) for p in (argv or sys.argv[1:])[:2])
    a, b = load(a_dir), load(b_dir)
    common = sorted(set(a) & set(b))
    worst = 0.0
    for cell in common:
        for d, ma in a[cell].items():
            mb = b[cell].get(d, {})
            for m in ("R@1", "R@5", "R@10"):
                if m in ma and m in mb:
                    worst = max(worst, abs(ma[m] - mb[m]))
        r1 = {d: (a[cell][d].get("R@1"), b[cell].get(d, {}).get("R@1")) for d in a[cell]}
        print(f"  {cell.split('__')[2]:<32} " + "  ".join(f"{d} {x} / {y}" for d, (x, y) in r1.items()))
    print(f"{len(common)} common cells ({len(a)} in {a_dir.name}, {len(b)} in {b_dir.name}); "
          f"largest |difference| in R@1/5/10: {worst:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
