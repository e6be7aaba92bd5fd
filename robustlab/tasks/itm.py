"""Image/video–text matching: each visual with its caption and a hard negative.

The negative is the item's ``meta["negative_caption"]`` (the built-in scenes: one attribute changed; the event
videos: the time-reversed caption). Reports accuracy at score 0.5 over positives and negatives (chance 0.5) and
how often the matched caption outscores its negative. A visual condition perturbs the visuals, a text condition
both captions (item ``i``: seed ``condition.seed + i``).

On a video dataset that knows its videos' main-object boxes (the built-in event videos), mlvp_occlusion occludes
the main object (:func:`robustlab.tasks.conditions.mlvp_context`, boxes only); mlvp_event_insertion inserts from
the 32 synthetic clips, and the record says so (corpus 'synthetic (no donor pool given)'): a donor from the
dataset's own videos is matched by the evaluated model's clean video embeddings, and a matching model need not have a
video encoder (the retrieval bench, which has them, does insert the dataset's own videos).
"""
from __future__ import annotations

import numpy as np

from robustlab.tasks.conditions import mlvp_context, perturb_one, perturb_text
from robustlab.tasks.task import Task


def itm_many(model, visuals, texts) -> np.ndarray:
    if hasattr(model, "itm_scores"):
        return np.asarray(model.itm_scores(visuals, texts), dtype=np.float64)
    return np.array([model.itm_score(v, t) for v, t in zip(visuals, texts)], dtype=np.float64)


class ITMTask(Task):
    name = "itm"
    takes_interventions = True
    description = "image/video–text matching against a hard negative caption: accuracy and positive-over-negative"
    needs = ("itm_score",)
    alternative = "builtin:tiny-vilt (or hf-vilt:dandelin/vilt-b32-mlm-itm)"

    def run(self, model, dataset, vc, tc, m, progress, **options):
        """``metrics = {"acc", "pos_over_neg", "chance_acc"}``."""
        visuals, texts = [], []
        ctx = None if vc.clean else mlvp_context(dataset)  # the main-object boxes, where the dataset knows them
        for i in range(m):
            item = dataset.item(i)
            neg = item.meta.get("negative_caption")
            if not item.texts or not neg:
                continue
            v = perturb_one(dataset.visual(i), vc, i, dataset.kind, context=ctx)
            visuals += [v, v]
            texts += [perturb_text(item.texts[0], tc, i), perturb_text(neg, tc, i)]
            if progress:
                progress(i + 1, 2 * m)
        if not visuals:
            raise ValueError(f"dataset {dataset.name} has no items with a caption and a negative caption")
        s = itm_many(model, visuals, texts)
        pos, neg = s[0::2], s[1::2]
        return len(pos), {"acc": float(np.concatenate([pos > 0.5, neg <= 0.5]).mean()),
                          "pos_over_neg": float((pos > neg).mean()), "chance_acc": 0.5}, {}


TASK = ITMTask()  # its entry in the task table (robustlab.tasks.registry.TASKS)

__all__ = ["ITMTask", "itm_many", "TASK"]
