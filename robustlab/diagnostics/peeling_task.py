"""The PEELING task: adversarial grounding tests by image-aware property reduction (:mod:`robustlab.diagnostics.peeling`).

A task of the diagnostics layer: it runs PEELING (this layer) over two tasks' model calls (grounding, VQA), so it
registers itself in the task registry when imported; the sweeps (robustlab.bench), the CLI and the dashboard import
it, and so does ``import robustlab.diagnostics.peeling_task`` in a notebook.

For every referring expression of the first ``n`` items: extract the object and its properties, keep the shorter
candidates the VQA model calls unique in the image (three questions, AND), rewrite each with P2 (back-translation,
one synonym, one keyboard typo) and ground it; a test fails (an *issue*) at IoU ≤ 0.5 to the original box.

Conditions: a visual condition perturbs the image (for the uniqueness questions *and* the grounding -- the paper
perturbs text only; an image condition here measures PEELING on top of a corrupted image); a text condition
perturbs the *original* expression before PEELING (the extraction reads the perturbed text; ``rawtext`` is it,
``acc_original`` is measured on it). Item ``i`` gets seed ``condition.seed + i`` as in every task. A model
intervention acts on the model for both the VQA oracle and the grounding unless ``vqa_model`` (a model or a model
spec) gives a separate oracle.

Options (``task.evaluate(..., **options)``): every field of :class:`~robustlab.diagnostics.peeling.PeelingConfig`
(``compat``, ``wide``, ``skip_plural``, ``check_all``, ``keep_article``, ``stages`` -- a tuple or
"synonym,keyboard" --, ``synonym_mode``, ``synonym_scorer``, ``synonym_threshold``, ``short_len``, ``seed``,
``chunk``), ``extractor`` (an :class:`~robustlab.diagnostics.peeling.Extractor`) and ``vqa_model``.

Metrics: :func:`robustlab.diagnostics.peeling.summarize` -- ``acc_original``, ``acc_original_tested``,
``acc_adv``, ``mmi``, ``mmi_tested``, ``acc_reduced`` / ``mmi_reduced`` (P1 alone), ``issue_rate``, tests per item,
skips, per strategy, the P2 stage counts and, on the built-in scenes, the VQA oracle against the world's truth.
"""
from __future__ import annotations

from robustlab.diagnostics import peeling
from robustlab.models.registry import load_model
from robustlab.tasks.base import Task, perturb_one, perturb_text
from robustlab.tasks.registry import register_task

EXAMPLES = 10  # tests kept in the Result's extra (the full list: robustlab.diagnostics.peeling.peel_many)


class PeelingTask(Task):
    name = "peeling"
    takes_interventions = True
    description = ("PEELING adversarial grounding tests: property-reduced expressions checked by VQA, then P2 "
                   "rewrites; accuracy on original vs adversarial expressions and MMI")
    needs = ("vqa", "ground")
    kinds = ("image",)
    alternative = "builtin:tiny-vilt"
    options = {"vqa_model": "the model that answers the uniqueness questions (default: the grounding model)",
               "compat": "the released code's substring answer parsing and template string (default false)",
               "wide": "every proper subset of the properties as a candidate (the paper's wording; default false)",
               "skip_plural": "skip plural objects, the released rule (default true)",
               "check_all": "ask the uniqueness questions for every candidate (default false)",
               "keep_article": "put the original determiner back into the reduced expression (default false)",
               "stages": "the P2 stages, comma-separated: back_translation,synonym,keyboard",
               "synonym_mode": "paper (one word) or code (every eligible word)",
               "synonym_threshold": "the synonym's minimum similarity (default 0.6)",
               "short_len": "expressions this short get only the synonym stage (default 5)",
               "seed": "the tests' base seed (default 0)", "chunk": "items per batched model call"}

    def check_dataset(self, dataset) -> None:
        """Any image dataset with referring expressions (one that lists "peeling" or "grounding")."""
        if dataset.kind not in self.kinds:
            raise ValueError(f"{self.name} runs on images; dataset {dataset.name} has {dataset.kind}s")
        tasks = getattr(dataset, "tasks", ())
        if "peeling" not in tasks and "grounding" not in tasks:
            raise ValueError(f"dataset {dataset.name} has no referring expressions for {self.name} (its items "
                             f"support {', '.join(tasks) or 'nothing'})")

    def run(self, model, dataset, vc, tc, m, progress, **options):
        vqa_model = options.pop("vqa_model", None)
        if isinstance(vqa_model, str):
            vqa_model = load_model(vqa_model)
        extractor = options.pop("extractor", None)
        image_fn = None if vc.clean else (lambda i: perturb_one(dataset.visual(i), vc, i, "image"))
        text_fn = None if tc.clean else (lambda e, i: perturb_text(e, tc, i))
        run = peeling.peel_many(model, dataset, m, extractor=extractor, vqa_model=vqa_model, image_fn=image_fn,
                        text_fn=text_fn, progress=progress, **options)
        summary = run.summary()
        reasons = summary.pop("p2_skip_reasons", {})
        extra = {"tests": len(run.tests), "config": run.config.to_dict(), "extractor": run.extractor,
                 "p2_skip_reasons": reasons,
                 "vqa_model": getattr(vqa_model, "model_id", None),
                 "examples": [_example(t) for t in run.tests[:EXAMPLES]]}
        return m, summary, extra


def _example(t) -> dict:
    return {k: getattr(t, k) for k in ("uniq_id", "image_id", "rawtext", "Reducetext", "MRtext", "region",
                                       "pred_box", "iou", "issue", "reduce_iou", "orig_iou", "seed")}


TASK = register_task(PeelingTask())

__all__ = ["TASK", "PeelingTask"]
