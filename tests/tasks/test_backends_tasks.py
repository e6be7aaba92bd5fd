"""Offline plumbing tests of the task backends: ViLT fusion (attention capture/replacement), OWL-ViT / OWLv2 /
Grounding DINO grounding, X-CLIP video retrieval — on random-init models of the real transformers classes with
tiny configs. They check loading, preprocessing, output plumbing and offline errors; never results.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from robustlab.models import OFFLINE_ALTERNATIVES, load_model, parse_spec
from robustlab.models.base import ModelUnavailable

transformers = pytest.importorskip("transformers")

from robustlab.models import attention as A  # noqa: E402
from robustlab.models.protocols import Box, FusionModel, GroundingModel, as_frames, sample_frames  # noqa: E402

COMMON = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4)
RNG = np.random.default_rng(0)
IMG = RNG.integers(0, 256, (40, 56, 3), dtype=np.uint8)  # landscape: ViLT grid 4×5 at shortest edge 32


@pytest.fixture()
def offline(monkeypatch, tmp_path):
    """Hub offline with an empty cache (so cached weights on a dev machine can't make a load succeed)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    return tmp_path


# ---- ViLT (fusion) ------------------------------------------------------------------------------------

def _vilt_config():
    from transformers import ViltConfig

    labels = ["yes", "no", "red", "2"]
    return ViltConfig(**COMMON, image_size=32, patch_size=8, max_position_embeddings=40, vocab_size=300,
                      initializer_range=0.2, id2label=dict(enumerate(labels)),
                      label2id={k: i for i, k in enumerate(labels)})


@pytest.fixture(scope="module")
def vilt():
    from robustlab.models.hf_fusion import HFViltModel

    torch.set_num_threads(2)
    return HFViltModel.from_config(_vilt_config(), head="vqa", device="cpu")


@pytest.fixture(scope="module")
def vilt_itm():
    from robustlab.models.hf_fusion import HFViltModel

    return HFViltModel.from_config(_vilt_config(), head="itm", device="cpu")


def test_vilt_capture_shapes_and_layout(vilt):
    assert vilt.info().random_init is True and isinstance(vilt, FusionModel)
    cap = vilt.forward_with_attention(IMG, "is it red?", pad_to=20)
    lay = cap.layout
    n_text, grid = 20, (4, 5)
    n = n_text + 1 + grid[0] * grid[1]
    assert cap.attentions.shape == (2, 4, n, n) and cap.attentions.dtype == np.float32
    assert (cap.n_layers, cap.n_heads, cap.n_tokens) == (2, 4, n) and len(lay) == n
    np.testing.assert_allclose(cap.attentions.sum(-1), 1.0, atol=1e-5)  # post-softmax rows
    # text first: [CLS] "is it red?" [SEP] then padding; then the image CLS and the 4×5 patches, row-major
    n_real = len(vilt.tokenizer("is it red?")["input_ids"])
    np.testing.assert_array_equal(lay.text_idx, np.arange(n_text))
    np.testing.assert_array_equal(lay.visual_idx, np.arange(n_text, n))
    np.testing.assert_array_equal(lay.pad_idx, np.arange(n_real, n_text))
    assert lay.special[0] == "[CLS]" and lay.special[n_real - 1] == "[SEP]"
    assert list(lay.special_idx("[IMG_CLS]")) == [n_text]
    assert lay.grid == grid and lay.n_frames == 1
    assert (lay.frame[:n_text] == -1).all() and (lay.frame[n_text:] == 0).all()
    assert [tuple(p) for p in lay.patch[n_text + 1:]] == [(r, c) for r in range(4) for c in range(5)]
    assert lay.is_patch.sum() == 20 and len(lay.indices("text", content_only=True)) == n_real - 2
    # padding keys get (numerically) no attention; the mass view adds up
    assert cap.attentions[..., lay.pad_idx].max() < 1e-6
    np.testing.assert_allclose(cap.mass("text", "text") + cap.mass("text", "visual"), 1.0, atol=1e-5)
    assert cap.block(0, None, "text", "visual").shape == (n_real - 2, 20)
    assert set(cap.outputs) >= {"logits", "answer", "scores"} and cap.outputs["answer"] in vilt.labels


def test_vilt_matches_plain_transformers_forward(vilt):
    """The canonical-order, patched forward gives the model's own logits and (text-query) attention."""
    enc = vilt.image_processor(images=[IMG], return_tensors="pt", input_data_format="channels_last")
    tok = vilt.tokenizer(["what colour is it?"], return_tensors="pt")
    with torch.inference_mode():
        ref = vilt.model(**tok, pixel_values=enc["pixel_values"], pixel_mask=enc["pixel_mask"], output_attentions=True)
    cap = vilt.forward_with_attention(IMG, "what colour is it?")
    np.testing.assert_allclose(cap.outputs["logits"], ref.logits[0].numpy(), atol=1e-4)
    t = len(cap.layout.text_idx)
    ref_att = torch.stack(ref.attentions)[:, 0].numpy()  # L×H×N×N; its visual tokens are randomly permuted
    np.testing.assert_allclose(cap.attentions[:, :, :t, :t], ref_att[:, :, :t, :t], atol=1e-5)
    np.testing.assert_allclose(np.sort(cap.attentions[:, :, :t, t:], -1), np.sort(ref_att[:, :, :t, t:], -1),
                               atol=1e-5)


def test_vilt_replace_identity_uniform_and_restore(vilt):
    modules = vilt._self_attentions()
    base = vilt.forward_with_attention(IMG, "is it red?", pad_to=16)
    same = vilt.forward_with_attention(IMG, "is it red?", pad_to=16, replace=A.identity)
    assert same.replaced and not base.replaced
    np.testing.assert_array_equal(same.outputs["logits"], base.outputs["logits"])
    np.testing.assert_array_equal(same.attentions, base.attentions)
    uni = vilt.forward_with_attention(IMG, "is it red?", pad_to=16, replace=A.uniform)
    assert not np.allclose(uni.outputs["logits"], base.outputs["logits"], atol=1e-4)
    keep = ~base.layout.is_pad
    np.testing.assert_allclose(uni.attentions[..., keep], 1.0 / keep.sum(), atol=1e-6)  # what the layers used
    # only layer 1 replaced: layer 0 as before
    one = vilt.forward_with_attention(IMG, "is it red?", pad_to=16, replace=A.only_layers([1], A.uniform))
    np.testing.assert_array_equal(one.attentions[0], base.attentions[0])
    seen = []
    vilt.forward_with_attention(IMG, "x", replace=lambda i, p, lay: seen.append((i, tuple(p.shape), len(lay))))
    assert [s[0] for s in seen] == [0, 1] and seen[0][1][-1] == seen[0][2]
    # the hook is per call: each attention module got a dispatcher once (per instance, not the class), which runs
    # the installed forward unless the calling context has a hook — also after an error inside a hooked forward
    assert all(getattr(m.__dict__.get("forward"), "robustlab_dispatch", False) for m in modules)
    from transformers.models.vilt.modeling_vilt import ViltSelfAttention

    assert "robustlab_dispatch" not in vars(ViltSelfAttention.forward)
    with pytest.raises(ValueError, match="replace returned shape"):
        vilt.forward_with_attention(IMG, "x", replace=lambda i, p, lay: p[..., :-1])
    with pytest.raises(ZeroDivisionError):
        vilt.forward_with_attention(IMG, "x", replace=lambda i, p, lay: 1 / 0)
    from robustlab.models.attention import _LAYER_HOOK

    assert _LAYER_HOOK.get() is None  # the failed call's hook is gone from this context
    np.testing.assert_array_equal(vilt.forward_with_attention(IMG, "is it red?", pad_to=16).outputs["logits"],
                                  base.outputs["logits"])


def test_vilt_frames_and_heads(vilt, vilt_itm):
    video = np.stack([IMG, IMG[:, ::-1], IMG[::-1]])
    cap = vilt.forward_with_attention(video, "what happens first?")
    lay = cap.layout
    assert lay.n_frames == 3 and len(lay.special_idx("[IMG_CLS]")) == 3
    for f in range(3):
        assert len(lay.indices("visual", frame=f)) == 21
        assert len(lay.indices("visual", frame=f, content_only=True)) == 20
    assert cap.attentions.shape[-1] == len(lay.text_idx) + 63
    answer, scores = vilt.vqa(IMG, "is it red?")
    assert answer in vilt.labels and answer == max(scores, key=scores.get) and all(0 <= v <= 1 for v in scores.values())
    s = vilt_itm.itm_score(IMG, "a red cube")
    assert isinstance(s, float) and np.isfinite(s)
    assert isinstance(vilt_itm.itm_score(video, "a red cube"), float)
    with pytest.raises(NotImplementedError, match="finetuned-coco"):
        vilt.itm_score(IMG, "x")
    with pytest.raises(NotImplementedError, match="finetuned-vqa"):
        vilt_itm.vqa(IMG, "x")


def test_what_each_checkpoint_can_do_and_its_fingerprint(vilt, vilt_itm):
    from robustlab.models import can, model_tasks
    from robustlab.models.hf_fusion import HFViltModel
    from robustlab.models.hf_grounding import HFGroundingModel
    from robustlab.models.hf_video import HFXClipModel

    # both ViLT heads have both methods; each checkpoint serves only its own head's tasks
    assert model_tasks(vilt) == ("vqa", "clavi") and model_tasks(vilt_itm) == ("itm",)
    assert can(vilt, "vqa") and not can(vilt, "itm") and not can(vilt_itm, "grounding")
    assert vilt.fingerprint != vilt_itm.fingerprint and vilt.info().fingerprint == vilt.fingerprint
    other = HFViltModel.from_config(_vilt_config(), head="vqa", device="cpu", seed=1)
    assert other.model_id == vilt.model_id and other.fingerprint != vilt.fingerprint
    g0, g1 = (HFGroundingModel.from_config(_owl_config("owlvit"), device="cpu", seed=s) for s in (0, 1))
    assert model_tasks(g0) == ("grounding",) and g0.model_id == g1.model_id and g0.fingerprint != g1.fingerprint
    x = HFXClipModel.from_config(_xclip_config(), device="cpu")
    assert model_tasks(x) == ("retrieval", "video-retrieval") and len(x.fingerprint) == 16


def test_vilt_local_folder_roundtrip(vilt, tmp_path):
    d = tmp_path / "tiny-vilt"
    vilt.model.save_pretrained(d)
    vilt.tokenizer.save_pretrained(d)
    vilt.image_processor.save_pretrained(d)
    r = load_model(f"hf-vilt:{d}", device="cpu")
    assert r.head == "vqa" and r.random_init is False and r.labels == vilt.labels
    assert load_model(f"hf-vilt:{d}", device="cpu").fingerprint == r.fingerprint  # the same files: the same key
    a, b = r.forward_with_attention(IMG, "is it red?"), vilt.forward_with_attention(IMG, "is it red?")
    np.testing.assert_allclose(a.outputs["logits"], b.outputs["logits"], atol=1e-5)
    np.testing.assert_allclose(a.attentions, b.attentions, atol=1e-5)


# ---- grounding ----------------------------------------------------------------------------------------

def _owl_config(kind):
    from transformers import Owlv2Config, OwlViTConfig

    cls = {"owlvit": OwlViTConfig, "owlv2": Owlv2Config}[kind]
    return cls(text_config=dict(COMMON, vocab_size=300, max_position_embeddings=16, bos_token_id=256,
                                eos_token_id=257, pad_token_id=257),
               vision_config=dict(COMMON, image_size=32, patch_size=8), projection_dim=32)


def _dino_config():
    from transformers import BertConfig, GroundingDinoConfig, SwinConfig

    bb = SwinConfig(image_size=64, patch_size=4, embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 1, 2, 2],
                    window_size=4, out_features=["stage2", "stage3", "stage4"])
    tc = BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
                    max_position_embeddings=64)
    return GroundingDinoConfig(backbone_config=bb, text_config=tc, d_model=32, encoder_layers=1, decoder_layers=2,
                               encoder_ffn_dim=37, decoder_ffn_dim=37, encoder_attention_heads=4,
                               decoder_attention_heads=4, num_queries=10, num_feature_levels=3, encoder_n_points=2,
                               decoder_n_points=2, max_text_len=32, use_timm_backbone=False,
                               use_pretrained_backbone=False)


@pytest.mark.parametrize("kind", ["owlvit", "owlv2"])
def test_owl_grounding(kind):
    from robustlab.models.hf_grounding import HFGroundingModel

    m = HFGroundingModel.from_config(_owl_config(kind), device="cpu")
    assert m.kind == kind and m.info().random_init is True and isinstance(m, GroundingModel)
    img = RNG.integers(0, 256, (40, 64, 3), dtype=np.uint8)
    scores, boxes = m.scores_and_boxes(img, "the red cube")
    assert scores.shape == (16,) and boxes.shape == (16, 4)  # (32/8)^2 patch boxes
    box = m.ground(img, "the red cube")
    assert isinstance(box, Box) and 0 <= box.x0 <= box.x1 <= 64 and 0 <= box.y0 <= box.y1 <= 40
    assert box.score == pytest.approx(float(scores.max()), abs=1e-6)
    # the pixel conversion agrees with transformers' own post-processing (OWLv2: boxes are relative to the padded
    # square, so the target size is max(H, W) on both sides)
    text, pix = m._text("the red cube"), m._pixels(img)
    with torch.inference_mode():
        out = m.model(**text, **pix)
    target = [(64, 64)] if kind == "owlv2" else [(40, 64)]
    ref = m.image_processor.post_process_object_detection(out, threshold=-1.0, target_sizes=target)[0]
    i = int(ref["scores"].argmax())
    ref_box = np.clip(ref["boxes"][i].numpy(), 0, [64, 40, 64, 40])
    np.testing.assert_allclose(box.as_tuple(), ref_box, atol=1e-3)


def test_grounding_dino_tiny():
    from robustlab.models.hf_grounding import HFGroundingModel

    m = HFGroundingModel.from_config(_dino_config(), device="cpu")
    img = RNG.integers(0, 256, (50, 90, 3), dtype=np.uint8)
    scores, boxes = m.scores_and_boxes(img, "The red cube")
    assert scores.shape == (10,) and boxes.shape == (10, 4) and ((scores >= 0) & (scores <= 1)).all()
    box = m.ground(img, "The red cube")
    assert 0 <= box.x0 <= box.x1 <= 90 and 0 <= box.y0 <= box.y1 <= 50
    np.testing.assert_allclose(m.ground(img, "The red cube").as_tuple(), box.as_tuple())


def test_box_iou():
    a = Box(0, 0, 10, 10, 0.9)
    assert a.iou(a) == 1.0 and a.iou((10, 10, 20, 20)) == 0.0
    assert a.iou(Box(5, 0, 15, 10)) == pytest.approx(50 / 150)


# ---- X-CLIP -------------------------------------------------------------------------------------------

def _xclip_config():
    from transformers import XCLIPConfig

    return XCLIPConfig(
        text_config=dict(COMMON, vocab_size=300, max_position_embeddings=32, bos_token_id=256, eos_token_id=257,
                         pad_token_id=257),
        vision_config=dict(COMMON, image_size=32, patch_size=8, num_frames=4, mit_hidden_size=32,
                           mit_intermediate_size=37, mit_num_hidden_layers=1, mit_num_attention_heads=4),
        projection_dim=32, prompt_layers=1, prompt_attention_heads=4, prompt_projection_dim=32)


def test_sample_frames_and_as_frames():
    v = np.arange(10)[:, None, None, None] * np.ones((1, 2, 2, 3), np.uint8)
    np.testing.assert_array_equal(sample_frames(v, 4)[:, 0, 0, 0], [1, 3, 6, 8])
    np.testing.assert_array_equal(sample_frames(v[:2], 4)[:, 0, 0, 0], [0, 0, 1, 1])
    assert len(as_frames(IMG)) == 1 and len(as_frames(np.stack([IMG] * 3))) == 3


def test_xclip_video_retrieval():
    from robustlab.models.hf_video import HFXClipModel

    m = HFXClipModel.from_config(_xclip_config(), device="cpu")
    assert m.info().random_init is True and m.num_frames == 4 and m.embed_dim == 32
    vids = [RNG.integers(0, 256, (t, 40, 48, 3), dtype=np.uint8) for t in (2, 7, 12)]
    e = m.encode_videos(vids)
    assert e.shape == (3, 32) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(m.encode_videos(vids, batch_size=1), e, atol=1e-5)
    t = m.encode_texts(["a cat jumps", "", "A DOG"])
    assert t.shape == (3, 32) and m.similarity(t, e).shape == (3, 3)
    assert m.encode_images([IMG, IMG[:, :, :1].repeat(3, 2)]).shape == (2, 32)
    # the same numbers as the raw model on the uniformly sampled frames
    clip = m.preprocess_video(vids[1])
    assert clip.shape == (4, 3, 32, 32)
    with torch.inference_mode():
        raw = m._video_features(clip[None])
    np.testing.assert_allclose(e[1], (raw / raw.norm(dim=-1, keepdim=True))[0].numpy(), atol=1e-5)
    assert m.video_text_scores(vids[:2], ["a", "b", "c"]).shape == (2, 3)


# ---- specs and offline --------------------------------------------------------------------------------

def test_task_specs_parse():
    assert parse_spec("hf-vilt:dandelin/vilt-b32-finetuned-vqa") == ("hf-vilt", "dandelin/vilt-b32-finetuned-vqa")
    assert parse_spec("hf-grounding:google/owlv2-base-patch16-ensemble")[0] == "hf-grounding"
    assert parse_spec("hf-xclip:microsoft/xclip-base-patch32")[0] == "hf-xclip"
    assert parse_spec("hf:openai/clip-vit-base-patch32")[0] == "hf"  # unchanged


@pytest.mark.parametrize("spec", ["hf-vilt:dandelin/vilt-b32-finetuned-vqa", "hf-grounding:google/owlvit-base-patch32",
                                  "hf-grounding:IDEA-Research/grounding-dino-tiny",
                                  "hf-xclip:microsoft/xclip-base-patch32"])
def test_task_backends_offline_fail_fast(offline, spec):
    t0 = time.monotonic()
    with pytest.raises(ModelUnavailable) as ei:
        load_model(spec, device="cpu")
    assert time.monotonic() - t0 < 20
    msg = str(ei.value)
    assert "\n" not in msg and spec in msg and "HF_HUB_OFFLINE" in msg and OFFLINE_ALTERNATIVES in msg


def test_task_backends_bad_local_folder(tmp_path):
    with pytest.raises(ModelUnavailable, match="no such local folder"):
        load_model("hf-vilt:./no/such/folder")
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(ModelUnavailable, match="not supported"):
        load_model(f"hf-grounding:{tmp_path}")


def _save(m, d):
    m.model.save_pretrained(d)
    m.tokenizer.save_pretrained(d)
    m.image_processor.save_pretrained(d)
    return d


@pytest.mark.parametrize("kind", ["owlv2", "grounding-dino"])
def test_grounding_local_folder_roundtrip(kind, tmp_path):
    """The real loading path (AutoConfig -> model class by model_type, image processor, tokenizer)."""
    from robustlab.models.hf_grounding import HFGroundingModel

    m = HFGroundingModel.from_config(_dino_config() if kind == "grounding-dino" else _owl_config(kind), device="cpu")
    r = load_model(f"hf-grounding:{_save(m, tmp_path / kind)}", device="cpu")
    assert r.kind == kind and r.random_init is False
    img = RNG.integers(0, 256, (50, 70, 3), dtype=np.uint8)
    np.testing.assert_allclose(r.ground(img, "a red cube").as_tuple(), m.ground(img, "a red cube").as_tuple(),
                               atol=1e-3)


def test_xclip_local_folder_roundtrip(tmp_path):
    from robustlab.models.hf_video import HFXClipModel

    m = HFXClipModel.from_config(_xclip_config(), device="cpu")
    r = load_model(f"hf-xclip:{_save(m, tmp_path / 'xclip')}", device="cpu")
    assert r.backend == "hf-xclip" and r.random_init is False
    vids = [RNG.integers(0, 256, (5, 40, 48, 3), dtype=np.uint8)]
    np.testing.assert_allclose(r.encode_videos(vids), m.encode_videos(vids), atol=1e-5)
    np.testing.assert_allclose(r.encode_texts(["a cat"]), m.encode_texts(["a cat"]), atol=1e-5)


def test_availability_offline_and_local(offline, tmp_path):
    from robustlab.models.registry import KNOWN_MODELS, availability

    for specs in KNOWN_MODELS.values():
        for spec in specs:
            ok, why = availability(spec)
            assert not ok and "HF_HUB_OFFLINE" in why
    d = tmp_path / "m"
    d.mkdir()
    assert availability(f"hf-vilt:{d}")[0] is False
    (d / "config.json").write_text('{"model_type": "vilt"}')
    assert availability(f"hf-vilt:{d}") == (True, "local folder")
    assert parse_spec(str(d)) == ("hf-vilt", str(d))  # a bare local folder is routed by its model_type
