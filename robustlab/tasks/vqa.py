"""Visual question answering (images or videos): accuracy, overall and per question type.

Every question of every item is asked (the built-in world has one per item, :mod:`robustlab.datasets.synthetic.qa`).
A visual condition perturbs the visuals, a text condition the questions (a question that loses every word becomes
"?"); item ``i`` gets seed ``condition.seed + i``. Answers are compared exactly (the built-in world's vocabulary;
hub VQA models' answers are lower-cased and stripped).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from robustlab.tasks.conditions import perturb_one, perturb_text
from robustlab.tasks.task import Task, chunks

CHUNK = 100  # items per model call (the numbers do not depend on it; memory does)


def answer_many(model, visuals, questions) -> list[str]:
    if hasattr(model, "vqa_batch"):
        return [a for a, _ in model.vqa_batch(visuals, questions)]
    return [model.vqa(v, q)[0] for v, q in zip(visuals, questions)]


def _norm(a: str) -> str:
    return str(a).strip().lower()


class VQATask(Task):
    name = "vqa"
    takes_interventions = True
    description = "visual question answering on images or videos: accuracy overall and per question type"
    needs = ("vqa",)
    alternative = "builtin:tiny-vilt (or hf-vilt:dandelin/vilt-b32-finetuned-vqa)"

    def run(self, model, dataset, vc, tc, m, progress, **options):
        """``metrics = {"acc", "per_type": {qtype: {"acc", "n"}}}``; ``extra["correct"]`` / ``extra["answers"]``: each
        question's 1/0 and the answer given (items in order, each item's questions in order; a failure map's
        per-example outcome)."""
        right, per_type, given = [], defaultdict(list), []
        for idx in chunks(m, CHUNK):
            visuals, questions, answers, types = [], [], [], []
            for i in idx:
                item = dataset.item(i)
                if not item.questions:
                    continue
                v = perturb_one(dataset.visual(i), vc, i, dataset.kind)
                for q in item.questions:
                    visuals.append(v)
                    questions.append(perturb_text(q.question, tc, i))
                    answers.append(q.answer)
                    types.append(q.qtype or "all")
            for p, a, t in zip(answer_many(model, visuals, questions), answers, types):
                ok = int(_norm(p) == _norm(a))
                given.append(str(p))
                right.append(ok)
                per_type[t].append(ok)
            if progress:
                progress(idx[-1] + 1, m)
        if not right:
            raise ValueError(f"dataset {dataset.name} has no questions in its first {m} items")
        return m, {"acc": float(np.mean(right)), "per_type": {k: {"acc": float(np.mean(v)), "n": len(v)}
                                                             for k, v in sorted(per_type.items())}}, \
            {"questions": len(right), "correct": right, "answers": given}


    def forward_probe(self, dataset, m: int, size: int = 8):
        """One batch of the first ``size`` items that have questions (their first question each)."""
        idx = [i for i in range(min(m, 4 * size)) if dataset.item(i).questions][:size]
        if not idx:
            return None
        visuals = [dataset.visual(i) for i in idx]
        questions = [dataset.item(i).questions[0].question for i in idx]
        return lambda model: answer_many(model, visuals, questions)


TASK = VQATask()  # its entry in the task table (robustlab.tasks.registry.TASKS)

__all__ = ["VQATask", "answer_many", "TASK"]
