"""Lazy video perturbation: perturb only the frames a model will look at.

MSRVTT-P and MLVP perturb whole videos, write them to disk, and the models then sample 8–12 frames. Here a video
perturbation is a :class:`FramePlan` computed from the clip's shape, the parameters and the seeded generator,
before any pixel is decoded: which input frames output frame t needs (``needs(t)``) and how to render it from
them (``render(get, t)``), plus the output length T'. Then :func:`perturb_sampled` asks the model's sampler which
output frames it wants (``indices(T')``), reads only the input frames those need from a frame source (a video
file decoded on demand, or an array) and renders them:

* image perturbations (noise, blur, weather, …) on videos draw their randomness per frame index
  (:func:`robustlab.perturb.frames.frame_rng`): frame t alone is frame t of the whole perturbed clip;
* temporal perturbations (sampling, reverse_sampling, jumble, box_jumble, freeze, MLVP temporal scrambling) are
  index maps: nothing is decoded that the model will not see;
* camera motion (static_rotate, rotate, translate) and MLVP's fixed-pattern ops (noise, impulse, fog, elastic,
  style, snow's falling curtain, occlusion) compute frame t from input frame t; MLVP's motion-aware blurs from
  frames t−1 and t (the optical flow);
* codecs (codec1, codec2, mlvp_h264) and MLVP event insertion need the whole clip: the whole clip is read and
  perturbed, then sampled, and the record says so (``"sampled": {"lazy": false, "why": …}``).

A video op run with per-item parameters (MLVP's main-object boxes or event donor,
:mod:`robustlab.perturb.video.mlvp.context`) takes them as ``perturb_sampled(..., params=)``: the plan is made from
them (a whole-clip op is perturbed with them), the output is never shared with the table's (``share.MEMO``), and the
record keeps them with ``"params_override": true``, so :func:`regenerate_sampled` re-runs them; the retrieval bench's
lazy path passes each item's.

The output is bit for bit the sampled frames of :func:`robustlab.perturb.perturb` on the whole clip (tested for
every video-capable perturbation). A lazy record is an ordinary record plus ``"sampled"``: the output indices, the
output length, the input frames read (its ``input_hash`` is theirs); ``regenerate(record, clip)`` returns the
same sampled frames.

This module is the lazy API in one place: the frame sources and plans are :mod:`robustlab.perturb.frames`,
:func:`lazy_plan` registers a plan (:mod:`robustlab.perturb.specs`), and :func:`perturb_sampled` /
:func:`regenerate_sampled` run next to :func:`robustlab.perturb.perturb` in :mod:`robustlab.perturb.registry`
(a lazy record regenerates through ``regenerate`` there, and a whole-clip op falls back on ``perturb``).
"""
from __future__ import annotations

from robustlab.perturb.frames import (  # noqa: F401  (re-exported: the lazy API)
    ArraySource, FramePlan, FrameSource, Getter, IndexSpec, index_plan, per_frame_plan, plan_for, whole_clip_reason)
from robustlab.perturb.registry import perturb_sampled, regenerate_sampled
from robustlab.perturb.specs import lazy_plan

__all__ = ["FrameSource", "ArraySource", "FramePlan", "index_plan", "per_frame_plan", "lazy_plan", "plan_for",
           "perturb_sampled", "regenerate_sampled"]
