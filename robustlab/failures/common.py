"""What the failure modules share: the one-line error and what "fails" means per task."""
from __future__ import annotations

from robustlab.bench.spec import SweepError

#: what fails, per task: "rank" (retrieval: the ground truth's rank above k), "iou" (grounding: IoU <= 0.5),
#: "answer" (VQA: the answer is wrong)
TASKS = {"retrieval": "rank", "grounding": "iou", "vqa": "answer"}
IOU_HIT = 0.5  # grounding: a hit is IoU > 0.5 (acc@0.5); a failure is anything else
HUB_SIZE = 2.0  # a hub: k-occurrence >= HUB_SIZE x its mean (robustlab.diagnostics.hubness.hubs, hub_size = 2)


class FailureError(SweepError):
    """A failure map that cannot be made as asked (one line)."""


__all__ = ["FailureError", "TASKS", "IOU_HIT", "HUB_SIZE"]
