"""Hand-made results of a protocol run for the report-table tests (test_report_layouts.py, test_report_protocol.py):
a cell's Result, a RunData holding them and a condition."""
from __future__ import annotations

from robustlab.bench.report_data import RunData
from robustlab.tasks.result import Result

M = "builtin:tiny-clip-video-seqtransf"


def result(conds: dict, metrics: dict, *, model: str = M, task: str = "retrieval") -> Result:
    """One cell's Result on 10 built-in videos: ``conds`` its conditions, ``metrics`` per direction."""
    return Result(model=model, model_fingerprint="x", dataset="builtin-videos", split="test", task=task,
                  conditions=conds, n=10, metrics=metrics, extra={"regime": "scratch"})


def run_data(spec, results) -> RunData:
    """A run of ``spec`` (a SweepSpec) whose cells are ``results``, read from no folder."""
    run = RunData(root=None, sweep=spec.to_json())
    run.results, run.files = results, [f"c{i}.json" for i in range(len(results))]
    return run


def cond(name, s, variant=None) -> dict:
    """A condition: perturbation ``name`` at severity ``s``, seed 0 (and ``variant``)."""
    return {"name": name, "severity": s, "seed": 0} | ({"variant": variant} if variant else {})
