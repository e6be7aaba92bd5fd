"""Start-up of the command line: ``robustlab --help`` and the listings that need no model, against importing torch
in the same run (the reference: what every command cost when the CLI imported torch up front).

    python benchmarks/bench_cli_startup.py [--runs 5] [--out benchmarks/results/cli_startup.json]

Each command runs in a fresh interpreter, interleaved with the reference, ``--runs`` times; the JSON keeps every
wall time, the medians and each command's median as a ratio of the reference's (target: below 0.5, i.e. no torch),
and whether the command's process imported torch at all (``-X importtime``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ("import torch", [sys.executable, "-c", "import torch"])
COMMANDS = {
    "robustlab --help": [sys.executable, "-m", "robustlab.cli", "--help"],
    "robustlab perturbations": [sys.executable, "-m", "robustlab.cli", "perturbations"],
    "robustlab datasets": [sys.executable, "-m", "robustlab.cli", "datasets"],
}


def wall(cmd) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def imports_torch(cmd) -> bool:
    r = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=ROOT, capture_output=True, text=True, check=True)
    return any(line.rstrip().endswith("| torch") for line in r.stderr.splitlines())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cli_startup.json"))
    args = ap.parse_args()
    times = {name: [] for name in [REFERENCE[0], *COMMANDS]}
    for _ in range(args.runs):
        times[REFERENCE[0]].append(wall(REFERENCE[1]))
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    ref = statistics.median(times[REFERENCE[0]])
    rows = {name: {"median_s": round(statistics.median(t), 3), "runs_s": [round(x, 3) for x in t],
                   "ratio_to_reference": round(statistics.median(t) / ref, 3),
                   "imports_torch": imports_torch(COMMANDS[name]) if name in COMMANDS else True}
            for name, t in times.items()}
    out = {"reference": REFERENCE[0], "runs": args.runs, "target_ratio": 0.5, "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    for name, r in rows.items():
        print(f"{name:<26} {r['median_s']:6.2f} s  ×{r['ratio_to_reference']:.2f}  torch: {r['imports_torch']}")
    return 0 if all(r["ratio_to_reference"] < 0.5 and not r["imports_torch"] for n, r in rows.items()
                    if n in COMMANDS) else 1


if __name__ == "__main__":
    sys.exit(main())
