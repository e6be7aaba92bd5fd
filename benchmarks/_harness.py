"""What several benchmark scripts share: the checkout on ``sys.path``, one ``robustlab`` command timed as a
subprocess, and the results written.

Imported by the scripts of this folder (``python benchmarks/bench_x.py`` puts this folder on ``sys.path``) before they
import robustlab."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout's robustlab, for the scripts that import it


def run_cli(args: list, cache: Path, threads: int) -> tuple[float, float, str]:
    """``python -m robustlab.cli ARGS`` in a fresh process with its own embedding cache and ``threads`` OMP/MKL
    threads -> (wall seconds, CPU seconds: user + system of the command and its children, its stdout). A failed
    command stops the benchmark with its stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), ROBUSTLAB_CACHE=str(cache), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "robustlab.cli", *args], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{r.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), r.stdout


def write_results(res: dict, out) -> int:
    """The results as indented JSON into ``out`` (its folder made) and on stdout; 0, the script's exit status."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0
