"""On-disk embedding cache, keyed by the model's weights fingerprint + content hash + perturbation record.

The model part of the key is ``model.fingerprint`` (:class:`robustlab.models.base.Fingerprinted`: a digest of the
weights and of what else decides the outputs), not ``model.model_id``: the id is the same for every
``builtin:tiny-clip`` checkpoint (before and after ``robustlab train tiny-clip``) and for every random-init model
of one architecture, so keying by it could serve stale embeddings. A model without a ``fingerprint`` (a bare test
double) falls back to its id (:func:`model_key`).

One entry per (model, item, perturbation) key for small calls, and one per whole gallery (keyed by all its items'
keys), written atomically (temp file + ``os.replace``) so a crash mid-write never leaves a half file that is read
back. A gallery is encoded once; a warm pass only hashes the content and reads one file back.

An entry is an uncompressed ``.npz`` (no pickle) holding the embedding (``emb``) and its provenance (``meta``, JSON
as bytes): the model key (weights fingerprint), a digest of the model's preprocessing configuration, the content
hash, the record key, the shape and the dtype (:func:`provenance`). A read checks every one of them against what
is asked for, and the array itself (float32, finite, the expected shape): an entry that fails -- another model's
file copied into place, another preprocessing, a file from an older version, a damaged disk -- is a miss, logged
once, computed again and replaced. Entries of the older ``.npy`` layout are never read; they age out through the
size bound.

The cache is bounded (``max_bytes``, default ``ROBUSTLAB_CACHE_MAX_MB`` = 2048): when it grows past the bound, the
least recently used entries go first (a read hit refreshes the entry's mtime). The size is tracked without walking
the folder on every write, and the eviction pass also removes ``.tmp`` files left by writers that were killed.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from robustlab.io.atomic import atomic_write
from robustlab.io.convert import to_uint8_rgb

log = logging.getLogger("robustlab.cache")


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
        h.update(a.reshape(-1).view(np.uint8).data if a.size else b"")  # the raw bytes, without a copy
    return h.hexdigest()


def preprocess_key(model) -> str:
    """A digest of what besides the weights decides a model's outputs (``fingerprint_config()``: input size,
    normalisation, frame count, aggregator…), stored in every entry and checked on read. '' for a model without
    one (a test double)."""
    cfg = getattr(model, "fingerprint_config", None)
    if not callable(cfg):
        return ""
    try:
        body = json.dumps(cfg(), sort_keys=True, default=str)
    except Exception:  # noqa: BLE001 -- a backend's config that can't be serialised: no preprocessing check
        return ""
    return hashlib.blake2b(body.encode(), digest_size=8).hexdigest()


def record_key(record: dict | None) -> str:
    if not record:
        return "clean"
    return hashlib.blake2b(json.dumps(record, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()


ENTRY_SUFFIX = ".npz"  # an entry: the embedding and its provenance (see the module docstring)
LEGACY_SUFFIX = ".npy"  # entries of the layout before provenance: never read, counted for the bound, evicted
ENTRY_FORMAT = 2

DEFAULT_MAX_MB = 2048
# the running size estimate is re-read from disk every this many puts (other processes write there too)
RESCAN_EVERY = 1000
# an eviction pass brings the cache down to this fraction of its bound, so passes stay rare
LOW_WATER = 0.8
# a ``.tmp`` older than this is the leftover of a killed writer (a live write takes milliseconds)
STALE_TMP_S = 600.0


def default_max_bytes() -> int:
    """``ROBUSTLAB_CACHE_MAX_MB`` (default 2048) in bytes; 0 or less means unbounded."""
    try:
        mb = float(os.environ.get("ROBUSTLAB_CACHE_MAX_MB", DEFAULT_MAX_MB))
    except ValueError:
        mb = DEFAULT_MAX_MB
    return int(mb * 1024 * 1024) if mb > 0 else 0


class _RootState:
    """What one process knows about one cache folder: an estimate of its size, and puts since the last scan."""
    def __init__(self):
        self.lock = threading.Lock()
        self.bytes: int | None = None  # None: not scanned yet in this process
        self.puts = 0
        self.last_touch = 0


_STATES: dict[str, _RootState] = {}
_STATES_LOCK = threading.Lock()


def _state_for(root: Path) -> _RootState:
    key = os.path.abspath(root)
    with _STATES_LOCK:
        st = _STATES.get(key)
        if st is None:
            st = _STATES[key] = _RootState()
        return st


class EmbeddingCache:
    """Embeddings on disk, bounded to ``max_bytes`` with least-recently-used eviction.

    Every read hit sets the entry's mtime to now (explicitly, in nanoseconds: atime is often off), so the
    mtime order is the use order. The size is tracked cheaply: one scan of the folder per process (on the first
    put), then each put adds its size; a pass evicts (oldest first, down to ``LOW_WATER`` of the bound) only
    when the estimate goes over the bound, and the estimate is re-read from disk every ``RESCAN_EVERY`` puts
    since other processes share the folder. The same pass removes ``.tmp`` leftovers of killed writers.
    """
    def __init__(self, root: str | os.PathLike | None = None, enabled: bool = True, max_bytes: int | None = None):
        self.root = Path(root) if root is not None else default_cache_dir() / "embeddings"
        self.enabled = enabled
        self.max_bytes = default_max_bytes() if max_bytes is None else max(0, int(max_bytes))
        self.hits = 0
        self.misses = 0
        self.evicted = 0
        self.rejected = 0  # entries found but not what was asked for (wrong shape or dtype, non-finite): rebuilt
        self._state = _state_for(self.root)

    def _path(self, model_key: str, chash: str, rkey: str) -> Path:
        # the salt keeps the folders of the old layout (keyed by bare model ids) out of reach: never read again,
        # they age out through the LRU bound
        mid = hashlib.blake2b(f"fp:{model_key}".encode(), digest_size=8).hexdigest()
        return self.root / mid / rkey / chash[:2] / f"{chash}{ENTRY_SUFFIX}"

    def _touch(self, p: Path) -> None:
        st = self._state
        with st.lock:  # strictly increasing within a process, so two uses never tie
            t = st.last_touch = max(time.time_ns(), st.last_touch + 1)
        try:
            os.utime(p, ns=(t, t))
        except OSError:
            pass

    def get(self, model_key: str, chash: str, rkey: str = "clean", shape: tuple | None = None,
            preprocess: str | None = None) -> np.ndarray | None:
        """The entry of (model key, content hash, record key); ``model_key`` is :func:`model_key` of the model.

        An entry is checked on read: its stored provenance (model key, content hash, record key and, when given,
        ``preprocess`` = :func:`preprocess_key` of the model; the stored shape and dtype against the array's), and
        the array (float32, finite, of ``shape`` when given; a ``None`` in it matches any length). One that fails
        -- a file of another model or model width, another preprocessing, another version, a damaged disk -- is a
        miss (one log line), so the caller computes it again and its put replaces the file."""
        if not self.enabled:
            return None
        p = self._path(model_key, chash, rkey)
        try:
            z = np.load(p, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):  # a bare array where an entry with provenance belongs
                return self._reject(p, "without provenance (a bare array)")
            with z:
                v, meta = z["emb"], z["meta"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
            return self._reject(p, f"unreadable ({type(e).__name__})")
        why = _provenance_mismatch(meta, v, model_key, chash, rkey, preprocess) or _mismatch(v, shape)
        if why:
            return self._reject(p, why)
        if self.max_bytes:
            self._touch(p)
        return v

    def _unwritable(self, e: OSError) -> None:
        """A cache folder that cannot be written (read-only, full): carry on without the cache, one warning."""
        self.enabled = False
        log.warning("robustlab cache: cannot write to %s (%s: %s); continuing without the embedding cache",
                    self.root, type(e).__name__, e.strerror or e)
        return None

    def _reject(self, p: Path, why: str) -> None:
        self.rejected += 1
        log.warning("robustlab cache: entry %s is %s; recomputing it", p.name, why)
        return None

    def put(self, model_key: str, chash: str, rkey: str, value: np.ndarray, preprocess: str = "") -> None:
        """Store ``value`` with its provenance (:func:`provenance`); atomic, and a failed write (a full or
        read-only folder) turns the cache off with one warning instead of raising."""
        if not self.enabled:
            return
        value = np.ascontiguousarray(value, np.float32)
        meta = provenance(model_key, chash, rkey, value, preprocess)
        if self.max_bytes and value.nbytes + 128 > self.max_bytes:
            return  # an entry bigger than the whole cache is not kept
        p = self._path(model_key, chash, rkey)
        size = 0

        def write(f):
            nonlocal size
            np.savez(f, emb=value, meta=np.frombuffer(meta, np.uint8))
            size = f.tell()
        try:
            atomic_write(p, write)
        except OSError as e:  # a full disk, a folder made read-only meanwhile: no half-written entry
            return self._unwritable(e)
        if self.max_bytes:
            self._touch(p)
            self._account(size)

    # ---- the bound ----------------------------------------------------------------------------------
    def _account(self, size: int) -> None:
        st = self._state
        with st.lock:
            st.puts += 1
            need_scan = st.bytes is None or st.puts >= RESCAN_EVERY
            if not need_scan:
                st.bytes += size
                if st.bytes <= self.max_bytes:
                    return
        self.evict()

    def _scan(self) -> tuple[list[tuple[int, int, str]], list[str]]:
        """(mtime_ns, size, path) of every entry, and the stale ``.tmp`` files, under the root."""
        entries, stale = [], []
        cutoff = time.time() - STALE_TMP_S
        stack = [str(self.root)]
        while stack:
            d = stack.pop()
            try:
                it = os.scandir(d)
            except OSError:
                continue
            with it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif e.name.endswith((ENTRY_SUFFIX, LEGACY_SUFFIX)):
                            s = e.stat(follow_symlinks=False)
                            entries.append((s.st_mtime_ns, s.st_size, e.path))
                        elif e.name.endswith(".tmp"):
                            if e.stat(follow_symlinks=False).st_mtime < cutoff:
                                stale.append(e.path)
                    except OSError:  # removed by another process meanwhile
                        continue
        return entries, stale

    def evict(self, target_bytes: int | None = None) -> int:
        """One pass: drop stale ``.tmp`` leftovers, then least-recently-used entries while over the bound.

        Brings the cache to ``target_bytes`` (default ``LOW_WATER`` × the bound; nothing is evicted when
        unbounded). Returns the number of entries removed. Safe to run while other processes use the folder.
        """
        entries, stale = self._scan()
        for t in stale:
            try:
                os.unlink(t)
            except OSError:
                pass
        total = sum(s for _, s, _ in entries)
        removed = 0
        if self.max_bytes or target_bytes is not None:
            target = int(self.max_bytes * LOW_WATER) if target_bytes is None else int(target_bytes)
            if total > (self.max_bytes if target_bytes is None else target):
                entries.sort()
                dirs = set()
                for _, size, path in entries:
                    if total <= target:
                        break
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass
                    except OSError:
                        continue
                    total -= size
                    removed += 1
                    dirs.add(os.path.dirname(path))
                for d in dirs:  # empty shard folders go too (rmdir fails harmlessly on non-empty ones)
                    try:
                        os.rmdir(d)
                    except OSError:
                        pass
        with self._state.lock:
            self._state.bytes = total
            self._state.puts = 0
        self.evicted += removed
        return removed

    def size_bytes(self) -> int:
        """The bytes the entries take on disk now (walks the folder)."""
        return sum(s for _, s, _ in self._scan()[0])

    def clear(self) -> None:

        shutil.rmtree(self.root, ignore_errors=True)
        with self._state.lock:
            self._state.bytes = None
            self._state.puts = 0


# Calls with at most this many items also store one entry per item (so single queries and small subsets hit the
# cache later); larger galleries are stored as one entry: writing thousands of small files would cost more than
# the model pass itself on a small model.
PER_ITEM_MAX = 64


def provenance(model_key: str, chash: str, rkey: str, value: np.ndarray, preprocess: str = "") -> bytes:
    """What an entry was computed from, as stored next to it (JSON bytes)."""
    return json.dumps({"format": ENTRY_FORMAT, "model": model_key, "preprocess": preprocess or "",
                       "content": chash, "record": rkey, "shape": list(value.shape), "dtype": value.dtype.str},
                      sort_keys=True).encode()


def _provenance_mismatch(meta: np.ndarray, v: np.ndarray, model_key: str, chash: str, rkey: str,
                         preprocess: str | None) -> str:
    """Why an entry's stored provenance is not what was asked for ('' when it is)."""
    try:
        m = json.loads(np.asarray(meta, np.uint8).tobytes().decode("utf-8"))
        if not isinstance(m, dict):
            raise ValueError
    except (ValueError, UnicodeDecodeError, TypeError):
        return "without readable provenance"
    if m.get("format") != ENTRY_FORMAT:
        return f"of entry format {m.get('format')!r}, not {ENTRY_FORMAT}"
    for field, want, what in (("model", model_key, "another model"), ("content", chash, "another input"),
                              ("record", rkey, "another perturbation record")):
        if m.get(field) != want:
            return f"computed for {what} ({field} {str(m.get(field))[:24]!r})"
    if preprocess is not None and m.get("preprocess", "") != preprocess:
        return f"computed with another preprocessing ({m.get('preprocess')!r}, expected {preprocess!r})"
    if m.get("shape") != list(v.shape) or m.get("dtype") != v.dtype.str:
        return f"not the array its provenance describes ({m.get('shape')} {m.get('dtype')})"
    return ""


def _mismatch(v: np.ndarray, shape: tuple | None) -> str:
    """Why a cached array is not the embedding asked for ('' when it is)."""
    if v.dtype != np.float32:
        return f"of dtype {v.dtype}, not float32"
    if shape is not None:
        if v.ndim != len(shape) or any(s is not None and int(s) != d for s, d in zip(shape, v.shape)):
            return f"of shape {tuple(v.shape)}, expected {tuple('any' if s is None else int(s) for s in shape)}"
    if not np.isfinite(v).all():
        return "not finite (NaN or infinite values)"
    return ""


def model_key(model) -> str:
    """The model part of a cache key: its weights fingerprint (``"fp:…"``), or its id (``"id:…"``) for a model
    that has no ``fingerprint`` (a test double). Read once per encode call: cheap (the fingerprint is memoised
    and only re-hashed when the weights changed)."""
    fp = getattr(model, "fingerprint", None)
    if isinstance(fp, str) and fp:
        return f"fp:{fp}"
    return f"id:{getattr(model, 'model_id', type(model).__name__)}"


def _cached_encode(model, items, encode_fn, hash_fn, cache, records, batch_size, progress):
    cache = cache if cache is not None else EmbeddingCache()
    # a disabled cache reads and writes nothing: no key needed
    mkey, pkey = (model_key(model), preprocess_key(model)) if cache.enabled else ("", "")
    n = len(items)
    if records is None:
        records = [None] * n
    keys = [(hash_fn(it), record_key(r)) for it, r in zip(items, records)]
    # a whole gallery seen before is one file; otherwise fall back to per-item entries
    gkey = hashlib.blake2b("|".join(h + r for h, r in keys).encode(), digest_size=16).hexdigest()
    dim = getattr(model, "embed_dim", None)
    dim = int(dim) if isinstance(dim, (int, np.integer)) and dim > 0 else None
    whole = cache.get(mkey, gkey, "gallery", shape=(n, dim), preprocess=pkey) if n > 1 else None
    if whole is not None and whole.shape[0] == n:
        cache.hits += n
        if progress:
            progress(n, n)
        return whole
    out: list[np.ndarray | None] = [cache.get(mkey, h, r, shape=(dim,), preprocess=pkey) for h, r in keys]
    missing = [i for i, v in enumerate(out) if v is None]
    cache.hits += n - len(missing)
    cache.misses += len(missing)
    if missing:
        done0 = n - len(missing)
        if progress and done0:
            progress(done0, n)  # the cached part is done before the model starts on the rest
        prog = (lambda d, t: progress(done0 + d, n)) if progress else None
        emb = encode_fn([items[i] for i in missing], batch_size=batch_size, progress=prog)
        per_item = n <= PER_ITEM_MAX  # a large gallery is stored whole: one file instead of thousands
        for j, i in enumerate(missing):
            out[i] = emb[j]
            if per_item:
                cache.put(mkey, keys[i][0], keys[i][1], emb[j], pkey)
    elif progress:
        progress(n, n)
    if n == 0:
        return np.zeros((0, model.embed_dim), np.float32)
    res = np.stack(out).astype(np.float32)
    if n > 1:
        cache.put(mkey, gkey, "gallery", res, pkey)
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


def cached_encode_videos(model, videos: Sequence, cache: EmbeddingCache | None = None, records=None,
                         batch_size=None, progress=None) -> np.ndarray:
    """Encode videos (T×H×W×3 uint8 each) through the cache, keyed by the content hash of all their frames."""
    vids = [np.asarray(v) for v in videos]
    return _cached_encode(model, vids, model.encode_videos, content_hash, cache, records, batch_size, progress)
