"""`robustlab train tiny-vit-clip` / `tiny-vit-clip-video` are reproducible from their seed (small recipes; the full
ones are in the model cards), and the image recipe's data diversity is not the benchmark's perturbations."""
import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from robustlab.datasets.synthetic import world
from robustlab.models.builtin import load_stage1, load_tiny_clip
from robustlab.training import tiny_vit_clip as R

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # trains
def test_vit_training_is_reproducible_from_the_seed(tmp_path):
    torch.set_num_threads(2)
    kw = dict(n_train=256, epochs=1, stage2_epochs=1, batch_size=128, eval_n=0, log=lambda *a: None)
    # The first MiniLM load in a process draws from torch's global RNG (as it always does, first, in a fresh
    # `robustlab train` process); load it before run a, as a fresh process would have by the time it seeds the net.
    from robustlab.training.tiny_clip import encode_captions_frozen

    encode_captions_frozen(["a red circle at the top on a gray background"], 64)
    a = R.train_tiny_vit_clip(tmp_path / "a.safetensors", seed=3, **kw)
    b = R.train_tiny_vit_clip(tmp_path / "b.safetensors", seed=3, **kw)
    c = R.train_tiny_vit_clip(tmp_path / "c.safetensors", seed=4, **kw)
    sa, sb, sc = (load_file(r["path"]) for r in (a, b, c))
    assert sa.keys() == sb.keys() and any(k.startswith("image.features.blocks.") for k in sa)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    assert a["train"]["final_loss"] == b["train"]["final_loss"] and a["train"]["steps"] == 2
    s2 = a["train"]["stage2"]
    assert s2["steps"] == 2 and s2["scenes"] == "0-255" and s2["views"] == 2 and "trunk frozen" in s2["trains"]
    # stage 2 reads the class token and all 8×8 patch tokens; the checkpoint keeps stage 1's heads beside it
    assert sa["image.proj.weight"].shape[1] == 128 * (1 + 8 * 8)
    assert sa["stage1.image.proj.weight"].shape[1] == 128 and "stage1.logit_scale" in sa
    assert not any(k.startswith("stage1.image.features.") for k in sa)  # one trunk, stored once
    # stage 2 from a stage-1 checkpoint (`robustlab train tiny-vit-clip --stage2-from`) gives the same weights
    one = R.train_tiny_vit_clip(tmp_path / "one.safetensors", seed=3, **dict(kw, stage2_epochs=0))
    assert "stage2" not in one["train"] and not any(k.startswith("stage1.") for k in load_file(one["path"]))
    two = R.train_tiny_vit_clip(tmp_path / "two.safetensors", seed=3, stage2_from=one["path"], **kw)
    st = load_file(two["path"])
    assert sa.keys() == st.keys() and all(torch.equal(sa[k], st[k]) for k in sa)
    timing = ("seconds", "features_seconds")
    assert {k: v for k, v in two["train"]["stage2"].items() if k not in timing} == \
        {k: v for k, v in s2.items() if k not in timing}
    # what the video recipe starts from: stage 1 as it was, the trunk untouched by stage 2
    first, meta = load_stage1(Path(a["path"]), "tiny-vit-clip")
    s1 = load_file(one["path"])
    assert meta["stage1_config"]["frame_grid"] == 0
    assert first.state_dict().keys() == s1.keys()
    assert all(torch.equal(v, s1[k]) for k, v in first.state_dict().items())
    full, _ = load_tiny_clip(Path(a["path"]), "tiny-vit-clip")
    assert full.image.proj.weight.shape[1] == 128 * 65 and not hasattr(full, "stage1")


@pytest.mark.slow  # trains
@pytest.mark.skipif(not (ROOT / "assets" / "tiny-vit-clip.safetensors").exists(), reason="needs the ViT checkpoint")
def test_vit_video_training_is_reproducible_and_keeps_the_trunk_frozen(tmp_path):
    torch.set_num_threads(2)
    kw = dict(n_train=64, epochs=1, batch_size=32, eval_n=0, val_n=32, val_every=1, log=lambda *a: None,
              stage2_epochs=0, stage3_epochs=0)  # stage 1 alone; the later stages are tested below
    a = R.train_tiny_vit_clip_video(tmp_path / "a.safetensors", seed=3, **kw)
    b = R.train_tiny_vit_clip_video(tmp_path / "b.safetensors", seed=3, **kw)
    sa, sb = load_file(a["path"]), load_file(b["path"])
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    base = load_file(str(ROOT / "assets" / "tiny-vit-clip.safetensors"))
    trunk = [k for k in base if k.startswith("image.features.")]
    assert trunk and all(torch.equal(base[k], sa[k]) for k in trunk)
    assert sa["image.proj.weight"].shape[1] == 128 * (1 + 8 * 8)  # the class token and all 8×8 patch tokens
    assert a["train"]["render_size"] == 128  # the built-in images' size, resampled to the ViT's 96 px
    assert a["train"]["low_res"] == "25% of the videos rendered at 64 px"
    assert "diversity" not in a["train"]  # the shipped recipe: the videos as the world draws them
    # diverse="both": the plain videos and a diverse copy of each, reproducible, over the same frozen trunk
    d = R.train_tiny_vit_clip_video(tmp_path / "d.safetensors", seed=3, diverse="both", **kw)
    e = R.train_tiny_vit_clip_video(tmp_path / "e.safetensors", seed=3, diverse="both", **kw)
    sd, se = load_file(d["path"]), load_file(e["path"])
    assert all(torch.equal(sd[k], se[k]) for k in sd) and not all(torch.equal(sd[k], sa[k]) for k in sd)
    assert all(torch.equal(base[k], sd[k]) for k in trunk)
    assert d["train"]["diversity"].startswith("the videos as drawn, and a copy of each drawn with: per video")
    with pytest.raises(ValueError, match="none, all or both"):
        R.train_tiny_vit_clip_video(tmp_path / "f.safetensors", seed=3, diverse="yes", **kw)
    assert a["train"]["frozen"] == "MiniLM; the frame tower's ViT trunk (patch embedding, blocks, ln_post)"
    # the shipped recipe's stage 2: from stage 1's heads, the videos and a diverse copy of each; one command gives
    # the weights of stage 1 then `--stage2-from` on it, and stage 2 runs once only
    kw2 = dict(kw, stage2_epochs=1, stage2_lr=5e-4)
    one = R.train_tiny_vit_clip_video(tmp_path / "one.safetensors", seed=3, **kw2)
    two = R.train_tiny_vit_clip_video(tmp_path / "two.safetensors", seed=3, stage2_from=a["path"], **kw2)
    s1, s2 = load_file(one["path"]), load_file(two["path"])
    assert s1.keys() == sa.keys() and all(torch.equal(s1[k], s2[k]) for k in s1)
    assert not all(torch.equal(s1[k], sa[k]) for k in s1) and all(torch.equal(base[k], s1[k]) for k in trunk)
    st = one["train"]
    assert "diversity" not in st and st["epochs"] == 1 and st["lr"] == 0.002  # stage 1, as drawn
    assert st["stage2"]["epochs"] == 1 and st["stage2"]["lr"] == 5e-4 and st["stage2"]["seed"] == 3
    assert st["stage2"]["diversity"].startswith("the videos as drawn, and a copy of each drawn with: per video")
    assert st["seconds"] > st["stage2"]["seconds"] > 0
    with pytest.raises(ValueError, match="second stage already"):
        R.train_tiny_vit_clip_video(tmp_path / "three.safetensors", seed=3, stage2_from=one["path"], **kw2)
    # stage 3: meanP's own frame head from stage 2's weights; one command gives the weights of `--stage3-from`
    # on stage 2, seqTransf and the trunk stay stage 2's bit for bit, and stage 3 runs once only
    kw3 = dict(kw2, stage3_epochs=1, stage3_lr=5e-4)
    three = R.train_tiny_vit_clip_video(tmp_path / "three.safetensors", seed=3, **kw3)
    four = R.train_tiny_vit_clip_video(tmp_path / "four.safetensors", seed=3, stage3_from=one["path"], **kw3)
    s3, s4 = load_file(three["path"]), load_file(four["path"])
    assert s3.keys() == s4.keys() and all(torch.equal(s3[k], s4[k]) for k in s3)
    head = {k for k in s3 if k.startswith("meanp_frame.")}
    assert head and s3.keys() - head == s1.keys()
    meanp = ("meanp_frame.", "text.meanp.", "logit_scale.meanp")
    assert all(torch.equal(s3[k], s1[k]) for k in s1 if not k.startswith(meanp))  # seqTransf, trunk: stage 2's
    assert not all(torch.equal(s3[k], s1[k]) for k in s1 if k.startswith(meanp))
    st3 = three["train"]
    clock = ("seconds", "train_seconds")
    assert {k: v for k, v in st3["stage2"].items() if k not in clock} == \
        {k: v for k, v in st["stage2"].items() if k not in clock}
    assert st3["stage3"]["epochs"] == 1 and st3["stage3"]["lr"] == 5e-4 and st3["stage3"]["seed"] == 3
    assert st3["stage3"]["trains"].startswith("meanP's frame head (token MLP 256")
    # the shipped stage 3 draws the videos as the world does and a copy of each through a lens's vignetting field;
    # "none" the first alone; "both" adds a diverse copy of each, as stage 2 does
    assert R.VIDEO_STAGE3_DIVERSE == "vignette"
    assert st3["stage3"]["videos"].startswith("the 64 videos of stage 1 as the world draws them, 25% at 64 px, and a "
                                              "copy of each seen through a lens's vignetting (one field per video")
    # with the shipped token noise (a generic regulariser on the frozen token states; no pixel is perturbed)
    assert R.VIDEO_STAGE3_TOKEN_NOISE > 0
    assert st3["stage3"]["token_noise"] == (f"Gaussian, {R.VIDEO_STAGE3_TOKEN_NOISE:g} x each token position's "
                                            "per-dimension std over the first 64 videos' frames, fresh at every step")
    quiet = R.train_tiny_vit_clip_video(tmp_path / "quiet.safetensors", seed=3, stage3_from=one["path"],
                                        stage3_token_noise=0, **kw3)
    squiet = load_file(quiet["path"])
    assert quiet["train"]["stage3"]["token_noise"] == "none"
    assert all(torch.equal(squiet[k], s1[k]) for k in s1 if not k.startswith(meanp))
    assert not all(torch.equal(squiet[k], s3[k]) for k in head)
    for bad in (-1, "0.5", True, 11):  # refused before stage 1 starts
        with pytest.raises(ValueError, match="stage3_token_noise must be a number from 0 to 10"):
            R.train_tiny_vit_clip_video(tmp_path / "bad.safetensors", seed=3, stage3_token_noise=bad, **kw3)
    both = R.train_tiny_vit_clip_video(tmp_path / "both.safetensors", seed=3, stage3_from=one["path"],
                                       stage3_diverse="both", **kw3)
    sboth = load_file(both["path"])
    assert both["train"]["stage3"]["videos"].startswith("the 64 videos of stage 1 as the world draws them, 25% at "
                                                        "64 px, and a copy of each drawn with: per video")
    assert all(torch.equal(sboth[k], s1[k]) for k in s1 if not k.startswith(meanp))
    assert not all(torch.equal(sboth[k], s3[k]) for k in head)
    plain = R.train_tiny_vit_clip_video(tmp_path / "plain.safetensors", seed=3, stage3_from=one["path"],
                                        stage3_diverse="none", **kw3)
    splain = load_file(plain["path"])
    assert plain["train"]["stage3"]["videos"] == "the 64 videos of stage 1 as the world draws them, 25% at 64 px"
    assert all(torch.equal(splain[k], s1[k]) for k in s1 if not k.startswith(meanp))
    assert not all(torch.equal(splain[k], s3[k]) for k in head)
    assert not all(torch.equal(splain[k], sboth[k]) for k in head)
    with pytest.raises(ValueError, match="one of none, both, vignette"):  # refused before stage 1 starts
        R.train_tiny_vit_clip_video(tmp_path / "bad.safetensors", seed=3, stage3_diverse="all", **kw3)
    assert not (tmp_path / "bad.safetensors").exists()
    from robustlab.training.tiny_clip_video import train_meanp_frame_head

    with pytest.raises(ValueError, match="one of none, both, vignette"):
        train_meanp_frame_head(tmp_path / "bad.safetensors", one["path"], diverse="all", name="tiny-vit-clip-video",
                               classes=(), render_size=128)
    with pytest.raises(ValueError, match="token_noise must be a number"):
        train_meanp_frame_head(tmp_path / "bad.safetensors", one["path"], token_noise=-0.5,
                               name="tiny-vit-clip-video", classes=(), render_size=128)
    # eval_n=0: the stage-2 numbers of seqTransf (the same weights) stay; the old meanP's do not pass for the new one
    from robustlab.models.builtin_video import load_tiny_clip_video, save_tiny_clip_video

    net2, meta2 = load_tiny_clip_video(Path(one["path"]), "tiny-vit-clip-video")
    save_tiny_clip_video(net2, tmp_path / "measured.safetensors",
                         dict(meta2, quality={"meanp": {"t2v_R@1": 0.1}, "seqtransf": {"t2v_R@1": 0.2}}))
    six = R.train_tiny_vit_clip_video(tmp_path / "six.safetensors", seed=3,
                                      stage3_from=tmp_path / "measured.safetensors", **kw3)
    assert six["quality"] == {"seqtransf": {"t2v_R@1": 0.2}}
    with pytest.raises(ValueError, match="frame head already"):
        R.train_tiny_vit_clip_video(tmp_path / "five.safetensors", seed=3, stage3_from=three["path"], **kw3)
    # tune_blocks=1: the last block and ln_post train, the blocks before it stay the image model's
    c = R.train_tiny_vit_clip_video(tmp_path / "c.safetensors", seed=3, tune_blocks=1, **kw)
    sc = load_file(c["path"])
    last = len({k.split(".")[4] for k in base if k.startswith("image.features.blocks.layers.")}) - 1
    tuned = (f"image.features.blocks.layers.{last}.", "image.features.ln_post.")
    assert all(torch.equal(base[k], sc[k]) for k in trunk if not k.startswith(tuned))
    assert any(not torch.equal(base[k], sc[k]) for k in trunk if k.startswith(tuned))
    assert c["train"]["tune_blocks"] == 1 and c["train"]["frozen"] == f"MiniLM; the frame tower's first {last} blocks"


def test_the_video_set_mixes_resolutions_as_the_model_would_see_them():
    """A quarter of the videos at 64 px, the rest at 128 px, each resampled to 96 px exactly as the model's own
    preprocessing resamples a frame of that size; which videos are low-resolution is a function of the seed."""
    from robustlab.models.builtin import preprocess_64
    from robustlab.training.tiny_clip_video import build_video_set, render_sampled_frames

    log = lambda *a: None  # noqa: E731
    n = 40
    frames, caps, _ = build_video_set(n, world.TRAIN_SEED, 4, 128, log=log, store=96, low_res_frac=0.25)
    again, _, _ = build_video_set(n, world.TRAIN_SEED, 4, 128, log=log, store=96, low_res_frac=0.25)
    assert frames.shape == (n, 4, 96, 96, 3) and np.array_equal(frames, again)
    low = []
    for i in range(n):
        v = world.sample_video(world.TRAIN_SEED, i)
        assert caps[i] == v.caption
        for size in (64, 128):
            seen = preprocess_64(list(render_sampled_frames(v, 4, size)), 96, 0.0, 1.0)
            if torch.equal(seen, torch.from_numpy(frames[i]).permute(0, 3, 1, 2).float() / 255.0):
                low.append(size == 64)
                break
        else:
            raise AssertionError(f"video {i} is neither the 64-px nor the 128-px render, resampled")
    assert 4 <= sum(low) <= 18  # about a quarter of 40


def test_the_diverse_views_keep_what_the_caption_says():
    """Textured backgrounds keep the caption's background tone; the objects are the world's."""
    sc = world.make_scenes(6, world.TRAIN_SEED)
    for s in sc:
        plain = world.render_scene(s, 96).astype(float)
        view = R.render_diverse(s, 96, world.TRAIN_SEED).astype(float)
        assert view.shape == (96, 96, 3)
        # the background tone: the corners' mean colour moves by less than the gap between the world's tones
        corners = (slice(0, 8), slice(0, 8))
        assert np.abs(view[corners].mean((0, 1)) - plain[corners].mean((0, 1))).max() < 60
    g = torch.Generator().manual_seed(0)
    x = torch.rand(8, 3, 96, 96)
    y = R.augment(x, g)
    assert y.shape == x.shape and float(y.min()) >= 0 and float(y.max()) <= 1


@pytest.mark.parametrize("module", ["tiny_vit_clip", "diversity", "tiny_clip_video"])
def test_the_recipe_uses_none_of_the_benchmarks_perturbations(module):
    """A perturbation the model was trained on is no test: the recipes (images, and the videos' frames) and their
    data diversity import nothing from robustlab.perturb and name no registered visual perturbation."""
    src = (ROOT / "robustlab" / "training" / f"{module}.py").read_text()
    mods = {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)}
    assert not any(m and m.startswith("robustlab.perturb") for m in mods)
    from robustlab.perturb.registry import list_perturbations

    code = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith(("#", '"')))
    named = [p.name for p in list_perturbations() if p.modality != "text" and f'"{p.name}"' in code]
    assert named == []


def test_a_lens_vignetting_field_darkens_towards_the_corners_only():
    """meanP's stage-3 lens field: gain 1 at the centre, never above 1 or below 0, falling towards the corners
    (from soft falloff to the near-black corners of mechanical vignetting), a fixed function of its generator."""
    from robustlab.training.diversity import VIGNETTE_RANGES, vignette_gain

    rng = np.random.default_rng(0)
    fields = [vignette_gain(96, rng) for _ in range(200)]
    again = vignette_gain(96, np.random.default_rng(0))
    assert again.dtype == np.float32 and again.shape == (96, 96) and np.array_equal(again, fields[0])
    lo, hi = VIGNETTE_RANGES["strength"]
    for g in fields:
        assert g.min() >= 1 - hi - 1e-6 and g.max() <= 1 and g[40:56, 40:56].min() == 1  # the centre is untouched
        corner = min(g[0, 0], g[0, -1], g[-1, 0], g[-1, -1])
        assert corner <= 1 - lo + 1e-6 and corner == g.min()  # the corners are the darkest
        assert np.allclose(g, g.T) and np.allclose(g, g[::-1])  # radial
    assert min(float(g.min()) for g in fields) < 0.05  # some reach near black, as a hood cutting the corners does


def test_a_videos_diversity_is_the_same_in_all_its_frames():
    """The video recipe's diversity is one look per video (background, lighting, crop, colour), never a change from
    frame to frame (that would be camera motion or flicker, perturbations of the benchmark)."""
    from robustlab.training.diversity import augment
    from robustlab.training.tiny_clip_video import render_sampled_frames

    v = world.sample_video(world.TRAIN_SEED, 3)
    plain, diverse = render_sampled_frames(v, 4, 96), render_sampled_frames(v, 4, 96, diverse=True)
    assert diverse.shape == plain.shape and not np.array_equal(diverse, plain)
    # the background is one texture for the whole video: where no object is in any frame, frames agree
    empty = (np.abs(plain.astype(int) - plain[0].astype(int)).max(axis=(0, 3)) == 0)
    assert empty.mean() > 0.5 and all(np.array_equal(f[empty], diverse[0][empty]) for f in diverse)
    # augment(group=T): one crop and jitter per video (the same frame 8 times: 2 videos of 4 frames), not per frame
    x = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(1)).expand(8, 3, 32, 32).contiguous()
    y = augment(x, torch.Generator().manual_seed(0), low_res_frac=0.0, group=4).view(2, 4, 3, 32, 32)
    assert all(torch.equal(y[i, 0], y[i, t]) for i in range(2) for t in range(4))
    assert not torch.allclose(y[0, 0], y[1, 0])  # two videos, two looks
    per_frame = augment(x, torch.Generator().manual_seed(0), low_res_frac=0.0).view(2, 4, 3, 32, 32)
    assert not torch.allclose(per_frame[0, 0], per_frame[0, 1])  # group=1: every image its own look
    with pytest.raises(ValueError, match="whole groups"):
        augment(x[:6], torch.Generator(), group=4)


def test_a_checkpoint_keeps_stage_1_only_over_the_same_trunk(tmp_path):
    """save_checkpoint(stage1=...) stores stage 1's heads beside the model, never a second trunk: a stage 1 whose
    trunk differs from the model's is refused, and load_stage1 of a checkpoint without one is the model itself."""
    from robustlab.models.builtin import TinyClipNet, save_checkpoint
    from robustlab.models.builtin_vit import TINY_VIT_CLIP_CONFIG

    torch.manual_seed(0)
    first = TinyClipNet(dict(TINY_VIT_CLIP_CONFIG, frame_grid=0))
    net = TinyClipNet(dict(TINY_VIT_CLIP_CONFIG))
    with pytest.raises(ValueError, match="must share the trunk"):
        save_checkpoint(net, tmp_path / "bad.safetensors", {}, stage1=first)
    assert not (tmp_path / "bad.safetensors").exists()
    net.image.features.load_state_dict(first.image.features.state_dict())
    save_checkpoint(net, tmp_path / "ok.safetensors", {}, stage1=first)
    got, meta = load_stage1(tmp_path / "ok.safetensors", "x")
    assert all(torch.equal(v, first.state_dict()[k]) for k, v in got.state_dict().items())
    save_checkpoint(first, tmp_path / "one.safetensors", {})
    alone, meta = load_stage1(tmp_path / "one.safetensors", "x")
    assert "stage1_config" not in meta and alone.image.proj.weight.shape[1] == 128


def test_loading_the_image_model_draws_what_the_shipped_video_stages_drew(tmp_path):
    """The video recipe seeds torch's RNG and then loads the image model, so what the load draws is part of the
    recipe. A first stage draws one stage-1 net's initialisation, as when the image model had one stage (the shipped
    first stage); a second stage the whole model's and then stage 1's, as when the shipped second stage was made.
    Both give stage 1's weights. A one-stage checkpoint (tiny-clip's kind) draws one net either way."""
    from robustlab.models.builtin import TinyClipNet, save_checkpoint
    from robustlab.models.builtin_vit import TINY_VIT_CLIP_CONFIG
    from robustlab.training.tiny_clip_video import _load_base

    s1cfg, full = dict(TINY_VIT_CLIP_CONFIG, frame_grid=0), dict(TINY_VIT_CLIP_CONFIG)
    first, net = TinyClipNet(s1cfg), TinyClipNet(full)
    net.image.features.load_state_dict(first.image.features.state_dict())
    staged, one = tmp_path / "staged.safetensors", tmp_path / "one.safetensors"
    save_checkpoint(net, staged, {}, stage1=first)
    save_checkpoint(first, one, {})

    def after(*cfgs):
        torch.manual_seed(7)
        for cfg in cfgs:
            TinyClipNet(cfg)
        return torch.rand(4)

    def loaded(path, second_stage):
        torch.manual_seed(7)
        got, _ = _load_base(str(path), second_stage=second_stage)
        assert all(torch.equal(v, first.state_dict()[k]) for k, v in got.state_dict().items())
        return torch.rand(4)

    assert not torch.equal(after(s1cfg), after(full, s1cfg))
    assert torch.equal(loaded(staged, False), after(s1cfg))
    assert torch.equal(loaded(staged, True), after(full, s1cfg))
    assert torch.equal(loaded(one, False), after(s1cfg)) and torch.equal(loaded(one, True), after(s1cfg))
