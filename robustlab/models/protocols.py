"""What a model can be asked to do: the task protocols, the input conventions they share, and the task names.

    dual encoder  encode_images(images) / encode_texts(texts) / encode_videos(videos) -> N×D   (EmbeddingModel,
                  robustlab.models.base; a real base class, so it lives there with VideoRetrievalModel)
    GroundingModel.ground(image, expression) -> Box          best box for the expression, input-image pixels
    FusionModel.itm_score(image_or_frames, text) -> float    image–text matching score (higher = better match)
    FusionModel.vqa(image_or_frames, question) -> (answer, scores)
    FusionModel.forward_with_attention(image, text, replace=None) -> AttentionCapture

Images are H×W×3 uint8 arrays (gray / RGBA are converted), videos / frame stacks T×H×W×3 uint8
(:func:`sample_frames`, :func:`as_frames`).

Task names (:data:`TASK_METHODS`) are what the model registry's ``tasks=`` declarations and ``list_models(task=)``
use; :func:`model_tasks` / :func:`can` answer for a *loaded* model, from its methods (and, for a checkpoint whose
one head serves only some of the methods it has, its ``supported_tasks``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from robustlab.io.convert import to_uint8_rgb

if TYPE_CHECKING:  # pragma: no cover
    from robustlab.models.attention import AttentionCapture, ReplaceFn


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in input-image pixels (x0 < x1, y0 < y1) and the model's confidence for it."""
    x0: float
    y0: float
    x1: float
    y1: float
    score: float = 0.0

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.x0, self.y0, self.x1, self.y1)

    @property
    def area(self) -> float:
        return max(0.0, self.x1 - self.x0) * max(0.0, self.y1 - self.y0)

    def iou(self, other: "Box | Sequence[float]") -> float:
        o = other.as_tuple() if isinstance(other, Box) else tuple(float(v) for v in other)[:4]
        ix = max(0.0, min(self.x1, o[2]) - max(self.x0, o[0]))
        iy = max(0.0, min(self.y1, o[3]) - max(self.y0, o[1]))
        inter = ix * iy
        union = self.area + max(0.0, o[2] - o[0]) * max(0.0, o[3] - o[1]) - inter
        return float(inter / union) if union > 0 else 0.0


@runtime_checkable
class GroundingModel(Protocol):
    model_id: str
    random_init: bool

    def ground(self, image: np.ndarray, expression: str) -> Box: ...


@runtime_checkable
class FusionModel(Protocol):
    model_id: str
    random_init: bool

    def itm_score(self, image_or_frames: np.ndarray, text: str) -> float: ...

    def vqa(self, image_or_frames: np.ndarray, question: str) -> tuple[str, dict[str, float]]: ...

    def forward_with_attention(self, image: np.ndarray, text: str,
                               replace: "Optional[ReplaceFn]" = None) -> "AttentionCapture": ...


# ---- tasks: name -> the methods a model needs for it ----------------------------------------------------------
TASK_METHODS: dict[str, tuple[str, ...]] = {
    "retrieval": ("encode_images", "encode_texts"),          # text <-> image
    "video-retrieval": ("encode_videos", "encode_texts"),    # text <-> video (native or frame pooling)
    "grounding": ("ground",),                                # referring expression -> box
    "vqa": ("vqa",),                                         # visual question answering
    "clavi": ("vqa",),                                       # before/after answers on complement video pairs
    "itm": ("itm_score",),                                   # image/video-text matching
    "entailment": ("entail",),                               # SNLI-VE visual entailment
    "reasoning": ("reason",),                                # NLVR2 reasoning over two images
}
TASKS: tuple[str, ...] = tuple(TASK_METHODS)


def check_task(task: str) -> str:
    """``task`` if it is a known task name; a one-line ValueError naming the known ones otherwise."""
    if task not in TASK_METHODS:
        raise ValueError(f"unknown task {task!r}; tasks: {', '.join(TASKS)}")
    return task


def model_tasks(model) -> tuple[str, ...]:
    """The tasks a loaded model can do, in :data:`TASKS` order: those whose methods it has, narrowed to its
    ``supported_tasks`` when it declares them (a checkpoint with one head, e.g. a ViLT VQA model, has an
    ``itm_score`` method that refuses)."""
    have = [t for t, methods in TASK_METHODS.items() if all(callable(getattr(model, m, None)) for m in methods)]
    declared = getattr(model, "supported_tasks", None)
    if isinstance(declared, (tuple, list, set, frozenset)):
        have = [t for t in have if t in declared]
    return tuple(have)


def can(model, task: str) -> bool:
    """Whether a loaded model can do ``task`` (e.g. ``can(m, "grounding")``: to list only models that ground)."""
    return check_task(task) in model_tasks(model)


# ---- input conventions ------------------------------------------------------------------------------------
def sample_frame_indices(t: int, n: int) -> np.ndarray:
    """The frame indices :func:`sample_frames` takes from a ``t``-frame video: the centres of ``n`` equal segments
    (repeats when t < n). Lazy perturbation (``robustlab.perturb.lazy``) perturbs only these frames."""
    if t < 1 or n < 1:
        raise ValueError(f"need a video with at least one frame and n >= 1, got t={t}, n={n}")
    return np.clip(np.floor((np.arange(n) + 0.5) * t / n).astype(int), 0, t - 1)


def sample_frames(video: np.ndarray, n: int) -> np.ndarray:
    """``n`` frames sampled uniformly over the video (centres of ``n`` equal segments; repeats when T < n)."""
    v = np.asarray(video)
    if v.ndim == 3:
        v = v[None]
    if v.ndim != 4 or v.shape[0] == 0:
        raise ValueError(f"a video must be T×H×W×3 with T ≥ 1, got shape {v.shape}")
    return v[sample_frame_indices(v.shape[0], n)]


def as_frames(image_or_frames) -> list[np.ndarray]:
    """One H×W(×C) image -> [image]; a T×H×W×3 stack (or a list of frames) -> its frames, as uint8 RGB."""
    if isinstance(image_or_frames, (list, tuple)):
        frames = list(image_or_frames)
    else:
        a = np.asarray(image_or_frames)
        frames = list(a) if a.ndim == 4 else [a]
    if not frames:
        raise ValueError("no image or frames given")
    return [to_uint8_rgb(f) for f in frames]


__all__ = ["Box", "GroundingModel", "FusionModel", "TASK_METHODS", "TASKS", "check_task", "model_tasks", "can",
           "sample_frames", "sample_frame_indices", "as_frames"]
