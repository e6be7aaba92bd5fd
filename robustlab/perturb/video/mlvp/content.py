"""MLVP's content and order shifts: main-object occlusion (9), event insertion from a corpus of clips (11) and
temporal scrambling (12). Part of :mod:`robustlab.perturb.video.mlvp`."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from robustlab.io import entries
from robustlab.perturb import record as _rec
from robustlab.perturb.registry import register
from robustlab.perturb.video._common import frames_of, take


# ------------------------------------------------------------------------------------------- 9: occlusion

def occlude(frames: np.ndarray, boxes, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """MLVP's occluder (``_video_main_object_occlusion``) for given main-object boxes.

    ``boxes[t]`` is (x_min, y_min, x_max, y_max) of frame t's top-ranked object, or None when none was detected.
    With a box: a black rectangle of sides int(side·√ratio) at a random position inside the box (redrawn every
    frame). Without: the previous occluder shifted by U{−5..5} px, or on the first frame a centred box of
    U{W/8..W/4} × U{H/8..H/4}. Rectangles include their far edge (cv2.rectangle). Returns a new array.
    """
    v = frames_of(frames).copy()
    t, h, w, _ = v.shape
    for i, r in enumerate(occluder_rects(t, h, w, boxes, ratio, rng)):
        _blacken(v[i], r)
    return v


def _blacken(frame: np.ndarray, rect) -> np.ndarray:
    if rect is not None:
        x0, y0, x1, y1 = rect
        if x1 > x0 and y1 > y0:
            frame[y0:y1 + 1, x0:x1 + 1] = 0
    return frame


def occluder_rects(t: int, h: int, w: int, boxes, ratio: float, rng: np.random.Generator) -> list:
    """The occluder of every frame (clipped (x0, y0, x1, y1) or None), drawn from ``rng`` frame by frame; no
    pixels needed (the lazy path renders frame t from it alone)."""
    last = None
    sq = math.sqrt(ratio)
    rects = []
    for i in range(t):
        box = boxes[i] if boxes is not None else None
        occ = None
        if box is not None:
            x0, y0, x1, y1 = (int(c) for c in box)
            x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
            bw, bh = x1 - x0, y1 - y0
            if bw > 0 and bh > 0:
                ow, oh = int(bw * sq), int(bh * sq)
                ox = int(rng.integers(x0, max(x0 + 1, x1 - ow)))
                oy = int(rng.integers(y0, max(y0 + 1, y1 - oh)))
                occ = [ox, oy, ox + ow, oy + oh]
        elif last is not None:
            lx0, ly0, lx1, ly1 = last
            sx, sy = int(rng.integers(-5, 6)), int(rng.integers(-5, 6))
            occ = [lx0 + sx, ly0 + sy, lx1 + sx, ly1 + sy]
        else:
            ow = int(rng.integers(w // 8, max(w // 4, w // 8 + 1)))
            oh = int(rng.integers(h // 8, max(h // 4, h // 8 + 1)))
            occ = [(w - ow) // 2, (h - oh) // 2, (w - ow) // 2 + ow, (h - oh) // 2 + oh]
        rect = None
        if occ is not None:
            x0, y0 = max(0, occ[0]), max(0, occ[1])
            x1, y1 = min(w, occ[2]), min(h, occ[3])
            rect = last = [x0, y0, x1, y1]
        rects.append(rect)
    return rects


def centre_box(h: int, w: int, frac: float) -> tuple[int, int, int, int]:
    bw, bh = max(1, int(round(w * frac))), max(1, int(round(h * frac)))
    x0, y0 = (w - bw) // 2, (h - bh) // 2
    return x0, y0, x0 + bw, y0 + bh


# The ``box`` parameter says which box is occluded: BOX_OBJECT, the main object's per-frame boxes supplied by the
# caller (``boxes``; :mod:`robustlab.perturb.video.mlvp.context`), BOX_CENTRE, the fixed centred box of
# ``box_fraction`` of the frame (the ``centre`` variant), or BOX_FALLBACK, the same centred box because no boxes
# were known (the default variants' tables, which a caller with boxes replaces per item).
BOX_OBJECT, BOX_CENTRE, BOX_FALLBACK = "object", "centre", "centre (no boxes known)"


def occlusion_boxes(t: int, h: int, w: int, params: dict) -> list:
    """The box occluded on each of ``t`` frames: the ``boxes`` given (``box`` "object"; None where the object was
    not seen) or the centred box of ``box_fraction`` of the frame on every frame."""
    if params.get("box") == BOX_OBJECT:
        boxes = params.get("boxes")
        if not isinstance(boxes, (list, tuple)) or len(boxes) != t:
            n = len(boxes) if isinstance(boxes, (list, tuple)) else "no"
            raise ValueError(f"mlvp_occlusion with box 'object' needs one box (or None) per frame in params "
                             f"'boxes': the clip has {t} frames, got {n} boxes")
        out = []
        for b in boxes:
            if b is not None and (not isinstance(b, (list, tuple)) or len(b) != 4):
                raise ValueError(f"mlvp_occlusion: a box is [x_min, y_min, x_max, y_max] or null, got {b!r}")
            out.append(None if b is None else tuple(int(c) for c in b))
        return out
    return [centre_box(h, w, float(params["box_fraction"]))] * t


@register("mlvp_occlusion")
def mlvp_occlusion(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    return occlude(v, occlusion_boxes(v.shape[0], v.shape[1], v.shape[2], params), float(params["ratio"]), rng)


# ------------------------------------------------------------------------------------ 11: event insertion

CORPUS_SEED, CORPUS_SIZE, CORPUS_PX = 4242, 32, 64
# The corpus' clips come from robustlab's synthetic world, which belongs to the datasets, a layer above this one:
# the facade declares it (robustlab.ABOVE["event_clips"]) and it is imported by name at the corpus' first use;
# ``set_event_clips`` puts another source in its place (None: back to the declared one).
_EVENT_CLIPS: Callable[[int, int, int], np.ndarray] | None = None


def set_event_clips(clip: Callable[[int, int, int], np.ndarray] | None) -> None:
    """Make ``clip(seed, index, px)`` (a T×px×px×3 uint8 clip) the source of :func:`event_corpus`'s clips; None
    restores the declared one (the synthetic world's ``render_video(sample_video(seed, index), size=px)``)."""
    global _EVENT_CLIPS
    _EVENT_CLIPS = clip
    event_corpus.cache_clear()


def _event_clips() -> Callable[[int, int, int], np.ndarray]:
    if _EVENT_CLIPS is not None:
        return _EVENT_CLIPS
    declared = entries.above("event_clips")
    if not declared:
        raise RuntimeError("mlvp_event_insertion has no corpus of event clips: call "
                           "robustlab.perturb.video.mlvp.set_event_clips")
    return entries.load(next(iter(declared.values())))


@functools.lru_cache(maxsize=2)
def event_corpus(seed: int = CORPUS_SEED, n: int = CORPUS_SIZE, px: int = CORPUS_PX):
    """The built-in corpus of event clips (robustlab's synthetic world) and their embeddings (see ``embed``)."""
    clip = _event_clips()
    clips = tuple(clip(seed, i, px) for i in range(n))
    emb = np.stack([embed(c) for c in clips])
    return clips, emb


def embed(frames: np.ndarray, n: int = 12, px: int = 16) -> np.ndarray:
    """Cheap clip embedding (SUBSTITUTE for MLVP's CLIP ViT-B/32 mean-pooled embedding): the mean of up to 12
    uniformly sampled frames, each area-resized to 16×16 RGB, centred and L2-normalised (float64)."""
    import cv2

    idx = np.linspace(0, len(frames) - 1, min(n, len(frames))).round().astype(int)
    th = np.stack([cv2.resize(frames[i], (px, px), interpolation=cv2.INTER_AREA) for i in idx]).astype(np.float64)
    e = th.mean(axis=0).ravel()
    e -= e.mean()
    nrm = np.linalg.norm(e)
    return e / nrm if nrm > 0 else e


def _resize_clip(frames: np.ndarray, h: int, w: int) -> np.ndarray:
    import cv2

    if frames.shape[1:3] == (h, w):
        return frames.copy()
    return np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_LINEAR) for f in frames])


# The ``corpus`` parameter says where the inserted clip comes from: CORPUS_OWN, the donor a caller picked from the
# same dataset's other videos (``donor``: which one, and the hash of its frames; see
# :mod:`robustlab.perturb.video.mlvp.context`), CORPUS_SYNTHETIC, the 32 built-in synthetic clips (the
# ``synthetic`` variant), or CORPUS_FALLBACK, the same 32 clips because no donor pool was given (the default
# variants' tables, which a caller with a pool replaces per item). Records without it (before issue 48): synthetic.
CORPUS_OWN, CORPUS_SYNTHETIC, CORPUS_FALLBACK = "own dataset", "synthetic", "synthetic (no donor pool given)"


# Where a record's donor clip is found again: the sources callers added in this process (most recent first; a
# task's bench adds its dataset's), then the resolvers the facade declares per dataset name
# (robustlab.ABOVE["event_donors"]: the built-in videos render any of theirs from its id). A source answers
# ``clip(ref) -> frames or None``; the frames must hash to ``ref["hash"]``.
_DONOR_SOURCES: list[tuple[str, Callable[[dict], np.ndarray | None]]] = []
MAX_DONOR_SOURCES = 4


def add_donor_source(dataset: str, clip: Callable[[dict], np.ndarray | None]) -> None:
    """Make ``clip(ref)`` (the frames of the donor video ``ref`` names, or None) a place where
    :func:`donor_clip` looks for the donors of dataset ``dataset``; the last :data:`MAX_DONOR_SOURCES` are kept."""
    _DONOR_SOURCES.insert(0, (str(dataset), clip))
    del _DONOR_SOURCES[MAX_DONOR_SOURCES:]


def donor_clip(ref: dict) -> np.ndarray:
    """The frames of the donor video a record names (``{"dataset", "id", "hash", ...}``), checked against its
    hash; a ValueError (one line) when neither a source added here nor a declared resolver has it."""
    if not isinstance(ref, dict) or not ref.get("hash") or not ref.get("dataset"):
        raise ValueError(f"mlvp_event_insertion with corpus {CORPUS_OWN!r} needs params 'donor' naming the dataset, "
                         f"the item and the hash of its frames, got {ref!r}")
    name = str(ref["dataset"])
    found = [fn for n, fn in _DONOR_SOURCES if n == name]
    declared = entries.above("event_donors").get(name)
    if declared:
        found.append(entries.load(declared))
    for fn in found:
        frames = fn(ref)
        if frames is not None and _rec.matches(np.asarray(frames), ref["hash"]):
            return np.asarray(frames)
    raise ValueError(f"mlvp_event_insertion's donor clip {ref.get('id')!r} of dataset {name!r} (frames "
                     f"{ref['hash']}) is not available here: build that dataset and add it with "
                     "robustlab.perturb.video.mlvp.add_donor_source (a task's bench does), then regenerate")


@register("mlvp_event_insertion", requires=("opencv",))
def mlvp_event_insertion(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    t, h, w, _ = v.shape
    if t < 2:
        raise ValueError("mlvp_event_insertion needs a video of at least 2 frames (it replaces T·ratio of them, "
                         "at least 1, and keeps at least 1 original frame)")
    k = max(1, min(t - 1, int(round(t * float(params["ratio"])))))
    keep = t - k
    if params.get("corpus") == CORPUS_OWN:
        clip = frames_of(donor_clip(params.get("donor")))
    else:
        clips, emb = event_corpus(int(params["corpus_seed"]), int(params["corpus_size"]), int(params["corpus_px"]))
        clip = clips[int(np.argmax(emb @ embed(v)))]
    ins = _resize_clip(take(clip, np.linspace(0, len(clip) - 1, k).round().astype(int)), h, w)
    if params["position"] == "tail":
        return np.concatenate([v[:keep], ins])
    kept = take(v, np.linspace(0, t - 1, keep).round().astype(int))
    half = (keep + 1) // 2
    return np.concatenate([kept[:half], ins, kept[half:]])


# ------------------------------------------------------------------------------- 12: temporal scrambling

def scramble_indices(t: int, params: dict, severity_mode: str, rng: np.random.Generator) -> np.ndarray:
    """MLVP's trim → chunk scramble → uniform sampling, as frame indices (length t)."""
    trim = int(t * float(params["trim_ratio"]))
    start = int(rng.integers(0, trim + 1))
    end = t - (trim - start)
    if start >= end:  # everything trimmed: the last frame, repeated (as the code)
        return np.full(t, t - 1, dtype=np.int64)
    middle = np.arange(start, end)
    n_chunks = min(int(params["max_chunks"]), len(middle))
    chunks = np.array_split(middle, n_chunks)
    order = list(range(n_chunks))
    if severity_mode == "adjacent":
        if n_chunks > 1:
            i = int(rng.integers(0, n_chunks - 1))
            order[i], order[i + 1] = order[i + 1], order[i]
    elif severity_mode == "pairs":
        if n_chunks > 1:
            used: set[int] = set()
            for _ in range(min(int(params["pairs"]), n_chunks // 2)):
                avail = [i for i in range(n_chunks) if i not in used]
                if len(avail) < 2:
                    break
                a, b = (avail[j] for j in rng.choice(len(avail), size=2, replace=False))
                order[a], order[b] = order[b], order[a]
                used.update((a, b))
    elif severity_mode == "shuffle":
        order = [order[i] for i in rng.permutation(n_chunks)]
    scrambled = np.concatenate([chunks[i] for i in order])
    return scrambled[np.linspace(0, len(scrambled) - 1, num=t, dtype=int)]


@register("mlvp_temporal_scrambling")
def mlvp_temporal_scrambling(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    return take(v, scramble_indices(len(v), params, params["scramble"], rng))
