"""On-disk embedding cache, keyed by model id + content hash + perturbation record.

One ``.npy`` file per (model, item, perturbation) key, written atomically (temp file + ``os.replace``) so a
crash mid-write never leaves a half file that is read back. A gallery is encoded once; a warm pass only
hashes the content and reads the small files back.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from robustlab.data.convert import to_uint8_rgb


def default_cache_dir() -> Path:
    env = os.environ.get("ROBUSTLAB_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "robustlab"


try:  # xxh3 hashes ~10 GB/s, which keeps the warm path far cheaper than the model; blake2b is the fallback
    import xxhash

    def _hasher():
        return xxhash.xxh3_128()
except ImportError:  # pragma: no cover
    def _hasher():
        return hashlib.blake2b(digest_size=16)


def content_hash(x) -> str:
    """A stable hash of an image array (shape + bytes) or a text (UTF-8)."""
    h = _hasher()
    if isinstance(x, str):
        h.update(b"text:")
        h.update(x.encode("utf-8"))
    else:
        a = np.ascontiguousarray(x)
        h.update(f"arr:{a.dtype.str}:{a.shape}:".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def record_key(record: dict | None) -> str:
    if not record:
        return "clean"
    return hashlib.blake2b(json.dumps(record, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()


class EmbeddingCache:
    def __init__(self, root: str | os.PathLike | None = None, enabled: bool = True):
        self.root = Path(root) if root is not None else default_cache_dir() / "embeddings"
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    def _path(self, model_id: str, chash: str, rkey: str) -> Path:
        mid = hashlib.blake2b(model_id.encode(), digest_size=8).hexdigest()
        return self.root / mid / rkey / chash[:2] / f"{chash}.npy"

    def get(self, model_id: str, chash: str, rkey: str = "clean") -> np.ndarray | None:
        if not self.enabled:
            return None
        p = self._path(model_id, chash, rkey)
        try:
            v = np.load(p, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        return v

    def put(self, model_id: str, chash: str, rkey: str, value: np.ndarray) -> None:
        if not self.enabled:
            return
        p = self._path(model_id, chash, rkey)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, np.asarray(value, np.float32), allow_pickle=False)
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def clear(self) -> None:
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def _cached_encode(model, items, encode_fn, hash_fn, cache, records, batch_size, progress):
    cache = cache if cache is not None else EmbeddingCache()
    n = len(items)
    if records is None:
        records = [None] * n
    keys = [(hash_fn(it), record_key(r)) for it, r in zip(items, records)]
    # a whole gallery seen before is one file; otherwise fall back to per-item entries
    gkey = hashlib.blake2b("|".join(h + r for h, r in keys).encode(), digest_size=16).hexdigest()
    whole = cache.get(model.model_id, gkey, "gallery") if n > 1 else None
    if whole is not None and whole.shape[0] == n:
        cache.hits += n
        if progress:
            progress(n, n)
        return whole
    out: list[np.ndarray | None] = [cache.get(model.model_id, h, r) for h, r in keys]
    missing = [i for i, v in enumerate(out) if v is None]
    cache.hits += n - len(missing)
    cache.misses += len(missing)
    if missing:
        done0 = n - len(missing)
        prog = (lambda d, t: progress(done0 + d, n)) if progress else None
        emb = encode_fn([items[i] for i in missing], batch_size=batch_size, progress=prog)
        for j, i in enumerate(missing):
            out[i] = emb[j]
            cache.put(model.model_id, keys[i][0], keys[i][1], emb[j])
    elif progress:
        progress(n, n)
    if n == 0:
        return np.zeros((0, model.embed_dim), np.float32)
    res = np.stack(out).astype(np.float32)
    if n > 1:
        cache.put(model.model_id, gkey, "gallery", res)
    return res


def cached_encode_images(model, images: Sequence, cache: EmbeddingCache | None = None, records=None,
                         batch_size=None, progress=None) -> np.ndarray:
    """Encode images through the cache: only items not already on disk go through the model."""
    imgs = [to_uint8_rgb(im) for im in images]
    return _cached_encode(model, imgs, model.encode_images, content_hash, cache, records, batch_size, progress)


def cached_encode_texts(model, texts: Sequence[str], cache: EmbeddingCache | None = None, records=None,
                        batch_size=None, progress=None) -> np.ndarray:
    return _cached_encode(model, [str(t) for t in texts], model.encode_texts, content_hash, cache, records,
                          batch_size, progress)
