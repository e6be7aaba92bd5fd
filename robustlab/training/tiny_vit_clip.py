"""Training of the tiny ViT CLIP (``robustlab train tiny-vit-clip``).

Recipe: ``n_train`` scenes of the training world (``world.TRAIN_SEED``), each rendered at 128 px with *data
diversity* and area-resampled to 96 px; the frozen MiniLM states of each scene's caption are computed once; the ViT
image tower and the text head train with CLIP's symmetric InfoNCE, AdamW (β₂ 0.98, weight decay 0.05 on matrices
only), 4 % linear warm-up, cosine decay over a fixed number of steps and gradient clipping at 1.

The diversity is the kind natural images have and the benchmark's perturbations are not (a perturbation the model
was trained on is no test): textured backgrounds that keep the caption's background tone (smooth blobs, faint
stripes, soft checks, slightly tinted), a smooth lighting field (gain 0.8–1.2 across the image), random resized
crops (scale 0.80–1, no flips: captions name left and right), brightness, contrast and saturation ±25 %, white
balance ±5 % (no hue jitter: captions name colours), and a quarter of each batch seen as a 64-px render (the
built-in videos' size) upsampled bilinearly. No noise, blur, JPEG, weather or digital corruptions.

Stage 1: 11 epochs over 30,000 scenes at a peak learning rate of 1.5e-3, CLIP's way (the projection of the class
token). Stage 2: over the frozen trunk, a projection of the class token and the 8×8 patch tokens (after
``ln_post``), with the text head, 10 epochs over the same scenes' trunk features (as drawn and one augmented view
each) at 1e-3: held-out t2i R@1 0.773 → 0.955. The class token of a 6-block ViT this small summarises a scene's
layout and shapes poorly (R@5 was 0.995, the mistakes near-misses between shapes a few pixels apart and neighbouring
positions); the patch tokens keep them. The checkpoint keeps stage 1's heads beside the model
(:func:`robustlab.models.builtin.load_stage1`), which is what the video recipe starts from.

Reproducible from ``seed`` and ``threads`` (the schedule counts steps, not seconds) in a fresh process, as
``robustlab train`` runs it: the first MiniLM load in a process draws from torch's global RNG before the net is
initialised, so in one process a second run with the same seed repeats the second run, not the first. On 2 CPU
cores the recipe trains at about 110 images/s; stage 1 takes about an hour, stage 2 about 6 minutes (from a
stage-1 checkpoint: rendering the scenes again and their MiniLM states 2.5 min, trunk features 1.7 min, 1,170
steps 2.3 min).
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from robustlab.datasets.synthetic import world
from robustlab.engine.minilm import forget_minilm
from robustlab.models.builtin import TinyClipNet, load_stage1, save_checkpoint
from robustlab.models.builtin_vit import (
    TINY_VIT_CLIP_CHECKPOINT,
    TINY_VIT_CLIP_CONFIG,
    TINY_VIT_CLIP_VIDEO_CHECKPOINT,
    TINY_VIT_CLIP_VIDEO_CONFIG,
    TinyVitClip,
    TinyVitClipVideoMeanP,
    TinyVitClipVideoSeqTransf,
)
from robustlab.models.checkpoints import checkpoint_path
from robustlab.tasks.quality import heldout_quality
from robustlab.training.diversity import augment, lighting_gain, textured_background
from robustlab.training.tiny_clip import clip_loss, encode_captions_frozen
from robustlab.training.tiny_clip_video import (STAGE3_LOOKS, _init_frame_tower, check_token_noise,
                                               train_meanp_frame_head, train_tiny_clip_video)

RENDER = 128  # the world's image size; the tower sees it area-resampled to its own size
# stage 1 trains the whole tower with a projection of the class token alone (CLIP's); stage 2 trains, over the
# frozen trunk, a projection of the class token and the 8×8 patch tokens, with the text head
STAGE1_CONFIG = dict(TINY_VIT_CLIP_CONFIG, frame_grid=0)
STAGE2_EPOCHS, STAGE2_LR, STAGE2_VIEWS, STAGE2_DROPOUT = 10, 1e-3, 2, 0.1


def render_diverse(scene: world.Scene, size: int, seed: int) -> np.ndarray:
    """One training view of ``scene``: textured background, objects as the world draws them, a smooth lighting
    field, area-resampled from 128 px to ``size``."""
    rng = np.random.default_rng([seed, scene.index, 4242])
    bg = textured_background(scene.background, 2 * RENDER, rng)
    im = world.render_objects(scene.objects, scene.background, RENDER, rng, background=bg).astype(np.float32)
    im = np.clip(im * lighting_gain(RENDER, rng)[..., None], 0, 255).astype(np.uint8)
    return cv2.resize(im, (size, size), interpolation=cv2.INTER_AREA)


def _render_chunk(args):
    seed, start, n, size = args
    scenes = world.make_scenes(n, seed, start=start)
    return np.stack([render_diverse(s, size, seed) for s in scenes]), [s.caption for s in scenes]


def build_diverse_set(n: int, seed: int, size: int, workers: int = 2, start: int = 0):
    """``n`` diverse training views of world ``seed`` from scene ``start`` on (N×size×size×3 uint8) and their
    captions."""
    jobs = [(seed, start + s, min(1000, n - s), size) for s in range(0, n, 1000)]
    imgs, caps = [], []
    mapper = ProcessPoolExecutor(workers).map if workers > 1 else map
    for a, c in tqdm(mapper(_render_chunk, jobs), total=len(jobs), desc="render scenes", unit="k", mininterval=5):
        imgs.append(a)
        caps += c
    return np.concatenate(imgs), caps


def _schedule(decay: list, rest: list, lr: float, n: int, batch_size: int, epochs: int) -> tuple:
    """AdamW (β₂ 0.98, weight decay 0.05 on ``decay``, none on ``rest``), 4 % linear warm-up, cosine decay to zero
    over ``epochs`` × (``n`` // ``batch_size``) steps: (optimizer, scheduler, steps per epoch, steps, warm-up)."""
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98))
    steps_per_epoch = n // batch_size
    total = steps_per_epoch * epochs
    warm = max(1, round(total * 0.04))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    return opt, sched, steps_per_epoch, total, warm


def _fit(net, imgs: np.ndarray, states, lengths, *, epochs: int, batch_size: int, lr: float, seed: int,
         desc: str, out: Path, snapshot_every: int = 0, log=print) -> dict:
    """One stage of CLIP training of ``net`` on ``imgs`` (uint8 N×H×W×3) and their frozen caption states: AdamW
    (β₂ 0.98, weight decay 0.05 on matrices only), 4 % linear warm-up, cosine decay to zero, clipping at 1."""
    cfg = net.cfg
    rng = np.random.default_rng(seed)
    decay = [p for n, p in net.named_parameters() if p.ndim >= 2 and not n.endswith(".pos")]
    rest = [p for n, p in net.named_parameters() if not (p.ndim >= 2 and not n.endswith(".pos"))]
    opt, sched, steps_per_epoch, total, warm = _schedule(decay, rest, lr, len(imgs), batch_size, epochs)
    x_all = torch.from_numpy(imgs).permute(0, 3, 1, 2)  # uint8 N×3×H×W
    g = torch.Generator().manual_seed(seed)
    mean, std = cfg["mean"], cfg["std"]
    t2 = time.time()
    bar = tqdm(total=total, desc=desc, unit="step", mininterval=10)
    net.train()
    losses, step = [], 0
    for ep in range(epochs):
        perm = rng.permutation(len(imgs))
        for s in range(steps_per_epoch):
            idx = torch.as_tensor(perm[s * batch_size:(s + 1) * batch_size])
            x = (augment(x_all[idx].float() / 255.0, g) - mean) / std
            L = int(lengths[idx].max())
            mask = (torch.arange(L)[None, :] < lengths[idx][:, None]).long()
            loss = clip_loss(net.image(x), net.text(states[idx, :L].float(), mask), net.logit_scale)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
            step += 1
            bar.update(1)
            bar.set_postfix(epoch=ep + 1, loss=f"{np.mean(losses[-20:]):.3f}")
            if snapshot_every and step % snapshot_every == 0 and step < total:
                save_checkpoint(net, out.with_name(f"{out.stem}.step{step}.safetensors"), {"step": step})
        log(f"{desc} epoch {ep + 1}/{epochs}: loss {np.mean(losses[-steps_per_epoch:]):.3f} "
            f"({time.time() - t2:.0f}s, {(ep + 1) * steps_per_epoch * batch_size / (time.time() - t2):.0f} images/s)")
    bar.close()
    net.eval()
    return dict(epochs=epochs, steps=total, warmup=warm, lr=lr, seconds=round(time.time() - t2, 1),
                final_loss=round(float(np.mean(losses[-20:])), 4))


def _stage_data(n: int, start: int, size: int, max_tokens: int, log=print):
    t0 = time.time()
    imgs, caps = build_diverse_set(n, world.TRAIN_SEED, size, workers=min(2, os.cpu_count() or 1), start=start)
    log(f"rendered {len(imgs)} diverse scenes (training world, scenes {start}-{start + n - 1}) in "
        f"{time.time() - t0:.0f}s")
    t1 = time.time()
    states, lengths = encode_captions_frozen(caps, max_tokens, batch=256)
    log(f"frozen MiniLM states for {len(caps)} captions in {time.time() - t1:.0f}s")
    return imgs, states, lengths


def _trunk_features(tower, imgs: np.ndarray, views: int, g: torch.Generator, mean: float, std: float,
                    batch: int = 512) -> list:
    """The frozen trunk's features (class token and grid cells, float16) of ``imgs`` as they are (view 0) and of
    ``views`` − 1 augmented views (:func:`augment`, the stage-1 diversity)."""
    x_all = torch.from_numpy(imgs).permute(0, 3, 1, 2)
    out = []
    with torch.no_grad():
        for v in range(views):
            fv = []
            for s in tqdm(range(0, len(imgs), batch), desc=f"trunk features (view {v + 1}/{views})", unit="batch",
                          mininterval=10):
                x = x_all[s:s + batch].float() / 255.0
                fv.append(tower.features(((augment(x, g) if v else x) - mean) / std).half())
            out.append(torch.cat(fv))
    return out


def _fit_head(first: TinyClipNet, imgs: np.ndarray, states, lengths, *, epochs: int, lr: float, views: int,
              batch_size: int, seed: int, log=print) -> tuple:
    """Stage 2: a model whose image projection sees the class token and the 8×8 patch tokens of ``first``'s frozen
    trunk (started as ``first``'s projection on the class token, zeros elsewhere), trained with the text head and
    the logit scale by CLIP's loss on ``views`` views of each image (AdamW, 4 % warm-up, cosine decay, clipping at
    1, dropout ``STAGE2_DROPOUT`` on the features). The trunk is ``first``'s, bit for bit."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    g = torch.Generator().manual_seed(seed)
    net = TinyClipNet(dict(TINY_VIT_CLIP_CONFIG))
    _init_frame_tower(net.image, first.image)
    net.text.load_state_dict(first.text.state_dict())
    net.logit_scale.data.copy_(first.logit_scale.data)
    net.eval()
    t0 = time.time()
    feats = _trunk_features(net.image, imgs, views, g, net.cfg["mean"], net.cfg["std"])
    log(f"trunk features {tuple(feats[0].shape)} × {views} views in {time.time() - t0:.0f}s")
    params = [*net.image.proj.parameters(), *net.text.parameters(), net.logit_scale]
    opt, sched, steps_per_epoch, total, warm = _schedule([p for p in params if p.ndim >= 2],
                                                         [p for p in params if p.ndim < 2], lr, len(imgs),
                                                         batch_size, epochs)
    t2 = time.time()
    losses = []
    bar = tqdm(total=total, desc="train tiny-vit-clip (stage 2: grid head)", unit="step", mininterval=10)
    for ep in range(epochs):
        net.train()
        perm = rng.permutation(len(imgs))
        for s in range(steps_per_epoch):
            idx = torch.as_tensor(perm[s * batch_size:(s + 1) * batch_size])
            f = feats[int(rng.integers(views))][idx].float()
            L = int(lengths[idx].max())
            mask = (torch.arange(L)[None, :] < lengths[idx][:, None]).long()
            loss = clip_loss(net.image.proj(F.dropout(f, STAGE2_DROPOUT, training=True)),
                             net.text(states[idx, :L].float(), mask), net.logit_scale)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(epoch=ep + 1, loss=f"{np.mean(losses[-20:]):.3f}")
        log(f"stage 2 epoch {ep + 1}/{epochs}: loss {np.mean(losses[-steps_per_epoch:]):.3f} "
            f"({time.time() - t2:.0f}s)")
    bar.close()
    net.eval()
    return net, dict(epochs=epochs, steps=total, warmup=warm, lr=lr, views=views, dropout=STAGE2_DROPOUT,
                     scenes=f"0-{len(imgs) - 1}", trains="projection of the class token and the 8x8 patch tokens, "
                     "text head, logit scale; the ViT trunk frozen", features_seconds=round(t2 - t0, 1),
                     seconds=round(time.time() - t2, 1), final_loss=round(float(np.mean(losses[-20:])), 4))


def train_tiny_vit_clip(out: str | Path | None = None, seed: int = 0, n_train: int = 30000, epochs: int = 11,
                        batch_size: int = 256, lr: float = 1.5e-3, threads: int | None = 2, eval_n: int = 1000,
                        stage2_epochs: int = STAGE2_EPOCHS, stage2_lr: float = STAGE2_LR,
                        stage2_views: int = STAGE2_VIEWS, stage2_from: str | Path | None = None,
                        snapshot_every: int = 0, log=print) -> dict:
    """Train tiny-vit-clip; write its checkpoint (``out`` or ``assets/tiny-vit-clip.safetensors``).

    Stage 1: the whole tower, CLIP's way (the class token's projection), ``epochs`` over scenes 0 … ``n_train``−1 of
    the training world at ``lr``, with the data diversity on the fly. Stage 2 (``stage2_epochs`` > 0): over the
    frozen trunk, a projection of the class token and the 8×8 patch tokens with the text head
    (:func:`_fit_head`), on the same scenes. ``stage2_from``: a checkpoint whose stage 1 to start from (stage 1
    is skipped; the same weights as a run from scratch). The checkpoint keeps stage 1's heads
    (:func:`robustlab.models.builtin.load_stage1`): the video recipe starts from them. With ``snapshot_every`` > 0,
    a checkpoint of stage 1's weights so far is written every that many steps beside ``out``."""
    t0 = time.time()
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    cfg = dict(STAGE1_CONFIG)
    size = int(cfg["image_size"])
    out = Path(out) if out else checkpoint_path(TINY_VIT_CLIP_CHECKPOINT)
    diversity = ("textured backgrounds, lighting field 0.8-1.2, random resized crop 0.8-1, brightness/"
                 "contrast/saturation +-25%, white balance +-5%, 25% seen at 64 px")
    if stage2_from:
        first, meta = load_stage1(Path(stage2_from), "tiny-vit-clip")
        recipe = dict(meta.get("train", {}))
        recipe.pop("stage2", None)
        n_train = int(recipe.get("n_train", n_train))
        log(f"stage 1 from {stage2_from}: {recipe.get('epochs')} epochs over {n_train} scenes")
        imgs, states, lengths = _stage_data(n_train, 0, size, cfg["max_tokens"], log) if stage2_epochs else (None,) * 3
    else:
        imgs, states, lengths = _stage_data(n_train, 0, size, cfg["max_tokens"], log)
        first = TinyClipNet(cfg)
        s1 = _fit(first, imgs, states, lengths, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed,
                  desc="train tiny-vit-clip", out=out, snapshot_every=snapshot_every, log=log)
        recipe = dict(seed=seed, n_train=n_train, epochs=epochs, steps=s1["steps"], batch_size=batch_size, lr=lr,
                      warmup=s1["warmup"], weight_decay=0.05, betas=[0.9, 0.98], grad_clip=1.0, render=RENDER,
                      train_world_seed=world.TRAIN_SEED, diversity=diversity, train_seconds=s1["seconds"],
                      final_loss=s1["final_loss"], threads=torch.get_num_threads())
    net = first
    if stage2_epochs:
        net, s2 = _fit_head(first, imgs, states, lengths, epochs=stage2_epochs, lr=stage2_lr, views=stage2_views,
                            batch_size=batch_size, seed=seed + 1, log=log)
        recipe["stage2"] = s2
    del imgs
    # a run from a stage-1 checkpoint adds its own time to the time stage 1 took
    recipe["seconds"] = round(time.time() - t0 + (float(recipe.get("seconds", 0)) if stage2_from else 0), 1)
    log(f"trained in {time.time() - t0:.0f}s")
    quality = heldout_quality("retrieval", TinyVitClip(device="cpu", net=net), "builtin", eval_n) if eval_n else {}
    log(f"held-out ({eval_n} scenes, seed {world.HELDOUT_SEED}): {json.dumps(quality)}")
    save_checkpoint(net, out, {"train": recipe, "quality": quality}, stage1=first if net is not first else None)
    log(f"saved {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s total")
    return dict(train=recipe, quality=quality, path=str(out))


VIDEO_STAGE2_EPOCHS = 16  # the video recipe's second stage: the diverse copies (measured in docs/model-history.md)
VIDEO_STAGE2_LR = 1e-3
VIDEO_STAGE3_EPOCHS = 16  # the third: meanP's own frame head (measured in docs/model-history.md)
VIDEO_STAGE3_LR = 1e-3
# its videos: as the world draws them and a copy of each seen through a lens's vignetting ("vignette", the eighth
# checkpoint; "none" was the fifth to seventh; "both", adding a diverse copy of each as stage 2 does, was measured and
# lost clean recall for little camera robustness: docs/model-history.md)
VIDEO_STAGE3_DIVERSE = "vignette"
# and Gaussian noise on the frozen trunk's token states at every step, in units of each token's std (a generic
# regulariser in feature space; chosen on the validation world 2: docs/model-history.md)
VIDEO_STAGE3_TOKEN_NOISE = 0.75


def train_tiny_vit_clip_video(out: str | Path | None = None, seed: int = 0, n_train: int = 18000, epochs: int = 24,
                              lr: float = 2e-3, threads: int | None = 2, eval_n: int = 1000, tune_blocks: int = 0,
                              diverse: str = "none", stage2_epochs: int = VIDEO_STAGE2_EPOCHS,
                              stage2_lr: float = VIDEO_STAGE2_LR, stage2_from: str | Path | None = None,
                              stage3_epochs: int = VIDEO_STAGE3_EPOCHS, stage3_lr: float = VIDEO_STAGE3_LR,
                              stage3_from: str | Path | None = None, stage3_diverse: str = VIDEO_STAGE3_DIVERSE,
                              stage3_token_noise: float = VIDEO_STAGE3_TOKEN_NOISE, log=print, **kw) -> dict:
    """``robustlab train tiny-vit-clip-video``: CLIP4Clip's meanP and seqTransf heads over tiny-vit-clip's frozen
    ViT trunk, the recipe of tiny-clip-video (:func:`robustlab.training.tiny_clip_video.train_tiny_clip_video`) on
    frames rendered at 128 px as the built-in images are (resampled to the ViT's 96 px as the model's preprocessing
    does), a quarter of the videos at 64 px (the dashboard's built-in videos' size) instead; held-out at 128 px.
    What trains: the projection of the class token and all 8×8 patch tokens (where things are in a frame, which a
    video caption's motion needs), a frame adapter, the temporal transformer and a text head per variant.

    Stage 1: ``epochs`` over the videos (``diverse``: see ``train_tiny_clip_video``; default, as the world draws
    them). Stage 2 (``stage2_epochs`` > 0): from stage 1's weights, ``stage2_epochs`` at ``stage2_lr`` over the
    videos as drawn and a copy of each drawn with the family's data diversity (one look per video: background,
    lighting, crop, colour), which makes the heads robust to how a frame looks without costing clean recall.
    Stage 3 (``stage3_epochs`` > 0): meanP's own frame head, ``stage3_epochs`` at ``stage3_lr`` on meanP's loss
    alone (:func:`~robustlab.training.tiny_clip_video.train_meanp_frame_head`), over the videos as the world draws
    them and a copy of each seen through a lens's vignetting (``stage3_diverse="vignette"``, shipped), those alone
    (``"none"``) or those and a diverse copy of each as stage 2 draws them (``"both"``, measured: it cost clean
    recall), with Gaussian noise of ``stage3_token_noise`` token standard deviations on the
    frozen token states at every step; seqTransf stays as stage 2 left it.
    ``stage2_from``: a stage-1 checkpoint to run stage 2 (and 3) on; ``stage3_from``: a stage-2 checkpoint to run
    stage 3 on (the stages before skipped; the same weights as one run).
    ``tune_blocks`` > 0 also trains the trunk's last blocks at a tenth of the rate in stage 1; measured, it did not
    pay on 2 CPU cores (one block: 5× the time per step, validation t2v R@1 0.58 after 8 of 10 epochs against 0.78
    for the frozen trunk's 20 epochs in less time)."""
    common = dict(seed=seed, threads=threads, log=log, name="tiny-vit-clip-video",
                  classes=(TinyVitClipVideoMeanP, TinyVitClipVideoSeqTransf), render_size=128, low_res_frac=0.25,
                  low_res=64)
    heads = dict(common, cfg=TINY_VIT_CLIP_VIDEO_CONFIG, base=TINY_VIT_CLIP_CHECKPOINT,  # stages 1 and 2
                 checkpoint=TINY_VIT_CLIP_VIDEO_CHECKPOINT, **kw)
    loop = {k: kw[k] for k in ("batch_size", "val_n", "val_every") if k in kw}
    if stage3_from is not None and not stage3_epochs:
        raise ValueError("stage3_from needs stage3_epochs > 0")
    if stage3_diverse not in STAGE3_LOOKS:  # before the stages it would follow, not an hour into the run
        raise ValueError(f"stage3_diverse must be one of {', '.join(STAGE3_LOOKS)}, not {stage3_diverse!r}")
    check_token_noise(stage3_token_noise, "stage3_token_noise")  # likewise
    # the stages that run, each from the checkpoint the one before wrote (or the one given)
    stages, src = [], stage3_from or (stage2_from if stage2_epochs or stage3_epochs else None)
    if src is None:
        stages.append(lambda src, dst, ev: train_tiny_clip_video(
            dst, n_train=n_train, epochs=epochs, lr=lr, eval_n=ev, tune_blocks=tune_blocks, diverse=diverse, **heads))
    if stage3_from is None and stage2_epochs:
        stages.append(lambda src, dst, ev: train_tiny_clip_video(
            dst, n_train=n_train, epochs=stage2_epochs, lr=stage2_lr, eval_n=ev, diverse="both", init_from=src,
            **heads))
    if stage3_epochs:
        stages.append(lambda src, dst, ev: train_meanp_frame_head(
            dst, src, epochs=stage3_epochs, lr=stage3_lr, eval_n=ev, diverse=stage3_diverse,
            token_noise=stage3_token_noise, **common, **loop))
    out = out or checkpoint_path(TINY_VIT_CLIP_VIDEO_CHECKPOINT)
    with tempfile.TemporaryDirectory() as tmp:
        for i, stage in enumerate(stages):
            last = i == len(stages) - 1  # the last stage writes `out` and measures the held-out numbers
            dst = out if last else Path(tmp) / f"stage{i + 1}.safetensors"
            # MiniLM's first load draws from torch's RNG: each stage loads it afresh, so it draws the same in any
            # process
            forget_minilm()
            res = stage(src, dst, eval_n if last else 0)
            src = dst
    return res


__all__ = ["train_tiny_vit_clip", "train_tiny_vit_clip_video", "render_diverse", "textured_background", "augment",
           "build_diverse_set"]
