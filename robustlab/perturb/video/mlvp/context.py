"""Per-item side information for MLVP's content shifts, supplied from above (issue 48, item 8).

The perturbation layer sits below the datasets and the models, so what only they know comes in from the caller --
the task layer, where the dataset and the model are known -- as an :class:`ItemContext` handed to
:func:`robustlab.perturb.condition.perturb_many` (``context=``):

* ``boxes(i)``: item i's main-object box on every frame (``[x_min, y_min, x_max, y_max]`` or None where the
  object is not seen), for ``mlvp_occlusion`` (the built-in event videos know them: their
  ``main_object_boxes(i)``);
* ``donors``: a :class:`DonorPool` -- the dataset's videos and the evaluated model's embeddings of them -- from
  which ``mlvp_event_insertion`` takes the most similar OTHER video of the same dataset (cosine).

A context only fills in the variants whose table says it does not know (``box`` "centre (no boxes known)",
``corpus`` "synthetic (no donor pool given)": the default ``paper`` and the ``code`` variants); the ``centre`` and
``synthetic`` variants stay as they are. It returns the item's parameters -- the table's, with the boxes or the
donor -- which :func:`robustlab.perturb.perturb` runs with (``params=``) and the record keeps
(``"params_override": true``), so ``robustlab.perturb.regenerate(record, x)`` rebuilds the output bit for bit: the
boxes are in the record, and the donor is named by its dataset, id and the hash of its frames
(:func:`robustlab.perturb.video.mlvp.content.donor_clip` finds it again or says in one line that it cannot).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from robustlab.perturb import record as _rec
from robustlab.perturb.video.mlvp.content import (
    BOX_FALLBACK, BOX_OBJECT, CORPUS_FALLBACK, CORPUS_OWN, add_donor_source,
)

OCCLUSION, EVENT_INSERTION = "mlvp_occlusion", "mlvp_event_insertion"
NAMES = (OCCLUSION, EVENT_INSERTION)  # the perturbations an ItemContext can fill in


class DonorPool:
    """The videos ``mlvp_event_insertion`` may insert from: ``n`` videos of dataset ``dataset`` (video j: frames
    ``clip(j)``, id ``id_of(j)``), matched by ``embeddings()`` (n × d, the evaluated model's clean video
    embeddings; a callable, so they are computed only when event insertion runs). Item i's donor is
    ``argmax_{j≠i} cos(e_i, e_j)`` (ties: the lowest index), never the item itself. ``matched_by`` says what the
    embeddings are, for the record."""

    def __init__(self, dataset: str, n: int, clip: Callable[[int], np.ndarray], embeddings: Callable[[], np.ndarray],
                 id_of: Callable[[int], str] = str, matched_by: str = ""):
        self.dataset, self.n = str(dataset), int(n)
        self._clip, self._embeddings, self._id_of, self.matched_by = clip, embeddings, id_of, str(matched_by)
        self._e: Optional[np.ndarray] = None
        self._refs: dict[int, dict] = {}
        self._hashes: dict[str, int] = {}
        add_donor_source(self.dataset, self._find)

    def __len__(self) -> int:
        return self.n

    def _unit(self) -> np.ndarray:
        if self._e is None:
            e = np.asarray(self._embeddings(), np.float64)
            if e.ndim != 2 or len(e) != self.n:
                raise ValueError(f"a donor pool of {self.n} videos needs {self.n} embeddings, got shape {e.shape}")
            nrm = np.linalg.norm(e, axis=1, keepdims=True)
            self._e = e / np.where(nrm > 0, nrm, 1.0)
        return self._e

    def donor(self, i: int) -> tuple[int, float]:
        """(index, cosine) of item ``i``'s donor: the most similar other video."""
        e = self._unit()
        sims = e @ e[int(i)]
        sims[int(i)] = -np.inf
        j = int(np.argmax(sims))
        return j, float(sims[j])

    def ref(self, i: int) -> Optional[dict]:
        """What item ``i``'s record names as its donor (dataset, id, index, the hash and shape of its frames, the
        cosine, how it was matched); None when the pool has no other video."""
        if self.n < 2:
            return None
        if int(i) not in self._refs:
            j, sim = self.donor(i)
            frames = np.asarray(self._clip(j))
            h = _rec.hash_value(frames)
            self._hashes[h] = j
            self._refs[int(i)] = {"dataset": self.dataset, "id": str(self._id_of(j)), "index": j, "hash": h,
                                  "shape": list(frames.shape), "similarity": round(sim, 6),
                                  "matched_by": self.matched_by}
        return dict(self._refs[int(i)])

    def _find(self, ref: dict) -> Optional[np.ndarray]:
        """A donor source (:func:`~robustlab.perturb.video.mlvp.content.add_donor_source`): the frames of the
        video ``ref`` names, when it is one of this pool's."""
        j = self._hashes.get(str(ref.get("hash")))
        if j is None:
            j = ref.get("index")
            if not isinstance(j, int) or not 0 <= j < self.n or str(self._id_of(j)) != ref.get("id"):
                return None
        return np.asarray(self._clip(int(j)))


class ItemContext:
    """Per-item side information for MLVP's content shifts (see the module docstring). ``boxes(i)``: item i's
    main-object box per frame, or None when unknown; ``box_source``: what the boxes are, for the record;
    ``donors``: a :class:`DonorPool` or None. Called as ``context(i, name, params)`` it returns item i's
    parameters (the table's ``params`` with the boxes or the donor), or None to run the table's as they are."""

    def __init__(self, boxes: Optional[Callable[[int], Optional[list]]] = None, box_source: str = "",
                 donors: Optional[DonorPool] = None):
        self.boxes, self.box_source, self.donors = boxes, str(box_source), donors

    def on_frames(self, frames: Optional[Sequence[int]]) -> "ItemContext":
        """This context for a clip made of each item's frames ``frames``, in that order (a cut, a time reversal,
        CLAVI's complement): the boxes are taken at those frames; ``frames`` None: no boxes known for such a clip
        (mlvp_occlusion's centred fallback, said in the record). The donors stay."""
        boxes = self.boxes
        if boxes is None or frames is None:
            return ItemContext(None, self.box_source, self.donors)
        order = [int(k) for k in frames]

        def taken(i: int) -> Optional[list]:
            b = boxes(i)
            return None if b is None else [b[k] for k in order]

        return ItemContext(taken, self.box_source, self.donors)

    def applies(self, name: Optional[str]) -> bool:
        """Whether this context can fill in perturbation ``name`` at all."""
        return (name == OCCLUSION and self.boxes is not None) or (name == EVENT_INSERTION and
                                                                  self.donors is not None)

    def __call__(self, index: int, name: str, params: dict) -> Optional[dict]:
        if name == OCCLUSION and self.boxes is not None and params.get("box") == BOX_FALLBACK:
            boxes = self.boxes(int(index))
            if boxes is None:
                return None
            return dict(params, box=BOX_OBJECT, box_source=self.box_source,
                        boxes=[None if b is None else [int(c) for c in b] for b in boxes])
        if name == EVENT_INSERTION and self.donors is not None and params.get("corpus") == CORPUS_FALLBACK:
            ref = self.donors.ref(int(index))
            if ref is None:
                return None
            keep = {k: v for k, v in params.items() if not k.startswith("corpus_")}
            return dict(keep, corpus=CORPUS_OWN, donor=ref)
        return None


__all__ = ["DonorPool", "ItemContext", "NAMES"]
