
import numpy as np
import pytest
import torch

from robustlab.engine import EmbeddingCache, cached_encode_images, cached_encode_texts, content_hash, resolve_device
from robustlab.engine.batching import encode_images
from robustlab.models.base import EmbeddingModel


class CountingModel(EmbeddingModel):
    """A deterministic toy backend: image embedding = per-channel means, text = character histogram."""

    model_id = "test:counting"
    backend = "test"
    embed_dim = 4

    def __init__(self):
        super().__init__(device="cpu")
        self.image_calls = 0
        self.text_calls = 0

    def preprocess_images(self, images):
        return torch.stack([torch.from_numpy(np.ascontiguousarray(im[:4, :4])).float().permute(2, 0, 1)
                            for im in images])

    def _image_features(self, pixels):
        self.image_calls += len(pixels)
        m = pixels.mean(dim=(2, 3))
        return torch.cat([m, torch.ones(len(pixels), 1)], 1)

    def _text_features(self, texts):
        self.text_calls += len(texts)
        return torch.tensor([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts])


def imgs(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (6, 6, 3), dtype=np.uint8) for _ in range(n)]


def test_device_resolution(monkeypatch):
    assert resolve_device("cpu").type == "cpu"
    monkeypatch.setenv("ROBUSTLAB_DEVICE", "cpu")
    assert resolve_device(None).type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            resolve_device("cuda")
        monkeypatch.delenv("ROBUSTLAB_DEVICE")
        assert resolve_device("auto").type == "cpu"


def test_batches_are_normalised_and_batch_size_invariant():
    m = CountingModel()
    x = imgs(7)
    a = encode_images(m, x, batch_size=2)
    b = encode_images(m, x, batch_size=5)
    assert a.shape == (7, 4) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert m.encode_texts([]).shape == (0, 4)


def test_progress_is_reported():
    m = CountingModel()
    seen = []
    m.encode_images(imgs(5), batch_size=2, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(2, 5), (4, 5), (5, 5)]


def test_cache_encodes_once_and_separates_conditions(tmp_path):
    m = CountingModel()
    cache = EmbeddingCache(tmp_path)
    x = imgs(6)
    first = cached_encode_images(m, x, cache=cache)
    assert m.image_calls == 6
    again = cached_encode_images(m, x, cache=cache)
    assert m.image_calls == 6 and np.array_equal(first, again)
    # a subset is served from per-item entries
    sub = cached_encode_images(m, x[2:4], cache=cache)
    assert m.image_calls == 6 and np.array_equal(sub, first[2:4])
    # the same pixels under another perturbation record are a different key
    recs = [{"name": "gaussian_noise", "severity": 3, "seed": i} for i in range(6)]
    cached_encode_images(m, x, cache=cache, records=recs)
    assert m.image_calls == 12
    # another model never reads this model's entries
    other = CountingModel()
    other.model_id = "test:other"
    cached_encode_images(other, x, cache=cache)
    assert other.image_calls == 6
    t = cached_encode_texts(m, ["a cat", "a dog", "a cat"], cache=cache)
    assert m.text_calls == 3 and np.array_equal(t[0], t[2])
    cached_encode_texts(m, ["a cat"], cache=cache)
    assert m.text_calls == 3


def test_cache_survives_a_crash_mid_write(tmp_path, monkeypatch):
    m = CountingModel()
    cache = EmbeddingCache(tmp_path)
    x = imgs(3, seed=5)

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    # a full disk no longer fails the encode: the cache turns itself off with one warning (issue 15)
    first = cached_encode_images(m, x, cache=cache)
    monkeypatch.undo()
    assert first.shape == (3, 4) and cache.enabled is False
    assert not list(tmp_path.rglob("*.tmp"))  # no half-written files left behind
    assert not list(tmp_path.rglob("*.npz"))
    again = EmbeddingCache(tmp_path)  # space freed, a new session: the folder works again
    out = cached_encode_images(m, x, cache=again)
    assert out.shape == (3, 4) and np.allclose(out, first) and list(tmp_path.rglob("*.npz"))


def test_corrupt_cache_entry_is_recomputed(tmp_path):
    m = CountingModel()
    cache = EmbeddingCache(tmp_path)
    x = imgs(1, seed=9)
    ref = cached_encode_images(m, x, cache=cache)
    for p in tmp_path.rglob("*.npz"):
        p.write_bytes(b"not a numpy file")
    out = cached_encode_images(m, x, cache=cache)
    assert np.array_equal(out, ref) and m.image_calls == 2


def test_content_hash_depends_on_bytes_and_shape():
    a = np.zeros((2, 3, 3), np.uint8)
    assert content_hash(a) == content_hash(a.copy())
    assert content_hash(a) != content_hash(a.reshape(3, 2, 3))
    b = a.copy()
    b[0, 0, 0] = 1
    assert content_hash(a) != content_hash(b)
    assert content_hash("x") != content_hash("y")


def test_large_galleries_are_stored_whole(tmp_path, monkeypatch):
    from robustlab.engine import cache as cache_mod

    monkeypatch.setattr(cache_mod, "PER_ITEM_MAX", 4)
    m = CountingModel()
    cache = EmbeddingCache(tmp_path)
    x = imgs(10, seed=3)
    ref = cached_encode_images(m, x, cache=cache)
    assert len(list(tmp_path.rglob("*.npz"))) == 1  # one gallery entry, no per-item files
    assert np.array_equal(cached_encode_images(m, x, cache=cache), ref) and m.image_calls == 10
    cached_encode_images(m, x[:5], cache=cache)  # a subset of a large gallery is encoded again
    assert m.image_calls == 15
