"""Visual entailment (SNLI-VE; Qiu et al. 2022): does the image entail, contradict or say nothing about a
hypothesis? Accuracy overall and per gold label.

An item carries its hypotheses as questions (``QA(question=hypothesis, answer=gold label, qtype="entailment")``,
:mod:`robustlab.datasets.snli_ve`). The model answers with ``entail(image, hypothesis) -> (label, scores)``: a hub
fusion model with a visual-entailment head (``hf-vilt:`` with a three-label SNLI-VE classifier). A visual
condition perturbs the images (item ``i``: seed ``condition.seed + i``), a text condition the hypotheses.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from robustlab.tasks.conditions import perturb_one, perturb_text
from robustlab.tasks.task import Task


class EntailmentTask(Task):
    name = "entailment"
    description = "visual entailment (SNLI-VE): entailment / neutral / contradiction accuracy"
    needs = ("entail",)
    kinds = ("image",)
    alternative = "a hub ViLT checkpoint fine-tuned on SNLI-VE (hf-vilt:PATH; no built-in model has this head)"

    def run(self, model, dataset, vc, tc, m, progress, **options):
        """``metrics = {"acc", "per_label": {label: {"acc", "n"}}, "chance_acc"}``."""
        right, per_label = [], defaultdict(list)
        for i in range(m):
            item = dataset.item(i)
            if not item.questions:
                continue
            im = perturb_one(dataset.visual(i), vc, i, "image")
            for q in item.questions:
                pred, _ = model.entail(im, perturb_text(q.question, tc, i))
                ok = int(str(pred).lower() == str(q.answer).lower())
                right.append(ok)
                per_label[str(q.answer).lower()].append(ok)
            if progress:
                progress(i + 1, m)
        if not right:
            raise ValueError(f"dataset {dataset.name} has no hypotheses in its first {m} items")
        return m, {"acc": float(np.mean(right)), "chance_acc": 1 / 3,
                   "per_label": {k: {"acc": float(np.mean(v)), "n": len(v)} for k, v in sorted(per_label.items())}}, \
            {"hypotheses": len(right)}


TASK = EntailmentTask()  # its entry in the task table (robustlab.tasks.registry.TASKS)

__all__ = ["EntailmentTask", "TASK"]
