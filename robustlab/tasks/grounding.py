"""Grounding: a referring expression -> a box; accuracy at IoU > 0.5 and mean IoU over a dataset.

Every referring expression of every item is grounded once (the built-in scenes have one each; RefCOCO one per
expression). A visual condition perturbs the images, a text condition the expressions (one that loses every word
becomes "?"); item ``i`` gets seed ``condition.seed + i``. Accuracy is also split by the kind of expression
(``Ref.meta["attributes"]``: which attributes it names, when the dataset says).

For one example the Grounding page uses :func:`grounding_compare` (clean vs perturbed boxes) and
:func:`grounding_sweep` (IoU per severity). Both say which perturbation changed nothing (:func:`is_no_op`: its record's
output hash is its input hash, e.g. OCR on "the ring"): a no-op is labelled as one and never counted as robustness.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Optional

import numpy as np

from robustlab.io.convert import to_uint8_rgb
from robustlab.io.draw import _box_list
from robustlab.perturb import perturb as run
from robustlab.perturb.record import is_no_op
from robustlab.tasks.conditions import perturb_one, perturb_text
from robustlab.tasks.task import Task, chunks

CHUNK = 100


def ground_many(model, images, expressions) -> list:
    if hasattr(model, "ground_batch"):
        return model.ground_batch(images, expressions)
    return [model.ground(im, e) for im, e in zip(images, expressions)]


class GroundingTask(Task):
    name = "grounding"
    takes_interventions = True
    description = "referring-expression grounding on images: accuracy at IoU > 0.5 and mean IoU"
    needs = ("ground",)
    kinds = ("image",)
    alternative = "builtin:tiny-vilt (or hf-grounding:google/owlv2-base-patch16-ensemble)"

    def run(self, model, dataset, vc, tc, m, progress, **options):
        """``metrics = {"acc@0.5", "mean_iou", "by_expression": {kind: {"acc@0.5", "n"}}}``; ``extra["ious"]``: the IoU
        of every expression (items in order, each item's refs in order; a failure map's per-example score)."""
        ious, by_kind = [], defaultdict(list)
        for idx in chunks(m, CHUNK):
            images, exprs, boxes, kinds = [], [], [], []
            for i in idx:
                item = dataset.item(i)
                if not item.refs:
                    continue
                im = perturb_one(dataset.visual(i), vc, i, "image")
                for ref in item.refs:
                    images.append(im)
                    exprs.append(perturb_text(ref.expression, tc, i))
                    boxes.append(ref.box)
                    kinds.append("+".join(ref.meta.get("attributes", ())) or "all")
            for p, b, k in zip(ground_many(model, images, exprs), boxes, kinds):
                iou = p.iou(b)
                ious.append(iou)
                by_kind[k].append(iou)
            if progress:
                progress(idx[-1] + 1, m)
        if not ious:
            raise ValueError(f"dataset {dataset.name} has no referring expressions in its first {m} items")
        ious = np.array(ious)
        return m, {"acc@0.5": float((ious > 0.5).mean()), "mean_iou": float(ious.mean()),
                   "by_expression": {k: {"acc@0.5": float((np.array(v) > 0.5).mean()), "n": len(v)}
                                     for k, v in sorted(by_kind.items())}}, \
            {"expressions": len(ious), "ious": [round(float(x), 6) for x in ious]}


TASK = GroundingTask()  # its entry in the task table (robustlab.tasks.registry.TASKS)


# ---- one example: clean vs perturbed, and a severity sweep (the Grounding page) ------------------------------
def _part(modality: str, name: str, severity: int, result) -> dict:
    return {"modality": modality, "perturbation": name, "severity": int(severity),
            "label": f"{name} s{int(severity)}", "no_op": is_no_op(result.record)}


def grounding_compare(model, image, expression: str, gt_box=None, perturb: Optional[str] = None,
                      severity: int = 0, text_perturb: Optional[str] = None, text_severity: int = 0,
                      seed: int = 0) -> dict:
    """Ground ``expression`` on the clean and on the perturbed input.

    Returns the perturbed image and text with their perturbation results (``image_result`` / ``text_result``,
    None when not perturbed), both predicted boxes, and the IoUs: to ``gt_box`` when given (x0, y0, x1, y1 in
    image pixels) and between the two predictions.

    What was applied, and whether it changed anything: ``conditions`` lists the perturbations that ran
    (``{"modality", "perturbation", "severity", "label": "ocr s4", "no_op"}``), ``no_op`` maps "image" / "text" to
    True when that perturbation changed nothing (False when it changed its input, None when not perturbed),
    ``changed`` is whether the perturbed input differs from the clean one at all (False: the perturbed IoU is the
    clean one, not robustness), and ``label`` names the condition ("gaussian_noise s5 + ocr s4 (no-op)")."""
    TASK.check_model(model)
    image = to_uint8_rgb(image)
    img_res = run(image, perturb, int(severity), seed=int(seed)) if perturb and severity else None
    txt_res = run(expression, text_perturb, int(text_severity), seed=int(seed)) \
        if text_perturb and text_severity else None
    p_img = img_res.output if img_res is not None else image
    p_txt = txt_res.output if txt_res is not None else expression
    clean = model.ground(image, expression)
    pert = model.ground(p_img, p_txt if p_txt.strip() else "?")
    conditions = [_part(m, n, s, r) for m, n, s, r in (("image", perturb, severity, img_res),
                                                       ("text", text_perturb, text_severity, txt_res))
                  if r is not None]
    no_op = {"image": None, "text": None, **{c["modality"]: c["no_op"] for c in conditions}}
    label = " + ".join(c["label"] + (" (no-op)" if c["no_op"] else "") for c in conditions) \
        or "no perturbation (severity 0)"
    out = {"clean_box": clean, "perturbed_box": pert, "perturbed_image": p_img, "perturbed_text": p_txt,
           "image_result": img_res, "text_result": txt_res, "iou_clean_vs_perturbed": round(clean.iou(pert), 4),
           "iou_clean": None, "iou_perturbed": None, "conditions": conditions, "no_op": no_op,
           "changed": any(not c["no_op"] for c in conditions), "label": label}
    if gt_box is not None:
        out.update(iou_clean=round(clean.iou(gt_box), 4), iou_perturbed=round(pert.iou(gt_box), 4))
    return out


def grounding_sweep(model, image, expression: str, gt_box=None, perturb: Optional[str] = None,
                    text_perturb: Optional[str] = None, seed: int = 0, severities=range(0, 6)) -> list[dict]:
    """IoU per severity (0–5) for the image perturbation, the text perturbation and both together.

    The IoU is to ``gt_box`` when given, else to the clean prediction (``reference`` says which). Each row also
    names its ``perturbation`` ("gaussian_noise", "ocr", "gaussian_noise + ocr") and says what changed nothing:
    ``unchanged`` lists the parts of the condition that were no-ops at that severity (:func:`is_no_op`) and
    ``no_op`` is True when the whole condition changed nothing there (its IoU is the clean one: not robustness).
    Severity 0 is the clean input, never a no-op."""
    TASK.check_model(model)
    image = to_uint8_rgb(image)
    ref = gt_box if gt_box is not None else model.ground(image, expression)
    reference = "ground truth" if gt_box is not None else "clean prediction"
    severities = [int(k) for k in severities]
    # each severity perturbed once, shared by the single and the combined condition
    img = {k: run(image, perturb, k, seed=int(seed)) for k in severities if k} if perturb else {}
    txt = {k: run(expression, text_perturb, k, seed=int(seed)) for k in severities if k} if text_perturb else {}
    conds = []
    if perturb:
        conds.append(("image", True, False, perturb))
    if text_perturb:
        conds.append(("text", False, True, text_perturb))
    if perturb and text_perturb:
        conds.append(("both", True, True, f"{perturb} + {text_perturb}"))
    rows = []
    for cond, use_img, use_txt, name in conds:
        imgs, texts, unchanged = [], [], []
        for k in severities:
            imgs.append(img[k].output if use_img and k else image)
            t = txt[k].output if use_txt and k else expression
            texts.append(t if t.strip() else "?")
            unchanged.append([m for m, use, res in (("image", use_img, img), ("text", use_txt, txt))
                              if use and k and is_no_op(res[k].record)])
        boxes = model.ground_batch(imgs, texts) if hasattr(model, "ground_batch") else \
            [model.ground(i, t) for i, t in zip(imgs, texts)]
        parts = int(use_img) + int(use_txt)
        for k, b, t, u in zip(severities, boxes, texts, unchanged):
            iou = b.iou(ref)
            rows.append({"condition": cond, "severity": int(k), "iou": round(iou, 4), "hit": bool(iou > 0.5),
                         "reference": reference, "box": _box_list(b), "text": t, "perturbation": name,
                         "no_op": bool(k) and len(u) == parts, "unchanged": ", ".join(u)})
    return rows


__all__ = ["GroundingTask", "grounding_compare", "grounding_sweep", "ground_many", "is_no_op", "TASK"]
