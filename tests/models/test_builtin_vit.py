"""The tiny ViT CLIP family (issue 27): builtin:tiny-vit-clip and builtin:tiny-vit-clip-video-meanp / -seqtransf.

What the issue asks of the organism, checked on fresh held-out items (the full 1,000-item tables are
benchmarks/bench_heldout_builtins.py's, in docs/benchmarks.md and docs/model-history.md): a LayerNorm vision
transformer (no BatchNorm), good on clean data, degrading gradually (severity 1 keeps at least half of clean R@1 and
severity 5 is lower), and for video, seqTransf reads order where meanP cannot. Test-time adaptation reaches the
ViT's own LayerNorms.
"""
import numpy as np
import pytest
import torch
from torch import nn

import robustlab as rl
from robustlab.adapt.towers import tower_for
from robustlab.models.builtin_vit import TINY_VIT_CLIP_CONFIG
from robustlab.perturb.condition import Condition
from robustlab.tasks.registry import get

IMAGE = "builtin:tiny-vit-clip"
CLEAN_300 = 0.90  # held-out clean t2i R@1: 0.955 on 1,000 scenes of world 1000, 0.966 on 1,000 of world 2027
CLEAN_VIDEO_200 = 0.80  # seqTransf t2v R@1 on 1,000 held-out videos at 64 px: 0.885 (meanP 0.641); 128 px: 0.892
MEANP_VIDEO_200 = 0.55  # meanP's own frame head: 0.611 at 64 px, 0.645 at 128 (0.453 / 0.435 shared with seqTransf)
MEANP, SEQ = "builtin:tiny-vit-clip-video-meanp", "builtin:tiny-vit-clip-video-seqtransf"


@pytest.fixture(scope="module")
def vit():
    return rl.load_model(IMAGE, device="cpu")


@pytest.fixture(scope="module")
def videos():
    return {s: rl.load_model(s, device="cpu") for s in (MEANP, SEQ)}


def test_the_family_is_registered_and_serves_both_kinds(vit, videos):
    rows = {r["spec"]: r for r in rl.list_models("tiny-vit-clip*")}
    assert set(rows) == {IMAGE, MEANP, SEQ} and all(r["available"] for r in rows.values())
    assert rows[IMAGE]["card"] == "assets/tiny-vit-clip.md" and rows[SEQ]["card"] == "assets/tiny-vit-clip-video.md"
    imgs = [np.full((128, 128, 3), 40 * i, np.uint8) for i in range(3)]
    e = vit.encode_images(imgs)
    assert e.shape == (3, 256) and np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-4)
    v = videos[SEQ].encode_videos([np.zeros((20, 64, 64, 3), np.uint8), np.full((9, 80, 60, 3), 200, np.uint8)])
    assert v.shape == (2, 256) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-4)
    assert vit.meta["train"]["steps"] > 0 and vit.meta["quality"]["n"] == 1000


def test_the_visual_tower_is_layernorm_throughout(vit, videos):
    for net in (vit.net, videos[SEQ].net):
        mods = list(net.image.modules())
        assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in mods)
        assert sum(isinstance(m, nn.LayerNorm) for m in mods) == 2 * TINY_VIT_CLIP_CONFIG["layers"] + 2
    # both video variants share one frame tower, which is tiny-vit-clip's trunk, frozen in video training
    for k, p in vit.net.image.features.state_dict().items():
        assert torch.equal(p, videos[MEANP].net.image.features.state_dict()[k])


def test_adaptation_reaches_the_vits_layernorms(vit, videos):
    t = tower_for(vit, "visual", video=False)
    names = [n for n, _ in t.norms]
    assert any(".blocks." in n for n in names) and any("ln_post" in n for n in names)
    seq = tower_for(videos[SEQ], "visual", video=True)
    sn = [n for n, _ in seq.norms]
    assert any(n.startswith("net.image.") for n in sn) and any(n.startswith("net.temporal.") for n in sn)
    assert not any(n.startswith("net.temporal.") for n, _ in tower_for(videos[MEANP], "visual", video=True).norms)
    # a Tent run adapts a copy: the shared model keeps its weights
    before = {k: v.clone() for k, v in vit.net.state_dict().items()}
    ds = rl.datasets.build("builtin", split="test", n=32, seed=2027)
    r = rl.adapt.run(vit, ds, "tent", "i2t", Condition("gaussian_noise", 3, 0))
    assert r.adapted_parameters == sum(p.numel() for p in t.parameters())
    assert all(torch.equal(before[k], v) for k, v in vit.net.state_dict().items())


def test_meanps_own_frame_head_serves_meanp_alone():
    """A net with ``meanp_frame_head`` (random init: plumbing only): meanP's frames go through its own head,
    seqTransf's through the shared one; adaptation of meanP's queries reaches its head's LayerNorms, not the
    shared adapter's."""
    from robustlab.models.builtin_video import TinyClipVideoNet
    from robustlab.models.builtin_vit import (
        TINY_VIT_CLIP_VIDEO_CONFIG,
        TinyVitClipVideoMeanP,
        TinyVitClipVideoSeqTransf,
    )

    torch.manual_seed(0)
    net = TinyClipVideoNet(dict(TINY_VIT_CLIP_VIDEO_CONFIG, meanp_frame_head=32)).eval()
    for p in (*net.meanp_frame.tokens.mlp[-1].parameters(), *net.meanp_frame.adapter.mlp[-1].parameters()):
        nn.init.normal_(p, std=0.1)  # away from the identity, so the two heads differ
    px = torch.rand(4, 3, 96, 96)
    with torch.no_grad():
        shared = net.adapter(net.image(px))
        assert torch.allclose(net.frame_embeddings(px, "seqtransf"), shared)
        own = net.frame_embeddings(px, "meanp")
        assert torch.allclose(own, net.meanp_frame(net.image.features(px)))
        assert not torch.allclose(own, shared, atol=1e-3)
    assert net.own_head("meanp") and not net.own_head("seqtransf")
    meanp, seq = TinyVitClipVideoMeanP(device="cpu", net=net), TinyVitClipVideoSeqTransf(device="cpu", net=net)
    vids = [np.random.default_rng(i).integers(0, 255, (10, 64, 64, 3), dtype=np.uint8) for i in range(2)]
    e = meanp.encode_videos(vids)
    with torch.no_grad():
        ref = nn.functional.normalize(net.video_features(torch.stack([meanp.preprocess_video(v) for v in vids]),
                                                         "meanp"), dim=-1).numpy()
    assert np.allclose(e, ref, atol=1e-5) and not np.allclose(e, seq.encode_videos(vids), atol=1e-3)
    names = [n for n, _ in tower_for(meanp, "visual", video=True).norms]
    assert any(n.startswith("net.meanp_frame.") for n in names) and any(n.startswith("net.image.") for n in names)
    assert not any(n.startswith(("net.adapter.", "net.temporal.")) for n in names)
    tower = tower_for(meanp, "visual", video=True)  # the adapted copy encodes as the model does
    with torch.no_grad():
        adapted = nn.functional.normalize(tower.encode(tower.prepare(vids)).mean(1), dim=-1).numpy()
    assert np.allclose(adapted, e, atol=1e-5)


@pytest.mark.slow  # 300 held-out scenes, clean and three perturbations
def test_it_degrades_gradually_on_fresh_scenes(vit):
    ds = rl.datasets.build("builtin", split="test", n=300, seed=2027)
    conds = [{}] + [{"visual": Condition(p, s, 0)} for p in ("gaussian_noise", "jpeg_compression") for s in (1, 5)]
    r = [x.metrics["t2i"]["R@1"] for x in get("retrieval").evaluate(vit, ds, conds)]
    clean, noise1, noise5, jpeg1, jpeg5 = r
    assert clean >= CLEAN_300
    assert noise1 >= 0.5 * clean and jpeg1 >= 0.5 * clean  # no severity-1 collapse (tiny-clip: noise s1 0.15)
    assert noise5 < noise1 and jpeg5 < jpeg1


@pytest.mark.slow  # 200 held-out videos
def test_seqtransf_reads_order_and_meanp_does_not(videos):
    ds = rl.datasets.build("builtin-videos", split="test", n=200, seed=2027)
    m = {s: get("retrieval").evaluate(videos[s], ds, [{}])[0].metrics for s in (MEANP, SEQ)}
    seq, mean = m[SEQ], m[MEANP]
    assert seq["t2v"]["R@1"] >= CLEAN_VIDEO_200 and mean["t2v"]["R@1"] >= MEANP_VIDEO_200
    # videos played backwards: seqTransf loses most of its recall, meanP (order-invariant) keeps it
    assert seq["t2v_R@1_reversed"] < 0.5 * seq["t2v"]["R@1"]
    assert abs(mean["t2v_R@1_reversed"] - mean["t2v"]["R@1"]) < 0.08
    assert seq["order_acc"] > 0.7 > mean["order_acc_reversed"]  # 1,000 videos: 0.99 vs 0.11


@pytest.mark.slow  # 200 held-out videos at 128 px, clean, Gaussian noise s1 / s5 and static_rotate s1
def test_the_video_model_degrades_gradually_on_videos_at_its_held_out_size(videos):
    """At 128 px (the size the checkpoint is held out at) Gaussian noise of severity 1 keeps more than half of clean
    R@1 (1,000 videos of world 2027: 0.892 -> 0.698; tiny-clip-video falls to chance), and so does a camera turned
    by 7.5° (static_rotate s1: 0.547; the checkpoint before the recipe's second stage fell to 0.24)."""
    ds = rl.datasets.build("builtin-videos", split="test", n=200, seed=2027, size=128)
    conds = [{}] + [{"visual": Condition("gaussian_noise", s, 0)} for s in (1, 5)]
    conds.append({"visual": Condition("static_rotate", 1, 0)})
    clean, s1, s5, rot = (x.metrics["t2v"]["R@1"] for x in get("retrieval").evaluate(videos[SEQ], ds, conds))
    assert clean >= CLEAN_VIDEO_200 and s1 >= 0.5 * clean and s5 < 0.5 * s1
    assert rot >= 0.5 * clean

