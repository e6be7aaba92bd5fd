"""The whole tiny-vilt recipe (:func:`train_tiny_vilt`: features, stages 0-3, the checkpoint and its held-out
figures) and stage 3 alone on a stage-2 checkpoint. Part of :mod:`robustlab.training.tiny_vilt`."""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from robustlab.datasets.synthetic import qa
from robustlab.datasets.synthetic.world import HELDOUT_SEED
from robustlab.models.builtin import load_tiny_clip
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import (CHECKPOINT, TINY_VILT_CONFIG, TinyVilt, TinyViltNet, load_tiny_vilt,
                                        save_tiny_vilt)
from robustlab.tasks.quality import heldout_quality
from robustlab.training.tiny_vilt.data import (IMAGE_MIX, SCENE_SEED, VIDEO_QTYPE_P, VIDEO_SEED, _image_examples, _log,
                                               _video_examples, build_features)
from robustlab.training.tiny_vilt.losses import AUX_W, POOL_W, _loss
from robustlab.training.tiny_vilt.stages import (ANSWER_STEPS, QUESTION_POOLS, UNIQUENESS_DATA, UNIQUENESS_STEPS,
                                                 pretrain_tokens, refine_answers, refine_uniqueness)

JOINT_PAIRS = False  # relation pairs in joint training too (stage 2 always pairs them; measured worse when joint)


def train_tiny_vilt(out: str | Path | None = None, seed: int = 0, n_train: int = 10000,
                    n_videos: int | None = None, epochs: int = 5, eval_n: int = 1000, batch: int = 32,
                    lr: float = 1e-3, threads: int | None = None, pretrain_steps: int = 1000,
                    answer_steps: int = ANSWER_STEPS, uniqueness_steps: int = UNIQUENESS_STEPS,
                    verbose: bool = True, clip_checkpoint: str | Path | None = None,
                    stage3_from: str | Path | None = None) -> dict:
    """The whole recipe in one call; writes the checkpoint and returns what was measured (JSON-able).

    ``n_videos`` defaults to 0.6 × ``n_train``; ``threads`` sets torch's CPU threads for the run (None: leave
    them as they are). The same seed, sizes and thread count give a bit-identical checkpoint."""
    t0 = time.time()
    prev_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        n_train = int(n_train)
        n_videos = int(n_videos) if n_videos is not None else max(int(0.6 * n_train), 2)
        if n_train < 2 or n_videos < 2 or epochs < 1:
            raise ValueError("n_train and n_videos must be ≥ 2 and epochs ≥ 1")
        out = Path(out) if out else checkpoint_path(CHECKPOINT)
        if stage3_from:
            return _stage3_only(Path(stage3_from), out, seed, uniqueness_steps, eval_n, verbose, t0)
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        # stage 1 trains without question pools; stage 2 adds them with a fresh answer head
        cfg = dict(TINY_VILT_CONFIG, answers=list(qa.ANSWERS), question_pool=0)
        net = TinyViltNet(cfg)
        clip_net, clip_meta = load_tiny_clip(Path(clip_checkpoint) if clip_checkpoint else
                                             checkpoint_path("tiny-clip.safetensors"))
        net.cnn.load_state_dict(clip_net.image.features.state_dict())
        for p in net.cnn.parameters():
            p.requires_grad_(False)
        net.eval()
        model = TinyVilt(device="cpu", net=net)
        scenes, img_feats, img_labels, videos, vid_feats, vid_labels, vid_targets = build_features(
            net, n_train, n_videos, rng, verbose)
        t_feat = time.time() - t0
        _log(f"features ready in {t_feat:.0f}s: images {tuple(img_feats.shape)}, videos {tuple(vid_feats.shape)}",
             verbose)

        net.train()
        net.cnn.eval()
        stage0 = pretrain_tokens(net, img_feats, img_labels, vid_feats, vid_labels, pretrain_steps, rng,
                                 verbose=verbose) if pretrain_steps else {}
        params = [p for n, p in net.named_parameters() if p.requires_grad]
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=lr, betas=(0.9, 0.98))
        n_img_b = math.ceil(n_train / batch)
        n_vid_b = math.ceil(n_videos / batch)
        total = epochs * (n_img_b + n_vid_b)
        warm = max(1, total // 30)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s / total, 1.0))))
        step, history = 0, []
        net.train()
        net.cnn.eval()  # frozen (BatchNorm statistics too); features are cached anyway
        for ep in range(epochs):
            ip, vp = rng.permutation(n_train), rng.permutation(n_videos)
            order = [(False, k) for k in range(n_img_b)] + [(True, k) for k in range(n_vid_b)]
            order = [order[i] for i in rng.permutation(len(order))]
            sums: dict[str, list[float]] = {}
            for video, k in order:
                if video:
                    idx = vp[k * batch:(k + 1) * batch]
                    *ex, rows = _video_examples(videos, vid_targets, idx, rng, pairs=JOINT_PAIRS)
                    feats, labels = vid_feats[rows], vid_labels[rows]
                else:
                    idx = ip[k * batch:(k + 1) * batch]
                    ex = _image_examples(scenes, img_labels, idx, rng)
                    feats, labels = img_feats[idx], img_labels[idx]
                losses = _loss(model, net, feats, labels, *ex, video=video)
                loss = sum(losses.values())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                sched.step()
                step += 1
                for kk, v in losses.items():
                    sums.setdefault(("vid_" if video else "img_") + kk, []).append(float(v.detach()))
                if verbose and step % 100 == 0:
                    _log(f"epoch {ep + 1}/{epochs} step {step}/{total} loss {float(loss.detach()):.3f} "
                         f"({time.time() - t0:.0f}s)", verbose)
            ep_loss = {kk: round(float(np.mean(v)), 4) for kk, v in sorted(sums.items())}
            history.append(ep_loss)
            _log(f"epoch {ep + 1} done ({time.time() - t0:.0f}s): {ep_loss}", verbose)
        net.eval()
        stage2 = refine_answers(model, net, scenes, img_feats, img_labels, videos, vid_feats, vid_labels,
                                vid_targets, answer_steps, rng, batch=batch, verbose=verbose) if answer_steps else {}
        net.eval()
        stage3 = refine_uniqueness(net, seed, steps=uniqueness_steps, n_images=min(UNIQUENESS_DATA[0], n_train),
                                   n_videos=min(UNIQUENESS_DATA[1], n_videos), verbose=verbose) \
            if uniqueness_steps else {}
        train_s = time.time() - t0
        recipe = dict(seed=seed, n_train_images=n_train, n_train_videos=n_videos, reversed_videos=0.5,
                      epochs=epochs, batch=batch, lr=lr, steps=step, token_pretrain_steps=int(pretrain_steps),
                      token_pretrain_losses=stage0,
                      answer_refine_steps=int(answer_steps), answer_refine_losses=stage2,
                      uniqueness=stage3, question_pools=QUESTION_POOLS if answer_steps else 0,
                      joint_pairs=JOINT_PAIRS, image_mix=list(IMAGE_MIX),
                      video_qtype_p=VIDEO_QTYPE_P, aux_weight=AUX_W, pool_weight=POOL_W,
                      scene_seed=SCENE_SEED, video_seed=VIDEO_SEED, threads=torch.get_num_threads(),
                      train_seconds=round(train_s, 1), feature_seconds=round(t_feat, 1), final_losses=history[-1],
                      loss_history=history, cnn_from="tiny-clip.safetensors (frozen)",
                      tiny_clip_train=clip_meta.get("train", {}).get("seed") if isinstance(clip_meta.get("train"),
                                                                                              dict) else None)
        save_tiny_vilt(net, out, {"train": recipe})
        quality = _heldout(net, recipe, out, eval_n)
        size_mb = out.stat().st_size / 1e6
        _log(f"wrote {out} ({size_mb:.1f} MB) in {time.time() - t0:.0f}s", verbose)
        return {"checkpoint": str(out), "size_mb": round(size_mb, 2), "train": recipe, "quality": quality,
                "total_seconds": round(time.time() - t0, 1)}
    finally:
        torch.set_num_threads(prev_threads)


def _heldout(net, recipe: dict, out: Path, eval_n: int) -> dict:
    """The held-out figures stored in the checkpoint's metadata (measured with the tasks on ``eval_n`` items)."""
    if not eval_n or eval_n <= 0:
        return {}

    model = TinyVilt(device="cpu", net=net, meta={"train": recipe})
    te = time.time()
    quality = {"seed": HELDOUT_SEED, "n": int(eval_n),
               "vqa_images": heldout_quality("vqa", model, "builtin", eval_n),
               "vqa_videos": heldout_quality("vqa", model, "builtin-videos", eval_n),
               "grounding": heldout_quality("grounding", model, "builtin", eval_n),
               "order_reversal": heldout_quality("order-reversal", model, "builtin-videos", 20 * eval_n + 100,
                                                 pairs=eval_n),
               "clavi": heldout_quality("clavi", model, "builtin-videos", 3 * eval_n, pairs=eval_n),
               "eval_seconds": round(time.time() - te, 1)}
    save_tiny_vilt(net, out, {"train": recipe, "quality": quality})
    return quality


def _stage3_only(src: Path, out: Path, seed: int, steps: int, eval_n: int, verbose: bool, t0: float) -> dict:
    """Stage 3 on an existing stage-2 checkpoint (``--stage3-from``): its weights and recipe, plus the
    uniqueness stage with ``seed`` — the same as the whole recipe when ``src`` came from stages 0-2 of it."""
    net, meta = load_tiny_vilt(src)
    recipe = dict(meta.get("train") or {})
    if recipe.get("uniqueness"):
        raise ValueError(f"{src} already has stage 3 (uniqueness); give a stage-2 checkpoint")
    recipe["uniqueness"] = refine_uniqueness(
        net, seed, steps=steps, n_images=min(UNIQUENESS_DATA[0], int(recipe.get("n_train_images", 10**9))),
        n_videos=min(UNIQUENESS_DATA[1], int(recipe.get("n_train_videos", 10**9))), verbose=verbose)
    recipe["stage3_from"] = src.name
    save_tiny_vilt(net, out, {"train": recipe})
    quality = _heldout(net, recipe, out, eval_n)
    size_mb = out.stat().st_size / 1e6
    _log(f"wrote {out} ({size_mb:.1f} MB) in {time.time() - t0:.0f}s", verbose)
    return {"checkpoint": str(out), "size_mb": round(size_mb, 2), "train": recipe, "quality": quality,
            "total_seconds": round(time.time() - t0, 1)}
