"""Decode once per sweep process: a dataset whose visuals are read once and served from memory, and the frame
caches of video files (each frame decoded once however many cells ask for it)."""
from __future__ import annotations

import collections
import os
import threading
from typing import Optional

import numpy as np

from robustlab.perturb.lazy import ArraySource

# --------------------------------------------------------------------------------------- decode once, build
class DecodedOnce:
    """A dataset whose visuals are read (decoded, rendered) once and then served from memory; everything else is
    the wrapped dataset's."""

    def __init__(self, dataset):
        self._ds = dataset
        self._visuals: Optional[list] = None
        self._frames: Optional[FrameCache] = None
        self.decodes = 0

    def __getattr__(self, name):
        return getattr(self._ds, name)

    def __len__(self) -> int:
        return len(self._ds)

    def visuals(self, indices=None, progress=None):
        if self._visuals is None:
            self._visuals = list(self._ds.visuals(progress=progress))
            self.decodes += 1
        return self._visuals if indices is None else [self._visuals[int(i)] for i in indices]

    def visual(self, i: int):
        return self.visuals()[int(i)]

    def __getstate__(self):  # a Ray worker gets the dataset, not what one process decoded
        return {"_ds": self._ds, "_visuals": None, "decodes": 0, "_frames": None}

    # ---- lazy sources: the frames a model samples, each decoded once per sweep -------------------------
    @property
    def has_frame_source(self) -> bool:
        return callable(getattr(self._ds, "frame_source", None))

    def frame_source(self, i: int):
        """Item i's frames on demand: a :class:`CachedSource` for datasets that give ``frame_source`` (video files:
        each frame decoded once per sweep), else an ArraySource over the visual decoded (rendered) once."""
        if not self.has_frame_source:
            return ArraySource(self.visual(i))
        if self._frames is None:
            self._frames = FrameCache()
        return CachedSource(self._ds.frame_source(int(i)), self._frames, int(i))


class FrameCache:
    """Decoded frames by (item, frame index), least recently used first out past ``max_bytes``
    (``ROBUSTLAB_FRAME_CACHE_MB``, default 2048): a sweep decodes each frame it needs once."""

    def __init__(self, max_bytes: Optional[int] = None):
        mb = float(os.environ.get("ROBUSTLAB_FRAME_CACHE_MB", "2048") or 2048)
        self.max_bytes = int(max_bytes if max_bytes is not None else mb * 2**20)
        self._d: "collections.OrderedDict" = collections.OrderedDict()
        self.bytes = self.peak = 0
        self.decoded = self.evicted = 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            a = self._d.get(key)
            if a is not None:
                self._d.move_to_end(key)
            return a

    def put(self, key, frame: np.ndarray) -> None:
        with self._lock:
            if key in self._d:
                return
            self._d[key] = frame
            self.bytes += frame.nbytes
            while self.bytes > self.max_bytes and len(self._d) > 1:
                _, old = self._d.popitem(last=False)
                self.bytes -= old.nbytes
                self.evicted += 1
            self.peak = max(self.peak, self.bytes)


class CachedSource:
    """A frame source (``n_frames``, ``read(indices)``) that decodes only the frames not yet in the sweep's
    :class:`FrameCache`. Reads of more than ``KEEP_MAX`` distinct frames (whole clips) bypass the cache."""

    KEEP_MAX = 64

    def __init__(self, source, cache: FrameCache, item: int):
        self.source, self.cache, self.item = source, cache, item
        self.n_frames = int(source.n_frames)

    def __len__(self) -> int:
        return self.n_frames

    @property
    def identity(self):
        """The wrapped source's identity (None if it has none): see :func:`robustlab.perturb.share.source_identity`."""
        return getattr(self.source, "identity", None)

    def read(self, indices) -> np.ndarray:
        idx = [int(t) for t in np.asarray(indices, dtype=np.int64).reshape(-1)]
        have = {t: self.cache.get((self.item, t)) for t in set(idx)}
        need = sorted(t for t, a in have.items() if a is None)
        if need:
            frames = self.source.read(need)
            self.cache.decoded += len(need)
            # a whole-clip read (codecs, event insertion) would push every other clip's sampled frames out of the
            # cache and be evicted before the next cell asks for it again: it is decoded, not kept
            keep = len(set(idx)) <= self.KEEP_MAX
            for t, f in zip(need, frames):
                f = np.ascontiguousarray(f)
                have[t] = f
                if keep:
                    self.cache.put((self.item, t), f)
        return np.stack([have[t] for t in idx])
