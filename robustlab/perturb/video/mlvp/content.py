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
from robustlab.perturb.video.mlvp.common import SRC, _tags


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
_OCC_PAPER = [0.30, 0.40, 0.50, 0.60, 0.80]
_OCC_CODE = [float(r) for r in np.linspace(0.3, 0.8, 5)]


def _occ_table(ratios, box: str) -> dict:
    return {s: {"ratio": float(r), "box": box, "box_fraction": 0.5} for s, r in enumerate(ratios, 1)}


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


@register(
    "mlvp_occlusion", modality="video", category="occlusion", source=SRC,
    severity_table=_occ_table(_OCC_PAPER, BOX_FALLBACK),
    variants={"code": _occ_table(_OCC_CODE, BOX_FALLBACK), "centre": _occ_table(_OCC_PAPER, BOX_CENTRE)},
    default_variant="paper",
    variant_notes={
        "paper": "occluder area / main-object box area = 30/40/50/60/80% (Table 37). The box: the main object's "
                 "per-frame box where the data knows it (the built-in event videos: among the objects the caption "
                 "names, the one of highest MLVP rank score 0.5·persistence + 0.3·area + 0.2·confidence, from the "
                 "world's geometry; frames where it is hidden take MLVP's no-detection fallback); elsewhere the "
                 "centred box of half the frame, and the record says box 'centre (no boxes known)'",
        "code": "released code's ratios np.linspace(0.3, 0.8, 5) = 30/42.5/55/67.5/80%; the box as 'paper'",
        "centre": "Table 37's ratios on the fixed centred box of half the frame's width and height on every frame, "
                  "whatever boxes are known (a centre-bias prior; the default before issue 48)",
    },
    description="Main-object occlusion: a black rectangle with sides √ratio × the main object's box sides, at a "
                "random position inside the box, on every frame (MLVP Algorithm 3 finds the object with "
                "Qwen2.5-VL captions + OWLv2 detection + tracking, weights we do not ship). The box comes from the "
                "caller, per item: the built-in event videos know their objects' positions on every frame (the "
                "sweeps, tasks and benches pass them); without boxes (an uploaded video, a dataset without boxes) "
                "it is the SUBSTITUTE centred box of half the frame, named in the record "
                "(box 'centre (no boxes known)'). Boxes are parameters (params 'boxes'), so the record regenerates "
                "bit for bit; robustlab.perturb.video.mlvp.occlude(frames, boxes, ratio, rng) is the occluder alone.",
    tags=_tags("mid", "random", "substitute"),
)
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


_EVENT_RATIOS = [0.30, 0.40, 0.50, 0.60, 0.70]
_CORPUS = {"corpus_seed": CORPUS_SEED, "corpus_size": CORPUS_SIZE, "corpus_px": CORPUS_PX}
# The ``corpus`` parameter says where the inserted clip comes from: CORPUS_OWN, the donor a caller picked from the
# same dataset's other videos (``donor``: which one, and the hash of its frames; see
# :mod:`robustlab.perturb.video.mlvp.context`), CORPUS_SYNTHETIC, the 32 built-in synthetic clips (the
# ``synthetic`` variant), or CORPUS_FALLBACK, the same 32 clips because no donor pool was given (the default
# variants' tables, which a caller with a pool replaces per item). Records without it (before issue 48): synthetic.
CORPUS_OWN, CORPUS_SYNTHETIC, CORPUS_FALLBACK = "own dataset", "synthetic", "synthetic (no donor pool given)"


def _event_table(position: str, corpus: str) -> dict:
    return {s: {"ratio": r, "position": position, "corpus": corpus, **_CORPUS} for s, r in enumerate(_EVENT_RATIOS, 1)}


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


@register(
    "mlvp_event_insertion", modality="video", category="temporal", source=SRC,
    severity_table=_event_table("middle", CORPUS_FALLBACK),
    variants={"code": _event_table("tail", CORPUS_FALLBACK), "synthetic": _event_table("middle", CORPUS_SYNTHETIC)},
    default_variant="paper",
    variant_notes={
        "paper": "the retrieved clip is spliced into the MIDDLE: T−k original frames sampled uniformly over the "
                 "whole video, split in half, k inserted frames between the halves. The clip: where the caller gives "
                 "a donor pool (tasks, benches and sweeps on a video dataset), the most similar OTHER video of the "
                 "same dataset by the evaluated model's own clean video embeddings (cosine); elsewhere the most "
                 "similar of the 32 synthetic clips, and the record says corpus 'synthetic (no donor pool given)'",
        "code": "released code: the first T−k original frames, then the k inserted frames at the TAIL; the clip as "
                "'paper'",
        "synthetic": "spliced into the middle as 'paper', the clip always from the 32 built-in synthetic event clips "
                     "by a 16×16 thumbnail embedding, whatever pool is given (the default before issue 48)",
    },
    description="Event insertion: k = max(1, min(T−1, round(T·ratio))) frames, ratio = 30/40/50/60/70%, of a "
                "retrieved clip, sampled uniformly and bilinearly resized, replace original frames; the length "
                "stays T. The clip (MLVP: the most similar of ~3k MSRVTT training clips by CLIP ViT-B/32): with a "
                "donor pool from the caller, the most similar other video of the item's own dataset by the "
                "evaluated model's video embeddings, named in the record (dataset, id and the hash of its frames, so "
                "regeneration finds it again); without one, the SUBSTITUTE corpus of 32 built-in synthetic clips "
                "matched by a 16×16 colour-thumbnail embedding, named in the record. Deterministic.",
    tags=_tags("high", "deterministic", "substitute"), requires=("opencv",),
)
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


def _scramble_table(trims) -> dict:
    modes = {1: {"scramble": "adjacent"}, 2: {"scramble": "pairs", "pairs": 2}, 3: {"scramble": "pairs", "pairs": 3},
             4: {"scramble": "pairs", "pairs": 4}, 5: {"scramble": "shuffle"}}
    return {s: {"trim_ratio": r, "max_chunks": 12, **modes[s]} for s, r in enumerate(trims, 1)}


@register(
    "mlvp_temporal_scrambling", modality="video", category="temporal", source=SRC,
    severity_table=_scramble_table([0.40, 0.30, 0.20, 0.10, 0.05]),
    variants={"code": _scramble_table([0.60, 0.70, 0.80, 0.90, 0.95])},
    default_variant="paper",
    variant_notes={
        "paper": "Table 37's RETENTION ratios 60/70/80/90/95% (trim 40/30/20/10/5% of the frames)",
        "code": "released code: the same numbers are the fraction REMOVED (retain 40/30/20/10/5%)",
    },
    description="Temporal scrambling: trim int(T·trim) frames, split randomly between head and tail; cut the "
                "middle into min(12, n) equal chunks; severity 1 swaps one random adjacent pair of chunks, 2–4 "
                "swap min(s, chunks//2) random disjoint pairs, 5 shuffles all chunks; then T frames are sampled "
                "with linspace (int truncation) over the scrambled middle, so the length stays T. (The code's "
                "with-replacement draw for middles shorter than its 12 output frames is not used: the middle is "
                "always shorter than T here.)",
    tags=_tags("high", "random"),
)
def mlvp_temporal_scrambling(x: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    v = frames_of(x)
    return take(v, scramble_indices(len(v), params, params["scramble"], rng))
