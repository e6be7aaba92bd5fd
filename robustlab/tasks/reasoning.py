"""Visual reasoning over two images (NLVR2; Qiu et al. 2022): is a statement true of an image pair? Accuracy.

An item is a pair: its visual is the two images (``dataset.pair(i)`` when the dataset has it, else
``dataset.visual(i)`` as a sequence of two images), its statement ``texts[0]`` and its label
``meta["label"]`` (True / False), :mod:`robustlab.datasets.nlvr2`. The model answers with
``reason(images, sentence) -> (bool, p_true)``: a hub fusion model with an NLVR2 head
(``hf-vilt:dandelin/vilt-b32-finetuned-nlvr2``). A visual condition perturbs both images — image ``k`` (0, 1) of
item ``i`` with seed ``condition.seed + 2 i + k`` — a text condition the statement (seed ``condition.seed + i``).
"""
from __future__ import annotations

import numpy as np

from robustlab.tasks.base import Task, perturb_one, perturb_text
from robustlab.tasks.registry import register_task


def image_pair(dataset, i: int) -> list:
    pair = dataset.pair(i) if callable(getattr(dataset, "pair", None)) else dataset.visual(i)
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
            item = dataset.item(i)
            if not item.texts or "label" not in item.meta:
                continue
            pair = [perturb_one(im, vc, 2 * i + k, "image") for k, im in enumerate(image_pair(dataset, i))]
            pred, _ = model.reason(pair, perturb_text(item.texts[0], tc, i))
            label = bool(item.meta["label"])
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


TASK = register_task(ReasoningTask())

__all__ = ["ReasoningTask", "image_pair", "TASK"]
