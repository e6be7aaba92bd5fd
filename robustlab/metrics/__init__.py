"""Retrieval and robustness metrics (small modules, one entry point each)."""
from robustlab.metrics.retrieval import ranks, retrieval

__all__ = ["ranks", "retrieval"]
