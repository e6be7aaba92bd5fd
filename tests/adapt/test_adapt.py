"""robustlab.adapt: every loss against a direct implementation of its formula, the memories, LayerNorm-only
updates on a copy (the model passed in never changes), resets, determinism, the cache, and the hub backends'
towers on random-init models (plumbing only)."""
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from adapt_fixtures import seq_fixture, videos_fixture  # noqa: F401 (the fixtures seq and videos)

from robustlab import adapt
from robustlab.adapt import losses as L
from robustlab.adapt.towers import AdaptError, tower_for


def _unit(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(*shape, generator=g), dim=-1)


# ---- losses against their formulas ------------------------------------------------------------------------------
def test_tent_is_the_mean_softmax_entropy_over_the_gallery():
    s = torch.randn(5, 7, generator=torch.Generator().manual_seed(1)) * 0.1
    want = 0.0
    for row in s:
        p = [math.exp(v / 0.02) for v in row.tolist()]
        z = sum(p)
        want += -sum(pi / z * math.log(pi / z) for pi in p)
    assert L.tent_loss(s, 0.02).item() == pytest.approx(want / 5, rel=1e-5)


def test_uniformity_and_the_multigranular_version():
    x = _unit(6, 4, 8, seed=2)  # B × T × D frames
    t = 0.1
    # released cross_frame_uniform_loss, written out
    pooled = x.mean(1)
    inter = sum(math.exp(-torch.norm(pooled[i] - pooled.mean(0)).item() * t) for i in range(6)) / 6
    intra = 0.0
    for b in range(6):
        c = x[b].mean(0)
        intra += sum(math.exp(-torch.norm(x[b, f] - c).item() * t) for f in range(4)) / 4
    intra /= 6
    assert L.multigranular_uniformity(x, t).item() == pytest.approx(inter + intra, rel=1e-5)
    q = _unit(6, 8, seed=3)
    assert L.multigranular_uniformity(q, t).item() == pytest.approx(
        sum(math.exp(-torch.norm(q[i] - q.mean(0)).item() * t) for i in range(6)) / 6, rel=1e-5)
    assert L.uniformity(q, t).item() == pytest.approx(L.multigranular_uniformity(q, t).item())


def test_noise_robust_entropy_weights_and_threshold():
    q, g = _unit(8, 6, seed=4), _unit(8, 6, seed=5)
    logits = q @ g.t() / 0.02
    ent = [-(logits[i].softmax(0) * logits[i].log_softmax(0)).sum().item() for i in range(8)]
    thr = sorted(ent)[5]  # some entropies above the threshold are dropped
    kept = [(e, max(1 - e / (thr + 1e-3), 0.0)) for e in ent if e <= thr]
    want = sum(e * w for e, w in kept) / len(kept)
    got = L.noise_robust_entropy(q, g, torch.tensor(thr), 0.02)
    assert got.item() == pytest.approx(want, rel=1e-5)
    # frames: the frame mean enters (not re-normalised)
    qf = _unit(8, 3, 6, seed=6)
    assert L.noise_robust_entropy(qf, g, torch.tensor(thr)).item() == pytest.approx(
        L.noise_robust_entropy(qf.mean(1), g, torch.tensor(thr)).item())
    # no query under the threshold: 0 with a gradient path, not NaN
    z = L.noise_robust_entropy(q.requires_grad_(), g, torch.tensor(-1.0))
    assert z.item() == 0.0 and z.requires_grad


def test_modality_gap_and_the_multigranular_cross_modal_loss():
    v, t = _unit(5, 3, 6, seed=7), _unit(5, 6, seed=8)
    mv, mt = _unit(4, 6, seed=9), _unit(4, 6, seed=10)
    n = F.normalize
    gap = torch.norm(n(v.mean(1), dim=-1).mean(0) - t.mean(0)).item()
    mgap = torch.norm(mv.mean(0) - mt.mean(0)).item()
    c = torch.zeros(6, 6)
    for b in range(5):
        for f in range(3):
            c += torch.outer(v[b, f], t[b])
    c /= 15
    cm = sum(torch.outer(mv[r], mt[r]) for r in range(4)) / 4
    want = (gap - mgap) ** 2 + ((c - cm) ** 2).mean().item()
    assert L.cross_modal_multigranular(v, t, mv, mt).item() == pytest.approx(want, rel=1e-5)
    assert L.modality_gap(mv, mt).item() == pytest.approx(mgap, rel=1e-6)


def test_hubness_memory_equals_eq6_on_the_stacked_matrices_and_the_reranker():
    from robustlab.diagnostics.reduction import hsm

    rng = np.random.default_rng(0)
    s = rng.normal(0, 0.1, (5 * 4, 9)).astype(np.float32)
    mem = L.HubnessMemory(keep=2)
    rows = []
    for b in range(5):
        st = torch.from_numpy(s[b * 4:(b + 1) * 4])
        out = mem.refine(st)
        if b == 0:
            assert torch.equal(out, st)  # the first batch is returned unrefined
        else:
            prev = torch.from_numpy(s[max(0, b - 2) * 4:b * 4])
            want = L.hsm_weights(torch.cat([prev, st]))[-4:]
            assert torch.allclose(out, want, atol=1e-6)
        mem.push(st)
        rows.append(out.numpy())
        assert len(mem) <= 2
    # the same as the reranker of robustlab.diagnostics.reduction (K − 1 = 2 remembered batches)
    assert np.allclose(np.concatenate(rows), hsm(s, batch_size=4, memory=3), atol=1e-5)


def test_reliable_memory_selection_and_capacity():
    q = torch.tensor([[0.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, -2.0], [1.0, 1.0], [0.5, 0.0],
                      [0.0, 0.2], [0.1, 0.1], [2.0, 2.0], [0.0, 0.0]])
    g = _unit(10, 2, seed=11)
    rm = L.ReliableMemory(capacity=5, ratio=0.3)
    chosen = rm.update(q, g)
    div = torch.norm(q - q.mean(0), dim=1)
    assert chosen == torch.argsort(div, descending=True)[:3].tolist()
    rm.update(q * 2, g)
    rm.update(q * 3, g)
    assert len(rm) == 5 and [e.score for e in rm.entries] == sorted([e.score for e in rm.entries], reverse=True)
    tcr = L.ReliableMemory(capacity=3, ratio=0.3, rule="tcr")
    got = tcr.update(q, g)
    ind = 2 * torch.norm(q - g, dim=1) - div - torch.norm(g - g.mean(0), dim=1)
    assert got == torch.argsort(ind)[:3].tolist()
    assert len(tcr) == 3 and tcr.threshold().item() == max(e.entropy.item() for e in tcr.entries)


# ---- the loop on the built-in models -----------------------------------------------------------------------------
VIDEOS_N = 48  # the built-in videos of the fixture `videos` (tests/adapt/adapt_fixtures.py), with `seq`


def _params(model):
    return {k: v.detach().clone() for m in model.modules() for k, v in m.state_dict().items()}


@pytest.mark.parametrize("side", ["text", "visual"])
def test_only_layernorms_of_the_query_side_change_and_the_model_passed_in_never_does(seq, videos, side):
    from robustlab.tasks.retrieval_bench import RetrievalBench

    before, fp = _params(seq), seq.fingerprint
    tower = tower_for(seq, side, video=True)
    names = {n for n, _ in tower.norms}
    assert names and all(("text.seqtransf" in n) == (side == "text") for n in names)
    bench = RetrievalBench(seq, videos, lazy=True)
    inputs = bench.texts()[0][:16] if side == "text" else bench.visuals()[0][:16]
    opt = torch.optim.AdamW(tower.parameters(), lr=1e-2)
    prepared = tower.prepare(inputs)
    for _ in range(2):
        loss = L.tent_loss(tower.pool(tower.encode(prepared)) @ torch.from_numpy(bench.visuals()[2]).t()
                           if side == "text" else tower.pool(tower.encode(prepared))
                           @ torch.from_numpy(bench.texts()[2]).t())
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = tower.adapted.net.state_dict()
    changed = {k for k, v in after.items() if not torch.equal(v, before[k])}
    ln_keys = {f"{n[len('net.'):]}.{w}" for n in names for w in ("weight", "bias")}
    assert changed and changed <= ln_keys, changed - ln_keys
    assert all(torch.equal(v, before[k]) for k, v in _params(seq).items()) and seq.fingerprint == fp
    # the copy's fingerprint moved with its LayerNorms: it can never read the unadapted model's cache entries
    assert tower.adapted.fingerprint != fp


def test_a_run_resets_same_seed_same_numbers_and_reports(seq, videos):
    a = adapt.run(seq, videos, "hat-vtr", "t2v", "char_swap:3", steps=2)
    b = adapt.run(seq, videos, "hat-vtr", "t2v", "char_swap:3", steps=2)
    assert a.metrics == b.metrics and a.losses == b.losses
    assert np.array_equal(a.scores_adapted, b.scores_adapted)
    assert a.n_queries == len(videos.texts()) and a.adapted_parameters > 0
    assert {r["batch"] for r in a.losses} == set(range(math.ceil(a.n_queries / 16)))
    assert set(a.losses[0]) >= {"batch", "step", "loss", "na", "mguni", "mgcm"}
    assert a.params["lr"] == 3e-5 and a.params["capacity"] == 100 and a.params["memory"] == max(1, 48 // 10)
    assert a.metrics["shifted"] == adapt.run(seq, videos, "none", "t2v", "char_swap:3").metrics["adapted"]
    json.dumps(a.to_json())
    assert set(a.spread) == {"clean", "shifted", "adapted"} and all(-1 <= v <= 1 for v in a.spread.values())
    assert a.spread["shifted"] == pytest.approx(adapt.loop.mean_cosine(a.query_shifted))
    x = np.random.default_rng(0).normal(size=(5, 3))
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert adapt.loop.mean_cosine(x) == pytest.approx(((xn @ xn.T).sum() - 5) / 20, abs=1e-6)
    # tower state save / restore is exact
    t = tower_for(seq, "visual", video=True)
    s0 = t.state()
    with torch.no_grad():
        for p in t.parameters():
            p.add_(1.0)
    t.load_state(s0)
    assert all(torch.equal(v, s0[k]) for k, v in t.state().items())


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_every_method_runs_both_directions_and_hsm_uses_only_the_rerank(seq, videos):
    for d, c in (("v2t", "mlvp_fog:3"), ("t2v", "char_swap:3")):
        for m in ("tent", "tcr", "hat-vtr"):
            r = adapt.run(seq, videos, m, d, c, steps=1, keep_arrays=False)
            assert 0 <= r.metrics["adapted"]["R@1"] <= 1 and r.query_adapted is None
            assert all(np.isfinite(x["loss"]) for x in r.losses)
    # with the learning rate at 0 HAT-VTR is HSM's reranking alone
    from robustlab.diagnostics.reduction import hsm

    r = adapt.run(seq, videos, "hat-vtr", "v2t", "mlvp_fog:3", lr=0.0, steps=1)
    want = hsm(r.scores_shifted, batch_size=16, memory=r.params["memory"] + 1)
    assert np.allclose(r.scores_adapted, want, atol=1e-5)


def test_adapted_encoder_misses_the_clean_cache(seq, tmp_path):
    from robustlab.engine.cache import EmbeddingCache, cached_encode_texts

    cache = EmbeddingCache(tmp_path)
    texts = ["a red circle moves left", "a blue square grows"]
    cached_encode_texts(seq, texts, cache=cache)
    hits0 = cache.hits
    cached_encode_texts(seq, texts, cache=cache)
    assert cache.hits == hits0 + 2
    tower = tower_for(seq, "text", video=True)
    with torch.no_grad():
        for p in tower.parameters():
            p.mul_(1.01)
    misses0 = cache.misses
    emb = cached_encode_texts(tower.adapted, texts, cache=cache)
    assert cache.misses == misses0 + 2 and not np.allclose(emb, seq.encode_texts(texts))


def test_one_line_refusals(videos):
    import robustlab as rl

    clip = rl.load_model("builtin:tiny-clip")
    with pytest.raises(AdaptError, match="no LayerNorm on its image side"):
        adapt.run(clip, rl.datasets.build("builtin", n=8), "tent", "i2t", "gaussian_noise:3")
    with pytest.raises(AdaptError, match="no LayerNorm on its image side"):
        adapt.check(clip, "visual", video=False)  # the cheap pre-flight check: no copy
    adapt.check(clip, "text", video=False)
    seq = rl.load_model("builtin:tiny-clip-video-meanp")
    for kw, msg in ((dict(direction="t2i"), "direction must be t2v or v2t"),
                    (dict(method="nope"), "unknown adaptation method"),
                    (dict(lr="fast"), "lr must be a number"),
                    (dict(steps=0), "steps must be an integer"),
                    (dict(foo=1), "has no parameter foo"),
                    (dict(condition="gaussian_noise:3", direction="t2v"), "")):
        args = {"method": "tent", "direction": "t2v", "condition": "char_swap:2", **kw}
        if not msg:  # an image/video perturbation on text queries
            with pytest.raises(AdaptError):
                adapt.run(seq, videos, **args)
            continue
        with pytest.raises(AdaptError, match=msg):
            adapt.run(seq, videos, **args)
    methods = adapt.list_methods()
    assert [m["name"] for m in methods] == ["none", "tent", "tcr", "hat-vtr", "read", "sar", "eata", "oracle"]
    assert [m["name"] for m in methods if m["diagnostic"]] == ["oracle"]  # uses the ground truth: kept apart


# ---- hub backends (random init: plumbing only) --------------------------------------------------------------------
def _tiny_hf_config():
    from transformers import CLIPConfig

    common = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4)
    return CLIPConfig(text_config=dict(common, vocab_size=300, max_position_embeddings=32, bos_token_id=256,
                                       eos_token_id=257, pad_token_id=257),
                      vision_config=dict(common, image_size=32, patch_size=8), projection_dim=16)


def _hub_models():
    from robustlab.models import load_model
    from robustlab.models.hf_backend import HFClipModel

    yield "hf", HFClipModel.from_config(_tiny_hf_config(), device="cpu")
    yield "open_clip", load_model("open_clip:ViT-B-32", device="cpu")


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_hub_towers_adapt_layernorms_only_on_random_init_models():
    from robustlab.datasets.base import InMemoryDataset

    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (40, 40, 3), dtype=np.uint8) for _ in range(6)]
    ds = InMemoryDataset(imgs, [f"caption number {i}" for i in range(6)], name="tiny")
    for name, model in _hub_models():
        before = _params(model)
        for side, direction in (("text", "t2i"), ("visual", "i2t")):
            tower = tower_for(model, side, video=False)
            assert tower.norms and all(isinstance(ln, torch.nn.LayerNorm) for _, ln in tower.norms)
            vis = any(k in n for n, _ in tower.norms for k in ("visual", "vision_model"))
            assert vis == (side == "visual"), (name, side)
            r = adapt.run(model, ds, "tent", direction, "keyboard:2" if side == "text" else "gaussian_noise:3",
                          lr=1e-2, steps=1, batch_size=4)
            assert r.adapted_parameters == tower.n_parameters() and r.adapted_fingerprint != r.model_fingerprint
        assert all(torch.equal(v, before[k]) for k, v in _params(model).items()), name
