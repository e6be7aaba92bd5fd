"""QUAG (Rawal et al.): the operator R / φ on attention tensors, its invariants, and Φ through the fusion models' hooks
(tiny-vilt and a random-init transformers ViLT)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from robustlab.diagnostics import quag as Q
from robustlab.diagnostics.quag import PRESETS, QuagError, TokenLayout, apply
from vilt_helpers import _random_vilt, _tiny_vilt

ALL_SUBSETS = [frozenset(c) for r in range(1, 5) for c in itertools.combinations(Q.QUADRANTS, r)]


def _softmax_attention(rng, B, H, N, valid):
    """Post-softmax attention with padded keys masked out (as a fusion model computes it)."""
    logits = torch.as_tensor(rng.normal(size=(B, H, N, N)) * 2)
    v = torch.as_tensor(valid).reshape(-1, N)
    logits = logits.masked_fill(~v[:, None, None, :], float("-inf"))
    return torch.softmax(logits, -1)


def _layouts(rng, B, lt, lv, text_first=True):
    N = lt + lv
    valid = np.ones((B, N), bool)
    for b in range(B):
        nt, nv = rng.integers(1, lt + 1), rng.integers(1, lv + 1)
        t0, v0 = (0, lt) if text_first else (lv, 0)
        valid[b, t0 + nt:t0 + lt] = False
        valid[b, v0 + nv:v0 + lv] = False
    if text_first:
        return TokenLayout(text=(0, lt), visual=(lt, N), valid=valid)
    return TokenLayout(text=(lv, N), visual=(0, lv), valid=valid)


def test_paper_toy_example_fig4_unimodal():
    """Fig. 4's setting: L_V = 3 video tokens first, L_T = 2 text tokens, padding hatched; φ(Z, [TT, VV])."""
    Z = np.arange(1, 26, dtype=np.float64).reshape(5, 5)  # rows/cols: v0 v1 v2 t0 t1
    valid = np.array([True, True, False, True, False])  # v2 and t1 are padding
    lay = TokenLayout(text=(3, 5), visual=(0, 3), valid=valid)
    out = apply(Z, lay, "unimodal")
    want = Z.copy()
    for i in (0, 1):  # VV: valid video rows, mean over the valid video keys v0, v1
        want[i, [0, 1]] = Z[i, [0, 1]].mean()
    want[3, 3] = Z[3, 3]  # TT: the one valid text row over the one valid text key: its own value
    np.testing.assert_array_equal(out, want)
    # padded rows (v2, t1) and padded key columns are untouched
    np.testing.assert_array_equal(out[[2, 4]], Z[[2, 4]])
    np.testing.assert_array_equal(out[:, [2, 4]], Z[:, [2, 4]])


def test_presets_are_the_papers():
    assert PRESETS == {"unimodal": {"VV", "TT"}, "crossmodal": {"VT", "TV"}, "video": {"VV", "TV"},
                       "text": {"TT", "VT"}}
    assert Q.quadrant_set("VV, tt") == {"VV", "TT"} == Q.quadrant_set(["TT", "VV"])
    assert Q.quadrant_set(None) == frozenset() == Q.quadrant_set("")
    assert Q.preset_name({"TV", "VV"}) == "video" and Q.preset_name({"VV"}) is None
    assert set(Q.INPUT_BASELINES) == {"language-only", "video-only"}  # kept apart from the short-circuits
    with pytest.raises(QuagError, match="unknown quadrant or preset 'VX'"):
        Q.quadrant_set("VV,VX")


@pytest.mark.parametrize("text_first", [True, False])
def test_row_sums_padding_and_order_for_every_subset(text_first):
    rng = np.random.default_rng(0)
    B, H, lt, lv = 3, 2, 5, 7
    lay = _layouts(rng, B, lt, lv, text_first)
    A = _softmax_attention(rng, B, H, lt + lv, lay.valid)
    pad = torch.as_tensor(~lay.valid)
    for S in ALL_SUBSETS:
        out = apply(A, lay, S)
        torch.testing.assert_close(out.sum(-1), A.sum(-1), rtol=0, atol=1e-12)  # row sums kept
        for b in range(B):
            p = pad[b]
            assert torch.equal(out[b][:, p], A[b][:, p])  # padded rows untouched
            assert torch.equal(out[b][:, :, p], A[b][:, :, p])  # padded keys keep their 0
            assert float(out[b][:, :, p].abs().sum()) == 0.0
        # order irrelevant: applying the quadrants one at a time, in any order, gives the same
        for perm in itertools.permutations(sorted(S)):
            seq = A
            for code in perm:
                seq = apply(seq, lay, [code])
            torch.testing.assert_close(seq, out, rtol=0, atol=1e-15)


def test_empty_set_is_the_same_object_and_numpy_equals_torch():
    rng = np.random.default_rng(1)
    lay = _layouts(rng, 2, 4, 6)
    A = _softmax_attention(rng, 2, 3, 10, lay.valid)
    assert apply(A, lay, []) is A and apply(A, lay, None) is A
    an = A.numpy()
    for S in ALL_SUBSETS:
        np.testing.assert_array_equal(apply(an, lay, S), apply(A, lay, S).numpy())


def test_all_four_quadrants_uniform_over_each_modalitys_valid_keys():
    """R on all four quadrants: each valid row is constant over the valid keys of each modality, keeping the mass
    the row had put on that modality — so it is uniform over all valid keys exactly when that mass is proportional
    to the modality's count of valid keys (checked on such a row)."""
    rng = np.random.default_rng(2)
    B, H, lt, lv = 2, 2, 4, 6
    lay = _layouts(rng, B, lt, lv)
    A = _softmax_attention(rng, B, H, lt + lv, lay.valid)
    out = apply(A, lay, set(Q.QUADRANTS))
    t, v = lay.masks(B, lt + lv)
    for b in range(B):
        for m in (np.array(t[b]), np.array(v[b])):
            seg = out[b][:, :, torch.as_tensor(m)][:, torch.as_tensor(lay.valid[b])]
            assert torch.allclose(seg, seg[..., :1].expand_as(seg), rtol=0, atol=1e-15)
            torch.testing.assert_close(seg.sum(-1), A[b][:, :, torch.as_tensor(m)][:, torch.as_tensor(
                lay.valid[b])].sum(-1), rtol=0, atol=1e-12)
    # a row that put mass proportional to the counts comes out uniform over all its valid keys
    valid = np.array([True, True, False, True, True, True])
    lay1 = TokenLayout(text=(0, 3), visual=(3, 6), valid=valid)
    row = np.array([0.3, 0.1, 0.0, 0.5, 0.05, 0.05])  # 0.4 on 2 text keys, 0.6 on 3 visual keys
    out1 = apply(np.tile(row, (6, 1)), lay1, "VV,VT,TV,TT")
    np.testing.assert_allclose(out1[0], [0.2, 0.2, 0.0, 0.2, 0.2, 0.2], atol=1e-15)


def test_batch_uses_each_samples_valid_mask():
    rng = np.random.default_rng(3)
    B, lt, lv = 4, 5, 5
    lay = _layouts(rng, B, lt, lv)
    A = _softmax_attention(rng, B, 2, lt + lv, lay.valid)
    out = apply(A, lay, "crossmodal")
    for b in range(B):
        one = TokenLayout(text=lay.text, visual=lay.visual, valid=lay.valid[b])
        torch.testing.assert_close(out[b:b + 1], apply(A[b:b + 1], one, "crossmodal"), rtol=0, atol=0)


def test_bad_layouts_are_clear_errors():
    A = torch.full((1, 1, 6, 6), 1 / 6)
    with pytest.raises(QuagError, match="overlap"):
        TokenLayout(text=(0, 4), visual=(3, 6))
    with pytest.raises(QuagError, match="spans 8 positions but the attention has 6"):
        apply(A, TokenLayout(text=(0, 4), visual=(4, 8)), "unimodal")
    with pytest.raises(QuagError, match="queries = keys"):
        apply(torch.ones(1, 1, 4, 6), TokenLayout(text=(0, 2), visual=(2, 6)), "unimodal")
    with pytest.raises(QuagError, match="batch of 3"):
        apply(A.expand(2, 1, 6, 6), TokenLayout(text=(0, 3), visual=(3, 6), valid=np.ones((3, 6), bool)), "text")
    with pytest.raises(QuagError, match="not a span"):
        TokenLayout(text=(3, 1), visual=(3, 6))


def test_multiplication_counts():
    m = Q.multiplications(20, 20, 512, 2048, mode="text-video-avg", scope="core")
    L, d = 40, 512
    assert m["standard"] == 2 * L * d * d + 2 * L * L * d and m["keys"] == 2
    assert m["quag_attention"] == 2 * 2 * d * d + 2 * L * 2 * d
    assert m["saving"] == pytest.approx(0.95, abs=0.01)  # the digest's ~95% for the core scope
    assert Q.multiplications(20, 20, 512, 2048, scope="attention")["saving"] == pytest.approx(0.49, abs=0.01)
    assert Q.multiplications(20, 20, 512, 2048, scope="layer")["saving"] == pytest.approx(0.17, abs=0.01)
    with pytest.raises(QuagError):
        Q.multiplications(2, 2, 8, mode="audio")


# ---- Φ on real fusion models ----------------------------------------------------------------------------

def _check_phi(model, image, text, pad_to=None):
    kw = {"pad_to": pad_to} if pad_to else {}
    base = model.forward_with_attention(image, text, **kw)
    empty = model.forward_with_attention(image, text, replace=Q.replace_fn([]), **kw)
    np.testing.assert_array_equal(empty.attentions, base.attentions)  # S = ∅: bit-identical to no hook
    for k, v in base.outputs.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(empty.outputs[k], v)
    lay = TokenLayout.from_model(base.layout)
    for name in PRESETS:
        cap = model.forward_with_attention(image, text, replace=Q.replace_fn(name), **kw)
        a = torch.as_tensor(cap.attentions)  # L × H × N × N, what each layer used
        np.testing.assert_allclose(cap.attentions.sum(-1)[:, :, lay.valid], 1.0, atol=1e-5)
        np.testing.assert_allclose(apply(a, lay, name).numpy(), cap.attentions, atol=1e-7)  # each layer replaced
    # a layer range (an extra): only that layer is replaced
    one = model.forward_with_attention(image, text, replace=Q.replace_fn("crossmodal", layers=[0]), **kw)
    assert not np.allclose(one.attentions[0], base.attentions[0])
    np.testing.assert_allclose(apply(torch.as_tensor(one.attentions[0][None]), lay, "crossmodal")[0].numpy(),
                               one.attentions[0], atol=1e-7)
    return base, lay


def test_phi_on_tiny_vilt():
    from robustlab.datasets.synthetic import world

    model = _tiny_vilt()
    img = world.render_scene(world.sample_scene(1000, 3), 128)
    base, lay = _check_phi(model, img, "is there a red circle?")
    assert lay.order == "text-first" and lay.text[0] == 0  # [CLS] is a text token in ViLT-style models
    assert base.layout.special[0] == "[CLS]" and base.layout.modality[0] == "text"
    frames = world.render_video(world.sample_video(1000, 1), 64)
    _check_phi(model, frames, "what happens first?")


def test_phi_on_random_init_transformers_vilt():
    model = _random_vilt()
    img = np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)
    base, lay = _check_phi(model, img, "is it red?", pad_to=16)
    assert lay.order == "text-first" and (~lay.valid).sum() > 0  # padded text in the layout
    assert "[IMG_CLS]" in set(base.layout.special[lay.visual[0]:lay.visual[1]])  # ViLT's image CLS is visual


# ---- QUAG-attention ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(Q.QUAG_ATTENTION_MODES))
def test_quag_attention_additive_is_the_mean_key_n_times(mode):
    """One tiny-vilt layer: additive QUAG-attention equals full attention whose averaged block's keys and values
    all come from the block's mean input (the paper's 'proportional attention'); the recorded N × N attention mixes
    the original values into the same output."""
    import math

    from robustlab.models.attention import AttentionRecorder

    model = _tiny_vilt()
    layer = model.net.layers[1]
    rng = np.random.default_rng(0)
    B, nt, nv, D = 2, 6, 9, layer.qkv.in_features
    x = torch.as_tensor(rng.normal(size=(B, nt + nv, D)), dtype=torch.float32)
    valid = np.ones((B, nt + nv), bool)
    valid[0, 4:nt] = False  # padded text in sample 0
    lay = TokenLayout(text=(0, nt), visual=(nt, nt + nv), valid=valid)
    qa = Q.QuagAttention(mode)
    rec = AttentionRecorder(len(model.net.layers), qa, lay)
    with torch.no_grad():
        got = layer(x, torch.as_tensor(~valid), rec, 1)
        y = layer.ln1(x)
        yk = y.clone()
        for name, (a, b) in (("text", lay.text), ("visual", lay.visual)):
            if name in qa.averaged:
                m = torch.as_tensor(valid[:, a:b], dtype=torch.float32)[..., None]
                yk[:, a:b] = ((y[:, a:b] * m).sum(1, keepdim=True) / m.sum(1, keepdim=True))
        h, dh = layer.heads, D // layer.heads
        q = layer.qkv(y)[..., :D].view(B, -1, h, dh).transpose(1, 2)
        kv = layer.qkv(yk)[..., D:].view(B, -1, 2, h, dh).permute(2, 0, 3, 1, 4)
        s = (q @ kv[0].transpose(-1, -2)) / math.sqrt(dh)
        s = s.masked_fill(torch.as_tensor(~valid)[:, None, None, :], float("-inf"))
        ctx = (torch.softmax(s, -1) @ kv[1]).transpose(1, 2).reshape(B, -1, D)
        want = x + layer.out(ctx)
        want = want + layer.mlp(layer.ln2(want))
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)
        full = rec.probs[1]  # the equivalent N × N attention: it mixes the original values into the same context
        v_full = layer.qkv(y)[..., 2 * D:].view(B, -1, h, dh).transpose(1, 2)
        torch.testing.assert_close((full @ v_full).transpose(1, 2).reshape(B, -1, D), ctx, atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(full.sum(-1), torch.ones_like(full.sum(-1)), atol=1e-5, rtol=0)
        assert float(full[0][..., 4:nt].abs().sum()) == 0.0  # padded keys get nothing


def test_quag_attention_multiplicative_and_bad_modes():
    qa = Q.QuagAttention("video-avg", "multiplicative")
    scores = torch.zeros(1, 1, 3, 3)
    sizes = torch.tensor([[1.0, 0.0, 4.0]])
    cols = [("token", 0), ("token", 1), ("mean", (2, 6), torch.ones(1, 4))]
    scores[..., 2] = 2.0
    out = qa.correct(scores, sizes, cols)
    assert torch.allclose(out[..., 2], torch.full((1, 1, 3), 2.0 * math.log(4)))
    assert torch.isinf(out[..., 1]).all() and (out[..., 0] == 0).all()
    with pytest.raises(QuagError, match="unknown QUAG-attention mode"):
        Q.QuagAttention("audio-avg")
    with pytest.raises(QuagError, match="unknown size correction"):
        Q.QuagAttention("video-avg", "exp")


# ---- interventions never leak between callers ---------------------------------------------------------------

def _concurrent(model, image, question, answers_of):
    """Two threads on the one model, each inside its own intervention, overlapping; each must get the answer it
    gets alone."""
    import threading

    alone = {name: answers_of(model, image, question, rep) for name, rep in
             (("none", None), ("crossmodal", Q.replace_fn("crossmodal")), ("text", Q.replace_fn("text")))}
    assert len({repr(v) for v in alone.values()}) > 1  # the ablations change the output at all
    got, errors = {}, []
    barrier = threading.Barrier(3)

    def run(name, rep):
        try:
            barrier.wait(timeout=30)
            for _ in range(5):  # answers_of enters intervention(rep) in this thread
                got.setdefault(name, []).append(answers_of(model, image, question, rep))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    reps = {"none": None, "crossmodal": Q.replace_fn("crossmodal"), "text": Q.replace_fn("text")}
    threads = [threading.Thread(target=run, args=(n, r)) for n, r in reps.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for name, outs in got.items():
        for o in outs:
            np.testing.assert_allclose(o, alone[name], atol=1e-5, err_msg=name)


def _scores(model, image, question, rep):
    from robustlab.models.attention import intervention

    with intervention(rep):
        cap = model.forward_with_attention(image, question)
    return np.asarray(cap.outputs.get("vqa_logits", cap.outputs.get("logits")), np.float64)


def test_interventions_do_not_leak_between_threads_tiny_vilt():
    from robustlab.datasets.synthetic import world

    model = _tiny_vilt()
    img = world.render_scene(world.sample_scene(1000, 3), 128)

    def batched(model, image, question, rep):
        from robustlab.models.attention import intervention

        with intervention(rep):
            return np.array(list(model.vqa_batch([image] * 3, [question] * 3)[0][1].values()))

    _concurrent(model, img, "is there a red circle?", batched)
    _concurrent(model, img, "is there a red circle?", _scores)


def test_interventions_do_not_leak_between_threads_hf_vilt():
    model = _random_vilt()
    img = np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)
    _concurrent(model, img, "is it red?", _scores)
    # per-call replace= too (patching the modules per call had one thread's forward run another's hooks:
    # "no attention recorded for layers [0, 1]" in the thread that lost them)
    _concurrent(model, img, "is it red?", lambda m, i, q, rep: np.asarray(
        m.forward_with_attention(i, q, replace=rep).outputs["logits"], np.float64))


def test_mmi_worked_number_and_errors():
    import robustlab as rl

    assert rl.metrics.mmi(89.3, 68.0) == pytest.approx(0.2385, abs=5e-5)  # the digest's worked number
    assert rl.metrics.mmi(0.893, 0.680) == pytest.approx(rl.metrics.mmi(89.3, 68.0))  # unit-free
    np.testing.assert_allclose(rl.metrics.mmi(0.5, [0.5, 0.25, 0.0]), [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="original accuracy is 0"):
        rl.metrics.mmi(0, 0.1)
    with pytest.raises(ValueError, match="must be a number"):
        rl.metrics.mmi("high", 0.1)


def test_rank_diagnostic_lemma_2_2_on_random_and_padded_attention():
    """Rawal et al. Lemma 2.2: the video short-circuit leaves rank ≤ l_T + 2, the text one ≤ l_V + 2."""
    import numpy as np

    from robustlab.diagnostics import quag

    rng = np.random.default_rng(0)
    a = rng.random((30, 30))
    valid = np.ones(30, bool)
    valid[[8, 9, 28, 29]] = False  # padding in both spans
    a[:, ~valid] = 0
    a /= a.sum(1, keepdims=True)
    lay = quag.TokenLayout(text=(0, 10), visual=(10, 30), valid=valid)
    r = quag.rank_diagnostic(a, lay, ("video", "text", "crossmodal"))
    assert (r["l_text"], r["l_visual"]) == (8, 18)
    assert r["baseline"]["rank"] == 26  # a random matrix over the 26 valid positions
    assert r["video"]["bound"] == 10 and r["video"]["holds"] and r["video"]["rank"] <= 10
    assert r["text"]["bound"] == 20 and r["text"]["holds"] and r["text"]["rank"] <= 20
    assert r["crossmodal"]["bound"] is None and r["crossmodal"]["holds"] is None
    sv = r["baseline"]["singular_values"]
    assert len(sv) == 26 and sv == sorted(sv, reverse=True)
    with pytest.raises(quag.QuagError, match="one N × N"):
        quag.rank_diagnostic(a[None], lay)


def test_rank_bound_holds_on_every_tiny_vilt_layer():
    from robustlab.datasets.synthetic import world
    from robustlab.diagnostics import quag

    img = world.render_scene(world.sample_scene(1000, 3), 128)
    cap = _tiny_vilt().forward_with_attention(img, "is there a red circle?")
    lay = quag.TokenLayout.from_model(cap.layout)
    for layer in range(cap.n_layers):
        for head in range(cap.n_heads):
            r = quag.rank_diagnostic(cap.attentions[layer][head], lay)
            assert r["video"]["holds"] and r["text"]["holds"], (layer, head, r["video"]["rank"], r["text"]["rank"])
