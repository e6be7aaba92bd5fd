"""Test-time adaptation in retrieval: which directions an ``adapt`` condition set runs in, and running its method
(:mod:`robustlab.adapt`, reached through the task layer's ``adapt`` axis) on the one perturbed side's queries of a
:class:`~robustlab.tasks.retrieval_bench.RetrievalBench`, for :class:`~robustlab.tasks.retrieval.RetrievalTask`.
"""
from __future__ import annotations

from robustlab.tasks.conditions import ADAPT, QUERY_SIDE, adapt_params, adapt_side, adaptation
from robustlab.tasks.retrieval_bench import DIRECTIONS, RetrievalBench


def adapt_directions(conds: dict, kind: str, directions=None) -> list[str]:
    """The directions an ``adapt`` condition set runs in: those of the dataset whose queries are the perturbed
    side, kept by ``directions`` (None: all). ValueError (one line) when none is left."""
    side = adapt_side(conds)
    dirs = [d for d in DIRECTIONS[kind] if QUERY_SIDE[d] == side]
    keep = [d for d in dirs if directions is None or d in directions]
    if not keep:
        raise ValueError(f"test-time adaptation of {side} queries runs in {' / '.join(dirs)}, which the "
                         f"directions asked for ({', '.join(directions or ())}) leave out")
    return keep

def run_adaptation(bench: RetrievalBench, model, dataset, conds: dict, directions, progress,
                   mdr: str = "median") -> tuple[dict, dict]:
    """(metrics after adaptation per direction, extra["adapt"]) of one ``adapt`` condition set."""
    adapt = adaptation()  # robustlab.adapt (the layer above: robustlab.ABOVE["adaptation"])
    a = conds[ADAPT]
    side = adapt_side(conds)
    dirs = adapt_directions(conds, dataset.kind, directions)
    shift = conds[side]
    metrics: dict = {}
    info = {"method": a.name, "label": adapt.get_method(a.name).label, "side": side, "params": {},
            "seconds": {}, "per_1000_queries": {}, "clean": {}, "shifted": {}, "queries": {},
            "adapted_parameters": {}, "loss": {}, "timing": {}, "memory_accuracy": {}}
    for j, d in enumerate(dirs):
        prog = (lambda x, t, j=j: progress(j * t + x, len(dirs) * t)) if progress else None
        r = adapt.run(model, bench.dataset, a.name, d, shift, bench=bench, progress=prog, keep_arrays=False,
                      mdr=mdr, **adapt_params(a))
        metrics[d] = r.metrics["adapted"]
        info["clean"][d], info["shifted"][d] = r.metrics["clean"], r.metrics["shifted"]
        info["params"][d], info["seconds"][d] = r.params, r.seconds
        info["per_1000_queries"][d] = r.seconds.get("per_1000_queries")
        info["queries"][d], info["adapted_parameters"][d] = r.n_queries, r.adapted_parameters
        info["loss"][d] = [round(float(x), 6) for x in r.loss_curve()]
        info["timing"][d] = r.timing.get("per_1000_queries", {})  # HAT-VTR §5.5's phases, s per 1,000 queries
        info["memory_accuracy"][d] = r.memory_curve("accuracy")  # the Reliable Memory's, per batch (TCR, HAT-VTR)
    return metrics, info


__all__ = ["adapt_directions", "run_adaptation"]
