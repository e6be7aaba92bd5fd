"""Retrieval and robustness metrics (small modules, one entry point each).

``retrieval`` and ``robustness`` are the modules, each callable as its entry point: ``rl.metrics.retrieval(scores,
gt)`` calls :func:`robustlab.metrics.retrieval.retrieval`, and ``import robustlab.metrics.retrieval as R`` works
(a function of the module's name here would hide the module from that import; issue 46)."""
from robustlab.metrics import retrieval, robustness  # the modules (callable: their function of the same name)
from robustlab.metrics.retrieval import ALL_KS, both_directions, caption_groups, invert_gt, ranks, rsum
from robustlab.metrics.robustness import mmi, robustness_table

__all__ = ["ALL_KS", "both_directions", "caption_groups", "invert_gt", "ranks", "retrieval", "rsum", "robustness",
           "robustness_table", "mmi"]
