"""Visual reasoning over two images (NLVR2; Qiu et al. 2022): is a statement true of an image pair? Accuracy.

An item is a pair: its two images (``dataset.visual_pair(i)``, :mod:`robustlab.datasets.nlvr2`; else
``dataset.visual(i)`` as a sequence of two images) and its statements as questions
(``QA(sentence, "true" | "false", "reasoning")``), each evaluated once. The model answers with
``reason(images, sentence) -> (bool, p_true)``: a hub fusion model with an NLVR2 head
(``hf-vilt:dandelin/vilt-b32-finetuned-nlvr2``). A visual condition perturbs both images — image ``k`` (0, 1) of
item ``i`` with seed ``condition.seed + 2 i + k`` — a text condition the statements (seed ``condition.seed + i``).
"""
from __future__ import annotations

import numpy as np

from robustlab.tasks.conditions import perturb_one, perturb_text
from robustlab.tasks.task import Task


def image_pair(dataset, i: int) -> list:
    pair = dataset.visual_pair(i) if callable(getattr(dataset, "visual_pair", None)) else dataset.visual(i)
    pair = list(pair)
    if len(pair) != 2:
        raise ValueError(f"{dataset.name} item {i} has {len(pair)} images; NLVR2 items have two")
    return pair


class ReasoningTask(Task):
    name = "reasoning"
    description = "visual reasoning over an image pair (NLVR2): true/false accuracy"
    needs = ("reason",)
    kinds = ("image",)
    alternative = "hf-vilt:dandelin/vilt-b32-finetuned-nlvr2"

    def run(self, model, dataset, vc, tc, m, progress, **options):
        """``metrics = {"acc", "acc_true", "acc_false", "chance_acc"}``."""
        right, labels = [], []
        for i in range(m):
            statements = [(q.question, q.answer.lower() == "true") for q in dataset.item(i).questions
                          if q.answer.lower() in ("true", "false")]
            if not statements:
                continue
            pair = [perturb_one(im, vc, 2 * i + k, "image") for k, im in enumerate(image_pair(dataset, i))]
            for sentence, label in statements:
                pred, _ = model.reason(pair, perturb_text(sentence, tc, i))
                right.append(int(bool(pred) == label))
                labels.append(label)
            if progress:
                progress(i + 1, m)
        if not right:
            raise ValueError(f"dataset {dataset.name} has no labelled statements in its first {m} items")
        r, lab = np.array(right), np.array(labels)
        return m, {"acc": float(r.mean()), "chance_acc": 0.5,
                   "acc_true": float(r[lab].mean()) if lab.any() else None,
                   "acc_false": float(r[~lab].mean()) if (~lab).any() else None}, {"statements": len(right)}


TASK = ReasoningTask()  # its entry in the task table (robustlab.tasks.registry.TASKS)

__all__ = ["ReasoningTask", "image_pair", "TASK"]
