"""tiny-vilt's training stages around the joint one: stage 0 (token pretraining), and stages 2 and 3, which share
one loop (:func:`_answer_loop`: the answer head on VQA alone, the fusion frozen). Part of
:mod:`robustlab.training.tiny_vilt`."""
from __future__ import annotations

import numpy as np
import torch

from robustlab.datasets.synthetic import qa
from robustlab.models.tiny_vilt import TinyVilt
from robustlab.training.tiny_vilt.data import (PEELING_Q_P, PEELING_TYPE_P, _image_examples, _log, _video_examples,
                                               build_features)
from robustlab.training.tiny_vilt.losses import _aux_loss, _loss

UNIQUENESS_STEPS = 1500  # stage 3 (refine_uniqueness)
UNIQUENESS_LR = 3e-4
UNIQUENESS_DATA = (4000, 3000)  # stage 3's own scenes and videos (the first of the training worlds)
ANSWER_STEPS = 1500  # stage 2 (refine_answers): a fresh answer head with question pools on the frozen fusion
QUESTION_POOLS = 2
ANSWER_PATH = ("vqa_head", "q_score")  # what stage 2 trains


def pretrain_tokens(net, img_feats, img_labels, vid_feats, vid_labels, steps: int, rng: np.random.Generator,
                    batch: int = 16, lr: float = 2e-3, verbose: bool = True) -> dict:
    """Stage 0: the visual-token embedding (CNN-feature norm, token MLP, frame-difference map, positions) and
    the attribute head learn what each token shows, without text or attention (cheap: no transformer), so
    that the fusion layers start from tokens that already say colour, shape, size, place and change."""
    mods = [net.vis_norm, net.token_head] + [getattr(net, k) for k in ("vis_mlp", "vis_proj", "patch_proj",
                                                                          "diff_proj") if hasattr(net, k)]
    params = [p for m in mods for p in m.parameters()] + [net.image_pos, net.frame_pos, net.frame_idx, net.type_emb]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    sums: dict[str, list[float]] = {"img": [], "vid": []}
    for step in range(int(steps)):
        video = step % 2 == 1
        feats, labels = (vid_feats, vid_labels) if video else (img_feats, img_labels)
        idx = rng.integers(0, len(feats), batch)
        x = net.embed_visual(feats[idx].float(), video)
        loss = _aux_loss(net.token_head(net.norm(x)), labels[idx], video)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sums["vid" if video else "img"].append(float(loss.detach()))
    out = {k: round(float(np.mean(v[-50:])), 4) for k, v in sums.items() if v}
    _log(f"token pretraining: {steps} steps, final aux losses {out}", verbose)
    return out


def _answer_loop(model, net, data, steps: int, rng: np.random.Generator, batch: int, lr: float, label: str,
                 peeling_p: float = 0.0, verbose: bool = True) -> dict:
    """Stages 2 and 3's loop: with the fusion frozen, the answer path (``ANSWER_PATH``) trains on VQA alone, two
    video batches (each relation question with its counterfactual partner, ``qa.relation_flip``) to one image
    batch of questions (``peeling_p`` of them PEELING's uniqueness questions). ``data``: what
    :func:`build_features` returns. Afterwards every parameter but the CNN's trains again and the net is left in
    eval mode. Returns the mean of the last 100 VQA losses of each kind ("img", "vid")."""
    scenes, img_feats, img_labels, videos, vid_feats, vid_labels, vid_targets = data
    for n, p in net.named_parameters():
        p.requires_grad_(n.startswith(ANSWER_PATH))
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    net.eval()  # the frozen part's normalisation as trained; nothing here drops out
    sums: dict[str, list[float]] = {"img": [], "vid": []}
    for step in range(int(steps)):
        video = step % 3 != 0
        if video:
            idx = rng.choice(len(videos), min(batch, len(videos)), replace=False)
            *ex, rows = _video_examples(videos, vid_targets, idx, rng, pairs=True)
            feats, labels = vid_feats[rows], vid_labels[rows]
        else:
            idx = rng.choice(len(scenes), min(batch, len(scenes)), replace=False)
            ex = _image_examples(scenes, img_labels, idx, rng, mix=(1.0, 0.0, 0.0), peeling_p=peeling_p)
            feats, labels = img_feats[idx], img_labels[idx]
        loss = _loss(model, net, feats, labels, *ex, video=video).get("vqa")
        if loss is None:  # a batch without a question (every video drew a caption)
            continue
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sums["vid" if video else "img"].append(float(loss.detach()))
        if verbose and (step + 1) % 250 == 0:
            _log(f"{label}: step {step + 1}/{steps} loss {float(loss.detach()):.3f}", verbose)
    for p in net.parameters():
        p.requires_grad_(True)
    for p in net.cnn.parameters():
        p.requires_grad_(False)
    net.eval()
    out = {k: round(float(np.mean(v[-100:])), 4) for k, v in sums.items() if v}
    _log(f"{label}: {steps} steps, final VQA losses {out}", verbose)
    return out


def refine_answers(model, net, scenes, img_feats, img_labels, videos, vid_feats, vid_labels, vid_targets,
                   steps: int, rng: np.random.Generator, batch: int = 32, lr: float = 1e-3,
                   verbose: bool = True) -> dict:
    """Stage 2: with the fusion frozen, a fresh answer head that also reads the question's words
    (``net.add_question_pools``) trains on VQA alone: two video batches, each relation question with its
    counterfactual partner (``qa.relation_flip``), to one image batch. Measured: heads trained jointly with the
    fusion, with or without question pools and pairs, leave before/after at chance; on the same frozen fusion this
    head answers them (see the README)."""
    net.add_question_pools(QUESTION_POOLS)
    data = (scenes, img_feats, img_labels, videos, vid_feats, vid_labels, vid_targets)
    return _answer_loop(model, net, data, steps, rng, batch, lr, "answer head", verbose=verbose)


def refine_uniqueness(net, seed: int = 0, steps: int = UNIQUENESS_STEPS, lr: float = UNIQUENESS_LR,
                      n_images: int = UNIQUENESS_DATA[0], n_videos: int = UNIQUENESS_DATA[1], batch: int = 32,
                      verbose: bool = True) -> dict:
    """Stage 3: teach the answer head PEELING's uniqueness questions ("how many Xs are in the image?", "are there
    many Xs in the image?", "is there a reflected X in the image?" about an object phrase X, its head noun in the
    plural where counted (``qa.plural_phrase``); :data:`qa.PEELING_TYPES`),
    so that tiny-vilt can serve as PEELING's VQA oracle on the built-in world. The fusion stays frozen and the
    stage-2 answer head keeps training (not a fresh one) with "0" added to its vocabulary; image batches ask
    PEELING's questions half of the time, and two video batches with relation pairs per image batch keep the
    video answers where stage 2 left them. Depends only on the weights it is given and ``seed`` (its own scenes,
    videos and generator), so it can run on a stage-2 checkpoint (``robustlab train tiny-vilt --stage3-from``)."""
    rng = np.random.default_rng([int(seed), 3])
    torch.manual_seed(int(seed) + 3)
    net.add_answers(list(qa.UNIQUENESS_ANSWERS))
    model = TinyVilt(device="cpu", net=net)
    net.eval()
    data = build_features(net, int(n_images), int(n_videos), rng, verbose)
    out = _answer_loop(model, net, data, steps, rng, batch, lr, "uniqueness", peeling_p=PEELING_Q_P, verbose=verbose)
    return {"seed": int(seed), "steps": int(steps), "lr": lr, "images": int(n_images), "videos": int(n_videos),
            "peeling_q_p": PEELING_Q_P, "peeling_type_p": PEELING_TYPE_P, "losses": out}
