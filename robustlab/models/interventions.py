"""Model interventions: a condition axis like a perturbation, but applied to the model instead of the input.

Names are ``kind:name``:

* ``quag:unimodal``, ``quag:crossmodal``, ``quag:video``, ``quag:text`` — the paper's short-circuits (Rawal et al.
  §2.3; :mod:`robustlab.diagnostics.quag`), or any quadrant set ``quag:VV+TV`` — applied to every fusion layer (Φ);
* ``quag-attention:video-avg`` / ``text-avg`` / ``text-video-avg`` — QUAG-attention (§2.4), with the size correction
  ``/additive`` (default, the paper's formula) or ``/multiplicative`` (the released code): ``quag-attention:video-avg
  /multiplicative``;
* ``input:language-only`` / ``input:video-only`` — Table 1's classical input ablations, *not* QUAG: the visual input
  replaced by a blank mid-grey image or frames of the same shape (the model sees no visual content), or the text
  replaced by an empty question (a zero-width space, which tokenizers drop: only the model's special tokens such as
  ``[CLS] [SEP]`` remain).

An intervention is scoped to the calling context (:func:`robustlab.models.attention.intervention`): a dashboard
session ablating a cached model never changes what another session's call computes. Which models can take it:
the hook-based ones need ``forward_with_attention`` (fusion models: builtin:tiny-vilt, hf-vilt); QUAG-attention
needs a model that can shrink its keys and values (builtin:tiny-vilt, hf-vilt with a VQA, ITM or SNLI-VE head;
not the NLVR2 head, whose two-image forward no intervention reaches); input ablations work on any model.
In a sweep the axis is ``--interventions``; the condition is ``Condition(name, severity=1)`` on axis
``"intervention"`` (an intervention has no severity; 1 means "on").
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np

from robustlab.models import quag
from robustlab.models.attention import intervention
from robustlab.perturb.condition import Condition

KINDS = {
    "quag": "QUAG short-circuit: row-wise average of attention quadrants in every fusion layer (Rawal et al. §2.3)",
    "quag-attention": "QUAG-attention: a modality's tokens averaged before the keys and values (Rawal et al. §2.4)",
    "input": "classical input ablation of Table 1 (not QUAG): the model without its visual or its text input",
}
INPUTS = ("language-only", "video-only")
QUAG_ATTENTION_MODELS = "builtin:tiny-vilt and hf-vilt (VQA, ITM and SNLI-VE heads)"
EMPTY_TEXT = "\u200b"  # passes the models' "type a few words" check; tokenizers drop it -> [CLS] [SEP]


class InterventionError(ValueError):
    """An unknown intervention, or one the model cannot take (one line, naming what would work)."""


@dataclass(frozen=True)
class Intervention:
    kind: str
    name: str
    variant: Optional[str] = None

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.name}" + (f"/{self.variant}" if self.variant else "")

    def describe(self) -> str:
        if self.kind == "quag":
            return quag.PRESET_NOTES.get(self.name, f"QUAG on quadrants {self.name}")
        if self.kind == "quag-attention":
            return f"QUAG-attention {self.name}, {self.variant or 'additive'} size correction"
        return quag.INPUT_BASELINES[self.name]


def names() -> list[str]:
    """Every named intervention (custom quadrant sets ``quag:VV+TV`` are accepted too)."""
    return ([f"quag:{p}" for p in quag.PRESETS] + [f"quag-attention:{m}" for m in quag.QUAG_ATTENTION_MODES]
            + [f"input:{i}" for i in INPUTS])


def parse(text) -> Intervention:
    """``"quag:unimodal"``, ``"quag:VV+TT"``, ``"quag-attention:video-avg/multiplicative"``,
    ``"input:language-only"``; a Condition on the intervention axis; or an Intervention."""
    if isinstance(text, Intervention):
        return text
    if isinstance(text, Condition):
        text = text.name + (f"/{text.variant}" if text.variant else "")
    if isinstance(text, dict):
        text = str(text.get("name") or "") + (f"/{text['variant']}" if text.get("variant") else "")
    s = str(text or "").strip()
    kind, sep, rest = s.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in KINDS or not rest.strip():
        raise InterventionError(f"unknown intervention {s!r}; interventions: {', '.join(names())} "
                                f"(or quag:<quadrants>, e.g. quag:VV+TV)")
    name, _, variant = rest.strip().partition("/")
    variant = variant.strip() or None
    if kind == "quag":
        if variant:
            raise InterventionError(f"{s!r}: QUAG short-circuits have no variant")
        try:
            S = quag.quadrant_set(name)
        except quag.QuagError as e:
            raise InterventionError(f"intervention {s!r}: {e}") from None
        if not S:
            raise InterventionError(f"intervention {s!r} selects no quadrant")
        name = quag.preset_name(S) or "+".join(q for q in quag.QUADRANTS if q in S)
    elif kind == "quag-attention":
        if name not in quag.QUAG_ATTENTION_MODES:
            raise InterventionError(f"unknown QUAG-attention mode {name!r}; modes: "
                                    f"{', '.join(quag.QUAG_ATTENTION_MODES)}")
        if variant not in (None, *quag.CORRECTIONS):
            raise InterventionError(f"unknown size correction {variant!r}; corrections: "
                                    f"{', '.join(quag.CORRECTIONS)}")
        variant = None if variant == "additive" else variant
    else:
        if name not in INPUTS or variant:
            raise InterventionError(f"unknown input ablation {rest!r}; input ablations: "
                                    f"{', '.join('input:' + i for i in INPUTS)}")
    return Intervention(kind, name, variant)


def as_condition(text) -> Condition:
    """The sweep / task condition of an intervention (severity 1 = on)."""
    iv = parse(text)
    return Condition(f"{iv.kind}:{iv.name}", 1, 0, iv.variant)


def check(text, model=None) -> Intervention:
    """Parse and, with a model, check that the model can take it (one-line InterventionError otherwise)."""
    iv = parse(text)
    if model is None or iv.kind == "input":
        return iv
    mid = getattr(model, "model_id", type(model).__name__)
    if not callable(getattr(model, "forward_with_attention", None)):
        raise InterventionError(f"{iv.spec} needs a fusion model whose attention robustlab can reach "
                                f"(builtin:tiny-vilt, hf-vilt:...); {mid} has none")
    if iv.kind == "quag-attention" and not getattr(model, "supports_quag_attention", False):
        why = getattr(model, "quag_attention_refusal", None)
        raise InterventionError(f"{iv.spec}: QUAG-attention changes a layer's keys and values, which robustlab "
                                f"implements for {QUAG_ATTENTION_MODELS}; {mid} takes the QUAG short-circuits "
                                f"(quag:...) only" + (f" ({why})" if why else ""))
    return iv


# method -> (index of its visual argument(s), index of its text argument(s), batched?)
_WRAPPED = {"vqa_batch": (0, 1, True), "vqa": (0, 1, False), "itm_scores": (0, 1, True), "itm_score": (0, 1, False),
            "ground_batch": (0, 1, True), "ground": (0, 1, False), "forward_with_attention": (0, 1, False)}
TAKES_INPUT_ABLATION = tuple(_WRAPPED)


class _InputAblated:
    """The model with one input blanked in the calls the fusion tasks make (VQA, ITM, grounding, attention
    capture); every other attribute is the model's own. A method the model lacks stays missing."""

    def __init__(self, model, which: str):
        self._model, self._which = model, which

    def _blank_visual(self, v):
        a = np.asarray(v)
        return np.full_like(a, 128) if a.dtype == np.uint8 else np.full(a.shape, 0.5, a.dtype)

    def _fix(self, x, is_visual: bool, batched: bool):
        if is_visual != (self._which == "language-only"):
            return x
        one = self._blank_visual if is_visual else (lambda t: EMPTY_TEXT)
        return [one(v) for v in x] if batched else one(x)

    def __getattr__(self, name):
        attr = getattr(self._model, name)
        if name not in _WRAPPED:
            return attr
        vi, ti, batched = _WRAPPED[name]

        def call(*args, **kwargs):
            args = list(args)
            args[vi] = self._fix(args[vi], True, batched)
            args[ti] = self._fix(args[ti], False, batched)
            return attr(*args, **kwargs)

        return call


@contextlib.contextmanager
def applied(model, cond) -> Iterator[object]:
    """Within the block, the model to call under intervention ``cond`` (None / clean: the model itself)."""
    if cond is None or (isinstance(cond, Condition) and cond.clean):
        yield model
        return
    iv = check(cond, model)
    if iv.kind == "input":
        yield _InputAblated(model, iv.name)
        return
    with intervention(replace_for(iv)):
        yield model


def count_multiplications(run) -> int:
    """The multiplications of every matrix product ``run()`` performs, counted by torch's ``FlopCounterMode``
    (mm, bmm, addmm, baddbmm, convolutions, scaled-dot-product attention; its FLOPs / 2): a measured count, not a
    formula."""
    from torch.utils.flop_counter import FlopCounterMode  # torch: kept out of `import robustlab`

    with FlopCounterMode(display=False) as fc:
        run()
    return int(fc.get_total_flops() // 2)


def multiplications(model, cond, call) -> dict:
    """Measured multiplications of ``call(m)`` (one forward of a batch) with the model as it is and under the
    intervention ``cond``: ``{"baseline", "intervened", "saving", "scope"}``, ``saving`` = 1 − intervened / baseline
    (QUAG's "Δ multiplication ops"; the paper gives no formula, digest §1.9: this counts every matrix product of the
    whole forward, where :func:`robustlab.models.quag.multiplications` counts one fusion layer analytically)."""
    base = count_multiplications(lambda: call(model))
    with applied(model, cond) as m:
        new = count_multiplications(lambda: call(m))
    return {"baseline": base, "intervened": new, "saving": (base - new) / base if base else 0.0,
            "scope": "every matrix product of one forward (torch FlopCounterMode), measured"}


def replace_for(text, layers=None):
    """The attention hook of a QUAG or QUAG-attention intervention (``layers``: QUAG on those layers only)."""
    iv = parse(text)
    if iv.kind == "quag":
        return quag.replace_fn(iv.name, layers=layers)
    if iv.kind == "quag-attention":
        return quag.QuagAttention(iv.name, iv.variant or "additive", layers=layers)
    raise InterventionError(f"{iv.spec} is an input ablation, not an attention hook")


__all__ = ["Intervention", "InterventionError", "KINDS", "INPUTS", "names", "parse", "as_condition", "check",
           "applied", "replace_for", "count_multiplications", "multiplications"]
