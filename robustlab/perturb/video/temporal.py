"""[P1] Schiappa et al. temporal perturbations: sampling, reverse_sampling, jumble, box_jumble, freeze.

All five only re-index frames (``out = frames[idx]``), so each function computes the index list and gathers
once. Randomness comes from the registry's seeded generator (the [C1] code uses Python's ``random``): segment
shuffles are ``rng.permutation``, freeze anchors ``rng.choice(T, k, replace=False)``.

Where [C1]'s offline (``generate_noisy_videos.py``) and on-the-fly (``video_perturbations.py``) versions
disagree (digest §1.2 ⚠ rows: jumble, box_jumble, freeze), the default is the offline one (it wrote the released
perturbed video files) and the other is the ``on_the_fly`` variant.
"""
from __future__ import annotations

import numpy as np

from robustlab.perturb.registry import register
from robustlab.perturb.video._common import frames_of, take


# ------------------------------------------------------------------------------------------------ index maps

def sampling_indices(n: int, rate: int) -> np.ndarray:
    """[C1]: keep frames 0, r, 2r, … and repeat each r times -> ⌈n/r⌉·r indices."""
    return np.repeat(np.arange(0, n, rate), rate)


def jumble_indices(n: int, seg: int, rng: np.random.Generator) -> np.ndarray:
    """Shuffle frames *within* consecutive segments of ``seg`` frames (the last one may be shorter)."""
    seg_id = np.arange(n) // seg
    return np.lexsort((rng.random(n), seg_id))  # sort by segment, randomly within a segment


def box_jumble_indices(n: int, seg: int, rng: np.random.Generator) -> np.ndarray:
    """Shuffle the *order* of consecutive segments of ``seg`` frames; frames keep their order inside."""
    starts = np.arange(0, n, seg)
    order = rng.permutation(len(starts))
    return np.concatenate([np.arange(starts[i], min(starts[i] + seg, n)) for i in order])


def freeze_anchors(n: int, params: dict, rng: np.random.Generator) -> np.ndarray:
    """Sorted anchor frames: k = int(max(f·n, min_anchors)) distinct indices, k clamped to 1..n."""
    k = int(max(float(params["fraction"]) * n, float(params.get("min_anchors", 0))))
    k = min(max(k, 1), n)
    return np.sort(rng.choice(n, size=k, replace=False))


def freeze_indices(n: int, anchors: np.ndarray, start_at_zero: bool) -> np.ndarray:
    """Each anchor is shown until the next one (the last until frame n); on the fly, 0 is always an anchor."""
    a = np.asarray(anchors, dtype=np.int64)
    if start_at_zero and (a.size == 0 or a[0] != 0):
        a = np.concatenate([[0], a])
    lengths = np.diff(np.concatenate([a, [n]]))
    return np.repeat(a, lengths)


# ---------------------------------------------------------------------------------------------- registered

@register("sampling", output_note="T' = ⌈T/r⌉·r frames (T rounded up to a multiple of r, as [C1]: up to r−1 extra "
          "copies of the last kept frame; a 1-frame video gives r copies)")
def sampling(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    return take(v, sampling_indices(len(v), int(params["rate"])))


@register("reverse_sampling", output_note="T' = ⌈T/r⌉·r frames, as sampling")
def reverse_sampling(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    return take(v, sampling_indices(len(v), int(params["rate"]))[::-1])


@register("jumble")
def jumble(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    return take(v, jumble_indices(len(v), int(params["segment"]), rng))


@register("box_jumble")
def box_jumble(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    return take(v, box_jumble_indices(len(v), int(params["segment"]), rng))


@register("freeze", output_note="offline (default): T' = T − (first anchor) ≤ T; on_the_fly: T' = T")
def freeze(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    anchors = freeze_anchors(len(v), params, rng)
    return take(v, freeze_indices(len(v), anchors, bool(params["start_at_zero"])))


# ------------------------------------------------------------------------------- lazy plans (index maps only)

from robustlab.perturb.lazy import index_plan, lazy_plan  # noqa: E402


@lazy_plan("sampling")
def _sampling_plan(shape, params, rng):
    return index_plan(sampling_indices(shape[0], int(params["rate"])))


@lazy_plan("reverse_sampling")
def _reverse_sampling_plan(shape, params, rng):
    return index_plan(sampling_indices(shape[0], int(params["rate"]))[::-1])


@lazy_plan("jumble")
def _jumble_plan(shape, params, rng):
    return index_plan(jumble_indices(shape[0], int(params["segment"]), rng))


@lazy_plan("box_jumble")
def _box_jumble_plan(shape, params, rng):
    return index_plan(box_jumble_indices(shape[0], int(params["segment"]), rng))


@lazy_plan("freeze")
def _freeze_plan(shape, params, rng):
    anchors = freeze_anchors(shape[0], params, rng)
    return index_plan(freeze_indices(shape[0], anchors, bool(params["start_at_zero"])))
