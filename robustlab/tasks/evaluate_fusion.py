"""Fusion-model evaluation on freshly generated held-out splits (``robustlab eval vqa|grounding|clavi``).

    eval_vqa        n scenes (128 px) and n event videos (64 px), one question each (robustlab.datasets.synthetic.qa);
                    image and video accuracy reported separately, plus accuracy per question type
    eval_grounding  n scenes, one referring expression each (world.referring_expression); acc@IoU>0.5, mean IoU
    eval_clavi      CLAVI-style complement pairs: a video whose two events concern different objects and the
                    same video reversed in time (the same events in swapped order); the question "does A change
                    before/after B?" is the same for both members and its right answer flips. Reports accuracy
                    on originals and on complements, pair consistency (both members right) and chance levels.

Perturbations: ``perturb``/``severity`` name a visual perturbation. An *image* perturbation is applied to the
images (VQA image part, grounding); a *video* perturbation to the videos (VQA video part, CLAVI: both members of
a pair get the same perturbation and seed). The part of the split that the named perturbation does not apply to
stays clean, and the result says which parts were perturbed. ``text_perturb``/``text_severity`` perturb every
question / expression (in CLAVI the pair shares one perturbed question). Item ``i`` is perturbed with seed
``seed + i``, so a result can be regenerated exactly.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Optional

import numpy as np

from robustlab.datasets.synthetic import qa, world

HELDOUT_SEED = world.HELDOUT_SEED
ProgressFn = Optional[Callable[[int, int], None]]


def _need(model, method: str, task: str) -> None:
    if not callable(getattr(model, method, None)):
        mid = getattr(model, "model_id", type(model).__name__)
        alt = {"vqa": "builtin:tiny-vilt (or hf-vilt:dandelin/vilt-b32-finetuned-vqa)",
               "ground": "builtin:tiny-vilt (or hf-grounding:google/owlv2-base-patch16-ensemble)"}[method]
        raise ValueError(f"model {mid} cannot do {task} (it has no {method}() head); use {alt}")


def _modality(name: Optional[str]) -> Optional[str]:
    if not name:
        return None
    from robustlab.perturb import get_perturbation

    return get_perturbation(name).modality


def _perturb(x, name, severity, seed):
    from robustlab.perturb import perturb

    return perturb(x, name, int(severity), seed=int(seed)).output


def _text(t: str, name, severity, seed) -> str:
    if name and severity:
        t = _perturb(t, name, severity, seed)
    return t if t.strip() else "?"  # a perturbation that deletes every word leaves a lone "?"


def _check_args(n: int, severity, text_severity) -> None:
    if int(n) < 1:
        raise ValueError("n must be at least 1")
    for s in (severity, text_severity):
        if s is not None and not 0 <= int(s) <= 5:
            raise ValueError(f"severity must be 0..5, got {s}")


def _vqa_many(model, visuals, questions) -> list[str]:
    if hasattr(model, "vqa_batch"):
        return [a for a, _ in model.vqa_batch(visuals, questions)]
    return [model.vqa(v, q)[0] for v, q in zip(visuals, questions)]


def _describe(out: dict, perturb, severity, text_perturb, text_severity, parts: list[str]) -> dict:
    if perturb and severity:
        out.update(perturb=perturb, severity=int(severity), perturbed_parts=parts)
    if text_perturb and text_severity:
        out.update(text_perturb=text_perturb, text_severity=int(text_severity))
    return out


def eval_vqa(model, n: int = 1000, seed: int = HELDOUT_SEED, perturb: Optional[str] = None, severity: int = 0,
             text_perturb: Optional[str] = None, text_severity: int = 0, progress: ProgressFn = None) -> dict:
    """VQA accuracy on n held-out scenes and n held-out videos (one question each)."""
    _need(model, "vqa", "visual question answering")
    _check_args(n, severity, text_severity)
    mod = _modality(perturb) if severity else None
    _modality(text_perturb)
    total = 2 * n
    per_type: dict[str, list[int]] = defaultdict(list)
    out: dict = {"model": getattr(model, "model_id", "?"), "n": int(n), "seed": int(seed)}
    accs = {}
    for part in ("image", "video"):
        right = []
        for s in range(0, n, 100):
            idx = range(s, min(s + 100, n))
            visuals, questions, answers, types = [], [], [], []
            for i in idx:
                rng = np.random.default_rng([seed, i, 55])
                if part == "image":
                    sc = world.sample_scene(seed, i)
                    v = world.render_scene(sc, 128)
                    q = qa.image_question(sc, rng)
                else:
                    vs = world.sample_video(seed, i)
                    v = world.render_video(vs, 64)
                    q = qa.video_question(vs, rng)
                if mod == part:
                    v = _perturb(v, perturb, severity, seed + i)
                visuals.append(v)
                questions.append(_text(q.question, text_perturb, text_severity, seed + i))
                answers.append(q.answer)
                types.append(q.qtype)
            preds = _vqa_many(model, visuals, questions)
            for p, a, t in zip(preds, answers, types):
                right.append(int(p == a))
                per_type[f"{part}/{t}"].append(int(p == a))
            if progress:
                progress((0 if part == "image" else n) + idx[-1] + 1, total)
        accs[part] = float(np.mean(right))
    out.update(image_acc=round(accs["image"], 4), video_acc=round(accs["video"], 4),
               acc=round((accs["image"] + accs["video"]) / 2, 4),
               per_type={k: {"acc": round(float(np.mean(v)), 4), "n": len(v)} for k, v in sorted(per_type.items())})
    return _describe(out, perturb, severity, text_perturb, text_severity, [mod] if mod else [])


def eval_grounding(model, n: int = 1000, seed: int = HELDOUT_SEED, perturb: Optional[str] = None,
                   severity: int = 0, text_perturb: Optional[str] = None, text_severity: int = 0,
                   progress: ProgressFn = None) -> dict:
    """Referring-expression grounding on n held-out scenes: accuracy at IoU > 0.5 and mean IoU."""
    _need(model, "ground", "grounding")
    _check_args(n, severity, text_severity)
    mod = _modality(perturb) if severity else None
    if mod not in (None, "image"):
        raise ValueError(f"grounding takes image perturbations; {perturb!r} is a {mod} perturbation")
    _modality(text_perturb)
    ious, by_attr = [], defaultdict(list)
    for s in range(0, n, 100):
        idx = range(s, min(s + 100, n))
        images, exprs, boxes, kinds = [], [], [], []
        for i in idx:
            sc = world.sample_scene(seed, i)
            rng = np.random.default_rng([seed, i, 56])
            ref = world.referring_expression(sc, int(rng.integers(len(sc.objects))), 128)
            im = world.render_scene(sc, 128)
            if mod:
                im = _perturb(im, perturb, severity, seed + i)
            images.append(im)
            exprs.append(_text(ref["expression"], text_perturb, text_severity, seed + i))
            boxes.append(ref["box"])
            kinds.append("+".join(ref["attributes"]))
        if hasattr(model, "ground_batch"):
            preds = model.ground_batch(images, exprs)
        else:
            preds = [model.ground(im, e) for im, e in zip(images, exprs)]
        for p, b, k in zip(preds, boxes, kinds):
            iou = p.iou(b)
            ious.append(iou)
            by_attr[k].append(iou)
        if progress:
            progress(idx[-1] + 1, n)
    ious = np.array(ious)
    out = {"model": getattr(model, "model_id", "?"), "n": int(n), "seed": int(seed),
           "acc@0.5": round(float((ious > 0.5).mean()), 4), "mean_iou": round(float(ious.mean()), 4),
           "by_expression": {k: {"acc@0.5": round(float((np.array(v) > 0.5).mean()), 4), "n": len(v)}
                             for k, v in sorted(by_attr.items())}}
    return _describe(out, perturb, severity, text_perturb, text_severity, ["image"] if mod else [])


def clavi_items(n: int, seed: int = HELDOUT_SEED, max_tries: int | None = None):
    """(index, video scene, qa on the video, qa on the reversed video) for the first n eligible videos."""
    out, i = [], 0
    max_tries = max_tries or 20 * n + 100
    while len(out) < n and i < max_tries:
        v = world.sample_video(seed, i)
        pair = qa.clavi_pair(v, np.random.default_rng([seed, i, 57]))
        if pair is not None:
            out.append((i, v, pair[0], pair[1]))
        i += 1
    return out


def eval_clavi(model, n: int = 1000, seed: int = HELDOUT_SEED, perturb: Optional[str] = None, severity: int = 0,
               text_perturb: Optional[str] = None, text_severity: int = 0, progress: ProgressFn = None) -> dict:
    """Before/after answers on n CLAVI-style complement pairs (a video and its time reversal)."""
    _need(model, "vqa", "before/after question answering (CLAVI)")
    _check_args(n, severity, text_severity)
    mod = _modality(perturb) if severity else None
    if mod not in (None, "video", "image"):
        raise ValueError(f"CLAVI takes video (or frame-wise image) perturbations; {perturb!r} is a {mod} "
                         "perturbation")
    _modality(text_perturb)
    items = clavi_items(n, seed)
    orig_right, comp_right, yes = [], [], []
    for s in range(0, len(items), 50):
        chunk = items[s:s + 50]
        visuals, questions, answers = [], [], []
        for i, v, q, q_rev in chunk:
            frames = world.render_video(v, 64)
            rev = frames[::-1].copy()
            if mod:
                frames = _perturb(frames, perturb, severity, seed + i)
                rev = _perturb(rev, perturb, severity, seed + i)
            qt = _text(q.question, text_perturb, text_severity, seed + i)
            visuals += [frames, rev]
            questions += [qt, qt]
            answers += [q.answer, q_rev.answer]
        preds = _vqa_many(model, visuals, questions)
        for k in range(0, len(preds), 2):
            orig_right.append(int(preds[k] == answers[k]))
            comp_right.append(int(preds[k + 1] == answers[k + 1]))
            yes += [int(preds[k] == "yes"), int(preds[k + 1] == "yes")]
        if progress:
            progress(s + len(chunk), len(items))
    o, c = np.array(orig_right), np.array(comp_right)
    out = {"model": getattr(model, "model_id", "?"), "n_pairs": int(len(items)), "seed": int(seed),
           "acc_original": round(float(o.mean()), 4), "acc_complement": round(float(c.mean()), 4),
           "acc": round(float(np.concatenate([o, c]).mean()), 4),
           "pair_consistency": round(float((o & c).mean()), 4),
           "chance_acc": 0.5, "chance_pair_consistency": 0.25,
           "yes_rate": round(float(np.mean(yes)), 4)}
    return _describe(out, perturb, severity, text_perturb, text_severity, ["video"] if mod else [])


def eval_itm(model, n: int = 1000, seed: int = HELDOUT_SEED, progress: ProgressFn = None) -> dict:
    """Image–text matching on n held-out scenes and n videos: each with its caption and a hard negative (one
    attribute changed; for videos the time-reversed caption). Accuracy at score 0.5 and the rate at which the
    matched caption outscores its negative."""
    if not callable(getattr(model, "itm_score", None)):
        raise ValueError(f"model {getattr(model, 'model_id', '?')} cannot do image–text matching (no itm_score())")
    out: dict = {"model": getattr(model, "model_id", "?"), "n": int(n), "seed": int(seed)}
    for part in ("image", "video"):
        visuals, texts = [], []
        for i in range(n):
            rng = np.random.default_rng([seed, i, 58])
            if part == "image":
                sc = world.sample_scene(seed, i)
                v, pos, neg = world.render_scene(sc, 128), sc.caption, qa.mismatched_caption(sc, rng)
            else:
                vs = world.sample_video(seed, i)
                v, pos, neg = world.render_video(vs, 64), vs.caption, vs.reversed_caption
            visuals += [v, v]
            texts += [pos, neg]
        if hasattr(model, "itm_scores"):
            sc_ = np.asarray(model.itm_scores(visuals, texts))
        else:
            sc_ = np.array([model.itm_score(v, t) for v, t in zip(visuals, texts)])
        pos_s, neg_s = sc_[0::2], sc_[1::2]
        out[f"{part}_acc"] = round(float(np.concatenate([pos_s > 0.5, neg_s <= 0.5]).mean()), 4)
        out[f"{part}_pos_over_neg"] = round(float((pos_s > neg_s).mean()), 4)
        if progress:
            progress(n if part == "image" else 2 * n, 2 * n)
    out["chance_acc"] = 0.5
    return out


# ---- one example: clean vs perturbed, and a severity sweep (the Grounding page's logic) ---------------------
def _box_list(b) -> list[float]:
    return [round(float(v), 2) for v in (b.as_tuple() if hasattr(b, "as_tuple") else b)[:4]]


def grounding_compare(model, image, expression: str, gt_box=None, perturb: Optional[str] = None,
                      severity: int = 0, text_perturb: Optional[str] = None, text_severity: int = 0,
                      seed: int = 0) -> dict:
    """Ground ``expression`` on the clean and on the perturbed input.

    Returns the perturbed image and text with their perturbation results (``image_result`` / ``text_result``,
    None when not perturbed), both predicted boxes, and the IoUs: to ``gt_box`` when given (x0, y0, x1, y1 in
    image pixels) and between the two predictions."""
    from robustlab.io.convert import to_uint8_rgb
    from robustlab.perturb import perturb as run

    _need(model, "ground", "grounding")
    image = to_uint8_rgb(image)
    img_res = run(image, perturb, int(severity), seed=int(seed)) if perturb and severity else None
    txt_res = run(expression, text_perturb, int(text_severity), seed=int(seed)) \
        if text_perturb and text_severity else None
    p_img = img_res.output if img_res is not None else image
    p_txt = txt_res.output if txt_res is not None else expression
    clean = model.ground(image, expression)
    pert = model.ground(p_img, p_txt if p_txt.strip() else "?")
    out = {"clean_box": clean, "perturbed_box": pert, "perturbed_image": p_img, "perturbed_text": p_txt,
           "image_result": img_res, "text_result": txt_res, "iou_clean_vs_perturbed": round(clean.iou(pert), 4),
           "iou_clean": None, "iou_perturbed": None}
    if gt_box is not None:
        out.update(iou_clean=round(clean.iou(gt_box), 4), iou_perturbed=round(pert.iou(gt_box), 4))
    return out


def grounding_sweep(model, image, expression: str, gt_box=None, perturb: Optional[str] = None,
                    text_perturb: Optional[str] = None, seed: int = 0, severities=range(0, 6)) -> list[dict]:
    """IoU per severity (0–5) for the image perturbation, the text perturbation and both together.

    The IoU is to ``gt_box`` when given, else to the clean prediction (``reference`` says which)."""
    from robustlab.io.convert import to_uint8_rgb
    from robustlab.perturb import perturb as run

    _need(model, "ground", "grounding")
    image = to_uint8_rgb(image)
    ref = gt_box if gt_box is not None else model.ground(image, expression)
    reference = "ground truth" if gt_box is not None else "clean prediction"
    conds = []
    if perturb:
        conds.append(("image", True, False))
    if text_perturb:
        conds.append(("text", False, True))
    if perturb and text_perturb:
        conds.append(("both", True, True))
    rows = []
    for cond, use_img, use_txt in conds:
        imgs, texts = [], []
        for k in severities:
            imgs.append(run(image, perturb, k, seed=int(seed)).output if use_img and k else image)
            t = run(expression, text_perturb, k, seed=int(seed)).output if use_txt and k else expression
            texts.append(t if t.strip() else "?")
        boxes = model.ground_batch(imgs, texts) if hasattr(model, "ground_batch") else \
            [model.ground(i, t) for i, t in zip(imgs, texts)]
        for k, b, t in zip(severities, boxes, texts):
            iou = b.iou(ref)
            rows.append({"condition": cond, "severity": int(k), "iou": round(iou, 4), "hit": bool(iou > 0.5),
                         "reference": reference, "box": _box_list(b), "text": t})
    return rows


def draw_boxes(image, boxes: list[tuple], scale: int | None = None):
    """The image (upscaled so that its long side is ≥ 384 px) with labelled boxes drawn on it.

    ``boxes``: (box as Box or (x0, y0, x1, y1) in image pixels, colour, label)."""
    from PIL import Image, ImageDraw

    from robustlab.io.convert import to_uint8_rgb

    im = Image.fromarray(to_uint8_rgb(image))
    f = scale or max(1, int(np.ceil(384 / max(im.size))))
    if f > 1:
        im = im.resize((im.size[0] * f, im.size[1] * f), Image.NEAREST)
    d = ImageDraw.Draw(im)
    w = max(2, int(round(max(im.size) / 160)))
    for b, colour, label in boxes:
        x0, y0, x1, y1 = (float(v) * f for v in _box_list(b))
        d.rectangle([x0, y0, x1, y1], outline=colour, width=w)
        if label:
            ty = y0 - 12 if y0 >= 12 else y1 + 2
            d.rectangle([x0, ty, x0 + 7 * len(label) + 4, ty + 12], fill=colour)
            d.text((x0 + 2, ty), label, fill=(255, 255, 255))
    return im


__all__ = ["eval_vqa", "eval_grounding", "eval_clavi", "eval_itm", "clavi_items", "HELDOUT_SEED", "grounding_compare",
           "grounding_sweep", "draw_boxes"]
