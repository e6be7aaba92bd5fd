"""Inference core: automatic batch size, OOM back-off, the bounded LRU cache, progress through the cache."""
import os
import time

import numpy as np
import pytest
import torch

from robustlab.engine import EmbeddingCache, auto_batch_size, cached_encode_images, cached_encode_videos, is_oom
from robustlab.engine import batching
from robustlab.engine import cache as cache_mod
from robustlab.engine.batching import batch_for_memory, encode_images, encode_texts, learned_batch_size
from robustlab.models.base import EmbeddingModel


def _oom_error(msg="CUDA out of memory. Tried to allocate 2.00 GiB"):
    cls = getattr(torch.cuda, "OutOfMemoryError", None)
    return cls(msg) if cls is not None else RuntimeError(msg)


class ToyModel(EmbeddingModel):
    """Deterministic per-item features (independent of the batch), with an optional fake OOM above a batch size."""

    model_id = "test:toy"
    backend = "test"
    embed_dim = 8
    default_image_batch = 16
    default_text_batch = 32

    def __init__(self, oom_above: int | None = None, oom_message: str | None = None):
        super().__init__(device="cpu")
        self.oom_above = oom_above
        self.oom_message = oom_message
        self.batches: list[int] = []
        self.text_batches: list[int] = []
        g = torch.Generator().manual_seed(0)
        self.proj = torch.randn(3 * 4 * 4, self.embed_dim, generator=g)

    def preprocess_images(self, images):
        return torch.stack([torch.from_numpy(np.ascontiguousarray(im[:4, :4])).float().permute(2, 0, 1) / 255
                            for im in images])

    def _fail_if_big(self, n):
        if self.oom_above is not None and n > self.oom_above:
            if self.oom_message is not None:
                raise RuntimeError(self.oom_message)
            raise _oom_error()

    def _image_features(self, pixels):
        self._fail_if_big(len(pixels))
        self.batches.append(len(pixels))
        return pixels.flatten(1) @ self.proj

    def _text_features(self, texts):
        self._fail_if_big(len(texts))
        self.text_batches.append(len(texts))
        return torch.tensor([[len(t), t.count("a"), t.count("e"), 1.0, 0, 0, 0, 1.0] for t in texts])


def imgs(n, seed=0, side=6):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (side, side, 3), dtype=np.uint8) for _ in range(n)]


# ---- batch size and OOM back-off ------------------------------------------------------------------------------
def test_auto_batch_size_on_cpu_is_the_models_default_capped():
    m = ToyModel()
    assert auto_batch_size(m, "image") == 16 and auto_batch_size(m, "text") == 32
    assert auto_batch_size(m, "image", n=5) == 5
    m.default_image_batch = 10_000
    assert auto_batch_size(m, "image") == batching.CPU_MAX_BATCH
    seen = []
    ToyModel().encode_images(imgs(40), progress=lambda d, t: seen.append(d))
    assert seen == [16, 32, 40]


def test_oom_halves_the_batch_and_gives_the_same_embeddings():
    x = imgs(37, seed=1)
    ref = encode_images(ToyModel(), x, batch_size=37)
    m = ToyModel(oom_above=5)
    stats, seen = {}, []
    out = encode_images(m, x, batch_size=16, stats=stats, progress=lambda d, t: seen.append((d, t)))
    np.testing.assert_allclose(out, ref, atol=1e-6)
    assert out.shape == (37, 8)
    assert stats == {"n": 37, "batch_size": 16, "final_batch_size": 4, "oom_backoffs": 2}
    assert max(m.batches) <= 5 and sum(m.batches) == 37  # every item encoded exactly once
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (37, 37)
    # the model remembers: the next call starts at the size that worked, without running out again
    assert learned_batch_size(m, "image") == 4
    stats2 = {}
    m.batches.clear()
    np.testing.assert_allclose(m.encode_images(x), ref, atol=1e-6)  # through the model's own method
    encode_images(m, x, stats=stats2)
    assert stats2["oom_backoffs"] == 0 and stats2["batch_size"] == 4


def test_oom_backoff_for_texts_and_runtime_error_messages():
    texts = [f"a text number {i} here" for i in range(20)]
    ref = encode_texts(ToyModel(), texts, batch_size=20)
    m = ToyModel(oom_above=3, oom_message="CUDA error: out of memory")
    stats = {}
    np.testing.assert_allclose(encode_texts(m, texts, stats=stats), ref, atol=1e-6)
    assert stats["final_batch_size"] == 2 and max(m.text_batches) <= 3


def test_oom_at_batch_one_and_other_errors_propagate():
    with pytest.raises(Exception) as ei:
        encode_images(ToyModel(oom_above=0), imgs(3), batch_size=4)
    assert is_oom(ei.value)
    m = ToyModel(oom_above=2, oom_message="mat1 and mat2 shapes cannot be multiplied")
    with pytest.raises(RuntimeError, match="shapes"):
        encode_images(m, imgs(5), batch_size=4)
    assert learned_batch_size(m, "image") is None
    assert is_oom(_oom_error()) and is_oom(RuntimeError("CUDA out of memory.")) and not is_oom(ValueError("x"))


def test_batch_for_memory_grows_within_the_cap_and_never_shrinks():
    assert batch_for_memory(64, per_item_bytes=1e6, free_bytes=1e9, cap=256) == 256
    assert batch_for_memory(64, per_item_bytes=1e7, free_bytes=1e9, cap=256) == 64  # 60 fit: no growth
    assert batch_for_memory(64, per_item_bytes=5e6, free_bytes=1e9, cap=1024) == 64 * 1  # 120 fit: < 128
    assert batch_for_memory(64, per_item_bytes=2e6, free_bytes=1e9, cap=1024) == 256  # 300 fit
    assert batch_for_memory(64, per_item_bytes=0, free_bytes=1e9, cap=1024) == 64


# ---- bounded cache ----------------------------------------------------------------------------------------------
def _entries(root):
    return sorted(p.stem for p in root.rglob("*.npz"))


def _entry_bytes(tmp_path, v):
    """The bytes one entry of ``v`` takes on disk (the array, its provenance and the .npz framing)."""
    probe = EmbeddingCache(tmp_path / "probe", max_bytes=0)
    probe.put("m", "z" * 8, "clean", v)
    return next((tmp_path / "probe").rglob("*.npz")).stat().st_size


def test_cache_bound_is_respected_and_eviction_is_lru(tmp_path):
    v = np.ones(256, np.float32)  # 1024 bytes + the provenance and .npz framing
    one = _entry_bytes(tmp_path, v)
    tmp_path = tmp_path / "c"
    cache = EmbeddingCache(tmp_path, max_bytes=int(10.2 * one))
    for k in "abcdefgh":
        cache.put("m", k * 8, "clean", v)
    assert cache.get("m", "a" * 8) is not None  # "a" becomes the most recently used
    for k in "ijkl":
        cache.put("m", k * 8, "clean", v)
    assert cache.size_bytes() <= int(10.2 * one)
    left = _entries(tmp_path)
    assert "a" * 8 in left  # read recently: kept
    assert "b" * 8 not in left and "c" * 8 not in left  # least recently used: evicted first
    assert "l" * 8 in left and cache.evicted >= 2
    # many more puts: the bound holds throughout
    for i in range(60):
        cache.put("m", f"{i:08d}", "clean", v)
        assert cache.size_bytes() <= int(10.2 * one)


def test_cache_bound_from_env_and_unbounded(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_CACHE_MAX_MB", "3")
    assert EmbeddingCache(tmp_path).max_bytes == 3 * 1024 * 1024
    monkeypatch.delenv("ROBUSTLAB_CACHE_MAX_MB")
    assert EmbeddingCache(tmp_path).max_bytes == 2048 * 1024 * 1024
    monkeypatch.setenv("ROBUSTLAB_CACHE_MAX_MB", "0")
    c = EmbeddingCache(tmp_path / "u")
    assert c.max_bytes == 0
    for i in range(5):
        c.put("m", f"{i:08d}", "clean", np.ones(1000, np.float32))
    assert len(_entries(tmp_path / "u")) == 5 and c.evict() == 0


def test_eviction_is_amortised(tmp_path, monkeypatch):
    scans = []
    orig = EmbeddingCache._scan

    def counting(self):
        scans.append(1)
        return orig(self)

    monkeypatch.setattr(EmbeddingCache, "_scan", counting)
    cache = EmbeddingCache(tmp_path, max_bytes=10_000_000)
    for i in range(200):
        cache.put("m", f"{i:08d}", "clean", np.ones(16, np.float32))
    assert len(scans) == 1  # one scan at the first put, none after while under the bound
    monkeypatch.setattr(cache_mod, "RESCAN_EVERY", 50)
    for i in range(100):
        cache.put("m", f"x{i:07d}", "clean", np.ones(16, np.float32))
    assert 2 <= len(scans) <= 4  # and a periodic re-read of the real size


def test_crash_leftovers_are_removed_on_the_next_eviction_pass(tmp_path):
    cache = EmbeddingCache(tmp_path, max_bytes=1_000_000)
    cache.put("m", "aaaaaaaa", "clean", np.ones(4, np.float32))
    shard = next(tmp_path.rglob("*.npz")).parent
    stale = shard / "tmpdead.tmp"  # what a killed writer leaves behind: never renamed into place
    stale.write_bytes(b"\x93NUMPY half a file")
    old = time.time() - cache_mod.STALE_TMP_S - 60
    os.utime(stale, (old, old))
    live = shard / "tmplive.tmp"  # a write in progress in another process: kept
    live.write_bytes(b"\x93NUMPY")
    assert cache.get("m", "tmpdead") is None  # a leftover is never read as an entry
    cache.evict()
    assert not stale.exists() and live.exists()
    assert cache.get("m", "aaaaaaaa") is not None


def test_crash_mid_write_leaves_nothing_and_keeps_the_size_estimate(tmp_path, monkeypatch):
    cache = EmbeddingCache(tmp_path, max_bytes=1_000_000)
    cache.put("m", "bbbbbbbb", "clean", np.ones(4, np.float32))
    size = cache._state.bytes
    monkeypatch.setattr(np, "savez", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    cache.put("m", "aaaaaaaa", "clean", np.ones(4, np.float32))  # no exception: the cache turns itself off
    monkeypatch.undo()
    assert cache.enabled is False and cache._state.bytes == size  # the failed write is not counted
    assert not list(tmp_path.rglob("*.tmp")) and len(list(tmp_path.rglob("*.npz"))) == 1
    again = EmbeddingCache(tmp_path, max_bytes=1_000_000)
    again.put("m", "aaaaaaaa", "clean", np.ones(4, np.float32))
    assert again.get("m", "aaaaaaaa") is not None


# ---- progress through the cache, videos -------------------------------------------------------------------------
def test_progress_covers_cached_and_encoded_parts(tmp_path):
    m = ToyModel()
    cache = EmbeddingCache(tmp_path)
    x = imgs(10, seed=4)
    cached_encode_images(m, x[:4], cache=cache)  # four per-item entries
    seen = []
    cached_encode_images(m, x, cache=cache, batch_size=3, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(4, 10), (7, 10), (10, 10)]
    seen.clear()
    cached_encode_images(m, x, cache=cache, progress=lambda d, t: seen.append((d, t)))  # whole gallery hit
    assert seen == [(10, 10)]
    seen.clear()
    assert cached_encode_images(m, [], cache=cache, progress=lambda d, t: seen.append((d, t))).shape == (0, 8)


def test_videos_are_cached_by_content(tmp_path):
    m = ToyModel()
    cache = EmbeddingCache(tmp_path)
    rng = np.random.default_rng(2)
    vids = [rng.integers(0, 255, (3, 6, 6, 3), dtype=np.uint8) for _ in range(3)]
    a = cached_encode_videos(m, vids, cache=cache)
    n = sum(m.batches)
    assert a.shape == (3, 8) and n == 9
    b = cached_encode_videos(m, vids[1:], cache=cache)
    assert np.array_equal(b, a[1:]) and sum(m.batches) == n
