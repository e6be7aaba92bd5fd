"""Training of the built-in models on the synthetic world (``robustlab train tiny-clip``).

Reproducible from a seed: scenes come from ``robustlab.datasets.synthetic.world`` with the training seed, the data order
and the initial weights from the given seed. On 2 CPU cores the default recipe takes about 15 minutes.

Recipe (tiny-clip): N training scenes rendered at 128 px and area-resampled to 64 px (exactly the
inference preprocessing); one caption per scene drawn from the varied templates; the frozen MiniLM token
states of every caption are computed once up front (sorted by length to avoid padding), then the image
tower and the text head train with the symmetric InfoNCE loss, AdamW and a cosine schedule.
"""
from __future__ import annotations

import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from robustlab.datasets.synthetic import world
from robustlab.models.builtin import (
    TINY_CLIP_CONFIG,
    TinyClip,
    TinyClipNet,
    minilm_tokens,
    save_tiny_clip,
)
from robustlab.models.checkpoints import checkpoint_path
from robustlab.tasks.quality import heldout_quality


def _render_chunk(args):
    seed, start, n, size = args
    scenes = world.make_scenes(n, seed, start=start)
    imgs = world.render_scenes(scenes, 128)
    small = preprocess_uint8(imgs, size)
    return small, [s.caption for s in scenes]


def preprocess_uint8(imgs: np.ndarray, size: int) -> np.ndarray:
    import cv2

    return np.stack([cv2.resize(im, (size, size), interpolation=cv2.INTER_AREA) for im in imgs])


def build_training_set(n: int, seed: int, size: int, workers: int = 2):
    """Render n scenes of the training world (seed) and return (images N×size×size×3 uint8, captions)."""
    chunk = 1000
    jobs = [(seed, s, min(chunk, n - s), size) for s in range(0, n, chunk)]
    imgs, caps = [], []
    if workers > 1:

        with ProcessPoolExecutor(workers) as ex:
            for a, c in tqdm(ex.map(_render_chunk, jobs), total=len(jobs), desc="render scenes", unit="k"):
                imgs.append(a)
                caps += c
    else:
        for j in tqdm(jobs, desc="render scenes", unit="k"):
            a, c = _render_chunk(j)
            imgs.append(a)
            caps += c
    return np.concatenate(imgs), caps


def encode_captions_frozen(captions: list[str], max_tokens: int, batch: int = 128):
    """Frozen MiniLM token states for all captions, as one padded fp16 tensor + lengths (length-sorted batches)."""
    order = np.argsort([len(c) for c in captions])
    states = torch.zeros(len(captions), max_tokens, 384, dtype=torch.float16)
    lengths = torch.zeros(len(captions), dtype=torch.long)
    for i in tqdm(range(0, len(order), batch), desc="MiniLM token states", unit="batch"):
        idx = order[i:i + batch]
        st, m = minilm_tokens([captions[j] for j in idx], "cpu", max_tokens)
        L = st.shape[1]
        states[torch.as_tensor(idx), :L] = st.to(torch.float16)
        lengths[torch.as_tensor(idx)] = m.sum(1)
    return states, lengths


def clip_loss(img, txt, logit_scale):
    img = F.normalize(img, dim=-1)
    txt = F.normalize(txt, dim=-1)
    logits = logit_scale.exp().clamp(max=100) * img @ txt.T
    labels = torch.arange(len(img))
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2


def train_tiny_clip(out: str | Path | None = None, seed: int = 0, n_train: int = 20000, epochs: int = 10,
                    batch_size: int = 256, lr: float = 2e-3, threads: int | None = None, eval_n: int = 1000,
                    log=print) -> dict:
    t0 = time.time()
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    cfg = dict(TINY_CLIP_CONFIG)
    size = cfg["image_size"]
    imgs, caps = build_training_set(n_train, world.TRAIN_SEED, size, workers=min(2, os.cpu_count() or 1))
    log(f"rendered {len(imgs)} scenes in {time.time() - t0:.0f}s")
    t1 = time.time()
    states, lengths = encode_captions_frozen(caps, cfg["max_tokens"])
    log(f"frozen MiniLM states for {len(caps)} captions in {time.time() - t1:.0f}s")

    net = TinyClipNet(cfg)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.05)
    steps_per_epoch = len(imgs) // batch_size
    total = steps_per_epoch * epochs
    warm = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    x_all = torch.from_numpy(imgs).permute(0, 3, 1, 2)  # uint8 N×3×H×W
    mean, std = cfg["mean"], cfg["std"]
    t2 = time.time()
    bar = tqdm(total=total, desc="train tiny-clip", unit="step")
    net.train()
    losses = []
    for ep in range(epochs):
        perm = rng.permutation(len(imgs))
        for s in range(steps_per_epoch):
            idx = torch.as_tensor(perm[s * batch_size:(s + 1) * batch_size])
            x = (x_all[idx].float() / 255.0 - mean) / std
            L = int(lengths[idx].max())
            tok = states[idx, :L].float()
            mask = (torch.arange(L)[None, :] < lengths[idx][:, None]).long()
            loss = clip_loss(net.image(x), net.text(tok, mask), net.logit_scale)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(epoch=ep + 1, loss=f"{np.mean(losses[-20:]):.3f}")
    bar.close()
    net.eval()
    train_s = time.time() - t2
    log(f"trained {total} steps in {train_s:.0f}s, final loss {np.mean(losses[-20:]):.3f}")

    recipe = dict(seed=seed, n_train=n_train, epochs=epochs, batch_size=batch_size, lr=lr,
                  train_world_seed=world.TRAIN_SEED, seconds=round(time.time() - t0, 1),
                  final_loss=round(float(np.mean(losses[-20:])), 4), threads=torch.get_num_threads())
    model = TinyClip(device="cpu", net=net)

    quality = heldout_quality("retrieval", model, "builtin", eval_n) if eval_n else {}
    log(f"held-out ({eval_n} scenes, seed {world.HELDOUT_SEED}): {json.dumps(quality)}")
    out = Path(out) if out else checkpoint_path("tiny-clip.safetensors")
    save_tiny_clip(net, out, {"train": recipe, "quality": quality})
    log(f"saved {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s total")
    return dict(train=recipe, quality=quality, path=str(out))
