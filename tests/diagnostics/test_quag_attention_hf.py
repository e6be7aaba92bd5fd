"""QUAG-attention (Rawal et al. §2.4) on the transformers ViLT backend (hf-vilt), checked on a random-init ViLT of
the real architecture (plumbing only: the numbers are not results): one layer against the definition, the whole
model's recorded attention, a layer range, and the refusal where it cannot apply (the NLVR2 head)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from robustlab.diagnostics import quag as Q
from robustlab.models import interventions as I
from vilt_helpers import _random_vilt

IMG = np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)


@pytest.mark.parametrize("mode", list(Q.QUAG_ATTENTION_MODES))
def test_one_vilt_layer_is_the_mean_key_n_times(mode):
    """Additive QUAG-attention in one ViltSelfAttention equals full attention whose averaged block's keys and values
    all come from the block's mean input (the paper's proportional attention), with padded keys masked; the
    recorded N × N attention mixes the original values into the same context."""
    from robustlab.models.attention import AttentionRecorder
    from robustlab.models.hf_fusion import _vilt_attention_forward

    model = _random_vilt()
    mod = model._self_attentions()[1]
    rng = np.random.default_rng(1)
    B, nt, nv, D = 2, 6, 9, mod.all_head_size
    x = torch.as_tensor(rng.normal(size=(B, nt + nv, D)), dtype=torch.float32)
    valid = np.ones((B, nt + nv), bool)
    valid[0, 4:nt] = False  # padded text in sample 0
    valid[1, nt + 7:] = False  # padded patches in sample 1
    lay = Q.TokenLayout(text=(0, nt), visual=(nt, nt + nv), valid=valid)
    qa = Q.QuagAttention(mode)
    rec = AttentionRecorder(model.n_layers, qa, lay)
    with torch.no_grad():
        got = _vilt_attention_forward(mod, 1, rec)(x, None)[0]
        xk = x.clone()
        for name, (a, b) in (("text", lay.text), ("visual", lay.visual)):
            if name in qa.averaged:
                m = torch.as_tensor(valid[:, a:b], dtype=torch.float32)[..., None]
                xk[:, a:b] = (x[:, a:b] * m).sum(1, keepdim=True) / m.sum(1, keepdim=True)
        h, dh = model.n_heads, mod.attention_head_size
        q = mod.query(x).view(B, -1, h, dh).transpose(1, 2)
        k = mod.key(xk).view(B, -1, h, dh).transpose(1, 2)
        v = mod.value(xk).view(B, -1, h, dh).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        s = s.masked_fill(torch.as_tensor(~valid)[:, None, None, :], float("-inf"))
        want = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, -1, D)
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)
        full = rec.probs[1]
        v_full = mod.value(x).view(B, -1, h, dh).transpose(1, 2)
        torch.testing.assert_close((full @ v_full).transpose(1, 2).reshape(B, -1, D), got, atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(full.sum(-1), torch.ones_like(full.sum(-1)), atol=1e-5, rtol=0)
        assert float(full[0][..., 4:nt].abs().sum()) == 0.0 and float(full[1][..., nt + 7:].abs().sum()) == 0.0


def test_whole_model_records_the_averaged_blocks_and_a_layer_range():
    model = _random_vilt()
    base = model.forward_with_attention(IMG, "is it red?", pad_to=20)
    lay = Q.TokenLayout.from_model(base.layout)
    valid = lay.valid
    t = np.zeros(len(valid), bool)
    t[lay.text[0]:lay.text[1]] = True
    vis = np.zeros(len(valid), bool)
    vis[lay.visual[0]:lay.visual[1]] = True
    for mode in Q.QUAG_ATTENTION_MODES:
        cap = model.forward_with_attention(IMG, "is it red?", pad_to=20, replace=Q.QuagAttention(mode))
        a = cap.attentions  # L × H × N × N: the equivalent full attention each layer used
        np.testing.assert_allclose(a.sum(-1)[:, :, valid], 1.0, atol=1e-5)
        assert (~valid).sum() > 0 and np.abs(a[..., ~valid]).max() == 0.0  # padded keys get nothing
        for block, name in ((vis, "visual"), (t, "text")):
            cols = a[..., block & valid]
            spread = cols.max(-1) - cols.min(-1)  # an averaged block: one weight shared by its valid keys
            if name in Q.QUAG_ATTENTION_MODES[mode]:
                assert spread.max() < 1e-6, (mode, name)
            else:
                assert spread.max() > 1e-4, (mode, name)
        assert not np.allclose(cap.outputs["logits"], base.outputs["logits"], atol=1e-6)
    one = model.forward_with_attention(IMG, "is it red?", pad_to=20,
                                       replace=Q.QuagAttention("video-avg", layers=[1]))
    np.testing.assert_array_equal(one.attentions[0], base.attentions[0])  # layer 0 untouched (an extra)
    assert not np.allclose(one.attentions[1], base.attentions[1])


def test_hf_vilt_takes_the_intervention_and_the_nlvr2_head_refuses_in_one_line():
    from transformers import ViltConfig

    from robustlab.models.hf_fusion import HFViltModel

    vqa = _random_vilt()
    assert vqa.supports_quag_attention and vqa.quag_attention_refusal is None
    assert I.check("quag-attention:text-video-avg/multiplicative", vqa).variant == "multiplicative"
    base = vqa.vqa(IMG, "is it red?")[1]
    with I.applied(vqa, I.as_condition("quag-attention:video-avg")) as m:
        ablated = m.vqa(IMG, "is it red?")[1]
    assert ablated != base and vqa.vqa(IMG, "is it red?")[1] == base  # nothing left behind
    cfg = ViltConfig(hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=4, image_size=32,
                     patch_size=8, max_position_embeddings=40, vocab_size=300)
    nlvr2 = HFViltModel.from_config(cfg, head="nlvr2", device="cpu")
    assert not nlvr2.supports_quag_attention
    with pytest.raises(I.InterventionError, match="NLVR2 head") as e:
        I.check("quag-attention:video-avg", nlvr2)
    assert "\n" not in str(e.value)
    assert I.check("quag:crossmodal", nlvr2).spec == "quag:crossmodal"  # the short-circuits are not refused here
