"""tiny-vilt's training data: the scenes and videos with their frozen token features (computed once), and each
batch's texts and targets drawn fresh from the world's structure. Part of :mod:`robustlab.training.tiny_vilt`."""
from __future__ import annotations

import time

import numpy as np
import torch

from robustlab.datasets.synthetic import qa, world
from robustlab.training.tiny_vilt.labels import image_token_labels, reversed_view, video_token_labels

SCENE_SEED = 21
VIDEO_SEED = 22
VIDEO_QTYPE_P = {"order": 0.3, "event_order": 0.25, "event": 0.2, "first": 0.1, "direction": 0.15}
# CLAVI's beginning/end and negative-control questions (qa.CLAVI_TYPES) are left out: measured, mixing them in
# (be 0.12, event_nc 0.03, order_nc 0.03, the others scaled down) dropped held-out video VQA from 0.810 to 0.701
# (event 0.85 -> 0.65: "does X move left?" and "does X move left at the beginning?" differ only in their tails).
PEELING_Q_P = 0.5  # stage 3: share of image questions drawn from PEELING's uniqueness templates (qa.PEELING_TYPES)
PEELING_TYPE_P = {"count_of": 0.45, "many": 0.35, "reflected": 0.2}
IMAGE_MIX = (0.55, 0.30, 0.15)  # VQA, grounding, ITM


def _log(msg: str, verbose: bool) -> None:
    if verbose:
        print(f"[tiny-vilt {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@torch.no_grad()
def _cnn_features(net, frames: np.ndarray, video: bool, cfg: dict, batch: int = 256) -> torch.Tensor:
    return torch.cat([net.frames_to_features(frames[s:s + batch], video).to(torch.float16)
                      for s in range(0, len(frames), batch)])


def build_features(net, n_images: int, n_videos: int, rng: np.random.Generator, verbose: bool = True):
    """Scenes and (possibly reversed) videos with their frozen token features (float16) and token labels."""
    cfg = net.cfg
    scenes = world.make_scenes(n_images, SCENE_SEED)
    feats = []
    for s in range(0, n_images, 1024):
        imgs = world.render_scenes(scenes[s:s + 1024], 128)
        feats.append(_cnn_features(net, imgs, False, cfg))
        _log(f"image features {min(s + 1024, n_images)}/{n_images}", verbose)
    img_feats = torch.cat(feats)
    img_labels = torch.from_numpy(np.stack([image_token_labels(s, int(cfg["image_grid"])) for s in scenes]))
    T = int(cfg["n_frames"])
    flips = rng.random(n_videos) < 0.5
    videos, vid_labels, vid_targets, feats = [], [], [], []
    for s in range(0, n_videos, 256):
        frames = []
        for i in range(s, min(s + 256, n_videos)):
            v = world.sample_video(VIDEO_SEED, i)
            idx = qa.frame_indices(v.n_frames, T)
            if flips[i]:  # the reversed video's sampled frames: original frames T-1-idx, latest first
                asc = (v.n_frames - 1 - idx)[::-1].copy()
                frames.append(qa.video_frames_at(v, asc, 64)[::-1])
                idx = asc[::-1].copy()
            else:
                frames.append(qa.video_frames_at(v, idx, 64))
            lab, tgt = video_token_labels(v, idx, int(cfg["frame_grid"]))
            videos.append(reversed_view(v) if flips[i] else v)
            vid_labels.append(lab)
            vid_targets.append(tgt)
        f = _cnn_features(net, np.concatenate(frames), True, cfg)
        feats.append(f.reshape(-1, T * f.shape[1], f.shape[2]))
        if (s // 256) % 8 == 0 or s + 256 >= n_videos:
            _log(f"video features {min(s + 256, n_videos)}/{n_videos}", verbose)
    return (scenes, img_feats, img_labels, videos, torch.cat(feats), torch.from_numpy(np.stack(vid_labels)),
            vid_targets)


def _image_examples(scenes, labels, idx, rng, mix=IMAGE_MIX, peeling_p: float = 0.0, overspecified_p: float = 0.0):
    """Texts and targets for one image batch: task 0 = VQA, 1 = grounding, 2 = ITM; pool = token mask.
    ``peeling_p``: the share of VQA questions drawn from PEELING's uniqueness templates (stage 3);
    ``overspecified_p``: the share of grounding expressions with redundant attributes. At 0 no draw is made, so
    stages 1 and 2 see exactly the examples they always did."""
    ans_id = {a: i for i, a in enumerate(qa.ALL_ANSWERS)}
    texts, task, ans, box, itm = [], [], [], [], []
    pool = torch.zeros(len(idx), labels.shape[1], dtype=torch.bool)
    for j, i in enumerate(idx):
        s = scenes[i]
        r = rng.random()
        a, b, m = -100, [0.0] * 4, 0.0
        if r < mix[0]:
            if peeling_p > 0 and rng.random() < peeling_p:
                q = qa.image_question(s, rng, str(rng.choice(list(PEELING_TYPE_P), p=list(PEELING_TYPE_P.values()))))
            else:
                q = qa.image_question(s, rng)
            texts.append(q.question)
            a, t = ans_id[q.answer], 0
            if q.target >= 0:
                pool[j] = labels[i, :, 3] == q.target
        elif r < mix[0] + mix[1]:
            k = int(rng.integers(len(s.objects)))
            ref = world.overspecified_expression(s, k, rng, 128) if overspecified_p > 0 and \
                rng.random() < overspecified_p else world.referring_expression(s, k, 128)
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
    return texts, torch.tensor(task), torch.tensor(ans), torch.tensor(box), torch.tensor(itm), pool


def _video_examples(videos, targets, idx, rng, pairs: bool = False):
    """One example per video of ``idx`` (a question, or a caption for ITM); with ``pairs``, a question with a
    temporal relation word also brings its counterfactual partner (``qa.relation_flip``: same video, the word
    swapped, the answer that makes true), so the answer must read the word. Returns (texts, task, answers, None,
    ITM labels, pool targets, video index of each example)."""
    ans_id = {a: i for i, a in enumerate(qa.ALL_ANSWERS)}
    types, p = list(VIDEO_QTYPE_P), np.array(list(VIDEO_QTYPE_P.values()))
    texts, task, ans, itm, pools, rows = [], [], [], [], [], []
    n_tok = targets[0].shape[1]

    def add(i, text, t, a, m, target=-1):
        texts.append(text)
        task.append(t)
        ans.append(a)
        itm.append(m)
        pools.append(torch.from_numpy(targets[i][target]) if target >= 0 else torch.zeros(n_tok, dtype=torch.bool))
        rows.append(int(i))

    for i in idx:
        v = videos[i]
        if rng.random() < 0.85:
            q = qa.video_question(v, rng, str(rng.choice(types, p=p / p.sum())))
            add(i, q.question, 0, ans_id[q.answer], 0.0, q.target)
            partner = qa.relation_flip(v, q) if pairs else None
            if partner is not None:
                add(i, partner.question, 0, ans_id[partner.answer], 0.0, partner.target)
            continue
        u = rng.random()  # ITM: the caption, the time-reversed caption (hard negative) or another video's
        if u < 0.5:
            add(i, v.caption, 2, -100, 1.0)
        elif u < 0.8:
            add(i, v.reversed_caption, 2, -100, 0.0)
        else:
            other = videos[int(rng.integers(len(videos)))]
            add(i, other.caption, 2, -100, 1.0 if other.caption == v.caption else 0.0)
    return (texts, torch.tensor(task), torch.tensor(ans), None, torch.tensor(itm), torch.stack(pools),
            np.asarray(rows, dtype=np.int64))
