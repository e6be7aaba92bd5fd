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

Reproducible from ``seed`` and ``threads`` (the schedule counts steps, not seconds). On 2 CPU cores the default
recipe trains at about 110 images/s; the whole run takes about an hour.
"""
from __future__ import annotations

import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from robustlab.datasets.synthetic import world
from robustlab.models.builtin import TinyClipNet, save_checkpoint
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
from robustlab.training.tiny_clip import clip_loss, encode_captions_frozen
from robustlab.training.tiny_clip_video import train_tiny_clip_video

RENDER = 128  # the world's image size; the tower sees it area-resampled to its own size


def textured_background(tone: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """The world's background of ``tone`` (its colour and gradient) with a faint texture on top, float H×W×3."""
    img = world._background(tone, size, rng)
    kind = int(rng.integers(4))
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    if kind == 1:  # smooth blobs
        tex = cv2.resize(rng.normal(size=(6, 6)).astype(np.float32), (size, size),
                         interpolation=cv2.INTER_CUBIC) * rng.uniform(8, 20)
    elif kind == 2:  # faint stripes at a random angle and period
        a, f = rng.uniform(0, np.pi), rng.uniform(3, 10)
        tex = np.sin(2 * np.pi * f * (np.cos(a) * xx + np.sin(a) * yy)) * rng.uniform(6, 14)
    elif kind == 3:  # soft checks
        f = rng.uniform(3, 8)
        tex = np.sign(np.sin(2 * np.pi * f * xx) * np.sin(2 * np.pi * f * yy)) * rng.uniform(4, 10)
        tex = cv2.GaussianBlur(tex.astype(np.float32), (0, 0), size / 60)
    else:  # plain, as the world draws it
        tex = np.zeros((size, size), np.float32)
    tint = 1 + rng.uniform(-0.15, 0.15, 3).astype(np.float32)
    return np.clip(img + tex[..., None].astype(np.float32) * tint, 0, 255)


def render_diverse(scene: world.Scene, size: int, seed: int) -> np.ndarray:
    """One training view of ``scene``: textured background, objects as the world draws them, a smooth lighting
    field, area-resampled from 128 px to ``size``."""
    rng = np.random.default_rng([seed, scene.index, 4242])
    bg = textured_background(scene.background, 2 * RENDER, rng)
    im = world.render_objects(scene.objects, scene.background, RENDER, rng, background=bg).astype(np.float32)
    yy, xx = np.mgrid[0:RENDER, 0:RENDER].astype(np.float32) / (RENDER - 1)
    a = rng.uniform(0, 2 * np.pi)
    gain = 1 + rng.uniform(0, 0.2) * (np.cos(a) * (xx - .5) + np.sin(a) * (yy - .5)) * 2
    im = np.clip(im * gain[..., None], 0, 255).astype(np.uint8)
    return cv2.resize(im, (size, size), interpolation=cv2.INTER_AREA)


def _render_chunk(args):
    seed, start, n, size = args
    scenes = world.make_scenes(n, seed, start=start)
    return np.stack([render_diverse(s, size, seed) for s in scenes]), [s.caption for s in scenes]


def build_diverse_set(n: int, seed: int, size: int, workers: int = 2):
    """``n`` diverse training views of world ``seed`` (N×size×size×3 uint8) and their captions."""
    jobs = [(seed, s, min(1000, n - s), size) for s in range(0, n, 1000)]
    imgs, caps = [], []
    mapper = ProcessPoolExecutor(workers).map if workers > 1 else map
    for a, c in tqdm(mapper(_render_chunk, jobs), total=len(jobs), desc="render scenes", unit="k", mininterval=5):
        imgs.append(a)
        caps += c
    return np.concatenate(imgs), caps


def augment(x: torch.Tensor, g: torch.Generator, low_res: int = 64, low_res_frac: float = 0.25) -> torch.Tensor:
    """Per-image random resized crop, colour jitter and (for ``low_res_frac`` of the batch) a ``low_res`` view
    upsampled back; ``x``: B×3×H×W in [0, 1]."""
    B, _, H, W = x.shape
    s = torch.empty(B).uniform_(0.80, 1.0, generator=g)
    theta = torch.zeros(B, 2, 3)
    theta[:, 0, 0] = theta[:, 1, 1] = s
    theta[:, 0, 2] = (torch.rand(B, generator=g) * 2 - 1) * (1 - s)
    theta[:, 1, 2] = (torch.rand(B, generator=g) * 2 - 1) * (1 - s)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    k = int(round(B * low_res_frac))
    if k:
        small = F.interpolate(x[:k], size=(low_res, low_res), mode="area")
        x = torch.cat([F.interpolate(small, size=(H, W), mode="bilinear", align_corners=False), x[k:]])
    jitter = (torch.rand(B, 6, generator=g) * 2 - 1)
    br, ct, sat = (1 + 0.25 * jitter[:, i].view(B, 1, 1, 1) for i in range(3))
    wb = 1 + 0.05 * jitter[:, 3:6].view(B, 3, 1, 1)
    m = x.mean((1, 2, 3), keepdim=True)
    x = (x - m) * ct + m
    gray = x.mean(1, keepdim=True)
    x = (x - gray) * sat + gray
    return (x * br * wb).clamp(0, 1)


def train_tiny_vit_clip(out: str | Path | None = None, seed: int = 0, n_train: int = 30000, epochs: int = 11,
                        batch_size: int = 256, lr: float = 1.5e-3, threads: int | None = 2, eval_n: int = 1000,
                        snapshot_every: int = 0, log=print) -> dict:
    """Train tiny-vit-clip; write its checkpoint (``out`` or ``assets/tiny-vit-clip.safetensors``). With
    ``snapshot_every`` > 0, a checkpoint of the weights so far is written every that many steps beside ``out``."""
    t0 = time.time()
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    cfg = dict(TINY_VIT_CLIP_CONFIG)
    size = int(cfg["image_size"])
    out = Path(out) if out else checkpoint_path(TINY_VIT_CLIP_CHECKPOINT)
    imgs, caps = build_diverse_set(n_train, world.TRAIN_SEED, size, workers=min(2, os.cpu_count() or 1))
    log(f"rendered {len(imgs)} diverse scenes in {time.time() - t0:.0f}s")
    t1 = time.time()
    states, lengths = encode_captions_frozen(caps, cfg["max_tokens"], batch=256)
    log(f"frozen MiniLM states for {len(caps)} captions in {time.time() - t1:.0f}s")

    net = TinyClipNet(cfg)
    decay = [p for n, p in net.named_parameters() if p.ndim >= 2 and not n.endswith(".pos")]
    rest = [p for n, p in net.named_parameters() if not (p.ndim >= 2 and not n.endswith(".pos"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98))
    steps_per_epoch = len(imgs) // batch_size
    total = steps_per_epoch * epochs
    warm = max(1, round(total * 0.04))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    x_all = torch.from_numpy(imgs).permute(0, 3, 1, 2)  # uint8 N×3×H×W
    g = torch.Generator().manual_seed(seed)
    mean, std = cfg["mean"], cfg["std"]
    t2 = time.time()
    bar = tqdm(total=total, desc="train tiny-vit-clip", unit="step", mininterval=10)
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
        log(f"epoch {ep + 1}/{epochs}: loss {np.mean(losses[-steps_per_epoch:]):.3f} ({time.time() - t2:.0f}s, "
            f"{(ep + 1) * steps_per_epoch * batch_size / (time.time() - t2):.0f} images/s)")
    bar.close()
    net.eval()
    train_s = time.time() - t2
    recipe = dict(seed=seed, n_train=n_train, epochs=epochs, steps=total, batch_size=batch_size, lr=lr,
                  warmup=warm, weight_decay=0.05, betas=[0.9, 0.98], grad_clip=1.0, render=RENDER,
                  train_world_seed=world.TRAIN_SEED,
                  diversity="textured backgrounds, lighting field 0.8-1.2, random resized crop 0.8-1, brightness/"
                            "contrast/saturation +-25%, white balance +-5%, 25% seen at 64 px",
                  seconds=round(time.time() - t0, 1), train_seconds=round(train_s, 1),
                  final_loss=round(float(np.mean(losses[-20:])), 4), threads=torch.get_num_threads())
    log(f"trained {total} steps in {train_s:.0f}s, final loss {recipe['final_loss']}")
    quality = heldout_quality("retrieval", TinyVitClip(device="cpu", net=net), "builtin", eval_n) if eval_n else {}
    log(f"held-out ({eval_n} scenes, seed {world.HELDOUT_SEED}): {json.dumps(quality)}")
    save_checkpoint(net, out, {"train": recipe, "quality": quality})
    log(f"saved {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s total")
    return dict(train=recipe, quality=quality, path=str(out))




def train_tiny_vit_clip_video(out: str | Path | None = None, seed: int = 0, n_train: int = 12000, epochs: int = 20,
                              threads: int | None = 2, eval_n: int = 1000, log=print, **kw) -> dict:
    """``robustlab train tiny-vit-clip-video``: CLIP4Clip's meanP and seqTransf heads over tiny-vit-clip's frozen
    ViT trunk (its projection, a frame adapter, the temporal transformer and a text head per variant train), the
    recipe of tiny-clip-video (:func:`robustlab.training.tiny_clip_video.train_tiny_clip_video`) on frames rendered
    at 64 px (the built-in videos' size) and upsampled to 96 px as the model's preprocessing does."""
    return train_tiny_clip_video(out, seed=seed, n_train=n_train, epochs=epochs, threads=threads, eval_n=eval_n,
                                 log=log, name="tiny-vit-clip-video", cfg=TINY_VIT_CLIP_VIDEO_CONFIG,
                                 base=TINY_VIT_CLIP_CHECKPOINT, checkpoint=TINY_VIT_CLIP_VIDEO_CHECKPOINT,
                                 classes=(TinyVitClipVideoMeanP, TinyVitClipVideoSeqTransf), render_size=64, **kw)


__all__ = ["train_tiny_vit_clip", "train_tiny_vit_clip_video", "render_diverse", "textured_background", "augment",
           "build_diverse_set"]
