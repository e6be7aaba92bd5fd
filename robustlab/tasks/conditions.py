"""Condition sets: what a task evaluates under, one condition per axis.

``conditions`` maps an axis to a perturbation (:class:`robustlab.perturb.condition.Condition`): ``"visual"`` (an
image or video perturbation of the dataset's visuals) and ``"text"`` (of its captions, questions or expressions);
a missing axis is clean. Two more axes leave that shape as it is: ``"intervention"`` (a model intervention,
:mod:`robustlab.models.interventions`) and ``"adapt"`` (a test-time adaptation method of :mod:`robustlab.adapt`
run on the queries of the one perturbed side: ``Condition(method, 1, 0, "key=value,...")``, the variant holding
the parameters set explicitly, see :func:`adapt_condition`); each appears in a Result only when present.
:func:`grid` builds the usual list of conditions; :func:`as_conditions` accepts what users naturally pass;
:func:`check_conditions` refuses, before any work, what a dataset cannot take.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Optional

from robustlab.io import entries
from robustlab.models import interventions as iv
from robustlab.perturb.condition import Condition, ItemParams, check, perturb_many
from robustlab.perturb.video.mlvp.context import DonorPool, ItemContext

AXES = ("visual", "text")  # perturbation axes (of the input)
INTERVENTION = "intervention"  # the model-intervention axis (robustlab.models.interventions)
ADAPT = "adapt"  # the test-time adaptation axis (robustlab.adapt): a method run on the perturbed side's queries
ALL_AXES = AXES + (INTERVENTION, ADAPT)
Conditions = dict  # axis -> Condition


def normalize(cond: Any) -> Conditions:
    """One condition set from a dict of axis -> Condition / dict / "name:severity" string, or a single Condition
    (taken as the visual axis). Unknown axes are refused."""
    if cond is None:
        return {}
    if isinstance(cond, Condition):
        return {} if cond.clean else {"visual": cond}
    if not isinstance(cond, Mapping):
        raise ValueError(f"a condition set is a dict of {', '.join(AXES)} -> Condition, got {type(cond).__name__}")
    out = {}
    for axis, c in cond.items():
        if axis not in ALL_AXES:
            raise ValueError(f"unknown condition axis {axis!r}; axes: {', '.join(ALL_AXES)}")
        if axis == INTERVENTION:

            if c is None or (isinstance(c, Condition) and c.clean) or (isinstance(c, dict) and not c.get("name")):
                continue
            out[axis] = iv.as_condition(c)
            continue
        if axis == ADAPT:
            a = as_adapt(c)
            if not a.clean:
                out[axis] = a
            continue
        c = c if isinstance(c, Condition) else Condition.parse(c) if isinstance(c, str) or c is None \
            else Condition.from_dict(c)
        if not c.clean:
            out[axis] = c
    return out


def as_conditions(conditions: Any) -> list[Conditions]:
    """A list of condition sets from None (clean only), one set, or a list of sets."""
    if conditions is None:
        return [{}]
    if isinstance(conditions, (Condition, Mapping)):
        return [normalize(conditions)]
    return [normalize(c) for c in conditions]


def grid(visual: Iterable = (None,), text: Iterable = (None,)) -> list[Conditions]:
    """Every combination of the given visual and text conditions (None = clean), clean first when present."""
    out = []
    for v in visual:
        for t in text:
            out.append(normalize({"visual": v, "text": t}))
    return out


def conditions_json(conds: Conditions) -> dict:
    """Every perturbation axis (clean ones as ``{"name": None}``) and the intervention and adaptation method only
    when there is one, so results (and sweep cell keys) without them are what they were before those axes
    existed."""
    out = {axis: conds.get(axis, Condition()).to_dict() for axis in AXES}
    for axis in (INTERVENTION, ADAPT):
        c = conds.get(axis)
        if c is not None and not c.clean:
            out[axis] = c.to_dict()
    return out


def intervention_label(c: Condition) -> str:
    return c.name + (f"/{c.variant}" if c.variant else "")


# ---- the adaptation axis -------------------------------------------------------------------------------------
# Which side's embeddings are a direction's queries (a retrieval fact the adaptation methods build on).
QUERY_SIDE = {"t2i": "text", "t2v": "text", "i2t": "visual", "v2t": "visual"}
# The methods of the ``adapt`` axis live in robustlab.adapt, the layer above this one: the facade declares them
# (robustlab.ABOVE["adaptation"]) and they are imported by name at their first use, whatever was imported before.


def adaptation():
    """The adaptation methods of the ``adapt`` axis (robustlab.adapt: ``get_method``, ``resolve``, ``run``),
    imported at the first use; ValueError (one line) when none is declared."""
    declared = entries.above("adaptation")
    if not declared:
        raise ValueError("test-time adaptation (the adapt axis) needs robustlab.adapt, which is not declared "
                         "(robustlab.ABOVE)")
    return entries.load(next(iter(declared.values())))


def _param_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v) if isinstance(v, (int, float)) else str(v)


def adapt_condition(method: str, params: Optional[Mapping] = None) -> Condition:
    """The ``adapt`` axis' condition of a method of :mod:`robustlab.adapt` with the parameters set explicitly
    (checked and canonicalised: ``lr=3e-4`` and ``lr=0.0003`` are the same cell); ``"none"`` is clean (no
    adaptation: the shifted cell itself). ValueError (one line) for an unknown method or a bad parameter."""
    method = str(method or "").strip()
    if method in ("", "none"):
        if params:
            raise ValueError(f"adaptation method none takes no parameters ({', '.join(params)})")
        return Condition()
    methods = adaptation()
    methods.get_method(method)
    params = dict(params or {})
    full = methods.resolve(method, "text", 1000, params)  # checks names, types and ranges (the side only sets defaults)
    given = {k: full[k] for k in sorted(params) if params[k] is not None}
    variant = ",".join(f"{k}={_param_text(v)}" for k, v in given.items()) or None
    return Condition(method, 1, 0, variant)


def adapt_params(c: Condition) -> dict:
    """The parameters an ``adapt`` condition sets explicitly (its variant ``key=value,...``; values as JSON where
    they parse)."""
    out: dict = {}
    for part in (c.variant or "").split(","):
        k, eq, v = part.partition("=")
        if not eq or not k.strip():
            continue
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:
            out[k.strip()] = v
    return out


def as_adapt(c) -> Condition:
    """An ``adapt`` condition from a Condition, its dict, or text ``"tent"`` / ``"tent/steps=1,lr=3e-4"``."""
    if c is None:
        return Condition()
    if isinstance(c, Condition):
        return Condition() if not c.name or c.name == "none" else adapt_condition(c.name, adapt_params(c))
    if isinstance(c, Mapping):
        return as_adapt(Condition.from_dict(c) if c.get("name") else None)
    name, _, variant = str(c).partition("/")
    return as_adapt(Condition(name.strip(), 1, 0, variant.strip() or None) if name.strip() else None)


def adapt_label(c: Condition) -> str:
    """``tent`` or ``tent (steps=1)``."""
    return c.name + (f" ({c.variant.replace(',', ', ')})" if c.variant else "")


def adapt_side(conds: Conditions) -> Optional[str]:
    """The perturbed side whose queries an ``adapt`` condition set adapts ("visual" or "text"); None when the
    set has no method. ValueError (one line) unless exactly one side is perturbed and no intervention is set."""
    a = conds.get(ADAPT)
    if a is None or a.clean:
        return None
    sides = [axis for axis in AXES if axis in conds and not conds[axis].clean]
    if len(sides) != 1:
        raise ValueError(f"test-time adaptation ({adapt_label(a)}) adapts the queries of the one perturbed side: "
                         f"its condition set must perturb exactly one of visual or text, not "
                         f"{' and '.join(sides) or 'neither'}")
    if INTERVENTION in conds:
        raise ValueError(f"test-time adaptation ({adapt_label(a)}) does not combine with a model intervention")
    return sides[0]


def label(conds: Conditions) -> str:
    def one(axis, c):
        return intervention_label(c) if axis == INTERVENTION else adapt_label(c) if axis == ADAPT else c.label()
    parts = [f"{axis} {one(axis, c)}" for axis, c in conds.items() if not c.clean]
    return ", ".join(parts) or "clean"


def check_conditions(conds: list, visual_kind: str) -> None:
    """Refuse (one line) a perturbation that does not apply to the dataset's visuals or to text, before any work."""
    for c in conds:
        if "visual" in c:
            check(c["visual"], visual_kind)
        if "text" in c:
            check(c["text"], "text")
        if INTERVENTION in c:

            iv.parse(c[INTERVENTION])
        if ADAPT in c:
            side = adapt_side(c)
            adaptation().resolve(c[ADAPT].name, side, 1000, adapt_params(c[ADAPT]))


def mlvp_context(dataset, embeddings=None, matched_by: str = "") -> Optional[ItemContext]:
    """MLVP's per-item side information for a video ``dataset`` (:mod:`robustlab.perturb.video.mlvp.context`): its
    main-object boxes where it knows them (``dataset.main_object_boxes(i)``: the built-in event videos) for
    mlvp_occlusion, and, given ``embeddings`` (a callable returning the evaluated model's clean video embeddings,
    one row per item, computed on first use), its own videos as mlvp_event_insertion's donors, matched by cosine.
    None for image datasets (MLVP is video-only) or when there is nothing to give."""
    if getattr(dataset, "kind", "") != "video":
        return None
    boxes = getattr(dataset, "main_object_boxes", None)
    boxes = boxes if callable(boxes) else None
    pool = None
    if embeddings is not None and len(dataset) > 1:
        pool = DonorPool(getattr(dataset, "name", "") or "dataset", len(dataset), dataset.visual, embeddings,
                         id_of=lambda j: dataset.item(j).id, matched_by=matched_by)
    if boxes is None and pool is None:
        return None
    return ItemContext(boxes, str(getattr(dataset, "main_object_note", "") or "the dataset's boxes"), pool)


def perturb_one(x, cond: Condition, index: int, kind: str, context: ItemParams = None):
    """Item ``index`` of a dataset under ``cond`` (seed ``cond.seed + index``, as :func:`perturb_many` gives it);
    ``context``: per-item side information (:func:`mlvp_context`)."""
    outs, _ = perturb_many([x], cond, kind, offset=int(index), context=context)
    return outs[0]


def perturb_text(text: str, cond: Condition, index: int) -> str:
    """A question / expression under a text condition; a perturbation that deletes every word leaves "?"."""
    t = perturb_one(text, cond, index, "text") if not cond.clean else text
    return t if t.strip() else "?"


__all__ = ["Condition", "Conditions", "grid", "as_conditions", "normalize", "conditions_json", "label",
           "check_conditions", "mlvp_context", "perturb_one", "perturb_text", "AXES", "ALL_AXES", "INTERVENTION",
           "intervention_label", "ADAPT", "adapt_condition", "adapt_params", "adapt_label", "adapt_side", "as_adapt",
           "QUERY_SIDE", "adaptation"]
