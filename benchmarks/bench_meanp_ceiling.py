"""What an order-blind mean over frames can reach on the built-in video world, given perfect perception.

Issue 27 asks text→video R@1 ≥ 0.80 of both CLIP4Clip heads. The built-in videos' captions are about the *order* of
two events ("the red circle moves left, then the blue square appears"), and meanP scores a caption against the mean
of the frame embeddings: its score is a sum of per-frame scores, whatever order the frames come in. This benchmark
measures the ceiling of that score on the world itself, with no perception in the way:

* each of the 8 frames a model samples (:func:`sampled_frame_indices`) is given as its **ground-truth state**: for
  every (colour, shape) slot, whether the object is visible and where (x and y, each as a soft one-hot over 12 bins),
  and the background; the caption as its **ground-truth structure** (per event, in order: colour, shape, kind,
  direction);
* **meanP**: a per-frame MLP (4 layers, width 1024) to a 256-d embedding (the built-ins' width), L2-normalised,
  averaged over the frames (CLIP4Clip's meanP, as ``TinyClipVideoNet.aggregate`` does it); **ordered** (the
  control): the same MLP over the 8 frame states concatenated in order, so it can read order; captions through a
  3-layer MLP to 256-d; CLIP's symmetric loss with the built-ins' multi-positive targets, AdamW, cosine decay;
* t2v R@1 on the first 1,000 training videos (fit), on 1,000 videos of the validation world (seed 2) and on the
  1,000 held-out videos of world 1000 the checkpoints are held out on.

If the ordered control reaches ~1 and meanP stays well below, the gap is the world's, not a model's: no frame
tower can give a mean over frames what the ground truth does not.

``--camera`` also scores the trained heads on the held-out videos seen through Schiappa's camera perturbations,
applied to the ground truth itself (perception still perfect): every object's centre moves as the pixels do under
``static_rotate`` (the same angle in every frame), ``rotate`` (an integer angle per frame, uniform in ±max) and
``translate`` (frames enlarged ×256/224 and a window cropped at a per-frame offset, uniform in 0…max px at 224 px),
at severities 1 and 3 (:mod:`robustlab.perturb.video.camera`'s tables); an object whose centre leaves the frame is
not visible. A head whose R@1 under such a shift falls below half of its clean R@1 depends on where things are in
the frame, not on how they move.

    python benchmarks/bench_meanp_ceiling.py [--train 20000] [--epochs 40] [--hidden 1024] [--depth 4]
        [--heads meanp,ordered] [--camera] [--out benchmarks/results/meanp_ceiling.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robustlab.datasets.synthetic import world
from robustlab.metrics import caption_groups, retrieval
from robustlab.training.tiny_clip_video import VAL_SEED, multi_positive_nce, sampled_frame_indices

ROOT = Path(__file__).resolve().parents[1]
COLORS, SHAPES, BACKGROUNDS = list(world.COLORS), list(world.SHAPES), list(world.BACKGROUNDS)
KINDS, DIRECTIONS = ["moves", "appears", "disappears"], list(world.DIRECTIONS)
BINS = 12
CENTRES = (np.arange(BINS) + 0.5) / BINS
SLOT = 1 + 2 * BINS  # visible, x bins, y bins
FRAME_DIM = len(COLORS) * len(SHAPES) * SLOT + len(BACKGROUNDS)
EVENT_DIM = len(COLORS) + len(SHAPES) + len(KINDS) + len(DIRECTIONS)


def _soft(v: float) -> np.ndarray:
    return np.exp(-((CENTRES - v) / 0.04) ** 2)


# Schiappa's camera perturbations at severities 1 and 3 (robustlab.perturb.video.camera's severity tables)
CAMERA = {"static_rotate/1": ("static_rotate", 7.5), "static_rotate/3": ("static_rotate", 30.0),
          "rotate/1": ("rotate", 6), "rotate/3": ("rotate", 18),
          "translate/1": ("translate", 7), "translate/3": ("translate", 23)}


def camera_moves(kind: str, amount: float, frames: int, rng: np.random.Generator):
    """Per frame, the map of an object's centre (x, y in [0, 1], y down) under one draw of a camera perturbation."""
    if kind == "translate":  # enlarged ×256/224, a window at offset (dy, dx) px of 224 cropped
        off = rng.integers(0, int(amount) + 1, size=(frames, 2)) / 224.0
        return [lambda x, y, d=d: (x * 256 / 224 - d[1], y * 256 / 224 - d[0]) for d in off]
    angles = np.full(frames, amount) if kind == "static_rotate" else rng.integers(-amount, amount + 1, size=frames)

    def turn(x, y, a):  # PIL's rotate: counter-clockwise on screen, about the centre
        c, s = np.cos(np.radians(a)), np.sin(np.radians(a))
        return 0.5 + c * (x - 0.5) + s * (y - 0.5), 0.5 - s * (x - 0.5) + c * (y - 0.5)
    return [lambda x, y, a=a: turn(x, y, a) for a in angles]


def ground_truth(seed: int, n: int, frames: int = 8, camera: str | None = None):
    """Frame states (n×frames×FRAME_DIM), caption structures (n×2·EVENT_DIM) and captions of n videos;
    ``camera`` (a key of :data:`CAMERA`): seen through that camera perturbation (one draw per video)."""
    x = np.zeros((n, frames, FRAME_DIM), np.float32)
    c = np.zeros((n, 2 * EVENT_DIM), np.float32)
    caps = []
    for i in range(n):
        v = world.sample_video(seed, i)
        moves = camera_moves(*CAMERA[camera], frames, np.random.default_rng([seed, i, 77])) if camera else None
        for k, t in enumerate(sampled_frame_indices(v.n_frames, frames)):
            for o in world._state_at(v, int(t)):
                if o is not None:
                    cx, cy = moves[k](o.cx, o.cy) if moves else (o.cx, o.cy)
                    if not (0 <= cx <= 1 and 0 <= cy <= 1):
                        continue  # out of the frame
                    s = (COLORS.index(o.color) * len(SHAPES) + SHAPES.index(o.shape)) * SLOT
                    x[i, k, s] = 1
                    x[i, k, s + 1:s + 1 + BINS] = _soft(cx)
                    x[i, k, s + 1 + BINS:s + SLOT] = _soft(cy)
            x[i, k, FRAME_DIM - len(BACKGROUNDS) + BACKGROUNDS.index(v.background)] = 1
        for j, e in enumerate(v.events):
            o, b = v.objects[e.obj], j * EVENT_DIM
            c[i, b + COLORS.index(o.color)] = 1
            c[i, b + len(COLORS) + SHAPES.index(o.shape)] = 1
            c[i, b + len(COLORS) + len(SHAPES) + KINDS.index(e.kind)] = 1
            if e.direction:
                c[i, b + len(COLORS) + len(SHAPES) + len(KINDS) + DIRECTIONS.index(e.direction)] = 1
        caps.append(v.caption)
    return torch.from_numpy(x), torch.from_numpy(c), caps


def _mlp(i: int, hidden: int, out: int, depth: int) -> nn.Sequential:
    layers: list = [nn.Linear(i, hidden), nn.GELU()]
    for _ in range(depth - 2):
        layers += [nn.Linear(hidden, hidden), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(hidden, out))


def fit(head: str, data: dict, *, epochs: int, hidden: int, depth: int, embed_dim: int, lr: float,
        batch: int = 512, seed: int = 0, log=print) -> dict:
    """Train one head on data["train"]; t2v R@1 on each split after every 5th epoch and at the end."""
    torch.manual_seed(seed)
    x, c, caps = data["train"]
    frames = x.shape[1]
    video = _mlp(FRAME_DIM if head == "meanp" else FRAME_DIM * frames, hidden, embed_dim, depth)
    text = _mlp(c.shape[1], hidden, embed_dim, 3)
    scale = nn.Parameter(torch.tensor(float(np.log(1 / 0.07))))

    def vemb(xb):
        if head == "meanp":  # CLIP4Clip's meanP: normalised frame embeddings, averaged
            return F.normalize(F.normalize(video(xb), dim=-1).mean(1), dim=-1)
        return F.normalize(video(xb.flatten(1)), dim=-1)

    def r1(split) -> float:
        xs, cs, cp = data[split]
        with torch.no_grad():
            s = (F.normalize(text(cs), dim=-1) @ vemb(xs).T).numpy()
        return round(retrieval(s, caption_groups(cp))["R@1"], 3)

    where = {t: i for i, t in enumerate(sorted(set(caps)))}
    ci = torch.as_tensor([where[t] for t in caps])
    opt = torch.optim.AdamW([*video.parameters(), *text.parameters(), scale], lr=lr, weight_decay=0.05)
    steps = len(caps) // batch
    total = steps * epochs
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, total // 20)) * 0.5 * (1 + np.cos(np.pi * min(s, total) / total)))
    rng = np.random.default_rng(seed)
    curve, t0 = [], time.time()
    for ep in range(epochs):
        perm = rng.permutation(len(caps))
        for s in range(steps):
            idx = torch.as_tensor(perm[s * batch:(s + 1) * batch])
            k = ci[idx]
            logits = scale.exp().clamp(max=100) * vemb(x[idx]) @ F.normalize(text(c[idx]), dim=-1).T
            loss = multi_positive_nce(logits, k[:, None] == k[None, :])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        if (ep + 1) % 5 == 0 or ep + 1 == epochs:
            row = dict(epoch=ep + 1, loss=round(loss.item(), 4), **{s: r1(s) for s in ("fit", "validation", "heldout")})
            curve.append(row)
            log(f"{head} {json.dumps(row)} ({time.time() - t0:.0f}s)")
    camera = {k[len("heldout "):]: r1(k) for k in data if k.startswith("heldout ")}
    if camera:
        log(f"{head} under camera perturbations (held out): {json.dumps(camera)}")
    return dict(curve=curve, final=curve[-1], seconds=round(time.time() - t0, 1),
                **({"camera": camera} if camera else {}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--embed-dim", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--heads", default="meanp,ordered")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--camera", action="store_true", help="also score the held-out videos under camera shifts")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/meanp_ceiling.json"))
    args = ap.parse_args()
    heads = [h.strip() for h in args.heads.split(",") if h.strip()]
    if not heads or any(h not in ("meanp", "ordered") for h in heads):
        ap.error("--heads: a comma list of meanp and ordered")
    torch.set_num_threads(args.threads)
    train = ground_truth(world.TRAIN_SEED, args.train, args.frames)
    data = dict(train=train, fit=(train[0][:1000], train[1][:1000], train[2][:1000]),
                validation=ground_truth(VAL_SEED, 1000, args.frames),
                heldout=ground_truth(world.HELDOUT_SEED, 1000, args.frames),
                **{f"heldout {k}": ground_truth(world.HELDOUT_SEED, 1000, args.frames, k)
                   for k in (CAMERA if args.camera else ())})
    res = dict(what="t2v R@1 of an order-blind mean over ground-truth frame states (meanP) and of an ordered control, "
                    "structured captions, 1,000 videos per split",
               splits={"fit": f"the first 1,000 of the {args.train} training videos (world {world.TRAIN_SEED})",
                       "validation": f"1,000 videos of world {VAL_SEED}",
                       "heldout": f"1,000 videos of world {world.HELDOUT_SEED} (where the checkpoints are held out)",
                       **({"camera": "the held-out videos' ground truth seen through each camera perturbation "
                                     "(CAMERA: NAME/SEVERITY), one draw per video"} if args.camera else {})},
               settings=dict(vars(args), out=None), machine=platform.machine(), threads=torch.get_num_threads(),
               heads={})
    for h in heads:
        res["heads"][h] = fit(h, data, epochs=args.epochs, hidden=args.hidden, depth=args.depth,
                              embed_dim=args.embed_dim, lr=args.lr)
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({h: r["final"] for h, r in res["heads"].items()}))


if __name__ == "__main__":
    main()
