"""Retrieval and robustness metrics (small modules, one entry point each)."""
from robustlab.metrics.retrieval import ALL_KS, both_directions, caption_groups, invert_gt, ranks, retrieval, rsum
from robustlab.metrics.robustness import mmi, robustness, robustness_table

__all__ = ["ALL_KS", "both_directions", "caption_groups", "invert_gt", "ranks", "retrieval", "rsum", "robustness",
           "robustness_table", "mmi"]
