"""What the failure modules share: the one-line error and what "fails" means per task (defined with the
per-example reading of a sweep's cells, :mod:`robustlab.bench.report_breaks`, which a plain sweep's report uses too)."""
from __future__ import annotations

from robustlab.bench.report_breaks import HUB_SIZE, IOU_HIT, TASKS, FailureError

__all__ = ["FailureError", "TASKS", "IOU_HIT", "HUB_SIZE"]
