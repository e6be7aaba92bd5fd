"""Clean-vs-perturbed text↔video retrieval over one video gallery (the engine behind the Retrieval page's videos).

``builtin_video_gallery`` is the demo gallery: ``n`` event videos of the synthetic world (``world.DEMO_SEED``) at
64 px, rendered at first use and cached on disk. ``VideoRetrievalBench`` holds a model and a video gallery and
memoises the perturbed videos/captions and their embeddings per (perturbation, severity, seed); embeddings also
go through the on-disk cache.

Seeds: gallery item i is perturbed with ``seed + i``; a typed query with ``seed``. Ground truth: a caption's
positives are every video with exactly that caption (different videos can share one), and a video's positives
every identical caption.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robustlab.datasets.synthetic import world
from robustlab.engine.cache import EmbeddingCache, cached_encode_texts, cached_encode_videos, default_cache_dir
from robustlab.tasks.evaluate_video import caption_groups, check_video_model
from robustlab.metrics import ranks, retrieval
from robustlab.tasks.retrieval import Condition, Ranked

VIDEO_WORLD_VERSION = 1  # bump when the video generator's output changes
BUILTIN_VIDEO_FPS = 8.0  # the frame rate the built-in event videos are played and exported at


@dataclass
class VideoGallery:
    videos: list[np.ndarray]  # T×H×W×3 uint8 each (T varies)
    captions: list[str]
    reversed_captions: list[str]
    names: list[str]
    source: str = "builtin"
    meta: list[dict] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.videos)


def builtin_video_gallery(n: int = 200, seed: int = world.DEMO_SEED, size: int = 64, cache_dir: Path | None = None,
                          progress=None) -> VideoGallery:
    """The demo video gallery, rendered once and cached (``~/.cache/robustlab/gallery``)."""
    from robustlab.datasets.synthetic.datasets import _atomic_savez

    root = Path(cache_dir) if cache_dir else default_cache_dir() / "gallery"
    path = root / f"videos{VIDEO_WORLD_VERSION}_seed{seed}_n{n}_{size}px.npz"
    scenes = [world.sample_video(seed, i) for i in range(n)]  # cheap: metadata only
    lengths = np.array([v.n_frames for v in scenes], np.int64)
    frames = None
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as z:
                frames, stored = z["frames"], z["lengths"]
            if not np.array_equal(stored, lengths) or frames.shape != (int(lengths.sum()), size, size, 3):
                frames = None
        except (OSError, ValueError, KeyError):
            frames = None
    if frames is None:
        parts = []
        for i, v in enumerate(scenes):
            parts.append(world.render_video(v, size))
            if progress and (i % 20 == 0 or i == n - 1):
                progress(i + 1, n)
        frames = np.concatenate(parts) if parts else np.zeros((0, size, size, 3), np.uint8)
        try:
            _atomic_savez(path, frames=frames, lengths=lengths)
        except OSError:
            pass  # a read-only cache is not fatal
    splits = np.cumsum(lengths)[:-1]
    videos = np.split(frames, splits) if n else []
    return VideoGallery(videos=list(videos), captions=[v.caption for v in scenes],
                        reversed_captions=[v.reversed_caption for v in scenes],
                        names=[f"video-{seed}-{v.index:05d}" for v in scenes], source="builtin",
                        meta=[{"seed": seed, "index": v.index, "frames": v.n_frames, "objects": len(v.objects)}
                              for v in scenes])


@dataclass
class VideoComparison:
    direction: str  # "t2v" (a caption queries the videos) or "v2t" (a video queries the captions)
    query: str | int  # the caption, or the query video's index
    perturbed_query: str | int
    query_record: dict | None
    gt: list[int]  # the query's positives in the searched list
    clean: Ranked
    perturbed: Ranked
    metrics: dict  # condition label -> {"t2v": {...}, "v2t": {...}}
    video_condition: Condition
    text_condition: Condition
    k: int
    notes: list[str] = field(default_factory=list)

    @property
    def rank_change(self) -> int | None:
        if self.clean.gt_rank is None or self.perturbed.gt_rank is None:
            return None
        return self.perturbed.gt_rank - self.clean.gt_rank


class VideoRetrievalBench:
    def __init__(self, model, gallery: VideoGallery, cache: EmbeddingCache | None = None):
        check_video_model(model)
        if len(gallery) == 0:
            raise ValueError("the video gallery is empty")
        self.model = model
        self.gallery = gallery
        self.groups = caption_groups(gallery.captions)
        self.cache = cache if cache is not None else EmbeddingCache()
        self._videos: dict = {}
        self._texts: dict = {}

    def videos(self, cond: Condition, progress=None):
        """(videos, records, embeddings) of the gallery under a video condition (memoised)."""
        key = cond.key()
        if key not in self._videos:
            vids, recs = self.gallery.videos, None
            if not cond.clean:
                from robustlab.tasks.evaluate_video import perturb_videos

                n = len(vids)
                prog = (lambda d, t: progress(d, 2 * n)) if progress else None
                vids, recs = perturb_videos(vids, cond.name, cond.severity, cond.seed, progress=prog)
                eprog = (lambda d, t: progress(n + d, 2 * n)) if progress else None
            else:
                eprog = progress
            emb = cached_encode_videos(self.model, vids, cache=self.cache, records=recs, progress=eprog)
            self._videos[key] = (vids, recs, emb)
        return self._videos[key]

    def texts(self, cond: Condition):
        """(captions, records, embeddings) of the gallery captions under a text condition (memoised)."""
        key = cond.key()
        if key not in self._texts:
            caps, recs = list(self.gallery.captions), None
            if not cond.clean:
                from robustlab.tasks.evaluate_video import perturb_texts

                caps, recs = perturb_texts(caps, cond.name, cond.severity, cond.seed)
            emb = cached_encode_texts(self.model, caps, cache=self.cache, records=recs)
            self._texts[key] = (caps, recs, emb)
        return self._texts[key]

    def metrics(self, video_cond: Condition, text_cond: Condition) -> dict:
        _, _, ve = self.videos(video_cond)
        _, _, te = self.texts(text_cond)
        s = te @ ve.T
        return {"t2v": retrieval(s, self.groups), "v2t": retrieval(s.T, self.groups)}

    def compare(self, video_cond: Condition, text_cond: Condition, direction: str = "t2v",
                query_index: int | None = None, query_text: str | None = None, k: int = 5,
                progress=None) -> VideoComparison:
        """Top-k for one query, clean vs perturbed, plus the gallery-level metrics of each condition.

        t2v: a gallery caption (``query_index``) or a typed text queries the videos; v2t: gallery video
        ``query_index`` queries the captions (the perturbed run perturbs both the video and the captions).
        """
        n = len(self.gallery)
        k = max(1, min(int(k), n))
        notes: list[str] = []
        if direction not in ("t2v", "v2t"):
            raise ValueError(f"direction must be 't2v' or 'v2t', got {direction!r}")
        if query_index is not None and not 0 <= int(query_index) < n:
            raise ValueError(f"query index {query_index} outside the gallery (0..{n - 1})")
        _, _, ve_c = self.videos(Condition(), progress=progress)
        _, _, ve_p = self.videos(video_cond, progress=progress)
        caps_c, _, te_c = self.texts(Condition())
        caps_p, recs_p, te_p = self.texts(text_cond)

        def rank_list(s, gt) -> Ranked:
            order = np.argsort(-s, kind="stable")[:k]
            gr = int(ranks(s[None, :], [gt])[0]) if gt else None
            return Ranked([int(i) for i in order], [float(s[i]) for i in order], gr)

        prec = None
        if direction == "t2v":
            if query_index is not None:
                query, pq = caps_c[query_index], caps_p[query_index]
                prec = recs_p[query_index] if recs_p else None
                q_c, q_p = te_c[query_index], te_p[query_index]
                gt = list(self.groups[query_index])
            else:
                from robustlab.io.files import clean_caption

                query = clean_caption(query_text or "", "query")
                pq = query
                if not text_cond.clean:
                    from robustlab.perturb import perturb

                    r = perturb(query, text_cond.name, text_cond.severity, seed=text_cond.seed)
                    pq, prec = r.output, r.record
                q_c = cached_encode_texts(self.model, [query], cache=self.cache)[0]
                q_p = cached_encode_texts(self.model, [pq], cache=self.cache,
                                          records=[prec] if prec else None)[0]
                gt = [i for i, c in enumerate(self.gallery.captions) if c == query]
                if not pq.strip():
                    notes.append("the perturbation left the query empty")
            clean, pert = rank_list(ve_c @ q_c, gt), rank_list(ve_p @ q_p, gt)
        else:
            if query_index is None:
                raise ValueError("video→text needs a gallery video as the query")
            query = pq = int(query_index)
            _, vrecs, _ = self.videos(video_cond)
            prec = vrecs[query_index] if vrecs else None
            gt = list(self.groups[query_index])
            clean, pert = rank_list(te_c @ ve_c[query_index], gt), rank_list(te_p @ ve_p[query_index], gt)
        clean_cond = Condition()
        metrics = {
            "clean": self.metrics(clean_cond, clean_cond),
            "video perturbed": self.metrics(video_cond, clean_cond),
            "text perturbed": self.metrics(clean_cond, text_cond),
            "both perturbed": self.metrics(video_cond, text_cond),
        }
        return VideoComparison(direction=direction, query=query, perturbed_query=pq, query_record=prec, gt=gt,
                               clean=clean, perturbed=pert, metrics=metrics, video_condition=video_cond,
                               text_condition=text_cond, k=k, notes=notes)


def display_mp4(frames: np.ndarray, scale: int = 3, fps: float = BUILTIN_VIDEO_FPS) -> bytes:
    """H.264 mp4 bytes of a (small) video for the browser, upscaled ``scale``× with nearest neighbour."""
    from robustlab.io.media import write_mp4

    v = np.asarray(frames)
    if scale > 1:
        v = v.repeat(scale, axis=1).repeat(scale, axis=2)
    return write_mp4(v, fps=fps)


__all__ = ["VideoGallery", "builtin_video_gallery", "VideoRetrievalBench", "VideoComparison", "display_mp4"]
