"""Order reversal: does a model answer a before/after question by the order of events?

(Before CLAVI proper landed in :mod:`robustlab.tasks.clavi`, this simplified pairing was robustlab's "clavi" task;
it is kept under its own name because its numbers are comparable with earlier releases.)

A pair is a video whose two events concern different objects and the same video reversed in time (the same
events in swapped order); the question "does A change before/after B?" is the same for both members and its right
answer flips (the dataset gives it: ``dataset.clavi_pair(i)``, the built-in event videos). Reports accuracy on
originals and on complements, pair consistency (both members right; chance 0.25) and the rate of "yes".

A visual condition perturbs both members with the same seed (``condition.seed + i``); a text condition perturbs
the shared question once. The reversed member's main-object boxes are the video's, reversed.

On a video dataset that knows its videos' main-object boxes (the built-in event videos), mlvp_occlusion occludes
the main object (:func:`robustlab.tasks.conditions.mlvp_context`, boxes only); mlvp_event_insertion inserts from
the 32 synthetic clips, and the record says so (corpus 'synthetic (no donor pool given)'): a donor from the
dataset's own videos is matched by the evaluated model's clean video embeddings, and a question-answering model
need not have a video encoder (the retrieval bench, which has them, does insert the dataset's own videos).
"""
from __future__ import annotations

import numpy as np

from robustlab.tasks.conditions import mlvp_context, perturb_one, perturb_text
from robustlab.tasks.task import Task, chunks
from robustlab.tasks.vqa import answer_many

CHUNK = 50  # pairs per model call


def pairs(dataset, n=None) -> list:
    """(item index, QA on the video, QA on its reversal) for the first ``n`` items that have a pair."""
    out = []
    for i in range(len(dataset)):
        p = dataset.clavi_pair(i)
        if p is not None:
            out.append((i, p[0], p[1]))
            if n is not None and len(out) >= int(n):
                break
    return out


class OrderReversalTask(Task):
    name = "order-reversal"
    dataset_task = "clavi"
    takes_interventions = True
    description = "before/after answers on a video and its time reversal (a simplified CLAVI pair): accuracy, " \
                  "pair consistency"
    needs = ("vqa",)
    kinds = ("video",)
    alternative = "builtin:tiny-vilt"

    def evaluate(self, model, dataset, conditions=None, *, progress=None, n=None, **options) -> list:
        """``metrics = {"acc_original", "acc_complement", "acc", "pair_consistency", "chance_acc",
        "chance_pair_consistency", "yes_rate"}``; ``n`` caps the number of pairs (not of videos)."""
        if not callable(getattr(dataset, "clavi_pair", None)):
            self.check_model(model)
            raise ValueError(f"dataset {dataset.name} has no CLAVI pairs (use builtin-videos)")
        return super().evaluate(model, dataset, conditions, progress=progress, max_pairs=n, **options)

    def run(self, model, dataset, vc, tc, m, progress, max_pairs=None, **options):
        items = pairs(dataset, max_pairs)
        if not items:
            raise ValueError(f"dataset {dataset.name} has no video with a before/after question")
        o_right, c_right, yes = [], [], []
        ctx = None if vc.clean else mlvp_context(dataset)  # the main-object boxes, where the dataset knows them
        for idx in chunks(len(items), CHUNK):
            visuals, questions, answers = [], [], []
            for j in idx:
                i, q, q_rev = items[j]
                frames = dataset.visual(i)
                rev = frames[::-1].copy()
                qt = perturb_text(q.question, tc, i)
                back = ctx.on_frames(range(len(frames) - 1, -1, -1)) if ctx else None
                visuals += [perturb_one(frames, vc, i, "video", context=ctx),
                            perturb_one(rev, vc, i, "video", context=back)]
                questions += [qt, qt]
                answers += [q.answer, q_rev.answer]
            preds = answer_many(model, visuals, questions)
            for k in range(0, len(preds), 2):
                o_right.append(int(preds[k] == answers[k]))
                c_right.append(int(preds[k + 1] == answers[k + 1]))
                yes += [int(preds[k] == "yes"), int(preds[k + 1] == "yes")]
            if progress:
                progress(idx[-1] + 1, len(items))
        o, cc = np.array(o_right), np.array(c_right)
        return len(items), {"acc_original": float(o.mean()), "acc_complement": float(cc.mean()),
                            "acc": float(np.concatenate([o, cc]).mean()), "pair_consistency": float((o & cc).mean()),
                            "chance_acc": 0.5, "chance_pair_consistency": 0.25, "yes_rate": float(np.mean(yes))}, {}


TASK = OrderReversalTask()  # its entry in the task table (robustlab.tasks.registry.TASKS)

__all__ = ["OrderReversalTask", "pairs", "TASK"]
