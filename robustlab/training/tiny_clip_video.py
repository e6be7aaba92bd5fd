"""Training of the built-in video retrieval models (``robustlab train tiny-clip-video``).

One run trains both CLIP4Clip variants jointly and writes one checkpoint, ``assets/tiny-clip-video.safetensors``:

* the frame tower starts from tiny-clip's image tower (``assets/tiny-clip.safetensors``); its convolutional
  features stay frozen (they already know colours, shapes and positions at 64 px) and its projection is
  fine-tuned, shared by both variants;
* each variant has its own text head (initialised from tiny-clip's) and logit scale; seqTransf has the temporal
  transformer;
* data: ``n_train`` event videos of the training world (``world.TRAIN_SEED``), ``num_frames`` frames sampled
  uniformly (exactly :func:`robustlab.models.protocols.sample_frames` of :func:`world.render_video` at 64 px for
  tiny-clip-video, at 128 px with a quarter at 64 px for tiny-vit-clip-video — only the sampled frames are
  rendered), their captions and their time-reversed captions
  (:func:`world.reverse_video_caption`);
* loss: the sum of two symmetric InfoNCE losses. meanP: videos × captions. seqTransf: the batch's videos *and
  their time reversals* × the captions *and the reversed captions* — the reversed video's caption is a hard
  negative of the video (and the right caption of the reversed video), so the order of events matters. meanP
  gets no reversed pairs: it is order-invariant and cannot separate them. Captions that are identical strings are
  all positives (multi-positive InfoNCE), since different videos can share a caption.

Reproducible from the seed (data order, dropout and initial weights of the new parts). The frozen MiniLM token
states and the frozen convolutional features are computed once up front, so a step is cheap; the default recipe
takes about 15 minutes on one CPU core.
"""
from __future__ import annotations

import json
import math
import time
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from robustlab.datasets.synthetic import world
from robustlab.metrics.retrieval import caption_groups, retrieval
from robustlab.models.builtin import load_stage1, preprocess_64, resample_u8
from robustlab.models.builtin_video import (
    AGGREGATORS,
    CHECKPOINT,
    TINY_CLIP_VIDEO_CONFIG,
    TinyClipVideoMeanP,
    TinyClipVideoNet,
    TinyClipVideoSeqTransf,
    load_tiny_clip_video,
    save_tiny_clip_video,
)
from robustlab.models.checkpoints import checkpoint_path
from robustlab.tasks.quality import heldout_quality
from robustlab.training.diversity import VIGNETTE, augment, lighting_gain, textured_background, vignette_gain
from robustlab.training.tiny_clip import encode_captions_frozen


def sampled_frame_indices(n_frames: int, num: int) -> np.ndarray:
    """The frames :func:`robustlab.models.protocols.sample_frames` picks from a video of ``n_frames`` frames."""
    return np.clip(np.floor((np.arange(num) + 0.5) * n_frames / num).astype(int), 0, n_frames - 1)


def render_sampled_frames(video: world.VideoScene, num: int, size: int = 64, diverse: bool = False) -> np.ndarray:
    """``sample_frames(world.render_video(video, size), num)``, rendering only the sampled frames. ``diverse``: the
    video drawn with the family's data diversity instead (:mod:`robustlab.training.diversity`: a textured
    background and a smooth lighting field, the same in every frame, fixed by the video)."""
    rng = world._rng(video.seed, video.index, 98)
    if diverse:
        look = np.random.default_rng([video.seed, video.index, 4243])
        bg = textured_background(video.background, size * 2, look)
        gain = lighting_gain(size, look)[..., None]
    else:
        bg = world._background(video.background, size * 2, rng)
    out = []
    for t in sampled_frame_indices(video.n_frames, num):
        objs = [o for o in world._state_at(video, int(t)) if o is not None]
        f = world.render_objects(objs, video.background, size, rng, background=bg)
        out.append(np.clip(f * gain, 0, 255).astype(np.uint8) if diverse else f)
    return np.stack(out)


def build_video_set(n: int, seed: int, num_frames: int, size: int = 64, log=print, *, store: int | None = None,
                    low_res: int = 64, low_res_frac: float = 0.0, diverse: bool = False):
    """Sampled frames (N×num×S×S×3 uint8), captions and reversed captions of n videos of world ``seed``, rendered
    at ``size``. With ``store`` (the model's input size) the frames are resampled to it as the model's own
    preprocessing does (:func:`preprocess_64`), and a ``low_res_frac`` share of the videos (which ones: a fixed
    function of ``seed``) is rendered at ``low_res`` instead, as a low-resolution video reaches the model.
    ``diverse``: every video drawn with the family's data diversity (:func:`render_sampled_frames`)."""
    store = int(store or size)
    pick = np.random.default_rng([int(seed), 4242]).random(n) < float(low_res_frac)
    frames = np.empty((n, num_frames, store, store, 3), np.uint8)
    caps, rcaps = [], []
    for i in tqdm(range(n), desc="render videos", unit="video", mininterval=5):
        v = world.sample_video(seed, i)
        for t, f in enumerate(render_sampled_frames(v, num_frames, low_res if pick[i] else size, diverse)):
            frames[i, t] = resample_u8(f, store)
        caps.append(v.caption)
        rcaps.append(world.reverse_video_caption(v))
    return frames, caps, rcaps


@torch.no_grad()
def frozen_conv_features(image_tower, frames: np.ndarray, mean: float, std: float, batch: int = 512,
                         size: int | None = None, stop: int | None = None,
                         augment_g: torch.Generator | None = None) -> torch.Tensor:
    """Frozen features (the tower's ``features``, before its projection) of every frame: N×T×F float16. With
    ``stop`` (a ViT trunk whose last blocks train), the token states before block ``stop`` instead: N×T×tokens×W.
    Frames of another size than ``size`` are resampled as the model's own preprocessing does
    (:func:`preprocess_64`). ``augment_g``: each video's frames first get one random resized crop and colour
    jitter, the same for all its frames (:func:`robustlab.training.diversity.augment` with ``group`` = frames),
    drawn from that generator."""
    n, t = frames.shape[:2]
    flat = frames.reshape(n * t, *frames.shape[2:])
    if augment_g is not None and size and flat.shape[1] != size:
        raise ValueError("augmented features need frames stored at the tower's size")
    batch = max(t, batch // t * t)  # whole videos per batch
    out = None
    image_tower.features.eval()
    for i in tqdm(range(0, len(flat), batch), desc="frozen frame features", unit="batch", mininterval=5):
        if size and flat.shape[1] != size:
            x = preprocess_64(list(flat[i:i + batch]), size, mean, std)
        else:
            x = torch.from_numpy(flat[i:i + batch]).permute(0, 3, 1, 2).float().div_(255.0)
            if augment_g is not None:
                x = augment(x, augment_g, low_res_frac=0.0, group=t)
            x = (x - mean) / std
        f = image_tower.features(x).flatten(1) if stop is None else image_tower.features.tokens(x, stop)
        if out is None:
            out = torch.empty(len(flat), *f.shape[1:], dtype=torch.float16)
        out[i:i + len(f)] = f.to(torch.float16)
    return out.view(n, t, *out.shape[1:])


def minilm_states(texts: list[str], max_tokens: int, batch: int = 128):

    return encode_captions_frozen(texts, max_tokens, batch=batch)


def multi_positive_nce(logits: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE where ``pos`` (queries × gallery, bool) marks every positive pair."""
    neg_inf = torch.finfo(logits.dtype).min
    l_row = torch.logsumexp(logits, 1) - torch.logsumexp(logits.masked_fill(~pos, neg_inf), 1)
    l_col = torch.logsumexp(logits, 0) - torch.logsumexp(logits.masked_fill(~pos, neg_inf), 0)
    return (l_row.mean() + l_col.mean()) / 2


def _init_frame_tower(tower, image_tower) -> None:
    """The frame tower starts as the image model's tower. A projection that sees more features than the image
    model's (the ViT's grid cells besides its class token) starts with the image projection on the class token's
    part and zeros elsewhere, so the first frame embeddings are the image model's."""
    src, dst = image_tower.state_dict(), tower.state_dict()
    for k, v in src.items():
        if dst[k].shape == v.shape:
            dst[k].copy_(v)
        elif k == "proj.weight" and dst[k].shape[0] == v.shape[0] and dst[k].shape[1] > v.shape[1]:
            dst[k].zero_()
            dst[k][:, :v.shape[1]].copy_(v)
        else:
            raise ValueError(f"the frame tower's {k} {tuple(dst[k].shape)} does not fit the image model's "
                             f"{tuple(v.shape)}")
    tower.load_state_dict(dst)


def _text_ids(texts: list[str]) -> np.ndarray:
    return np.array([zlib.crc32(t.encode()) for t in texts], np.int64)


VIDEO_DIVERSITY = ("per video, the same in all its frames: textured background, lighting field 0.8-1.2, random "
                   "resized crop 0.8-1, brightness/contrast/saturation +-25%, white balance +-5%")
TRUNK_LR_SCALE = 0.1  # the learning rate of the frame tower's tuned blocks, relative to ``lr``
VAL_SEED = 2  # a validation world for the training log only (never the held-out HELDOUT_SEED)


def frame_embeddings(net, feats: torch.Tensor, start: int | None = None,
                     aggregator: str = "seqtransf") -> torch.Tensor:
    """B×T frame embeddings (after the adapter) from cached frozen features: the tower's projection of them, or,
    with ``start`` (cached ViT token states), the trunk's blocks from ``start`` on, its pooling, then the projection;
    meanP's own frame head instead where the net has one (:meth:`TinyClipVideoNet.frame_head`)."""
    B, T = feats.shape[:2]
    f = feats.float().flatten(0, 1)
    if start is not None:
        f = net.image.features.pool(f, start)
    return net.frame_head(f, aggregator).view(B, T, -1)


def _caption_embeddings(head, states, lengths, idx) -> torch.Tensor:
    """L2-normalised embeddings of the captions ``idx`` (indices into the cached MiniLM ``states``) by ``head``."""
    idx = torch.as_tensor(idx)
    L = int(lengths[idx].max())
    mask = (torch.arange(L)[None, :] < lengths[idx][:, None]).long()
    return F.normalize(head(states[idx, :L].float(), mask), dim=-1)


def _validation_set(net, cfg: dict, val_n: int, render_size: int, mix: dict, start=None, log=print) -> tuple:
    """The cached validation features, captions, caption / reversed-caption indices and MiniLM states of ``val_n``
    videos of the validation world (:func:`_validate`'s arguments)."""
    vframes, vcaps, vrcaps = build_video_set(val_n, VAL_SEED, int(cfg["num_frames"]), render_size, log=log, **mix)
    vfeats = frozen_conv_features(net.image, vframes, cfg["mean"], cfg["std"], size=int(cfg["image_size"]),
                                  stop=start)
    vuniq = sorted(set(vcaps) | set(vrcaps))
    vstates, vlengths = minilm_states(vuniq, cfg["max_tokens"])
    vw = {c: i for i, c in enumerate(vuniq)}
    return vfeats, vcaps, [vw[c] for c in vcaps], [vw[c] for c in vrcaps], vstates, vlengths


def _training_features(net, cfg: dict, n_train: int, render_size: int, looks: list, mix: dict, seed: int,
                       start=None, log=print) -> tuple:
    """Frozen trunk features of the ``n_train`` training videos once per look (``"plain"``: as the world draws them;
    ``"diverse"``: with the family's data diversity and one crop and colour jitter per video, drawn from ``seed``;
    ``"vignette"``: the plain frames through one lens vignetting field per video, :func:`vignette_gain`), stacked:
    row i + k·n_train is video i's k-th look. Captions and reversed captions are repeated to match."""
    t0, parts, plain = time.time(), [], None
    for look in looks:
        if look == "diverse" or plain is None:
            frames, caps, rcaps = build_video_set(n_train, world.TRAIN_SEED, int(cfg["num_frames"]), render_size,
                                                  log=log, diverse=look == "diverse", **mix)
            log(f"rendered {n_train} videos ({look}) in {time.time() - t0:.0f}s")
            if look != "diverse":  # kept for a vignetted look
                plain = frames
        if look == "vignette":  # the plain frames through one lens field per video
            lens, frames = np.random.default_rng([seed, 777]), np.empty_like(plain)
            for i, v in enumerate(plain):
                frames[i] = np.clip(v * vignette_gain(v.shape[1], lens)[..., None], 0, 255)
        parts.append(frozen_conv_features(net.image, frames, cfg["mean"], cfg["std"], size=int(cfg["image_size"]),
                                          stop=start, augment_g=torch.Generator().manual_seed(seed)
                                          if look == "diverse" else None))
        del frames
    del plain
    feats = parts[0] if len(parts) == 1 else torch.cat(parts)
    return feats, caps * len(looks), rcaps * len(looks)


@torch.no_grad()
def _validate(net, feats, caps, ci, ri, states, lengths, start=None, aggregators=AGGREGATORS) -> dict:
    """t2v R@1 and own-vs-reversed caption accuracy of the variants on cached validation features."""
    net.eval()
    frames, out = {}, {}
    for a in aggregators:
        own = net.own_head(a)  # meanP's own frame head, or the shared one (computed once)
        if own not in frames:
            frames[own] = torch.cat([frame_embeddings(net, feats[i:i + 64], start, a)
                                     for i in range(0, len(feats), 64)])
        v = F.normalize(net.aggregate(frames[own], a), dim=-1)
        t, tr = (_caption_embeddings(net.text[a], states, lengths, i) for i in (ci, ri))
        s = (t @ v.T).numpy()
        out[a] = dict(t2v_R1=round(retrieval(s, caption_groups(caps))["R@1"], 3),
                      order_acc=round(float(((v * t).sum(1) > (v * tr).sum(1)).float().mean()), 3))
    return out


def _warmup_cosine(opt, total: int):
    """Linear warm-up over 5 % of ``total`` steps, then cosine decay to 0 (both video recipes' schedule)."""
    warm = max(1, total // 20)
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))


def _load_base(base: str, second_stage: bool) -> tuple:
    """The image model's first stage (its trunk, class-token projection and text head; a later stage of the image
    model, tiny-vit-clip's grid head, does not change what the video recipe starts from) and its metadata.

    The recipe seeds torch's global RNG before this, so what loading draws from it is part of the recipe. A first
    stage draws one net's initialisation, as the shipped first stage did (:func:`load_stage1`). The shipped second
    stage was made when loading a staged image checkpoint also built its whole model from that RNG, and its training
    draws from the RNG after it: a second stage builds it here as then, so ``--stage2-from`` and the one command
    still give the shipped weights."""
    return load_stage1(checkpoint_path(base), base.split(".")[0], draw_whole=second_stage)


def train_tiny_clip_video(out: str | Path | None = None, seed: int = 0, n_train: int = 12000, epochs: int = 20,
                          batch_size: int = 256, lr: float = 2e-3, threads: int | None = None, eval_n: int = 1000,
                          val_n: int = 500, val_every: int = 4, log=print, *, name: str = "tiny-clip-video",
                          cfg: dict | None = None, base: str = "tiny-clip.safetensors", checkpoint: str = CHECKPOINT,
                          classes: tuple = (TinyClipVideoMeanP, TinyClipVideoSeqTransf),
                          render_size: int | None = None, tune_blocks: int = 0, low_res_frac: float = 0.0,
                          low_res: int = 64, diverse: str = "none", init_from: str | Path | None = None) -> dict:
    """Train both CLIP4Clip variants over the frozen frame tower of ``base`` (an image checkpoint of the same
    family as ``cfg``); frames are rendered at ``render_size`` (default: the tower's size) and resampled to the
    tower's size as the model's preprocessing does. ``tune_blocks`` > 0 (a ViT tower) also trains the trunk's last
    that many blocks and its ``ln_post``; the blocks before them stay frozen. ``low_res_frac`` of the videos are
    rendered at ``low_res`` px instead (resampled to the tower's size as the model does); the held-out numbers are
    measured on videos rendered at ``render_size``. ``diverse``: ``"none"``; ``"all"``, the training videos drawn
    with the family's data diversity (:mod:`robustlab.training.diversity`: a textured background, a lighting field,
    one crop and colour jitter per video, the same in all its frames); ``"both"``, the videos as the world draws them
    and a diverse copy of each (a step samples from both; the steps per epoch stay ``n_train`` / ``batch_size``).
    Validation and held-out videos are drawn as the world draws them. ``init_from``: a stage-1 video checkpoint over
    the same frozen trunk whose trained parts this run starts from (a second stage: its settings are stored under
    ``train["stage2"]`` beside stage 1's)."""
    if diverse not in ("none", "all", "both"):
        raise ValueError(f"diverse must be none, all or both, not {diverse!r}")
    t0 = time.time()
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    cfg = dict(cfg or TINY_CLIP_VIDEO_CONFIG)
    T = int(cfg["num_frames"])
    size = int(cfg["image_size"])
    render_size = int(render_size or size)

    base_file = base
    base, base_meta = _load_base(base_file, second_stage=bool(init_from))
    net = TinyClipVideoNet(cfg)
    _init_frame_tower(net.image, base.image)
    for a in net.text:
        net.text[a].load_state_dict(base.text.state_dict())
        net.logit_scale[a].data.copy_(base.logit_scale.data)
    prev_train = None
    if init_from:  # a second stage: the heads of a video checkpoint over the same frozen trunk
        prev, prev_meta = load_tiny_clip_video(Path(init_from), name)
        prev_train = dict(prev_meta.get("train", {}))
        if "stage2" in prev_train:
            raise ValueError(f"{init_from} has had its second stage already; start from a stage-1 checkpoint")
        n_train = int(prev_train.get("n_train", n_train))  # stage 2 draws the videos stage 1 saw
        mine, theirs = net.image.features.state_dict(), prev.image.features.state_dict()
        if any(not torch.equal(mine[k], theirs[k]) for k in mine):
            raise ValueError(f"{init_from} is over another frame trunk than {base_file}'s stage 1")
        net.load_state_dict(prev.state_dict())
    for p in net.image.features.parameters():
        p.requires_grad_(False)
    start = None
    if tune_blocks:
        start = len(net.image.features.blocks.layers) - int(tune_blocks)
        for m in (*net.image.features.blocks.layers[start:], net.image.features.ln_post):
            for p in m.parameters():
                p.requires_grad_(True)

    mix = dict(store=size, low_res=low_res, low_res_frac=low_res_frac)  # frames reach the tower at its size
    looks = (["plain"] if diverse != "all" else []) + (["diverse"] if diverse != "none" else [])
    feats, caps, rcaps = _training_features(net, cfg, n_train, render_size, looks, mix, seed, start, log)
    log(f"frozen trunk features {tuple(feats.shape)} in {time.time() - t0:.0f}s")

    t1 = time.time()
    uniq = sorted(set(caps) | set(rcaps))
    where = {c: i for i, c in enumerate(uniq)}
    states, lengths = minilm_states(uniq, cfg["max_tokens"])
    cap_idx = torch.as_tensor([where[c] for c in caps])
    rcap_idx = torch.as_tensor([where[c] for c in rcaps])
    log(f"frozen MiniLM states for {len(uniq)} distinct captions in {time.time() - t1:.0f}s")

    val = _validation_set(net, cfg, val_n, render_size, mix, start, log) if val_n else None

    # the trunk's tuned blocks learn at a tenth of the new parts' rate (CLIP4Clip tunes CLIP far slower than its heads)
    trunk = {id(p) for p in net.image.features.parameters()}
    params = [p for p in net.parameters() if p.requires_grad and id(p) not in trunk]
    tuned = [p for p in net.image.features.parameters() if p.requires_grad]
    groups = [{"params": params}] + ([{"params": tuned, "lr": lr * TRUNK_LR_SCALE}] if tuned else [])
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=0.05)
    steps_per_epoch = n_train // batch_size
    total = steps_per_epoch * epochs
    sched = _warmup_cosine(opt, total)

    def text_emb(idx: torch.Tensor, agg: str) -> torch.Tensor:
        return _caption_embeddings(net.text[agg], states, lengths, idx)

    t2 = time.time()
    net.train()
    net.image.features.eval()  # frozen: BatchNorm keeps its running statistics
    bar = tqdm(total=total, desc=f"train {name}", unit="step", mininterval=5)
    losses, lm, ls = [], [], []
    for ep in range(epochs):
        perm = rng.permutation(len(feats))
        for s in range(steps_per_epoch):
            idx = torch.as_tensor(perm[s * batch_size:(s + 1) * batch_size])
            fr = frame_embeddings(net, feats[idx], start)  # B×T×D
            ci, ri = cap_idx[idx], rcap_idx[idx]
            # meanP: videos × captions
            v_m = F.normalize(net.aggregate(fr, "meanp"), dim=-1)
            t_m = text_emb(ci, "meanp")
            pos_m = ci[:, None] == ci[None, :]
            loss_m = multi_positive_nce(net.logit_scale["meanp"].exp().clamp(max=100) * v_m @ t_m.T, pos_m)
            # seqTransf: (videos, reversed videos) × (captions, reversed captions)
            fr2 = torch.cat([fr, fr.flip(1)])
            v_s = F.normalize(net.aggregate(fr2, "seqtransf"), dim=-1)
            ti = torch.cat([ci, ri])
            t_s = text_emb(ti, "seqtransf")
            pos_s = ti[:, None] == ti[None, :]
            loss_s = multi_positive_nce(net.logit_scale["seqtransf"].exp().clamp(max=100) * v_s @ t_s.T, pos_s)
            loss = loss_m + loss_s
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            lm.append(loss_m.item())
            ls.append(loss_s.item())
            bar.update(1)
            bar.set_postfix(epoch=ep + 1, meanp=f"{np.mean(lm[-20:]):.3f}", seqtransf=f"{np.mean(ls[-20:]):.3f}")
        msg = ""
        if val is not None and ((ep + 1) % val_every == 0 or ep + 1 == epochs):
            msg = " | validation (world seed %d, %d videos): %s" % (VAL_SEED, len(val[1]), json.dumps(
                _validate(net, *val, start=start)))
            net.train()
            net.image.features.eval()
        log(f"epoch {ep + 1}/{epochs}: loss meanP {np.mean(lm[-steps_per_epoch:]):.3f}, "
            f"seqTransf {np.mean(ls[-steps_per_epoch:]):.3f} ({time.time() - t2:.0f}s){msg}")
    bar.close()
    net.eval()
    train_s = time.time() - t2
    log(f"trained {total} steps in {train_s:.0f}s")

    frozen_trunk = ("the frame tower's ViT trunk (patch embedding, blocks, ln_post)" if cfg.get("tower") == "vit"
                    else "conv features of the frame tower")
    recipe = dict(seed=seed, n_train=n_train, epochs=epochs, batch_size=batch_size, lr=lr, num_frames=T,
                  train_world_seed=world.TRAIN_SEED, init=f"{base_file} (image tower, text head)",
                  render_size=render_size,
                  **({"low_res": f"{low_res_frac:.0%} of the videos rendered at {low_res} px"} if low_res_frac else {}),
                  **({"diversity": VIDEO_DIVERSITY if diverse == "all" else
                      f"the videos as drawn, and a copy of each drawn with: {VIDEO_DIVERSITY}"}
                     if diverse != "none" else {}),
                  frozen="MiniLM; " + (f"the frame tower's first {start} blocks" if tune_blocks
                                       else frozen_trunk),
                  **({"tune_blocks": int(tune_blocks), "trunk_lr": lr * TRUNK_LR_SCALE} if tune_blocks else {}),
                  init_train={k: v for k, v in base_meta.get("train", {}).items() if k != "stage2"},
                  seconds=round(time.time() - t0, 1), train_seconds=round(train_s, 1),
                  final_loss_meanp=round(float(np.mean(lm[-20:])), 4),
                  final_loss_seqtransf=round(float(np.mean(ls[-20:])), 4), threads=torch.get_num_threads())
    if prev_train is not None:  # stage 2: its own settings under "stage2", beside the stage it started from
        for k in ("init", "init_train", "num_frames", "train_world_seed", "render_size", "low_res", "frozen",
                  "threads"):
            recipe.pop(k, None)
        recipe = dict(prev_train, stage2=dict(recipe, init="the stage-1 heads above"),
                      seconds=round(float(prev_train.get("seconds", 0)) + recipe["seconds"], 1))
    quality = {}
    if eval_n:

        for cls in classes:
            m = cls(device="cpu", net=net)
            q = heldout_quality("retrieval", m, "builtin-videos", eval_n, size=render_size)
            quality[cls.aggregator] = q
            log(f"held-out {cls.name} ({eval_n} videos, seed {world.HELDOUT_SEED}): {json.dumps(q)}")
    out = Path(out) if out else checkpoint_path(checkpoint)
    save_tiny_clip_video(net, out, {"train": recipe, "quality": quality})
    log(f"saved {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s total")
    return dict(train=recipe, quality=quality, path=str(out))


# meanP's stage-3 videos: as drawn, plus a diverse copy of each ("both") or a vignetted one ("vignette")
STAGE3_LOOKS = {"none": ["plain"], "both": ["plain", "diverse"], "vignette": ["plain", "vignette"]}
MEANP_HEAD_WIDTH = 256  # the hidden width of meanP's token MLP (``meanp_frame_head``)
TOKEN_STATS_VIDEOS = 2000  # the training videos whose token states give ``token_noise``'s per-token scale


def token_scale(feats: torch.Tensor, width: int, n: int = TOKEN_STATS_VIDEOS) -> torch.Tensor:
    """Each token position's per-dimension standard deviation over the frames of the first ``n`` videos of cached
    trunk features (N×T×(tokens·W)): tokens×W, the scale of ``train_meanp_frame_head``'s token noise."""
    return feats[:n].float().flatten(0, 1).view(-1, feats.shape[-1] // width, width).std(0)


def check_token_noise(value, name: str = "token_noise") -> None:
    """Refuse a token-noise level that is not a number from 0 to 10 (one ``ValueError`` line naming ``name``)."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0 <= value <= 10):
        raise ValueError(f"{name} must be a number from 0 to 10, not {value!r}")


def train_meanp_frame_head(out: str | Path, init_from: str | Path, seed: int = 0, epochs: int = 16,
                           lr: float = 1e-3, batch_size: int = 256, eval_n: int = 1000, val_n: int = 500,
                           val_every: int = 4, log=print, *, name: str, classes: tuple,
                           render_size: int, low_res_frac: float = 0.0, low_res: int = 64,
                           width: int = MEANP_HEAD_WIDTH, threads: int | None = None, diverse: str = "none",
                           token_noise: float = 0.0) -> dict:
    """A last stage for meanP alone: from a stage-2 video checkpoint of the ViT family (``init_from``), meanP gets
    its own frame head (:class:`~robustlab.models.builtin_video.MeanPFrameHead`: a residual token MLP of ``width``
    over the frozen trunk's tokens, then a projection and a frame adapter started as the shared ones) and trains it,
    its text head and its logit scale by CLIP's loss on meanP alone, ``epochs`` over the videos stage 1 drew (as the
    world draws them, ``low_res_frac`` of them at ``low_res`` px). ``diverse="both"``: those videos and a copy of
    each drawn with the family's data diversity, as stage 2 draws them; ``"vignette"``: those videos and a copy of
    each seen through a lens's vignetting (:func:`~robustlab.training.diversity.vignette_gain`); a step samples from
    both, the steps per epoch stay ``n_train`` / ``batch_size``. ``token_noise`` > 0: at every step each frozen
    token state gets Gaussian noise of ``token_noise`` times its position's per-dimension standard deviation
    (:func:`token_scale`), a generic regulariser in the trunk's feature space (no pixel is perturbed). seqTransf's
    weights and the trunk are kept bit for bit. Its settings go under ``train["stage3"]``."""
    if diverse not in STAGE3_LOOKS:
        raise ValueError(f"diverse must be one of {', '.join(STAGE3_LOOKS)}, not {diverse!r}")
    check_token_noise(token_noise)
    t0 = time.time()
    if threads:
        torch.set_num_threads(threads)
    prev, prev_meta = load_tiny_clip_video(Path(init_from), name)
    prev_train = dict(prev_meta.get("train", {}))
    if "stage3" in prev_train or prev.cfg.get("meanp_frame_head"):
        raise ValueError(f"{init_from} has meanP's frame head already; start from a stage-2 checkpoint")
    if prev.cfg.get("tower") != "vit":
        raise ValueError(f"{init_from} is not over a ViT frame tower: meanP's frame head reads the ViT's tokens")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    cfg = dict(prev.cfg, meanp_frame_head=int(width))
    net = TinyClipVideoNet(cfg)
    missing = net.load_state_dict(prev.state_dict(), strict=False).missing_keys
    assert all(k.startswith("meanp_frame.") for k in missing), missing
    net.meanp_frame.proj.load_state_dict(net.image.proj.state_dict())
    net.meanp_frame.adapter.load_state_dict(net.adapter.state_dict())
    n_train, size = int(prev_train.get("n_train", 18000)), int(cfg["image_size"])
    mix = dict(store=size, low_res=low_res, low_res_frac=low_res_frac)
    feats, caps, _ = _training_features(net, cfg, n_train, render_size, STAGE3_LOOKS[diverse], mix, seed, log=log)
    log(f"frozen trunk features {tuple(feats.shape)} in {time.time() - t0:.0f}s")
    W = int(cfg["width"])
    noise_sd = token_noise * token_scale(feats[:n_train], W) if token_noise else None  # the plain videos
    val = _validation_set(net, cfg, val_n, render_size, mix, log=log) if val_n else None
    uniq = sorted(set(caps))
    where = {c: i for i, c in enumerate(uniq)}
    states, lengths = minilm_states(uniq, cfg["max_tokens"])
    cap_idx = torch.as_tensor([where[c] for c in caps])

    for p in net.parameters():
        p.requires_grad_(False)
    params = [*net.meanp_frame.parameters(), *net.text["meanp"].parameters(), net.logit_scale["meanp"]]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.05)
    steps_per_epoch = n_train // batch_size
    total = steps_per_epoch * epochs
    sched = _warmup_cosine(opt, total)

    t2 = time.time()
    net.eval()  # dropout-free parts; the frozen ones stay as they are
    bar = tqdm(total=total, desc=f"train {name} (meanP's frame head)", unit="step", mininterval=5)
    lm = []
    for ep in range(epochs):
        perm = rng.permutation(len(feats))
        for s in range(steps_per_epoch):
            idx = torch.as_tensor(perm[s * batch_size:(s + 1) * batch_size])
            x = feats[idx]
            if noise_sd is not None:
                x = x.float().view(*x.shape[:2], -1, W)
                x = (x + noise_sd * torch.randn_like(x)).flatten(2)
            v = F.normalize(net.aggregate(frame_embeddings(net, x, aggregator="meanp"), "meanp"), dim=-1)
            ci = cap_idx[idx]
            t = _caption_embeddings(net.text["meanp"], states, lengths, ci)
            loss = multi_positive_nce(net.logit_scale["meanp"].exp().clamp(max=100) * v @ t.T,
                                      ci[:, None] == ci[None, :])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            lm.append(loss.item())
            bar.update(1)
            bar.set_postfix(epoch=ep + 1, meanp=f"{np.mean(lm[-20:]):.3f}")
        msg = ""
        if val is not None and ((ep + 1) % val_every == 0 or ep + 1 == epochs):
            msg = " | validation (world seed %d, %d videos): %s" % (VAL_SEED, len(val[1]), json.dumps(
                _validate(net, *val, aggregators=("meanp",))))
        log(f"epoch {ep + 1}/{epochs}: loss meanP {np.mean(lm[-steps_per_epoch:]):.3f} ({time.time() - t2:.0f}s){msg}")
    bar.close()
    train_s = time.time() - t2
    stage3 = dict(seed=seed, n_train=n_train, epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=0.05,
                  trains="meanP's frame head (token MLP %d, projection, frame adapter), its text head and logit "
                         "scale; meanP's loss alone" % width,
                  init="the shared projection and frame adapter, meanP's text head of stage 2",
                  videos=f"the {n_train} videos of stage 1 as the world draws them"
                         + (f", {low_res_frac:.0%} at {low_res} px" if low_res_frac else "")
                         + (f", and a copy of each drawn with: {VIDEO_DIVERSITY}" if diverse == "both" else "")
                         + (f", and a copy of each seen through {VIGNETTE}" if diverse == "vignette" else ""),
                  token_noise=(f"Gaussian, {token_noise:g} x each token position's per-dimension std over the first "
                               f"{min(TOKEN_STATS_VIDEOS, n_train)} videos' frames, fresh at every step"
                               if token_noise else "none"),
                  seconds=round(time.time() - t0, 1), train_seconds=round(train_s, 1),
                  final_loss_meanp=round(float(np.mean(lm[-20:])), 4), threads=torch.get_num_threads())
    recipe = dict(prev_train, stage3=stage3, seconds=round(float(prev_train.get("seconds", 0)) + stage3["seconds"], 1))
    # seqTransf's weights are stage 2's, so are its held-out numbers; meanP's are new and measured only with eval_n
    quality = {k: v for k, v in prev_meta.get("quality", {}).items() if k != "meanp"}
    if eval_n:
        for cls in classes:
            q = heldout_quality("retrieval", cls(device="cpu", net=net), "builtin-videos", eval_n, size=render_size)
            quality[cls.aggregator] = q
            log(f"held-out {cls.name} ({eval_n} videos, seed {world.HELDOUT_SEED}): {json.dumps(q)}")
    out = Path(out)
    save_tiny_clip_video(net, out, {"train": recipe, "quality": quality})
    log(f"saved {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s total")
    return dict(train=recipe, quality=quality, path=str(out))
