"""The embedding cache is keyed by the weights fingerprint, not by the display id.

``builtin:tiny-clip`` has one model_id whatever its checkpoint holds (before and after ``robustlab train``), and
random-init hub models share one id per architecture: keyed by the id, the cache would serve embeddings computed
with other weights. These tests build tiny-clip models from random nets (no training; the MiniLM text tower is
the packaged one) and check hits and misses on a real on-disk cache.
"""
from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch

from robustlab.engine.cache import EmbeddingCache, cached_encode_images, cached_encode_texts, model_key
from robustlab.models.builtin import TINY_CLIP_CONFIG, TinyClip, TinyClipNet, save_tiny_clip

RNG = np.random.default_rng(0)
IMGS = [RNG.integers(0, 256, (40, 56, 3), dtype=np.uint8) for _ in range(3)]
TEXTS = ["a red circle", "two blue squares at the top", "a small green triangle"]


def _net(seed: int) -> TinyClipNet:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyClipNet(TINY_CLIP_CONFIG).eval()


def _model(seed: int | None = None, net: TinyClipNet | None = None, **kw) -> TinyClip:
    return TinyClip(device="cpu", net=net if net is not None else _net(seed), **kw)


def _encode(m, cache: EmbeddingCache, texts: bool = False):
    """(embeddings, hits, misses) of one cached encode call."""
    h0, m0 = cache.hits, cache.misses
    fn = cached_encode_texts if texts else cached_encode_images
    out = fn(m, TEXTS if texts else IMGS, cache=cache)
    return out, cache.hits - h0, cache.misses - m0


@pytest.fixture()
def cache(tmp_path):
    return EmbeddingCache(tmp_path / "emb")


def test_fingerprint_is_short_hex_memoised_and_in_info(monkeypatch):
    import robustlab.models.base as base

    m = _model(0)
    fp = m.fingerprint
    assert re.fullmatch(r"[0-9a-f]{16}", fp) and m.info().fingerprint == fp
    calls = []
    real = base.module_digest
    monkeypatch.setattr(base, "module_digest", lambda mod: calls.append(mod) or real(mod))
    assert m.fingerprint == fp and calls == []  # memoised: no rehash while nothing changed
    with torch.no_grad():
        m.net.logit_scale.add_(1.0)
    assert m.fingerprint != fp
    assert calls == [m.net]  # only the changed module is rehashed (the shared MiniLM digest is reused)


def test_two_random_init_models_of_one_architecture_do_not_share_entries(cache):
    a, b = _model(0), _model(1)
    assert a.model_id == b.model_id == "builtin:tiny-clip"  # the display id cannot tell them apart
    assert a.fingerprint != b.fingerprint
    ea, _, miss_a = _encode(a, cache)
    eb, hits_b, miss_b = _encode(b, cache)
    assert miss_a == 3 and hits_b == 0 and miss_b == 3  # b never reads a's entries
    np.testing.assert_allclose(eb, b.encode_images(IMGS), atol=1e-6)
    assert not np.allclose(ea, eb, atol=1e-3)
    ta, _, _ = _encode(a, cache, texts=True)
    tb, hits_t, _ = _encode(b, cache, texts=True)
    assert hits_t == 0 and not np.allclose(ta, tb, atol=1e-3)


def test_same_weights_loaded_twice_hit(cache, tmp_path):
    path = tmp_path / "ck.safetensors"
    net = _net(3)
    save_tiny_clip(net, path, {})
    m1 = TinyClip(device="cpu", checkpoint=path)
    e1, _, miss1 = _encode(m1, cache)
    m2 = TinyClip(device="cpu", checkpoint=path)
    assert m2.fingerprint == m1.fingerprint
    e2, hits2, miss2 = _encode(m2, cache)
    assert miss1 == 3 and hits2 == 3 and miss2 == 0 and np.array_equal(e1, e2)
    # keyed by the weights, not by the name: the in-memory net it was saved from has another id, same entries
    m3 = _model(net=net)
    assert m3.model_id != m1.model_id and m3.fingerprint == m1.fingerprint
    assert _encode(m3, cache)[1:] == (3, 0)


def test_the_default_builtin_loaded_twice_has_one_fingerprint(tiny_clip):
    from robustlab.models import load_model

    assert load_model("builtin:tiny-clip", device="cpu").fingerprint == tiny_clip.fingerprint


def test_a_retrained_checkpoint_misses(cache, tmp_path):
    """``robustlab train tiny-clip`` rewrites the file the id points at: the next load must not hit old entries."""
    path = tmp_path / "tiny-clip.safetensors"
    save_tiny_clip(_net(4), path, {})
    old = TinyClip(device="cpu", checkpoint=path)
    _encode(old, cache)
    save_tiny_clip(_net(5), path, {})  # "retrained": same path, same model_id, new weights
    new = TinyClip(device="cpu", checkpoint=path)
    assert new.model_id == old.model_id and new.fingerprint != old.fingerprint
    e, hits, misses = _encode(new, cache)
    assert hits == 0 and misses == 3
    np.testing.assert_allclose(e, new.encode_images(IMGS), atol=1e-6)


def test_weights_changed_in_place_miss_without_a_refresh(cache):
    m = _model(6)
    e0, _, _ = _encode(m, cache)
    fp0 = m.fingerprint
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # a perturbation of the weights, as a test or a fine-tuning step would do
        for p in m.net.image.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    assert m.fingerprint != fp0  # the version counters moved: no refresh needed
    e1, hits, misses = _encode(m, cache)
    assert hits == 0 and misses == 3
    np.testing.assert_allclose(e1, m.encode_images(IMGS), atol=1e-6)
    assert not np.allclose(e0, e1, atol=1e-3)


def test_writes_through_data_are_caught_by_refresh_fingerprint(cache):
    m = _model(7)
    _encode(m, cache)
    fp0 = m.fingerprint
    for p in m.net.image.parameters():
        p.data.mul_(1.5)  # bypasses the version counters
    fp1 = m.refresh_fingerprint()
    assert fp1 != fp0 and m.fingerprint == fp1
    e, hits, misses = _encode(m, cache)
    assert hits == 0 and misses == 3
    np.testing.assert_allclose(e, m.encode_images(IMGS), atol=1e-6)
    # refreshing without a change gives the same value back
    assert m.refresh_fingerprint() == fp1


def test_what_else_decides_the_outputs_is_in_the_fingerprint():
    from robustlab.models.builtin_video import (TINY_CLIP_VIDEO_CONFIG, TinyClipVideoMeanP, TinyClipVideoNet,
                                                TinyClipVideoSeqTransf)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = TinyClipVideoNet(TINY_CLIP_VIDEO_CONFIG).eval()
    meanp, seq = TinyClipVideoMeanP(device="cpu", net=net), TinyClipVideoSeqTransf(device="cpu", net=net)
    assert meanp.fingerprint != seq.fingerprint  # one net, two aggregators (and text heads)
    # a half-precision copy computes other embeddings: another fingerprint
    f32 = _model(8)
    f16 = _model(net=copy.deepcopy(f32.net), half=True)
    assert f16.fingerprint != f32.fingerprint


def test_on_disk_entries_live_under_the_fingerprint(cache):
    a, b = _model(9), _model(10)
    assert model_key(a) == f"fp:{a.fingerprint}"
    _encode(a, cache)
    _encode(b, cache)
    tops = {p.name for p in cache.root.iterdir() if p.is_dir()}
    assert len(tops) == 2
    from robustlab.engine.cache import content_hash

    assert cache._path(model_key(a), content_hash(IMGS[0]), "clean").exists()
    assert not cache._path(f"id:{a.model_id}", content_hash(IMGS[0]), "clean").exists()

    class Double:  # no weights, no fingerprint: keyed by its id
        model_id = "test:double"

    assert model_key(Double()) == "id:test:double"


def test_results_record_the_fingerprint():
    from robustlab.tasks.result import model_identity

    m = _model(11)
    assert model_identity(m) == ("builtin:tiny-clip", m.fingerprint)


def test_fusion_and_hub_models_have_fingerprints():
    from robustlab.models.tiny_vilt import TINY_VILT_CONFIG, TinyVilt, TinyViltNet

    cfg = dict(TINY_VILT_CONFIG, answers=["yes", "no"])
    fps = []
    for seed in (0, 1):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            fps.append(TinyVilt(device="cpu", net=TinyViltNet(cfg).eval()).fingerprint)
    assert fps[0] != fps[1]
    transformers = pytest.importorskip("transformers")
    from robustlab.models.hf_backend import HFClipModel

    common = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=4)
    cfg = transformers.CLIPConfig(
        text_config=dict(common, vocab_size=300, max_position_embeddings=32),
        vision_config=dict(common, image_size=32, patch_size=8), projection_dim=16)
    m0, m0b, m1 = (HFClipModel.from_config(cfg, device="cpu", seed=s) for s in (0, 0, 1))
    assert m0.model_id == m1.model_id and m0.fingerprint != m1.fingerprint
    assert m0.fingerprint == m0b.fingerprint  # the same seeded init: the same weights


def _write_entry(path, arr, **meta_over):
    """An entry file as the cache writes it (array + provenance), with some provenance fields overridden."""
    import json

    import numpy as np

    meta = json.loads(meta_over.pop("_base"))
    meta.update(meta_over)
    with open(path, "wb") as f:
        np.savez(f, emb=arr, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8))


def test_cache_entries_are_checked_on_read_and_rebuilt(tmp_path, caplog):
    """Issue 15: a valid entry of the wrong shape (another model width, another version) or dtype, or with NaN, or
    whose stored provenance names another model, preprocessing, input or record -- including one of the RIGHT
    shape, which used to be served silently -- is a miss with one log line, recomputed and replaced: never a
    crash, never served."""
    import hashlib
    import json
    import logging

    import numpy as np

    from robustlab.engine.cache import (EmbeddingCache, cached_encode_texts, content_hash, model_key,
                                        preprocess_key, record_key)
    from robustlab.models import load_model

    model = load_model("builtin:tiny-clip", device="cpu")
    cache = EmbeddingCache(tmp_path)
    texts = ["a red circle", "a blue square", "a green star"]
    want = cached_encode_texts(model, texts, cache=cache)
    mk, pk = model_key(model), preprocess_key(model)
    assert mk.startswith("fp:") and pk
    item = cache._path(mk, content_hash(texts[0]), record_key(None))
    gkeys = [(content_hash(t), record_key(None)) for t in texts]
    gkey = hashlib.blake2b("|".join(h + r for h, r in gkeys).encode(), digest_size=16).hexdigest()
    gallery = cache._path(mk, gkey, "gallery")
    assert item.exists() and gallery.exists()
    with np.load(gallery) as z:  # what an entry stores about itself
        meta = json.loads(z["meta"].tobytes())
    assert meta["model"] == mk and meta["preprocess"] == pk and meta["content"] == gkey
    assert meta["record"] == "gallery" and meta["shape"] == [3, model.embed_dim] and meta["dtype"] == "<f4"
    with np.load(item) as z:
        item_meta = z["meta"].tobytes()
    d = model.embed_dim
    right = np.ones((3, d), np.float32)  # the right shape and dtype: only the provenance can tell it is wrong
    cases = [  # (gallery array, gallery provenance overrides, item array, item provenance overrides)
        (np.zeros((3, 128), np.float32), {"shape": [3, 128]}, np.zeros(128, np.float32), {"shape": [128]}),
        (np.zeros((3, d), np.float64), {"dtype": "<f8"}, np.zeros(d, np.float64), {"dtype": "<f8"}),
        (np.full((3, d), np.nan, np.float32), {}, np.full(d, np.nan, np.float32), {}),
        (right, {"model": "fp:another-model"}, right[0], {"model": "fp:another-model"}),
        (right, {"preprocess": "another-preprocessing"}, right[0], {"preprocess": "x"}),
        (right, {"content": "another-input"}, right[0], {"record": "another-record"}),
        (right, {"format": 1}, right[0], {"shape": [d + 1]}),
    ]
    for garr, gover, iarr, iover in cases:
        _write_entry(gallery, garr, _base=json.dumps(meta), **gover)
        _write_entry(item, iarr, _base=item_meta, **iover)
        r0 = cache.rejected
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="robustlab.cache"):
            got = cached_encode_texts(model, texts, cache=cache)
        assert np.allclose(got, want, atol=1e-6) and np.isfinite(got).all(), (gover, iover)
        assert cache.rejected == r0 + 2, (gover, iover)  # the whole-gallery entry and the damaged item entry
        assert caplog.text.count("recomputing it") == 2
        with np.load(item) as zi, np.load(gallery) as zg:  # both replaced by good entries
            assert zi["emb"].shape == (d,) and zg["emb"].shape == (3, d)
            assert json.loads(zg["meta"].tobytes()) == meta
    # the rebuilt entries are served again: no further rejection
    r0 = cache.rejected
    assert np.allclose(cached_encode_texts(model, texts, cache=cache), want, atol=1e-6) and cache.rejected == r0
    # an unreadable file, a bare array without provenance, a zip without the arrays: misses too
    item.write_bytes(b"not a numpy file")
    with open(gallery, "wb") as f:
        np.save(f, want)
    assert np.allclose(cached_encode_texts(model, texts, cache=cache), want, atol=1e-6)
    assert cache.rejected == r0 + 2
    with open(gallery, "wb") as f:
        np.savez(f, other=want)
    assert np.allclose(cached_encode_texts(model, texts, cache=cache), want, atol=1e-6)
    assert cache.rejected == r0 + 3


def test_a_model_with_other_preprocessing_does_not_share_entries(tmp_path):
    """The preprocessing is in the model's fingerprint (so another input size is another folder) and, stored in
    the entry, checked again on read: an entry computed under one preprocessing is never served to another."""
    import numpy as np

    from robustlab.engine.cache import EmbeddingCache, content_hash, model_key, preprocess_key

    class Fake:
        model_id, embed_dim = "fake", 4

        def __init__(self, size):
            self.size = size
            self.fingerprint = "same-weights"  # a backend that forgot to put its preprocessing in the fingerprint

        def fingerprint_config(self):
            return {"image_size": self.size}

    a, b = Fake(224), Fake(336)
    assert model_key(a) == model_key(b) and preprocess_key(a) != preprocess_key(b)
    cache = EmbeddingCache(tmp_path)
    h = content_hash("x")
    cache.put(model_key(a), h, "clean", np.ones(4, np.float32), preprocess_key(a))
    assert cache.get(model_key(a), h, preprocess=preprocess_key(a)) is not None
    assert cache.get(model_key(b), h, preprocess=preprocess_key(b)) is None and cache.rejected == 1


@pytest.mark.parametrize("errno_, where", [(28, "mkstemp"), (13, "mkdir"), (28, "save")])
def test_an_unwritable_or_full_cache_folder_degrades_to_no_cache_with_one_warning(tmp_path, monkeypatch, caplog,
                                                                                  errno_, where):
    import logging
    import os
    import tempfile

    import numpy as np

    from robustlab.engine import cache as C
    from robustlab.models import load_model

    def boom(*a, **k):
        raise OSError(errno_, os.strerror(errno_))

    if where == "mkstemp":
        monkeypatch.setattr(tempfile, "mkstemp", boom)
    elif where == "mkdir":
        monkeypatch.setattr(C.Path, "mkdir", boom)
    else:
        monkeypatch.setattr(C.np, "savez", boom)
    model = load_model("builtin:tiny-clip", device="cpu")
    cache = C.EmbeddingCache(tmp_path / "c")
    with caplog.at_level(logging.WARNING, logger="robustlab.cache"):
        a = C.cached_encode_texts(model, ["a red circle", "a blue square"], cache=cache)
        b = C.cached_encode_texts(model, ["a red circle", "a blue square"], cache=cache)
    assert np.allclose(a, b) and cache.enabled is False
    assert caplog.text.count("continuing without the embedding cache") == 1
    assert not list((tmp_path / "c").rglob("*.tmp")) and not list((tmp_path / "c").rglob("*.npz"))
