"""tiny-vilt's per-token labels, read off the world's structure (never the pixels): an image token's object and
cell, a video token's object and change; and the structure of a time-reversed video. Part of
:mod:`robustlab.training.tiny_vilt`."""
from __future__ import annotations

from dataclasses import replace as dc_replace

import numpy as np

from robustlab.datasets.synthetic import world

COLOR_ID = {c: i + 1 for i, c in enumerate(world.COLORS)}   # 0 = no object
SHAPE_ID = {s: i + 1 for i, s in enumerate(world.SHAPES)}
SIZE_ID = {s: i + 1 for i, s in enumerate(world.SIZES)}
POS_ID = {cell: i + 1 for i, cell in enumerate(sorted(world.POSITIONS))}  # 3×3 layout cell, 0 = no object
KIND_ID = {"moves": 1, "appears": 2, "disappears": 3}
DIR_ID = {d: i + 1 for i, d in enumerate(world.DIRECTIONS)}


def image_token_labels(scene: world.Scene, grid: int = 8) -> np.ndarray:
    """grid²×5 int: colour, shape, size ids of the object covering each token (0 = none), its index (-1) and
    its layout cell (0 = none)."""
    lab = np.zeros((grid * grid, 5), np.int64)
    lab[:, 3] = -1
    best = np.full(grid * grid, np.inf)
    centres = (np.arange(grid) + 0.5) / grid
    for k, o in enumerate(scene.objects):
        half = world.SIZES[o.size] / 2
        for r in range(grid):
            for c in range(grid):
                dx, dy = abs(centres[c] - o.cx), abs(centres[r] - o.cy)
                inside = (dx <= half and dy <= half) or (int(o.cx * grid) == c and int(o.cy * grid) == r)
                i = r * grid + c
                if inside and dx + dy < best[i]:
                    best[i] = dx + dy
                    lab[i] = (COLOR_ID[o.color], SHAPE_ID[o.shape], SIZE_ID[o.size], k, POS_ID[tuple(o.cell)])
    return lab


def reversed_view(video: world.VideoScene) -> world.VideoScene:
    """The structure of the time-reversed video (events swapped and inverted; captions swapped)."""
    T = video.n_frames

    def inv(e):
        kind = {"appears": "disappears", "disappears": "appears"}.get(e.kind, e.kind)
        d = world.OPPOSITE[e.direction] if e.kind == "moves" else e.direction
        return world.Event(obj=e.obj, kind=kind, direction=d, start=T - 1 - e.end, end=T - 1 - e.start)

    return dc_replace(video, events=[inv(e) for e in reversed(video.events)], caption=video.reversed_caption,
                      reversed_caption=video.caption)


KIND_ID = {"moves": 1, "appears": 2, "disappears": 3}
DIR_ID = {d: i + 1 for i, d in enumerate(world.DIRECTIONS)}


def video_token_labels(video: world.VideoScene, idx: np.ndarray, grid: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """For the frames ``idx`` (in the order the model sees them): (T·grid²)×6 int — colour, shape, change (0/1),
    object index (-1), event kind, direction (0 = none) per token, read off consecutive sampled frames — and
    an objects×(T·grid²) bool mask of each object's tokens in the frames where it changes (all its tokens
    when it never changes)."""
    T = len(idx)
    states = [world._state_at(video, int(t)) for t in idx]
    n_obj = len(video.objects)
    lab = np.zeros((T * grid * grid, 6), np.int64)
    lab[:, 3] = -1
    where = np.zeros((n_obj, T * grid * grid), bool)
    changing = np.zeros((n_obj, T * grid * grid), bool)

    def cell(o):
        return min(int(o.cy * grid), grid - 1) * grid + min(int(o.cx * grid), grid - 1)

    for f in range(T):
        for k, o in enumerate(states[f]):
            prev = states[f - 1][k] if f > 0 else o
            kind, d = 0, 0
            if f > 0 and (o is None) != (prev is None):
                kind = KIND_ID["appears" if o is not None else "disappears"]
            elif f > 0 and o is not None and (abs(o.cx - prev.cx) > 1e-6 or abs(o.cy - prev.cy) > 1e-6):
                dx, dy = o.cx - prev.cx, o.cy - prev.cy
                kind = KIND_ID["moves"]
                d = DIR_ID[("right" if dx > 0 else "left") if abs(dx) >= abs(dy) else ("down" if dy > 0 else "up")]
            shown = o if o is not None else prev   # a disappearance is marked where the object was
            if shown is None:
                continue
            i = f * grid * grid + cell(shown)
            if o is not None:
                lab[i, :2] = (COLOR_ID[o.color], SHAPE_ID[o.shape])
                lab[i, 3] = k
                where[k, i] = True
            if kind:
                lab[i, 2], lab[i, 4], lab[i, 5] = 1, kind, d
                changing[k, i] = True
    target = np.where(changing.any(1, keepdims=True), changing, where)
    return lab, target
