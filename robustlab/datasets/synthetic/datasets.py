"""The built-in synthetic world as datasets (the default everywhere, offline):

    build("builtin", split="test", n=1000)          scenes at 128 px: a caption, a referring expression with its
                                                    box, a VQA question, an ITM hard negative each
    build("builtin-videos", split="test", n=1000)   event videos at 64 px: a caption (and its time reversal), a
                                                    video question each; CLAVI pairs from their two events

Splits are world seeds: ``test`` = the held-out seed 1000 (what ``robustlab eval`` and the README's tables use),
``demo`` = seed 7 (the dashboard's galleries), ``train`` = seed 1 (what the built-in models were trained on);
``seed=`` overrides. Item i of a split is always the same scene, whatever ``n``; its question, expression and
negative come from fixed per-item random streams (``[seed, i, 55]`` question, ``56`` expression, ``58`` ITM
negative), so the numbers of a split never depend on how it is read. Renders are cached on disk
(``~/.cache/robustlab/gallery``); a cache file that cannot be read back whole (a flipped byte, a truncated file, other
arrays) is rendered again and replaced, with one log line. ``n`` is at most :data:`BUILTIN_MAX_N`, checked before
anything is generated.
"""
from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

import numpy as np

from robustlab.io.atomic import atomic_write
from robustlab.datasets.base import QA, Dataset, DatasetError, Item, Ref
from robustlab.datasets.registry import register_dataset
from robustlab.datasets.synthetic import clavi as wc
from robustlab.datasets.synthetic import qa, world

SPLIT_SEEDS = {"test": world.HELDOUT_SEED, "demo": world.DEMO_SEED, "train": world.TRAIN_SEED}
DEFAULT_N = {"test": 1000, "demo": 300, "train": 1000}
WORLD_VERSION = 2  # bump when the scene generator's output changes, so stale renders are not reused
VIDEO_WORLD_VERSION = 1  # the same for the event-video generator
BUILTIN_VIDEO_FPS = 8.0  # the frame rate the built-in event videos are played and exported at
# the most items a built-in dataset generates (docs/cli.md): 20,000 scenes are 1 GB of renders at 128 px, 20,000 videos
# about 6 GB at 64 px, and a retrieval's 20,000 x 20,000 score matrix 1.6 GB; a larger n is refused before any work
BUILTIN_MAX_N = 20_000

log = logging.getLogger("robustlab.cache")  # the embedding cache's logger: one line per damaged entry


def _cache_root(cache_dir) -> Path:
    from robustlab.engine.cache import default_cache_dir  # torch: building the datasets stays light

    return Path(cache_dir) if cache_dir else default_cache_dir() / "gallery"


def _atomic_savez(path: Path, **arrays) -> None:
    atomic_write(path, lambda f: np.savez(f, **arrays), suffix=".tmp.npz")


def _load_npz(path: Path, check) -> dict | None:
    """The arrays of a render cache file, or None (render again) when there is none or it cannot be trusted: one
    that does not read back whole (a flipped byte fails the zip's CRC-32, a truncated file its directory) or holds
    other arrays than ``check`` expects. A damaged file is one log line; the caller's fresh render replaces it."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:  # a bare .npy array has no `with`: a TypeError, caught
            arrays = {k: z[k] for k in z.files}
        ok = check(arrays)
    except Exception as e:  # noqa: BLE001 - BadZipFile, zlib.error, NotImplementedError, a bad header...: a cache
        # read never stops the dataset; whatever the damage, the file is rendered again
        log.warning("robustlab cache: gallery file %s is unreadable (%s); rendering it again", path.name,
                    type(e).__name__)
        return None
    if not ok:
        log.warning("robustlab cache: gallery file %s holds other arrays than its name says; rendering it again",
                    path.name)
        return None
    return arrays


def _uint8(a, shape: tuple) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == np.uint8 and a.shape == shape


class _Synthetic(Dataset):
    def __init__(self, split: str = "test", n: int | None = None, seed: int | None = None, size: int | None = None,
                 cache: bool = True, cache_dir=None, progress=None):
        if split not in SPLIT_SEEDS:
            raise DatasetError(f"{self.name} has no split {split!r}; splits: {', '.join(SPLIT_SEEDS)}")
        n = DEFAULT_N[split] if n is None else int(n)
        if n < 1:
            raise DatasetError(f"{self.name}: n must be at least 1, got {n}")
        if n > BUILTIN_MAX_N:  # before anything is generated: n=10**12 used to grow memory until killed
            raise DatasetError(f"{self.name}: n must be at most {BUILTIN_MAX_N:,} (the built-in world's maximum), "
                               f"got {n}")
        seed = SPLIT_SEEDS[split] if seed is None else int(seed)
        size = self.default_size if size is None else int(size)
        super().__init__(split=split, n=n, seed=seed, size=size)
        self.n, self.seed, self.size = n, seed, size
        self._cache, self._cache_dir, self._progress = cache, cache_dir, progress
        self._visuals = None
        self.item = lru_cache(maxsize=None)(self.item)  # items are pure functions of (seed, i)

    def __len__(self) -> int:
        return self.n

    @property
    def names(self) -> list[str]:
        return [self.item(i).id for i in range(self.n)]

    @property
    def captions(self) -> list[str]:
        return [self.item(i).texts[0] for i in range(self.n)]

    @property
    def meta(self) -> list[dict]:
        return [self.item(i).meta for i in range(self.n)]

    source = "builtin"

    def visual(self, i: int) -> np.ndarray:
        return self.all_visuals()[i]

    def visuals(self, indices=None, progress=None):
        vs = self.all_visuals(progress)
        return list(vs) if indices is None else [vs[int(i)] for i in indices]

    def all_visuals(self, progress=None) -> list[np.ndarray]:
        if self._visuals is None:
            self._visuals = self._render(progress or self._progress)
        return self._visuals


@register_dataset("builtin", kind="image", tasks=("retrieval", "grounding", "vqa", "itm"),
                  splits=tuple(SPLIT_SEEDS), default_split="test", needs_root=False,
                  description="the built-in synthetic scenes (128 px): caption, referring expression + box, "
                              "question, ITM negative",
                  needs="nothing (generated offline; n=, seed=, size= to choose)")
class SyntheticScenes(_Synthetic):
    positives = "item"
    default_size = 128

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.scenes = world.make_scenes(self.n, self.seed)  # metadata only: cheap

    def scene(self, i: int):
        return self.scenes[i]

    def item(self, i: int) -> Item:
        sc = self.scenes[i]
        ref = world.referring_expression(sc, int(np.random.default_rng([self.seed, i, 56]).integers(len(sc.objects))),
                                         self.size)
        q = qa.image_question(sc, np.random.default_rng([self.seed, i, 55]))
        neg = qa.mismatched_caption(sc, np.random.default_rng([self.seed, i, 58]))
        return Item(id=f"scene-{self.seed}-{sc.index:05d}", texts=[sc.caption],
                    refs=[Ref(ref["expression"], tuple(ref["box"]), {"attributes": list(ref["attributes"])})],
                    questions=[QA(q.question, q.answer, q.qtype)],
                    meta={"seed": self.seed, "index": sc.index, "objects": len(sc.objects),
                          "background": sc.background, "negative_caption": neg},
                    load=lambda i=i: self.visual(i))

    def _render(self, progress):
        path = _cache_root(self._cache_dir) / f"world{WORLD_VERSION}_seed{self.seed}_n{self.n}_{self.size}px.npz"
        z = _load_npz(path, lambda a: _uint8(a.get("images"), (self.n, self.size, self.size, 3))) \
            if self._cache else None
        if z is not None:
            return list(z["images"])
        imgs = world.render_scenes(self.scenes, self.size, progress=progress)
        if self._cache:
            try:
                _atomic_savez(path, images=imgs)
            except OSError:
                pass  # a read-only cache is not fatal
        return list(imgs)

    @property
    def images(self) -> list[np.ndarray]:
        return self.all_visuals()


@register_dataset("builtin-refs", kind="image", tasks=("grounding", "peeling", "vqa"),
                  splits=tuple(SPLIT_SEEDS), default_split="test", needs_root=False,
                  description="the built-in scenes with human-like referring expressions: the shortest unique "
                              "description plus redundant attributes (PEELING's input)",
                  needs="nothing (generated offline; n=, seed=, size= to choose)")
class SyntheticRefs(SyntheticScenes):
    """The ``builtin`` scenes (same seeds, same renders) whose referring expression is over-specified as people's
    are (:func:`robustlab.datasets.synthetic.world.overspecified_expression`): "the small striped red circle at the
    top left" where "the circle" would do. ``Ref.meta`` keeps the attributes said and the shortest unique set."""

    def item(self, i: int) -> Item:
        base = SyntheticScenes.item(self, i)
        sc = self.scenes[i]
        target = int(np.random.default_rng([self.seed, i, 56]).integers(len(sc.objects)))
        ref = world.overspecified_expression(sc, target, np.random.default_rng([self.seed, i, 59]), self.size)
        base.refs = [Ref(ref["expression"], tuple(ref["box"]), {"attributes": list(ref["attributes"]),
                                                                "minimal": list(ref["minimal"]), "target": target})]
        base.id = f"refs-{self.seed}-{sc.index:05d}"
        return base


@register_dataset("builtin-videos", kind="video", tasks=("retrieval", "vqa", "itm", "clavi"),
                  splits=tuple(SPLIT_SEEDS), default_split="test", needs_root=False,
                  description="the built-in synthetic event videos (64 px): caption and its time reversal, "
                              "question, CLAVI pairs",
                  needs="nothing (generated offline; n=, seed=, size= to choose)")
class SyntheticVideos(_Synthetic):
    positives = "caption"  # different videos can share a caption: all of them are positives
    default_size = 64
    fps = BUILTIN_VIDEO_FPS

    def __init__(self, split: str = "test", n: int | None = None, *a, **kw):
        if n is None and split == "demo":
            n = 200
        super().__init__(split, n, *a, **kw)
        self.scenes = [world.sample_video(self.seed, i) for i in range(self.n)]  # metadata only: cheap

    def scene(self, i: int):
        return self.scenes[i]

    def item(self, i: int) -> Item:
        v = self.scenes[i]
        q = qa.video_question(v, np.random.default_rng([self.seed, i, 55]))
        return Item(id=f"video-{self.seed}-{v.index:05d}", texts=[v.caption], questions=[QA(q.question, q.answer,
                                                                                              q.qtype)],
                    meta={"seed": self.seed, "index": v.index, "frames": v.n_frames, "objects": len(v.objects),
                          "reversed_caption": v.reversed_caption, "negative_caption": v.reversed_caption},
                    load=lambda i=i: self.visual(i))

    def clavi_pair(self, i: int):
        """CLAVI's complement pair for video i: (QA on the video, the same question's QA on its time reversal),
        or None when the video has no before/after question (both events hit one object)."""
        return qa.clavi_pair(self.scenes[i], np.random.default_rng([self.seed, i, 57]))

    def clavi(self, i: int, seed: int = 0, method: str = "swap"):
        """CLAVI's pair for video i: (:class:`robustlab.datasets.clavi.Pair`, its 19 questions), or None when
        its two events concern one object (:mod:`robustlab.datasets.synthetic.clavi`)."""
        v = self.scenes[i]
        if not wc.eligible(v):
            return None
        pair, qs, *_ = wc.world_pair(v, self.visual(i), seed, method, self.size)
        return pair, qs

    @property
    def reversed_captions(self) -> list[str]:
        return [v.reversed_caption for v in self.scenes]

    main_object_note = world.MAIN_OBJECT_NOTE

    def main_object_boxes(self, i: int) -> list:
        """Video i's main-object box on every frame (``[x_min, y_min, x_max, y_max]`` in pixels, None where none
        is visible): what mlvp_occlusion occludes (:func:`robustlab.datasets.synthetic.world.main_object_boxes`)."""
        return world.main_object_boxes(self.scenes[i], self.size)

    def _render(self, progress):
        lengths = np.array([v.n_frames for v in self.scenes], np.int64)
        path = _cache_root(self._cache_dir) / \
            f"videos{VIDEO_WORLD_VERSION}_seed{self.seed}_n{self.n}_{self.size}px.npz"
        z = _load_npz(path, lambda a: np.array_equal(a.get("lengths"), lengths) and _uint8(a.get("frames"), (
            int(lengths.sum()), self.size, self.size, 3))) if self._cache else None
        if z is not None:
            frames = z["frames"]
        else:
            parts = []
            for i, v in enumerate(self.scenes):
                parts.append(world.render_video(v, self.size))
                if progress and (i % 20 == 0 or i == self.n - 1):
                    progress(i + 1, self.n)
            frames = np.concatenate(parts)
            if self._cache:
                try:
                    _atomic_savez(path, frames=frames, lengths=lengths)
                except OSError:
                    pass
        return list(np.split(frames, np.cumsum(lengths)[:-1]))

    @property
    def videos(self) -> list[np.ndarray]:
        return self.all_visuals()


def builtin_gallery(n: int = 300, seed: int = world.DEMO_SEED, size: int = 128, cache_dir=None,
                    progress=None) -> SyntheticScenes:
    """The dashboard's demo gallery: ``n`` scenes of world ``seed`` (rendered once, cached on disk)."""
    return SyntheticScenes("demo", n=n, seed=seed, size=size, cache_dir=cache_dir, progress=progress)


def builtin_video_gallery(n: int = 200, seed: int = world.DEMO_SEED, size: int = 64, cache_dir=None,
                          progress=None) -> SyntheticVideos:
    """The dashboard's demo video gallery: ``n`` event videos of world ``seed`` (rendered once, cached)."""
    return SyntheticVideos("demo", n=n, seed=seed, size=size, cache_dir=cache_dir, progress=progress)


def event_clip(seed: int, index: int, px: int) -> np.ndarray:
    """A clip of mlvp_event_insertion's corpus: the synthetic world's event video ``(seed, index)`` at ``px`` pixels
    (named in :data:`robustlab.ABOVE`: the perturbation sits below the datasets and so does not import them)."""
    return world.render_video(world.sample_video(seed, index), size=px)


def event_donor(ref: dict) -> np.ndarray | None:
    """The built-in event video a record of mlvp_event_insertion names as its donor (``id`` "video-SEED-INDEX",
    ``shape`` T×H×W×3), rendered again; None when the id is not one of the built-in videos' (declared in
    :data:`robustlab.ABOVE`: regeneration finds the donor without building the dataset)."""
    parts = str(ref.get("id", "")).split("-")
    shape = ref.get("shape") or []
    if len(parts) != 3 or parts[0] != "video" or not all(p.isdigit() for p in parts[1:]) or len(shape) != 4:
        return None
    size = int(shape[1])
    if not 1 <= size <= 1024:
        return None
    return world.render_video(world.sample_video(int(parts[1]), int(parts[2])), size=size)


__all__ = ["SyntheticScenes", "SyntheticRefs", "SyntheticVideos", "builtin_gallery", "builtin_video_gallery",
           "SPLIT_SEEDS", "BUILTIN_VIDEO_FPS", "BUILTIN_MAX_N", "event_clip", "event_donor"]
