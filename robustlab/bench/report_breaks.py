"""Per-example outcomes read back from a sweep's cells: per example, its value at each severity (rank, IoU or
right/wrong answer), its breaking severity, the thief (retrieval); the per-perturbation summary and the thieves.

A sweep's cells keep every example's outcome (a retrieval cell every query's rank and the target it ranked first
per direction, ``extra["ranks"]`` / ``extra["top1"]``; a grounding cell every expression's IoU, ``extra["ious"]``;
a VQA cell every question's 1/0 and answer, ``extra["correct"]`` / ``extra["answers"]``), so breaking points are a
reading of the cells, and it lives here, at the sweeps' layer: a failure map (:mod:`robustlab.failures.breaking`,
which runs the sweep and documents each field) and the report of a plain sweep (:func:`sweep_maps`, the "Where it
breaks" section of :mod:`robustlab.bench.report_failures`) read them the same way. What "fails" means:
retrieval, the ground truth leaves the top ``k``; grounding, IoU <= :data:`IOU_HIT`; VQA, the answer is wrong.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from robustlab.bench.spec import SweepError

#: what fails, per task: "rank" (retrieval: the ground truth's rank above k), "iou" (grounding: IoU <= 0.5),
#: "answer" (VQA: the answer is wrong)
TASKS = {"retrieval": "rank", "grounding": "iou", "vqa": "answer"}
IOU_HIT = 0.5  # grounding: a hit is IoU > 0.5 (acc@0.5); a failure is anything else
HUB_SIZE = 2.0  # a hub: k-occurrence >= HUB_SIZE x its mean (robustlab.diagnostics.hubness.hubs, hub_size = 2)
AXES = ("visual", "text")


class FailureError(SweepError):
    """A failure map (or the per-example reading of a sweep's cells) that cannot be made as asked (one line)."""


def _expand(values, dropped: list, total: int, path: str) -> list:
    """A per-query list with the dropped queries (MLVP's similarity gate) put back as None."""
    values = list(values)
    if len(values) + len(dropped) != total:
        raise FailureError(f"{path} holds {len(values)} per-query values, expected {total - len(dropped)} "
                           "(a cell of another dataset?); delete it and rerun")
    if not dropped:
        return values
    it = iter(values)
    gone = set(int(j) for j in dropped)
    return [None if q in gone else next(it) for q in range(total)]


def _retrieval_arrays(cell: dict, direction: str, queries: int) -> tuple[list, Optional[list]]:
    ex = cell.get("extra") or {}
    name = (ex.get("cell") or "?") + ".json"
    ranks = (ex.get("ranks") or {}).get(direction)
    if not isinstance(ranks, list):
        raise FailureError(f"cells/{name} keeps no per-query ranks for {direction} (written by an older robustlab); "
                           "delete it and rerun")
    drop = list((ex.get("dropped") or {}).get("queries") or []) if direction[0] == "t" else []
    top = (ex.get("top1") or {}).get(direction)
    return (_expand(ranks, drop, queries, f"cells/{name}"),
            _expand(top, drop, queries, f"cells/{name}") if isinstance(top, list) else None)


def _breaks(values: dict, fails: Callable) -> tuple[Optional[int], bool]:
    """(breaking severity, monotone) of ``{severity: value}`` (severity 0 is clean)."""
    sev = sorted(values)
    bad = [s for s in sev if values[s] is not None and fails(values[s])]
    if not bad:
        return None, True
    first = bad[0]
    return first, all(values[s] is None or fails(values[s]) for s in sev if s >= first)


def _items(cells: dict, ds, task: str, direction, k, pert, sevs, seed: int) -> list[dict]:
    if task == "retrieval":
        return _retrieval_items(cells, ds, direction, k, pert, sevs, seed)
    if task == "vqa":
        return _vqa_items(cells, ds, pert, sevs, seed)
    return _grounding_items(cells, ds, pert, sevs, seed)


def _retrieval_items(cells: dict, ds, direction: str, k: int, pert, sevs, seed: int) -> list[dict]:
    text_items = [int(i) for i in ds.text_items()]
    if direction[0] == "t":  # caption queries; the gallery: the visuals
        q_item = text_items
        q_caption = list(range(len(text_items)))
        gallery = len(ds)
    else:  # every captioned visual queries the captions
        vpos = ds.visual_positives()
        q_item = [i for i, p in enumerate(vpos) if p]
        q_caption = [int(vpos[i][0]) for i in q_item]
        gallery = len(text_items)
    nq = len(q_item)
    ids = {}

    def item_id(i: int) -> str:
        if i not in ids:
            ids[i] = str(ds.item(i).id)
        return ids[i]

    def occurrence(top: Optional[list]) -> Optional[np.ndarray]:
        if top is None:
            return None
        got = np.asarray([t for t in top if t is not None], dtype=np.int64)
        return np.bincount(got, minlength=gallery)

    clean_r, clean_t = _retrieval_arrays(cells[()], direction, nq)
    per = {0: (clean_r, clean_t, occurrence(clean_t))}
    out = []
    for axis, name in pert:
        arrays = dict(per)
        for s in sevs:
            if (axis, name, s) not in cells:  # a protocol's perturbation swept at fewer severities
                continue
            r, t = _retrieval_arrays(cells[(axis, name, s)], direction, nq)
            arrays[s] = (r, t, occurrence(t))
        for q in range(nq):
            ranks = {s: arrays[s][0][q] for s in arrays}
            at, monotone = _breaks(ranks, lambda r: r > k)
            thief = thief_caption = occ = hub = None
            if at is not None and arrays[at][1] is not None and arrays[at][1][q] is not None:
                top = int(arrays[at][1][q])
                thief, thief_caption = (top, None) if direction[0] == "t" else (text_items[top], top)
                nk = arrays[at][2]
                occ = int(nk[top])
                mean = float(nk.sum()) / gallery
                hub = bool(occ >= HUB_SIZE * mean)
            i = int(q_item[q])
            own = i if axis == "visual" else int(q_caption[q])
            out.append({"item": i, "id": item_id(i), "caption": int(q_caption[q]), "perturbation": name,
                        "axis": axis, "breaks_at": at, "ranks": {str(s): ranks[s] for s in sorted(ranks)},
                        "monotone": monotone, "thief": thief, "thief_caption": thief_caption,
                        "thief_id": item_id(thief) if thief is not None else None, "thief_k_occurrence": occ,
                        "thief_is_hub": hub, "seed": int(seed) + own})
    return out


def _grounding_items(cells: dict, ds, pert, sevs, seed: int) -> list[dict]:
    refs = [(i, r) for i in range(len(ds)) for r in range(len(ds.item(i).refs))]
    ids = {i: str(ds.item(i).id) for i in {i for i, _ in refs}}

    def ious(cell: dict) -> list:
        ex = cell.get("extra") or {}
        v = ex.get("ious")
        if not isinstance(v, list):
            raise FailureError(f"cells/{ex.get('cell') or '?'}.json keeps no per-expression IoUs (written by an "
                               "older robustlab); delete it and rerun")
        return _expand(v, [], len(refs), f"cells/{ex.get('cell') or '?'}.json")

    clean = ious(cells[()])
    out = []
    for axis, name in pert:
        per = {0: clean, **{s: ious(cells[(axis, name, s)]) for s in sevs if (axis, name, s) in cells}}
        for e, (i, r) in enumerate(refs):
            scores = {s: per[s][e] for s in per}
            at, monotone = _breaks(scores, lambda v: not v > IOU_HIT)
            out.append({"item": i, "id": ids[i], "ref": r, "expression": e, "perturbation": name, "axis": axis,
                        "breaks_at": at, "scores": {str(s): scores[s] for s in sorted(scores)},
                        "monotone": monotone, "thief": None, "seed": int(seed) + i})
    return out


def _with_baseline(items: list, base: list, metric: str) -> list:
    """Each item with the baseline model's breaking point and whether it breaks for one model only."""
    values = "ranks" if metric == "rank" else "scores"
    out = []
    for a, b in zip(items, base):
        mine, theirs = a["breaks_at"] is not None, b["breaks_at"] is not None
        out.append({**a, "baseline": {"breaks_at": b["breaks_at"], values: b[values], "monotone": b["monotone"]},
                    "breaks_for": "both" if mine and theirs else "model" if mine else "baseline" if theirs
                    else "neither"})
    return out


def _summary(items: list, pert, sevs) -> list[dict]:
    """Per perturbation: examples, how many break (and how many fail clean already), at which severity."""
    out = []
    for axis, name in pert:
        mine = [it for it in items if it["perturbation"] == name and it["axis"] == axis]
        at = [it["breaks_at"] for it in mine if it["breaks_at"] is not None]
        under = [a for a in at if a > 0]
        out.append({"perturbation": name, "axis": axis, "examples": len(mine), "broken": len(under),
                    "clean_failures": len(at) - len(under), "holding": len(mine) - len(at),
                    "by_severity": {str(s): sum(1 for a in under if a == s) for s in sevs},
                    "median_breaks_at": float(np.median(under)) if under else None,
                    "not_monotone": sum(1 for it in mine if not it["monotone"]),
                    **({"breaks_for": {w: sum(1 for it in mine if it["breaks_for"] == w)
                                       for w in ("model", "baseline", "both", "neither")}}
                       if mine and "breaks_for" in mine[0] else {})})
    return out


def _thieves(items: list, ds, top: int = 10) -> list[dict]:
    """The items that took a broken example's place most often (over every perturbation), with whether they were a
    hub in any of those cells."""
    count: dict = {}
    for it in items:
        if it.get("thief") is not None:
            c = count.setdefault(it["thief"], {"thefts": 0, "hub": False, "max_k_occurrence": 0})
            c["thefts"] += 1
            c["hub"] = c["hub"] or bool(it.get("thief_is_hub"))
            c["max_k_occurrence"] = max(c["max_k_occurrence"], int(it.get("thief_k_occurrence") or 0))
    order = sorted(count, key=lambda i: (-count[i]["thefts"], i))[:top]
    return [{"item": int(i), "id": str(ds.item(int(i)).id), **count[i]} for i in order]


def _vqa_items(cells: dict, ds, pert, sevs, seed: int) -> list[dict]:
    """One item per question (items in order, each item's questions in order): ``scores`` is 1 for a right answer
    and 0 for a wrong one at each severity; it fails when the answer is wrong; ``answers`` the answer given."""
    qs = [(i, r) for i in range(len(ds)) for r in range(len(ds.item(i).questions))]
    ids = {i: str(ds.item(i).id) for i in {i for i, _ in qs}}

    def read(cell: dict) -> tuple[list, list]:
        ex = cell.get("extra") or {}
        name = f"cells/{ex.get('cell') or '?'}.json"
        right, given = ex.get("correct"), ex.get("answers")
        if not isinstance(right, list) or not isinstance(given, list):
            raise FailureError(f"{name} keeps no per-question answers (written by an older robustlab); delete it "
                               "and rerun")
        return _expand(right, [], len(qs), name), _expand(given, [], len(qs), name)

    clean = read(cells[()])
    out = []
    for axis, name in pert:
        per = {0: clean, **{s: read(cells[(axis, name, s)]) for s in sevs if (axis, name, s) in cells}}
        for e, (i, r) in enumerate(qs):
            scores = {s: int(per[s][0][e]) for s in per}
            at, monotone = _breaks(scores, lambda v: not v)
            qa = ds.item(i).questions[r]
            out.append({"item": i, "id": ids[i], "question": r, "expression": e, "perturbation": name,
                        "axis": axis, "breaks_at": at, "scores": {str(s): scores[s] for s in sorted(scores)},
                        "answers": {str(s): per[s][1][e] for s in sorted(per)}, "expected": str(qa.answer),
                        "monotone": monotone, "thief": None, "seed": int(seed) + i})
    return out


# ---- a plain sweep read per example ------------------------------------------------------------------------------
def _single(conditions: dict) -> Optional[tuple]:
    """(axis, name[/variant], severity, seed) of a cell's conditions that perturb exactly one of visual / text,
    plainly (no mix, intervention or adaptation); () for the clean cell; None for anything else."""
    on = {a: c for a, c in (conditions or {}).items() if isinstance(c, dict) and c.get("name")}
    if not on:
        return ()
    if len(on) != 1 or set(conditions) - set(AXES):
        return None
    axis, c = next(iter(on.items()))
    if axis not in AXES or c.get("mix") or not isinstance(c.get("severity"), int):
        return None
    return axis, c["name"] + (f"/{c['variant']}" if c.get("variant") else ""), int(c["severity"]), \
        int(c.get("seed") or 0)


def sweep_maps(results, dataset_of: Callable, k: int = 1) -> tuple[list[dict], list[str]]:
    """A plain sweep's per-example breaking points, as failure-map-like dicts (``model``, ``dataset``, ``task``,
    ``metric``, ``direction``, ``k``, ``severities``, ``perturbations``, ``examples``, ``items``, ``summary``,
    ``thieves``; no slices: finding them needs the model), one per (model, dataset, task) of a task in
    :data:`TASKS` whose clean cell is there, and the notes on what could not be read. ``results``: the sweep's
    :class:`~robustlab.tasks.result.Result` objects; ``dataset_of(name)`` the dataset swept (None: not here).
    Retrieval reads the sweep's first direction, at ``k``; only single-axis, plain cells count (a combination, a
    mixed setting, an intervention or an adaptation is no breaking point); cells repeated with other seeds: the
    lowest seed's."""
    groups: dict = {}
    for r in results:
        if r.task not in TASKS:
            continue
        key = _single(r.conditions)
        if key is None:
            continue
        g = groups.setdefault((r.model, r.dataset, r.task), {})
        cell = {"extra": dict(r.extra or {})}
        if key == ():
            g.setdefault((), cell)
            continue
        axis, name, sev, seed = key
        old = g.get((axis, name, sev))
        if old is None or seed < old[1]:
            g[(axis, name, sev)] = (cell, seed)
    maps, notes = [], []
    for (model, dname, task), g in groups.items():
        if () not in g or len(g) < 2:
            continue
        ds = dataset_of(dname)
        if ds is None:
            notes.append(f"{model} on {dname}: the dataset could not be rebuilt here, so its examples are not read")
            continue
        cells = {key: (v if key == () else v[0]) for key, v in g.items()}
        pert = sorted(dict.fromkeys((a, n) for a, n, _s in (key for key in g if key)), key=lambda x: x[0] != "visual")
        sevs = sorted({s for (_a, _n, s) in (key for key in g if key)})
        seed = min(v[1] for key, v in g.items() if key)
        direction = None
        if task == "retrieval":
            ranks = (cells[()]["extra"].get("ranks") or {})
            direction = next(iter(ranks), None)
            if direction is None:
                notes.append(f"{model} on {dname}: the clean cell keeps no per-query ranks (written by an older "
                             "robustlab)")
                continue
        try:
            items = _items(cells, ds, task, direction, k, pert, sevs, seed)
        except (SweepError, KeyError, IndexError, TypeError) as e:
            notes.append(f"{model} on {dname} ({task}): {e}")
            continue
        first = pert[0]
        maps.append({"model": model, "dataset": {"name": dname, "n": len(ds)}, "task": task, "metric": TASKS[task],
                     "direction": direction, "k": k if task == "retrieval" else None, "severities": sevs,
                     "perturbations": [{"perturbation": n, "axis": a} for a, n in pert], "perturb_seed": seed,
                     "examples": sum(1 for it in items if (it["axis"], it["perturbation"]) == first),
                     "items": items, "summary": _summary(items, pert, sevs), "thieves": _thieves(items, ds),
                     "slices": []})
    return maps, notes


__all__ = ["FailureError", "TASKS", "IOU_HIT", "HUB_SIZE", "sweep_maps"]
