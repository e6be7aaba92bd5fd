"""Image/video–text matching: each visual with its caption and a hard negative.

The negative is the item's ``meta["negative_caption"]`` (the built-in scenes: one attribute changed; the event
videos: the time-reversed caption). Reports accuracy at score 0.5 over positives and negatives (chance 0.5) and
how often the matched caption outscores its negative. A visual condition perturbs the visuals, a text condition
both captions (item ``i``: seed ``condition.seed + i``).
"""
from __future__ import annotations

import numpy as np

from robustlab.perturb.condition import Condition
from robustlab.tasks.base import ProgressFn, Task, as_conditions, check_conditions, limit, make_result, perturb_one, \
    perturb_text
from robustlab.tasks.registry import register_task


def itm_many(model, visuals, texts) -> np.ndarray:
    if hasattr(model, "itm_scores"):
        return np.asarray(model.itm_scores(visuals, texts), dtype=np.float64)
    return np.array([model.itm_score(v, t) for v, t in zip(visuals, texts)], dtype=np.float64)


class ITMTask(Task):
    name = "itm"
    description = "image/video–text matching against a hard negative caption: accuracy and positive-over-negative"
    needs = ("itm_score",)
    alternative = "builtin:tiny-vilt (or hf-vilt:dandelin/vilt-b32-mlm-itm)"

    def evaluate(self, model, dataset, conditions=None, *, progress: ProgressFn = None, n=None, **options) -> list:
        """``metrics = {"acc", "pos_over_neg", "chance_acc"}``, one Result per condition set."""
        self.check_model(model)
        self.check_dataset(dataset)
        conds = as_conditions(conditions)
        check_conditions(conds, dataset.kind)
        m = limit(dataset, n)
        out = []
        for ci, c in enumerate(conds):
            vc, tc = c.get("visual", Condition()), c.get("text", Condition())
            visuals, texts = [], []
            for i in range(m):
                item = dataset.item(i)
                neg = item.meta.get("negative_caption")
                if not item.texts or not neg:
                    continue
                v = perturb_one(dataset.visual(i), vc, i, dataset.kind)
                visuals += [v, v]
                texts += [perturb_text(item.texts[0], tc, i), perturb_text(neg, tc, i)]
            if not visuals:
                raise ValueError(f"dataset {dataset.name} has no items with a caption and a negative caption")
            s = itm_many(model, visuals, texts)
            pos, neg = s[0::2], s[1::2]
            metrics = {"acc": float(np.concatenate([pos > 0.5, neg <= 0.5]).mean()),
                       "pos_over_neg": float((pos > neg).mean()), "chance_acc": 0.5}
            out.append(make_result(self.name, model, dataset, c, len(pos), metrics))
            if progress:
                progress(ci + 1, len(conds))
        return out


TASK = register_task(ITMTask())

__all__ = ["ITMTask", "itm_many", "TASK"]
