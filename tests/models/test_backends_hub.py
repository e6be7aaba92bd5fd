"""Offline plumbing tests of the hub backends (open_clip, transformers) on random-init models of real architectures.

Random-init models only check plumbing (shapes, normalisation, determinism, checkpoint round trips, offline
errors); they never produce results. Nothing here touches the network: hub loads run with HF_HUB_OFFLINE=1 and
an empty cache, and must fail fast with a one-line ModelUnavailable.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from robustlab.io.convert import to_uint8_rgb
from robustlab.models import OFFLINE_ALTERNATIVES, load_model
from robustlab.models.base import ModelUnavailable

open_clip = pytest.importorskip("open_clip")
transformers = pytest.importorskip("transformers")


def _images() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.integers(0, 256, (180, 240, 3), dtype=np.uint8),  # RGB, landscape
        rng.integers(0, 256, (64, 48), dtype=np.uint8),  # gray
        np.dstack([rng.integers(0, 256, (40, 90, 3)), np.full((40, 90, 1), 128)]).astype(np.uint8),  # RGBA
    ]


TEXTS = ["a photo of a cat", "A DOG on the beach!", ""]


def _unit(x: np.ndarray) -> None:
    assert x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)


def _assert_one_line(err: ModelUnavailable) -> str:
    msg = str(err)
    assert "\n" not in msg and msg.strip() == msg
    assert "builtin:tiny-clip" in msg and OFFLINE_ALTERNATIVES in msg
    return msg


@pytest.fixture()
def offline(monkeypatch, tmp_path):
    """Hub offline with an empty cache (so cached weights on a dev machine can't make a load succeed)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HOME", str(tmp_path))  # ~/.cache/clip for open_clip's plain-URL weights
    return tmp_path


# ---- open_clip ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vit_b32():
    return load_model("open_clip:ViT-B-32", device="cpu")


def test_open_clip_random_init_encodes(vit_b32):
    m = vit_b32
    info = m.info()
    assert info.random_init is True and info.backend == "open_clip" and info.model_id == "open_clip:ViT-B-32"
    assert (m.embed_dim, m.image_size) == (512, 224)
    imgs = _images()
    pix = m.preprocess_images([to_uint8_rgb(im) for im in imgs])
    assert pix.shape == (3, 3, 224, 224) and pix.dtype == torch.float32
    e1, t1 = m.encode_images(imgs), m.encode_texts(TEXTS)
    assert e1.shape == (3, 512) and t1.shape == (3, 512)
    _unit(e1), _unit(t1)
    assert m.similarity(t1, e1).shape == (3, 3)
    # deterministic across calls and batch sizes (a subset keeps this quick on a small CPU)
    np.testing.assert_allclose(m.encode_images(imgs[1:], batch_size=1), e1[1:], atol=1e-5)
    np.testing.assert_allclose(m.encode_texts(TEXTS[:2], batch_size=1), t1[:2], atol=1e-5)


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_open_clip_checkpoint_roundtrip(vit_b32, tmp_path):
    from safetensors.torch import save_file

    imgs, texts = _images()[:1], TEXTS[:1]  # one of each: ViT-B-32 on a small CPU is ~1 s per forward
    base_e = vit_b32.encode_images(imgs)
    # weights that differ from the (seeded) random init, so a reload that ignored the file would be caught
    m = load_model("open_clip:ViT-B-32", device="cpu")
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in m.model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
    ref_e, ref_t = m.encode_images(imgs), m.encode_texts(texts)
    assert not np.allclose(ref_e, base_e, atol=1e-3)
    # one architecture, one model_id: the fingerprint tells the perturbed weights from the seeded random init
    ref_fp = m.fingerprint
    assert m.model_id == vit_b32.model_id and ref_fp != vit_b32.fingerprint
    sd = {k: v.detach().contiguous() for k, v in m.model.state_dict().items()}
    st, pt = tmp_path / "vitb32.safetensors", tmp_path / "vitb32.pt"
    save_file(sd, str(st))
    torch.save({"state_dict": sd}, str(pt))
    del m, sd
    for path in (st, pt):
        r = load_model(f"open_clip:ViT-B-32/{path}", device="cpu")
        assert r.info().random_init is False
        assert r.fingerprint == ref_fp  # the same weights, whichever file format they came in
        np.testing.assert_allclose(r.encode_images(imgs), ref_e, atol=1e-5)
        np.testing.assert_allclose(r.encode_texts(texts), ref_t, atol=1e-5)
        del r
    # a bare file: the architecture can't be told, the message says how to spell it
    with pytest.raises(ModelUnavailable, match="open_clip:ARCH/"):
        load_model(str(pt))


class _Payload:
    """Unpickling this would create a file: a weights-only loader must refuse it."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_open_clip_never_unpickles(tmp_path):
    marker = tmp_path / "pwned"
    bad = tmp_path / "bad.pt"
    torch.save({"state_dict": {"w": torch.zeros(1)}, "x": _Payload(str(marker))}, str(bad))
    with pytest.raises(ModelUnavailable, match="weights-only") as ei:
        load_model(f"open_clip:ViT-B-32/{bad}", device="cpu")
    _assert_one_line(ei.value)
    assert not marker.exists()


def test_open_clip_bad_specs():
    with pytest.raises(ModelUnavailable, match="ViT-B-32"):
        load_model("open_clip:ViT-B-3")
    with pytest.raises(ModelUnavailable, match="laion2b_s34b_b79k"):
        load_model("open_clip:ViT-B-32/no_such_tag")
    with pytest.raises(ModelUnavailable, match="no such checkpoint"):
        load_model("open_clip:ViT-B-32/missing/weights.pt")


@pytest.mark.parametrize("spec", ["open_clip:ViT-B-32/laion2b_s34b_b79k", "open_clip:ViT-B-32/openai"])
def test_open_clip_offline_fails_fast(offline, spec):
    t0 = time.monotonic()
    with pytest.raises(ModelUnavailable) as ei:
        load_model(spec, device="cpu")
    assert time.monotonic() - t0 < 20
    msg = _assert_one_line(ei.value)
    assert spec in msg and "HF_HUB_OFFLINE" in msg


# ---- transformers -------------------------------------------------------------------------------------

def _tiny_clip_config():
    from transformers import CLIPConfig

    common = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4)
    return CLIPConfig(
        text_config=dict(common, vocab_size=300, max_position_embeddings=32, bos_token_id=256, eos_token_id=257,
                         pad_token_id=257),
        vision_config=dict(common, image_size=32, patch_size=8),
        projection_dim=16,
    )


@pytest.fixture(scope="module")
def tiny_hf():
    from robustlab.models.hf_backend import HFClipModel

    return HFClipModel.from_config(_tiny_clip_config(), device="cpu")


def _raw(out) -> torch.Tensor:
    """get_*_features: a tensor in transformers 4.x, a model output (projected pooler_output) in 5.x."""
    t = out if torch.is_tensor(out) else out.pooler_output
    return t / t.norm(dim=-1, keepdim=True)


def test_hf_from_config_matches_raw_model(tiny_hf):
    m = tiny_hf
    info = m.info()
    assert info.random_init is True and info.backend == "hf" and (info.embed_dim, info.image_size) == (16, 32)
    imgs = _images()
    e, t = m.encode_images(imgs), m.encode_texts(TEXTS)
    assert e.shape == (3, 16) and t.shape == (3, 16)
    _unit(e), _unit(t)
    assert m.similarity(t, e).shape == (3, 3)
    np.testing.assert_allclose(m.encode_images(imgs), e, atol=1e-6)
    pix = m.preprocess_images([to_uint8_rgb(im) for im in imgs])
    assert pix.shape == (3, 3, 32, 32) and pix.dtype == torch.float32
    with torch.inference_mode():
        raw_e = _raw(m.model.get_image_features(pixel_values=pix)).numpy()
        enc = m.tokenizer(TEXTS, padding=True, return_tensors="pt")
        raw_t = _raw(m.model.get_text_features(input_ids=enc["input_ids"],
                                                attention_mask=enc["attention_mask"])).numpy()
    np.testing.assert_allclose(e, raw_e, atol=1e-5)
    np.testing.assert_allclose(t, raw_t, atol=1e-5)


def test_hf_local_folder_roundtrip(tiny_hf, tmp_path):
    d = tmp_path / "tiny-clip-hf"
    tiny_hf.model.save_pretrained(d)
    tiny_hf.tokenizer.save_pretrained(d)
    tiny_hf.image_processor.save_pretrained(d)
    r = load_model(str(d), device="cpu")  # a folder with config.json -> hf backend, local files only
    assert r.backend == "hf" and r.info().random_init is False
    assert r.fingerprint == tiny_hf.fingerprint  # same weights, processor and tokenizer settings
    imgs = _images()
    np.testing.assert_allclose(r.encode_images(imgs), tiny_hf.encode_images(imgs), atol=1e-5)
    np.testing.assert_allclose(r.encode_texts(TEXTS), tiny_hf.encode_texts(TEXTS), atol=1e-5)


def test_hf_offline_fails_fast(offline):
    t0 = time.monotonic()
    with pytest.raises(ModelUnavailable) as ei:
        load_model("hf:some-org/no-such-clip", device="cpu")
    assert time.monotonic() - t0 < 20
    msg = _assert_one_line(ei.value)
    assert "hf:some-org/no-such-clip" in msg and "HF_HUB_OFFLINE" in msg


def test_hf_missing_local_folder():
    with pytest.raises(ModelUnavailable, match="no such local folder"):
        load_model("hf:./no/such/folder")
