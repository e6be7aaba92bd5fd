"""The retrieval bench: text↔image or text↔video over one dataset, clean vs perturbed.

:class:`RetrievalBench` holds a model and a dataset (images OR videos) and memoises, per condition, the perturbed
visuals and texts, their records and their embeddings; embeddings also go through the on-disk cache (keyed by the
model's weights fingerprint), so a dataset is encoded once per model and condition, across sessions. The pages use
its :meth:`~RetrievalBench.compare` (one query, clean vs perturbed top-k and ground-truth rank) and
:meth:`~RetrievalBench.score_matrix` (hubness, embeddings); :class:`~robustlab.tasks.retrieval.RetrievalTask`
(``rl.tasks.get("retrieval")``) turns its :meth:`~RetrievalBench.metrics` into
:class:`~robustlab.tasks.result.Result`\\ s. One implementation.

Queries and targets: ``texts()`` are every caption of every item (flattened); ``t2i``/``t2v`` — every text queries
every visual; ``i2t``/``v2t`` — every visual with at least one caption queries every text (uncaptioned visuals
are distractors only). What counts as a match is the dataset's ``positives`` (its own item; or every item with the
same caption, for the built-in event videos).

Seeds: visual ``i`` is perturbed with ``condition.seed + i``, text ``j`` with ``condition.seed + j``
(:func:`robustlab.perturb.condition.perturb_many`), a typed query with ``condition.seed``; every perturbed item
keeps its record, so anything on screen can be regenerated exactly.

MLVP's content shifts on a video dataset get the bench's per-item side information (:meth:`RetrievalBench.context`,
:func:`robustlab.tasks.conditions.mlvp_context`): mlvp_occlusion occludes each video's main-object boxes where the
dataset knows them (the built-in event videos), mlvp_event_insertion inserts the most similar other video of the
same dataset by the model's own clean video embeddings; their records keep the boxes and name the donor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from robustlab.engine.cache import (
    EmbeddingCache,
    cached_encode_images,
    cached_encode_texts,
    cached_encode_videos,
)
from robustlab.io.files import clean_caption
from robustlab.metrics.retrieval import ranks, retrieval, summarize_ranks
from robustlab.perturb.condition import (
    Condition, check, dropped_reason, item_params, item_plan, mix_record, perturb_many,
)
from robustlab.perturb.lazy import ArraySource, perturb_sampled
from robustlab.tasks.conditions import mlvp_context
from robustlab.tasks.task import ProgressFn

DIRECTIONS = {"image": ("t2i", "i2t"), "video": ("t2v", "v2t")}
DIRECTION_LABELS = {"t2i": "text→image", "i2t": "image→text", "t2v": "text→video", "v2t": "video→text"}


def check_model(model, kind: str) -> None:
    """ValueError (one line) unless ``model`` embeds texts and ``kind``s ("image" / "video") into one space."""
    need = ("encode_texts", "encode_videos" if kind == "video" else "encode_images")
    if not all(callable(getattr(model, m, None)) for m in need):
        alt = "builtin:tiny-clip-video-seqtransf" if kind == "video" else "builtin:tiny-clip"
        raise ValueError(f"model {getattr(model, 'model_id', model)!r} cannot encode {kind}s and texts into one "
                         f"space (no {'/'.join(need)}); use a retrieval model, e.g. {alt}")


@dataclass
class Ranked:
    indices: list[int]  # into the targets (visual items for t2*, texts for *2t)
    scores: list[float]
    gt_rank: Optional[int]  # 1-based rank of the best-ranked positive (None: no positive known)


@dataclass
class Comparison:
    """One query, clean vs perturbed: the top-k of each, the ground truth's rank, and the dataset-level metrics
    of every condition (``"clean"``, ``"<kind> perturbed"``, ``"text perturbed"``, ``"both perturbed"``)."""
    direction: str
    query: str | int  # the caption, or the query visual's item index (i2t / v2t)
    perturbed_query: str | int
    query_record: Optional[dict]
    gt: list[int]  # the query's positives among the targets
    clean: Ranked
    perturbed: Ranked
    metrics: dict
    visual_condition: Condition
    text_condition: Condition
    k: int
    notes: list[str] = field(default_factory=list)

    @property
    def gt_index(self) -> Optional[int]:
        return self.gt[0] if self.gt else None

    # the older per-kind names
    @property
    def image_condition(self) -> Condition:
        return self.visual_condition

    @property
    def video_condition(self) -> Condition:
        return self.visual_condition

    @property
    def rank_change(self) -> Optional[int]:
        if self.clean.gt_rank is None or self.perturbed.gt_rank is None:
            return None
        return self.perturbed.gt_rank - self.clean.gt_rank


@dataclass
class Scores:
    """A score matrix queries × targets with its ground truth."""
    scores: np.ndarray
    positives: object  # per query: one target index (an int array) or a list of target indices
    gt: np.ndarray  # the query's own target (its item / its first caption): heatmap diagonals
    queries: np.ndarray  # item index (t2*: text index) of each query row
    targets: np.ndarray  # item index of each target column (t2*) or text index (*2t)


def _gt_array(pos: list[list[int]]):
    """A scalar ground-truth array when every query has exactly one positive (the usual case), else the lists."""
    return np.array([p[0] for p in pos], dtype=np.int64) if all(len(p) == 1 for p in pos) else pos


class RetrievalBench:
    """``lazy`` (video datasets, models with ``frame_indices(T)``): perturb and keep only the frames the model
    samples (:func:`robustlab.perturb.lazy.perturb_sampled`; bit for bit the frames it would sample from the whole
    perturbed clip, so the metrics are the same), reading them from the dataset's ``frame_source(i)`` where it has
    one (video files: only those frames are decoded). The visuals are then the sampled frames, not whole clips."""
    def __init__(self, model, dataset, cache: Optional[EmbeddingCache] = None, lazy: bool = False):
        if len(dataset) == 0:
            raise ValueError(f"the dataset {getattr(dataset, 'name', '')} is empty".replace("  ", " "))
        self.kind = dataset.kind
        check_model(model, self.kind)
        self.model = model
        self.dataset = dataset
        self._texts0 = dataset.texts()
        if not self._texts0:
            raise ValueError(f"no {self.kind} in the dataset has a caption; add captions to compare retrieval")
        self.text_items = np.asarray(dataset.text_items(), dtype=np.int64)
        self.text_pos = dataset.text_positives()
        vpos = dataset.visual_positives()
        self.captioned = [i for i, p in enumerate(vpos) if p]  # visuals that query in i2t / v2t
        self.visual_pos = [vpos[i] for i in self.captioned]
        first: dict[int, int] = {}
        for j, i in enumerate(self.text_items):
            first.setdefault(int(i), j)
        self.caption_of = first  # item -> index of its first own caption in texts()
        self.directions = DIRECTIONS[self.kind]
        self.cache = cache if cache is not None else EmbeddingCache()
        sampler = getattr(model, "frame_indices", None)
        self.sampler = sampler if lazy and self.kind == "video" and callable(sampler) else None
        self._visuals: dict = {}
        self._texts: dict = {}
        self._context = None

    def context(self):
        """MLVP's per-item side information for this dataset and model (None for image datasets): the dataset's
        main-object boxes (mlvp_occlusion) and its own videos as event-insertion donors, matched by this model's
        clean video embeddings (computed at the first event insertion)."""
        if self._context is None and self.kind == "video":
            mid = getattr(self.model, "model_id", "") or type(self.model).__name__
            self._context = mlvp_context(self.dataset, lambda: self.visuals(Condition())[2],
                                         matched_by=f"{mid} clean video embeddings, cosine") or False
        return self._context or None

    # ---- the dataset under a condition ------------------------------------------------------------------
    @property
    def gallery(self):
        """The dataset (the pages' older name)."""
        return self.dataset

    def visuals(self, cond: Condition = Condition(), progress: ProgressFn = None):
        """(visuals, records, embeddings) of every item under a visual condition (memoised)."""
        key = cond.key()
        if key not in self._visuals:
            items = None if self.sampler is not None else self.dataset.visuals()
            n = len(self.dataset)
            half = (lambda a: (lambda d, t: progress(a + d, 2 * n))) if progress and not cond.clean else None
            if self.sampler is not None:
                outs, recs = self._sampled(cond, self.sampler, progress=half(0) if half else None)
            else:
                outs, recs = perturb_many(items, cond, self.kind, progress=half(0) if half else None,
                                          context=self.context())
            enc = cached_encode_videos if self.kind == "video" else cached_encode_images
            emb = enc(self.model, outs, cache=self.cache, records=recs, progress=half(n) if half else progress)
            self._visuals[key] = (outs, recs, np.asarray(emb, np.float32))
        return self._visuals[key]

    images = videos = visuals  # the older per-kind names

    def forget(self, keep=()) -> None:
        """Drop the memoised inputs and embeddings of every condition but clean and those in ``keep`` (a sweep
        shares one bench across its cells and keeps only what the next cells of the same shift reuse)."""
        keys = {None} | {c.key() for c in keep}
        for memo in (self._visuals, self._texts):
            for k in [k for k in memo if k not in keys]:
                del memo[k]

    def _sampled(self, cond: Condition, sampler, progress: ProgressFn = None):
        """(sampled frames, lazy records) of every video under ``cond``; video i gets seed ``cond.seed + i``."""
        if not cond.clean:
            check(cond, "video")
        ds = self.dataset
        from_files = callable(getattr(ds, "frame_source", None))
        items = None if from_files else ds.visuals()
        outs, recs = [], []
        plan = None if cond.clean else item_plan(cond, len(ds))  # a mixed condition draws per video
        ctx = None if cond.clean else self.context()
        for i in range(len(ds)):
            src = ds.frame_source(i) if from_files else ArraySource(items[i])
            params = None if cond.clean else item_params(ctx, i, plan[i])
            if cond.clean:
                outs.append(src.read(sampler(int(src.n_frames))))
            else:  # params: the item's own (MLVP's boxes, a donor), planned from as the table's would be
                p = plan[i]
                r = perturb_sampled(src, p["name"], p["severity"], seed=p["seed"], variant=p["variant"],
                                    indices=sampler, params=params)
                outs.append(r.output)
                recs.append(mix_record(r.record, cond, i, len(ds)))
            if progress:
                progress(i + 1, len(ds))
        return outs, (None if cond.clean else recs)

    def texts(self, cond: Condition = Condition(), progress: ProgressFn = None):
        """(texts, records, embeddings) of every caption under a text condition (memoised). ``progress(done,
        total)``: perturbing then encoding (each half of the total when perturbed)."""
        key = cond.key()
        if key not in self._texts:
            n = len(self._texts0)
            half = (lambda a: (lambda d, t: progress(a + d, 2 * n))) if progress and not cond.clean else None
            outs, recs = perturb_many(self._texts0, cond, "text", progress=half(0) if half else None)
            emb = cached_encode_texts(self.model, outs, cache=self.cache, records=recs,
                                      progress=half(n) if half else progress)
            self._texts[key] = (outs, recs, np.asarray(emb, np.float32))
        return self._texts[key]

    @property
    def caption_texts(self) -> list[str]:
        """Every caption, clean (text index order), without encoding anything."""
        return self._texts0

    def has_texts(self, cond: Condition = Condition()) -> bool:
        """Whether the captions under ``cond`` are perturbed and encoded already (memoised in this bench)."""
        return cond.key() in self._texts

    def one_text(self, j: int, cond: Condition = Condition()):
        """(text, record, embedding) of caption ``j`` under ``cond``: the memoised row when :meth:`texts` ran for
        ``cond``, else caption ``j`` alone (perturbed with the seed it gets in the whole list, ``seed + j``, so
        the text and record are the same; the embedding equals the row up to float rounding of the batch)."""
        key = cond.key()
        if key in self._texts:
            outs, recs, emb = self._texts[key]
            return outs[j], (recs[j] if recs else None), emb[j]
        outs, recs = perturb_many([self._texts0[j]], cond, "text", offset=int(j), total=len(self._texts0))
        emb = cached_encode_texts(self.model, outs, cache=self.cache, records=recs)
        return outs[0], (recs[0] if recs else None), np.asarray(emb[0], np.float32)

    # ---- scores and metrics -----------------------------------------------------------------------------
    def scores(self, visual_cond: Condition = Condition(), text_cond: Condition = Condition(),
               progress: ProgressFn = None) -> np.ndarray:
        """Texts × visuals similarities."""
        _, _, ve = self.visuals(visual_cond, progress)
        _, _, te = self.texts(text_cond)
        return te @ ve.T

    def score_matrix(self, direction: str, visual_cond: Condition = Condition(),
                     text_cond: Condition = Condition(), progress: ProgressFn = None) -> Scores:
        """Queries × targets in ``direction`` with the ground truth."""
        self._check_direction(direction)
        s = self.scores(visual_cond, text_cond, progress)
        if direction[0] == "t":
            return Scores(s, _gt_array(self.text_pos), self.text_items.copy(),
                          np.arange(len(self._texts0), dtype=np.int64), np.arange(len(self.dataset), dtype=np.int64))
        q = np.asarray(self.captioned, dtype=np.int64)
        return Scores(np.ascontiguousarray(s[:, q].T), _gt_array(self.visual_pos),
                      np.array([self.caption_of[int(i)] for i in q], np.int64), q,
                      np.arange(len(self._texts0), dtype=np.int64))

    def metrics(self, visual_cond: Condition = Condition(), text_cond: Condition = Condition(),
                ks=(1, 5, 10), progress: ProgressFn = None) -> dict:
        """Dataset-level R@K, MdR, MnR in both directions: ``{"t2i": {...}, "i2t": {...}}`` (t2v/v2t for videos)."""
        return {d: summarize_ranks(r, ks) for d, r in self.ranks(visual_cond, text_cond, progress).items()}

    def ranks(self, visual_cond: Condition = Condition(), text_cond: Condition = Condition(),
              progress: ProgressFn = None) -> dict:
        """``{direction: 1-based rank of each query's ground truth}`` (query order of :meth:`score_matrix`), from
        which every R@K, MdR, MnR and RSUM follows (:mod:`robustlab.metrics.bootstrap` resamples them)."""
        out = {}
        drop = self.dropped_texts(text_cond)
        for d in self.directions:
            m = self.score_matrix(d, visual_cond, text_cond, progress)
            r = ranks(m.scores, m.positives)
            if drop and d[0] == "t":  # MLVP drops a text query no similarity-gate attempt passed (the paper)
                r = np.delete(r, drop)
            out[d] = r
        return out

    def top1(self, visual_cond: Condition = Condition(), text_cond: Condition = Condition()) -> dict:
        """``{direction: the target each query ranks first}`` (query order and drops as :meth:`ranks`; a "thief")."""
        drop = self.dropped_texts(text_cond)
        return {d: np.delete(t, drop if d[0] == "t" else []) for d in self.directions
                for t in [np.argmax(self.score_matrix(d, visual_cond, text_cond).scores, axis=1)]}

    def dropped_texts(self, text_cond: Condition = Condition()) -> list[int]:
        """Indices of the captions the text condition dropped (the MLVP similarity gate passed no attempt): left
        out of the text-query directions' metrics and ranks; as gallery texts (i2t / v2t) they stay, last attempt."""
        if text_cond.clean:
            return []
        _, recs, _ = self.texts(text_cond)
        return [j for j, r in enumerate(recs or []) if dropped_reason(r)]

    def condition_metrics(self, visual_cond: Condition, text_cond: Condition) -> dict:
        """The metrics of clean, visual perturbed, text perturbed and both (what the pages chart)."""
        c = Condition()
        return {"clean": self.metrics(c, c), f"{self.kind} perturbed": self.metrics(visual_cond, c),
                "text perturbed": self.metrics(c, text_cond), "both perturbed": self.metrics(visual_cond, text_cond)}

    def _check_direction(self, direction: str) -> None:
        if direction not in self.directions:
            raise ValueError(f"direction must be {' or '.join(self.directions)} for a {self.kind} dataset, "
                             f"got {direction!r}")

    # ---- one query, clean vs perturbed --------------------------------------------------------------------
    def compare(self, visual_cond: Condition = Condition(), text_cond: Condition = Condition(),
                query_index: Optional[int] = None, query_text: Optional[str] = None, gt_index: Optional[int] = None,
                k: int = 5, direction: Optional[str] = None, progress: ProgressFn = None,
                metrics: bool = True) -> Comparison:
        """Top-k for one query, clean vs perturbed, plus the dataset-level metrics of each condition.

        Text→visual: item ``query_index``'s first caption, or a typed ``query_text`` (its positives: ``gt_index``
        when given, else every item with exactly that caption when the dataset matches by caption).
        Visual→text: item ``query_index`` queries the texts (the perturbed run perturbs both).

        ``metrics=False`` leaves ``metrics`` empty (``{}``) and, text→visual, encodes only the query rather than
        every caption (:meth:`one_text`): what a page needs to draw the ranking first; the gallery metrics
        (:meth:`condition_metrics`) follow."""
        direction = direction or self.directions[0]
        self._check_direction(direction)
        n = len(self.dataset)
        notes: list[str] = []
        if query_index is not None and not 0 <= int(query_index) < n:
            raise ValueError(f"query index {query_index} outside the dataset (0..{n - 1})")
        if gt_index is not None and not 0 <= int(gt_index) < n:
            raise ValueError(f"ground-truth index {gt_index} outside the dataset (0..{n - 1})")
        _, _, ve_c = self.visuals(Condition(), progress)
        _, vrecs, ve_p = self.visuals(visual_cond, progress)
        texts_c = self._texts0  # the clean captions are the captions themselves
        if metrics or direction[0] != "t":
            _, _, te_c = self.texts(Condition())
            texts_p, trecs, te_p = self.texts(text_cond)
        prec = None
        if direction[0] == "t":
            k = max(1, min(int(k), n))
            if query_index is not None:
                js = np.flatnonzero(self.text_items == int(query_index))
                if not len(js):
                    raise ValueError(f"item {query_index} has no caption to query with")
                j = int(js[0])
                query, _, q_c = self.one_text(j, Condition())
                pq, prec, q_p = self.one_text(j, text_cond)
                gt = list(self.text_pos[j])
            else:

                query = clean_caption(query_text or "", "query")
                pq = query
                if not text_cond.clean:
                    outs, recs = perturb_many([query], text_cond, "text")
                    pq, prec = outs[0], recs[0]
                q_c = cached_encode_texts(self.model, [query], cache=self.cache)[0]
                q_p = cached_encode_texts(self.model, [pq], cache=self.cache, records=[prec] if prec else None)[0]
                if gt_index is not None:
                    gt = [int(gt_index)]
                elif self.dataset.positives == "caption":
                    gt = sorted({int(self.text_items[j]) for j, t in enumerate(texts_c) if t == query})
                else:
                    gt = []
            if not str(pq).strip():
                notes.append("the perturbation left the query empty")
            s_c, s_p = ve_c @ q_c, ve_p @ q_p
        else:
            if query_index is None:
                raise ValueError(f"{DIRECTION_LABELS[direction]} needs a dataset {self.kind} as the query")
            k = max(1, min(int(k), len(texts_c)))
            query = pq = int(query_index)
            prec = vrecs[query] if vrecs else None
            gt = list(self.dataset_visual_positives()[query])
            s_c, s_p = te_c @ ve_c[query], te_p @ ve_p[query]
        return Comparison(direction=direction, query=query, perturbed_query=pq, query_record=prec, gt=gt,
                          clean=_ranked(s_c, gt, k), perturbed=_ranked(s_p, gt, k),
                          metrics=self.condition_metrics(visual_cond, text_cond) if metrics else {},
                          visual_condition=visual_cond,
                          text_condition=text_cond, k=k, notes=notes)

    def worst_examples(self, visual_cond: Condition, text_cond: Condition, k: int = 3) -> list[dict]:
        """Per direction, the ``k`` queries whose ground truth's rank rose most from clean to perturbed (ties: the
        lower query index first; queries whose rank did not rise are left out), with the records that regenerate
        the perturbed query and target: ``{"direction", "query", "item", "text", "clean_rank", "perturbed_rank",
        "visual_record", "text_record"}`` (``item``: the visual involved — the t2* query's target, the *2t query)."""
        _, vrecs, _ = self.visuals(visual_cond)
        texts_p, trecs, _ = self.texts(text_cond)
        out = []
        for d in self.directions:
            c = self.score_matrix(d)
            p = self.score_matrix(d, visual_cond, text_cond)
            rc, rp = ranks(c.scores, c.positives), ranks(p.scores, p.positives)
            rise = rp - rc
            order = [int(q) for q in np.argsort(-rise, kind="stable") if rise[q] > 0][:max(int(k), 0)]
            for q in order:
                if d[0] == "t":
                    j, item = int(q), int(self.text_items[q])
                else:
                    item = int(p.queries[q])
                    j = int(self.caption_of[item])
                out.append({"direction": d, "query": int(q), "item": item, "text": texts_p[j],
                            "clean_rank": int(rc[q]), "perturbed_rank": int(rp[q]),
                            "visual_record": vrecs[item] if vrecs else None,
                            "text_record": trecs[j] if trecs else None})
        return out

    def dataset_visual_positives(self) -> list[list[int]]:
        vp: list[list[int]] = [[] for _ in range(len(self.dataset))]
        for i, p in zip(self.captioned, self.visual_pos):
            vp[i] = list(p)
        return vp

    # ---- order sensitivity (datasets whose items have a time-reversed caption) ---------------------------
    def order_metrics(self, visual_cond: Condition = Condition(), text_cond: Condition = Condition()) -> dict:
        """How much retrieval depends on the order of events (video datasets with ``reversed_captions``).

        ``t2v_R@1_reversed`` / ``v2t_R@1_reversed``: retrieval with every (perturbed) video played backwards, the
        captions unchanged; ``order_acc``: the fraction of videos that score their caption above its time
        reversal; ``order_acc_reversed``: the same for the reversed videos (whose right caption is the reversed
        one). 0.5 is chance. Only for datasets with one caption per video."""
        rcaps = getattr(self.dataset, "reversed_captions", None)
        if self.kind != "video" or rcaps is None or len(self._texts0) != len(self.dataset):
            return {}
        vids, _, ve = self.visuals(visual_cond)
        _, _, te = self.texts(text_cond)
        if self.sampler is not None:  # the frames the model samples from the whole clip played backwards
            smp = self.sampler
            rev, _ = self._sampled(visual_cond, lambda t: t - 1 - np.asarray(smp(t)))
        else:
            rev = [np.ascontiguousarray(np.asarray(v)[::-1]) for v in vids]
        re = np.asarray(cached_encode_videos(self.model, rev, cache=self.cache), np.float32)
        sr = te @ re.T
        pos = _gt_array(self.text_pos)
        out = {"t2v_R@1_reversed": retrieval(sr, pos)["R@1"],
               "v2t_R@1_reversed": retrieval(np.ascontiguousarray(sr.T), _gt_array(self.visual_pos))["R@1"]}
        _, _, te_clean = self.texts(Condition())
        rte = np.asarray(cached_encode_texts(self.model, list(rcaps), cache=self.cache), np.float32)
        differs = np.array([a != b for a, b in zip(self._texts0, rcaps)])
        right, wrong = np.einsum("nd,nd->n", ve, te_clean), np.einsum("nd,nd->n", ve, rte)
        r_right, r_wrong = np.einsum("nd,nd->n", re, rte), np.einsum("nd,nd->n", re, te_clean)
        out["order_acc"] = float(np.mean(right[differs] > wrong[differs])) if differs.any() else None
        out["order_acc_reversed"] = float(np.mean(r_right[differs] > r_wrong[differs])) if differs.any() else None
        return out


def _ranked(s: np.ndarray, gt: list[int], k: int) -> Ranked:
    order = np.argsort(-s, kind="stable")[:k]
    gr = int(ranks(s[None, :], [gt])[0]) if gt else None
    return Ranked([int(i) for i in order], [float(s[i]) for i in order], gr)


__all__ = ["RetrievalBench", "Comparison", "Ranked", "Scores", "check_model", "DIRECTIONS", "DIRECTION_LABELS"]
