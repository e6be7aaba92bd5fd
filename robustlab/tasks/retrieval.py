"""Clean-vs-perturbed text↔image retrieval over one gallery (the engine behind the Retrieval page).

``RetrievalBench`` holds a model and a gallery, and memoises the perturbed gallery images/captions and their
embeddings per (perturbation, severity, seed); embeddings also go through the on-disk cache, so a gallery is
encoded once per model and condition, across sessions.

Seeds: gallery item i is perturbed with ``seed + i``; a typed query with ``seed``. Each perturbed item keeps its
record, so any example on screen can be regenerated exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robustlab.datasets.uploads import Gallery
from robustlab.engine.cache import EmbeddingCache, cached_encode_images, cached_encode_texts
from robustlab.metrics import ranks, retrieval


@dataclass
class Condition:
    """A perturbation setting for one modality; ``name=None`` or ``severity=0`` is clean."""

    name: str | None = None
    severity: int = 0
    seed: int = 0

    @property
    def clean(self) -> bool:
        return not self.name or int(self.severity) == 0

    def key(self):
        return None if self.clean else (self.name, int(self.severity), int(self.seed))

    def label(self) -> str:
        return "clean" if self.clean else f"{self.name} s{self.severity}"


@dataclass
class Ranked:
    indices: list[int]
    scores: list[float]
    gt_rank: int | None


@dataclass
class Comparison:
    query: str
    perturbed_query: str
    query_record: dict | None
    gt_index: int | None
    clean: Ranked
    perturbed: Ranked
    metrics: dict  # condition label -> {"t2i": {...}, "i2t": {...}}
    image_condition: Condition
    text_condition: Condition
    k: int
    notes: list[str] = field(default_factory=list)

    @property
    def rank_change(self) -> int | None:
        if self.clean.gt_rank is None or self.perturbed.gt_rank is None:
            return None
        return self.perturbed.gt_rank - self.clean.gt_rank


class RetrievalBench:
    def __init__(self, model, gallery: Gallery, cache: EmbeddingCache | None = None):
        if len(gallery) == 0:
            raise ValueError("the gallery is empty")
        self.model = model
        self.gallery = gallery
        # items with a caption are queries (and i2t targets); uncaptioned images are distractors only
        self.captioned = [i for i, c in enumerate(gallery.captions) if c]
        if not self.captioned:
            raise ValueError("no image in the gallery has a caption; add captions to compare retrieval")
        self.cache = cache if cache is not None else EmbeddingCache()
        self._images: dict = {}
        self._texts: dict = {}

    # ---- perturbed gallery -------------------------------------------------------------------------
    def images(self, cond: Condition, progress=None):
        """(images, records, embeddings) of the gallery under an image condition (memoised)."""
        key = cond.key()
        if key not in self._images:
            imgs, recs = self.gallery.images, None
            if not cond.clean:
                from robustlab.perturb import perturb

                res = [perturb(im, cond.name, cond.severity, seed=cond.seed + i) for i, im in enumerate(imgs)]
                imgs, recs = [r.output for r in res], [r.record for r in res]
            emb = cached_encode_images(self.model, imgs, cache=self.cache, records=recs, progress=progress)
            self._images[key] = (imgs, recs, emb)
        return self._images[key]

    def texts(self, cond: Condition):
        """(captions, records, embeddings) of the captioned items under a text condition (memoised); entry j
        belongs to gallery item ``self.captioned[j]``."""
        key = cond.key()
        if key not in self._texts:
            caps, recs = [self.gallery.captions[i] for i in self.captioned], None
            if not cond.clean:
                from robustlab.perturb import perturb

                res = [perturb(c, cond.name, cond.severity, seed=cond.seed + i) for i, c in zip(self.captioned, caps)]
                caps, recs = [r.output for r in res], [r.record for r in res]
            emb = cached_encode_texts(self.model, caps, cache=self.cache, records=recs)
            self._texts[key] = (caps, recs, emb)
        return self._texts[key]

    # ---- metrics ----------------------------------------------------------------------------------
    def metrics(self, image_cond: Condition, text_cond: Condition) -> dict:
        """Gallery-level R@1/5/10, MdR, MnR in both directions (every caption queries every image)."""
        _, _, ie = self.images(image_cond)
        _, _, te = self.texts(text_cond)
        q = np.asarray(self.captioned)
        s = te @ ie.T  # captions × all images
        return {"t2i": retrieval(s, q), "i2t": retrieval(s[:, q].T, np.arange(len(q)))}

    def compare(self, image_cond: Condition, text_cond: Condition, query_index: int | None = None,
                query_text: str | None = None, gt_index: int | None = None, k: int = 5,
                progress=None) -> Comparison:
        """Top-k for one query, clean vs perturbed, plus the gallery-level metrics of each condition."""
        n = len(self.gallery)
        k = max(1, min(int(k), n))
        notes = []
        if query_index is not None:
            if not 0 <= query_index < n:
                raise ValueError(f"query index {query_index} outside the gallery (0..{n - 1})")
            if not self.gallery.captions[query_index]:
                raise ValueError(f"gallery item {query_index} has no caption to query with")
            query = self.gallery.captions[query_index]
            gt_index = query_index
            caps_p, recs_p, _ = self.texts(text_cond)
            j = self.captioned.index(query_index)
            pq, prec = caps_p[j], (recs_p[j] if recs_p else None)
        else:
            from robustlab.io.files import clean_caption

            query = clean_caption(query_text or "", "query")
            pq, prec = query, None
            if not text_cond.clean:
                from robustlab.perturb import perturb

                r = perturb(query, text_cond.name, text_cond.severity, seed=text_cond.seed)
                pq, prec = r.output, r.record
            if gt_index is not None and not 0 <= gt_index < n:
                raise ValueError(f"ground-truth index {gt_index} outside the gallery (0..{n - 1})")
        if not pq.strip():
            notes.append("the perturbation left the query empty")
        q_clean = cached_encode_texts(self.model, [query], cache=self.cache)[0]
        q_pert = cached_encode_texts(self.model, [pq], cache=self.cache, records=[prec] if prec else None)[0]
        _, _, ie_c = self.images(Condition(), progress=progress)
        _, _, ie_p = self.images(image_cond, progress=progress)

        def rank_list(q, ie) -> Ranked:
            s = ie @ q
            order = np.argsort(-s, kind="stable")[:k]
            gr = int(ranks(s[None, :], [gt_index])[0]) if gt_index is not None else None
            return Ranked([int(i) for i in order], [float(s[i]) for i in order], gr)

        clean_cond = Condition()
        metrics = {
            "clean": self.metrics(clean_cond, clean_cond),
            "image perturbed": self.metrics(image_cond, clean_cond),
            "text perturbed": self.metrics(clean_cond, text_cond),
            "both perturbed": self.metrics(image_cond, text_cond),
        }
        return Comparison(query=query, perturbed_query=pq, query_record=prec, gt_index=gt_index,
                          clean=rank_list(q_clean, ie_c), perturbed=rank_list(q_pert, ie_p), metrics=metrics,
                          image_condition=image_cond, text_condition=text_cond, k=k, notes=notes)
