"""Training recipe of ``builtin:tiny-vilt`` (``robustlab train tiny-vilt``), reproducible from ``--seed``.

Two stages, single-threaded on CPU:

1. World: ``n_train`` (10,000) scenes (world seed 21, 128 px) and ``n_train // 2`` event videos (world seed 22,
   64 px, the 8 frames the model samples); held-out evaluation uses other seeds (1000 by default).
2. Frozen visual features, computed once per stage: tiny-clip's trained CNN image tower (copied into tiny-vilt
   and frozen) gives an 8×8 grid per image and a 4×4 grid per sampled video frame (stage-3 ⊕ stage-4
   features, 384-d); stage 2 appends each token's raw 8×8×3 pixel patch (video frames at 32 px).
3. Each epoch draws fresh texts for every scene / video from its structure (:mod:`robustlab.data.qa`):
   images — a VQA question, a referring expression with its box, or an ITM caption (half matched, half a hard
   negative with one attribute changed or another scene's caption) in the proportions ``image_mix``
   (stage 1: 45/40/15 %, stage 2: 55/30/15 %); videos — a VQA question (85 %; temporal question types weighted
   up) or an ITM caption (15 %; negatives: the time-reversed caption or another video's caption).
4. Losses: VQA cross-entropy over the fixed answer vocabulary; ITM binary cross-entropy; grounding:
   cross-entropy over the 64 cells for the cell of the target's centre, plus L1 (×5) and GIoU (×2) on the
   boxes decoded at that cell and its 8 neighbours. AdamW 1e-3, warm-up + cosine, batch 64, image and video
   batches interleaved at random.
5. Stage 1: 5 epochs with seed ``seed`` on CNN-feature tokens. Stage 2: 3 epochs with seed ``seed + 1`` from
   stage 1's weights plus the zero-initialised pixel-patch embedding (ViLT's linear patch embedding): stage 1
   left colour and motion questions near chance, and the raw patches give the fusion layers colour and
   within-cell position directly.
6. The checkpoint keeps the fusion transformer, heads and the CNN copy (the MiniLM word-embedding table is
   read from its package), with the config, the answer vocabulary, both stages' recipes and the held-out
   figures (measured with :mod:`robustlab.evaluate_fusion` on ``eval_n`` fresh items) in its metadata.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from robustlab.data import qa, world

SCENE_SEED = 21
VIDEO_SEED = 22
VIDEO_QTYPE_P = {"order": 0.3, "event_order": 0.25, "event": 0.2, "first": 0.1, "direction": 0.15}


def _log(msg: str, verbose: bool) -> None:
    if verbose:
        print(f"[tiny-vilt {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@torch.no_grad()
def _cnn_features(net, frames: np.ndarray, video: bool, cfg: dict, batch: int = 256) -> torch.Tensor:
    from robustlab.models.builtin import preprocess_64

    out = []
    for s in range(0, len(frames), batch):
        px = preprocess_64(list(frames[s:s + batch]), int(cfg["image_size"]), cfg["mean"], cfg["std"])
        out.append(net.visual_features(px, video).to(torch.float16))
    return torch.cat(out)


def build_features(net, n_images: int, n_videos: int, verbose: bool = True):
    """Scenes, videos and their frozen CNN token features (float16)."""
    cfg = net.cfg
    scenes = world.make_scenes(n_images, SCENE_SEED)
    feats = []
    for s in range(0, n_images, 1024):
        imgs = world.render_scenes(scenes[s:s + 1024], 128)
        feats.append(_cnn_features(net, imgs, False, cfg))
        _log(f"image features {min(s + 1024, n_images)}/{n_images}", verbose)
    img_feats = torch.cat(feats)
    videos = [world.sample_video(VIDEO_SEED, i) for i in range(n_videos)]
    T = int(cfg["n_frames"])
    feats = []
    for s in range(0, n_videos, 256):
        frames = np.concatenate([qa.video_frames_at(v, qa.frame_indices(v.n_frames, T), 64)
                                 for v in videos[s:s + 256]])
        f = _cnn_features(net, frames, True, cfg)
        feats.append(f.reshape(-1, T * f.shape[1], f.shape[2]))
        if (s // 256) % 8 == 0 or s + 256 >= n_videos:
            _log(f"video features {min(s + 256, n_videos)}/{n_videos}", verbose)
    return scenes, img_feats, videos, torch.cat(feats)


def giou_loss(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1 - GIoU for xyxy boxes (…×4)."""
    ix = (torch.minimum(a[..., 2], b[..., 2]) - torch.maximum(a[..., 0], b[..., 0])).clamp_min(0)
    iy = (torch.minimum(a[..., 3], b[..., 3]) - torch.maximum(a[..., 1], b[..., 1])).clamp_min(0)
    inter = ix * iy
    area = lambda z: (z[..., 2] - z[..., 0]).clamp_min(0) * (z[..., 3] - z[..., 1]).clamp_min(0)  # noqa: E731
    union = area(a) + area(b) - inter
    iou = inter / union.clamp_min(1e-7)
    cw = torch.maximum(a[..., 2], b[..., 2]) - torch.minimum(a[..., 0], b[..., 0])
    ch = torch.maximum(a[..., 3], b[..., 3]) - torch.minimum(a[..., 1], b[..., 1])
    hull = (cw * ch).clamp_min(1e-7)
    return 1 - (iou - (hull - union) / hull)


IMAGE_MIX = (0.45, 0.40, 0.15)  # VQA, grounding, ITM


def _image_examples(scenes, idx, rng, mix=IMAGE_MIX):
    """Texts and targets for one image batch: task 0 = VQA, 1 = grounding, 2 = ITM."""
    ans_id = {a: i for i, a in enumerate(qa.ANSWERS)}
    texts, task, ans, box, itm = [], [], [], [], []
    for i in idx:
        s = scenes[i]
        r = rng.random()
        a, b, m = -100, [0.0] * 4, 0.0
        if r < mix[0]:
            q = qa.image_question(s, rng)
            texts.append(q.question)
            a, t = ans_id[q.answer], 0
        elif r < mix[0] + mix[1]:
            k = int(rng.integers(len(s.objects)))
            ref = world.referring_expression(s, k, 128)
            x0, y0, x1, y1 = (v / 128.0 for v in ref["box"])
            texts.append(ref["expression"])
            b, t = [(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0], 1
        else:
            t = 2
            u = rng.random()
            if u < 0.5:
                texts.append(s.captions[int(rng.integers(len(s.captions)))])
                m = 1.0
            elif u < 0.8:
                texts.append(qa.mismatched_caption(s, rng))
            else:
                texts.append(scenes[int(rng.integers(len(scenes)))].caption)  # (rarely itself: same scene)
                m = 1.0 if texts[-1] == s.caption else 0.0
        task.append(t)
        ans.append(a)
        box.append(b)
        itm.append(m)
    return texts, torch.tensor(task), torch.tensor(ans), torch.tensor(box), torch.tensor(itm)


def _video_examples(videos, idx, rng):
    ans_id = {a: i for i, a in enumerate(qa.ANSWERS)}
    types, p = list(VIDEO_QTYPE_P), np.array(list(VIDEO_QTYPE_P.values()))
    texts, task, ans, itm = [], [], [], []
    for i in idx:
        v = videos[i]
        a, m = -100, 0.0
        if rng.random() < 0.85:
            q = qa.video_question(v, rng, str(rng.choice(types, p=p / p.sum())))
            texts.append(q.question)
            a, t = ans_id[q.answer], 0
        else:
            t = 2
            u = rng.random()
            if u < 0.5:
                texts.append(v.caption)
                m = 1.0
            elif u < 0.8:
                texts.append(v.reversed_caption)
            else:
                other = videos[int(rng.integers(len(videos)))]
                texts.append(other.caption)
                m = 1.0 if other.caption == v.caption else 0.0
        task.append(t)
        ans.append(a)
        itm.append(m)
    return texts, torch.tensor(task), torch.tensor(ans), None, torch.tensor(itm)


def _loss(model, net, feats, texts, task, ans, box, itm, video: bool):
    from robustlab.models.tiny_vilt import cxcywh_to_xyxy, decode_boxes

    ids, mask = model.tokenize(texts)
    vis = net.embed_visual(feats.float(), video)
    h = net(model.text_embed(ids), mask, vis)
    o = net.heads_out(h, ids.shape[1])
    losses = {}
    q = task == 0
    if q.any():
        losses["vqa"] = F.cross_entropy(o["vqa"][q], ans[q])
    m = task == 2
    if m.any():
        losses["itm"] = F.binary_cross_entropy_with_logits(o["itm"][m], itm[m].float())
    g = task == 1
    if g.any() and not video:
        grid = int(net.cfg["image_grid"])
        out = o["ground"][g]                       # b×V×5
        tgt = box[g].float()                       # b×4 cxcywh
        col = (tgt[:, 0] * grid).long().clamp(0, grid - 1)
        row = (tgt[:, 1] * grid).long().clamp(0, grid - 1)
        losses["cell"] = F.cross_entropy(out[..., 0], row * grid + col)
        cells = torch.arange(grid * grid)
        near = (((cells[None] // grid) - row[:, None]).abs() <= 1) & (((cells[None] % grid) - col[:, None]).abs() <= 1)
        pred = decode_boxes(out, grid)             # b×V×4
        t = tgt[:, None].expand_as(pred)
        w = near.float()
        l1 = ((pred - t).abs().sum(-1) * w).sum() / w.sum()
        gi = (giou_loss(cxcywh_to_xyxy(pred), cxcywh_to_xyxy(t)) * w).sum() / w.sum()
        losses["box"] = 5 * l1 + 2 * gi
    return losses


STAGE2_MIX = (0.55, 0.30, 0.15)
STAGE3_MIX = (0.60, 0.25, 0.15)


def train_tiny_vilt(out: str | Path | None = None, seed: int = 0, n_train: int = 10000, epochs: int = 2,
                    eval_n: int = 1000, stage1_epochs: int = 5, stage2_epochs: int = 3,
                    stage1: str | Path | None = None, stage2: str | Path | None = None,
                    verbose: bool = True, clip_checkpoint: str | Path | None = None) -> dict:
    """The full three-stage recipe; writes the checkpoint and returns what was measured (JSON-able).

    Stage 1 (``stage1_epochs``, seed ``seed``): CNN-feature tokens only. Stage 2 (``stage2_epochs``, seed
    ``seed + 1``): from stage 1's weights, adds the raw-pixel patch embedding (zero-initialised) and weights
    image VQA up (:data:`STAGE2_MIX`). Stage 3 (``epochs``, seed ``seed + 2``): from stage 2's weights, adds the
    pooled-visual VQA term (its scorer starts as the grounding scorer, its output layer at zero;
    :data:`STAGE3_MIX`). ``stage1`` / ``stage2``: already trained checkpoints of those stages (same seed and
    sizes) to start from; every stage is deterministic, so this only saves their time.
    """
    import tempfile

    t0 = time.time()
    out = Path(out) if out else None
    common = dict(n_train=n_train, verbose=verbose, clip_checkpoint=clip_checkpoint)
    with tempfile.TemporaryDirectory() as tmp:
        if stage2 is None:
            from robustlab.models.tiny_vilt import load_tiny_vilt

            if stage1 is None:
                stage1 = Path(tmp) / "stage1.safetensors"
                train_stage(stage1, seed=seed, epochs=stage1_epochs, pixel_patches=False, **common)
            stage2 = Path(tmp) / "stage2.safetensors"
            train_stage(stage2, seed=seed + 1, epochs=stage2_epochs, init=stage1, image_mix=STAGE2_MIX,
                        pixel_patches=True, extra={"stage1": load_tiny_vilt(Path(stage1))[1].get("train"),
                                                   "recipe_seed": seed}, **common)
        from robustlab.models.tiny_vilt import load_tiny_vilt

        prev = load_tiny_vilt(Path(stage2))[1].get("train") or {}
        r = train_stage(out, seed=seed + 2, epochs=epochs, eval_n=eval_n, init=stage2, image_mix=STAGE3_MIX,
                        pixel_patches=True, pooled_vqa=True,
                        extra={"stage2": prev, "recipe_seed": seed}, **common)
    r["total_seconds"] = round(time.time() - t0, 1)
    return r


def train_stage(out: str | Path | None = None, seed: int = 0, n_train: int = 10000, epochs: int = 5,
                eval_n: int = 0, batch: int = 64, lr: float = 1e-3, verbose: bool = True,
                clip_checkpoint: str | Path | None = None, init: str | Path | None = None,
                image_mix: tuple[float, float, float] = IMAGE_MIX, pixel_patches: bool = False,
                pooled_vqa: bool = False, extra: dict | None = None) -> dict:
    """One training stage; writes its checkpoint and returns what was measured (JSON-able).

    ``init``: start from an existing tiny-vilt checkpoint's weights (parameters it lacks, e.g. the pixel-patch
    embedding, keep their seeded initialisation) instead of the seeded random initialisation."""
    from robustlab.models.builtin import checkpoint_path, load_tiny_clip
    from robustlab.models.tiny_vilt import CHECKPOINT, TINY_VILT_CONFIG, TinyVilt, TinyViltNet, save_tiny_vilt

    t0 = time.time()
    n_train = int(n_train)
    n_videos = max(n_train // 2, 2)
    if n_train < 2 or epochs < 1:
        raise ValueError("n_train must be ≥ 2 and epochs ≥ 1")
    out = Path(out) if out else checkpoint_path(CHECKPOINT)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    cfg = dict(TINY_VILT_CONFIG, answers=list(qa.ANSWERS))
    if pixel_patches:
        cfg["pixel_patches"] = True
    if pooled_vqa:
        cfg["pooled_vqa"] = True
    net = TinyViltNet(cfg)
    clip_net, clip_meta = load_tiny_clip(Path(clip_checkpoint) if clip_checkpoint else
                                         checkpoint_path("tiny-clip.safetensors"))
    net.cnn.load_state_dict(clip_net.image.features.state_dict())
    if init:
        from robustlab.models.tiny_vilt import load_tiny_vilt

        prev, _ = load_tiny_vilt(Path(init))
        missing, unexpected = net.load_state_dict(prev.state_dict(), strict=False)
        if unexpected or any(not k.startswith(("patch_proj.", "pool_score.", "vqa_pool.")) for k in missing):
            raise ValueError(f"{init} does not fit this configuration (missing {missing}, unexpected {unexpected})")
        if any(k.startswith("pool_score.") for k in missing):  # the pooling scorer starts as the grounding scorer
            with torch.no_grad():
                net.pool_score[0].load_state_dict(net.ground_head[0].state_dict())
                net.pool_score[2].weight.copy_(net.ground_head[2].weight[:1])
                net.pool_score[2].bias.copy_(net.ground_head[2].bias[:1])
    for p in net.cnn.parameters():
        p.requires_grad_(False)
    net.eval()
    model = TinyVilt(device="cpu", net=net)
    scenes, img_feats, videos, vid_feats = build_features(net, n_train, n_videos, verbose)
    t_feat = time.time() - t0
    _log(f"features ready in {t_feat:.0f}s: images {tuple(img_feats.shape)}, videos {tuple(vid_feats.shape)}",
         verbose)

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
                ex = _video_examples(videos, idx, rng)
                feats = vid_feats[idx]
            else:
                idx = ip[k * batch:(k + 1) * batch]
                ex = _image_examples(scenes, idx, rng, image_mix)
                feats = img_feats[idx]
            losses = _loss(model, net, feats, *ex, video=video)
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
                _log(f"epoch {ep + 1}/{epochs} step {step}/{total} loss {float(loss):.3f} "
                     f"({time.time() - t0:.0f}s)", verbose)
        ep_loss = {kk: round(float(np.mean(v)), 4) for kk, v in sorted(sums.items())}
        history.append(ep_loss)
        _log(f"epoch {ep + 1} done ({time.time() - t0:.0f}s): {ep_loss}", verbose)
    net.eval()
    train_s = time.time() - t0
    recipe = dict(seed=seed, n_train_images=n_train, n_train_videos=n_videos, epochs=epochs, batch=batch, lr=lr,
                  steps=step, image_mix=list(image_mix), scene_seed=SCENE_SEED, video_seed=VIDEO_SEED,
                  threads=torch.get_num_threads(),
                  train_seconds=round(train_s, 1), feature_seconds=round(t_feat, 1), final_losses=history[-1],
                  loss_history=history, init=Path(init).name if init else None, pixel_patches=pixel_patches,
                  pooled_vqa=pooled_vqa,
                  **(extra or {}), cnn_from="tiny-clip.safetensors (frozen)",
                  tiny_clip_train=clip_meta.get("train", {}).get("seed") if isinstance(clip_meta.get("train"),
                                                                                          dict) else None)
    save_tiny_vilt(net, out, {"train": recipe})
    quality = {}
    if eval_n and eval_n > 0:
        from robustlab.evaluate_fusion import HELDOUT_SEED, eval_clavi, eval_grounding, eval_vqa

        model = TinyVilt(device="cpu", net=net, meta={"train": recipe})
        quality = {"seed": HELDOUT_SEED, "n": int(eval_n),
                   "vqa": eval_vqa(model, n=eval_n, seed=HELDOUT_SEED),
                   "grounding": eval_grounding(model, n=eval_n, seed=HELDOUT_SEED),
                   "clavi": eval_clavi(model, n=eval_n, seed=HELDOUT_SEED)}
        save_tiny_vilt(net, out, {"train": recipe, "quality": quality})
    size_mb = out.stat().st_size / 1e6
    _log(f"wrote {out} ({size_mb:.1f} MB) in {time.time() - t0:.0f}s", verbose)
    return {"checkpoint": str(out), "size_mb": round(size_mb, 2), "train": recipe, "quality": quality,
            "total_seconds": round(time.time() - t0, 1)}


__all__ = ["train_tiny_vilt", "train_stage", "build_features", "giou_loss"]
