"""Task protocols beyond dual-encoder retrieval: grounding, fusion (ITM / VQA / attention) and video retrieval.

    GroundingModel.ground(image, expression) -> Box          best box for the expression, input-image pixels
    FusionModel.itm_score(image_or_frames, text) -> float    image–text matching score (higher = better match)
    FusionModel.vqa(image_or_frames, question) -> (answer, scores)
    FusionModel.forward_with_attention(image, text, replace=None) -> AttentionCapture
    VideoRetrievalModel                                      an EmbeddingModel with a native ``encode_videos``

Images are H×W×3 uint8 arrays (gray / RGBA are converted), videos / frame stacks T×H×W×3 uint8.

This module also holds the small loading helper the transformers task backends share (:func:`hf_source`); the
hub-access machinery itself (offline check, cache-only loads, one-line :class:`ModelUnavailable`) is reused from
:mod:`robustlab.models.hf_backend`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from robustlab.models.base import EmbeddingModel

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


class VideoRetrievalModel(EmbeddingModel):
    """An EmbeddingModel whose ``encode_videos`` is native (not frame pooling of ``encode_images``)."""

    num_frames: int = 8

    def encode_videos(self, videos, batch_size=None, progress=None) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def sample_frames(video: np.ndarray, n: int) -> np.ndarray:
    """``n`` frames sampled uniformly over the video (centres of ``n`` equal segments; repeats when T < n)."""
    v = np.asarray(video)
    if v.ndim == 3:
        v = v[None]
    if v.ndim != 4 or v.shape[0] == 0:
        raise ValueError(f"a video must be T×H×W×3 with T ≥ 1, got shape {v.shape}")
    t = v.shape[0]
    idx = np.clip(np.floor((np.arange(n) + 0.5) * t / n).astype(int), 0, t - 1)
    return v[idx]


def as_frames(image_or_frames) -> list[np.ndarray]:
    """One H×W(×C) image -> [image]; a T×H×W×3 stack (or a list of frames) -> its frames, as uint8 RGB."""
    from robustlab.io.convert import to_uint8_rgb

    if isinstance(image_or_frames, (list, tuple)):
        frames = list(image_or_frames)
    else:
        a = np.asarray(image_or_frames)
        frames = list(a) if a.ndim == 4 else [a]
    if not frames:
        raise ValueError("no image or frames given")
    return [to_uint8_rgb(f) for f in frames]


# ---- shared loading helper ---------------------------------------------------------------------------

def hf_source(prefix: str, repo_or_dir: str) -> tuple[str, Optional[str], bool, bool, str]:
    """(src, offline_reason, local_files_only, is_local, what) for a hub repo id or a local folder.

    Same rules as ``hf:``: a local folder loads local files only; a repo id is checked against the hub in
    seconds and loads cache-only when offline. Raises a one-line ModelUnavailable for a missing local folder.
    """
    from robustlab.models.hf_backend import offline_reason, unavailable

    src = str(repo_or_dir).strip()
    p = Path(src).expanduser()
    what = f"{prefix}:{src}"
    if p.is_dir():
        return str(p), None, True, True, what
    if src.startswith(("/", "./", "../", "~", ".")) or src.count("/") > 1:
        raise unavailable(what, "no such local folder (and not a hub repo id of the form org/name)")
    offline = offline_reason()
    return src, offline, offline is not None, False, what


def load_config(src: str, cache_only: bool, what: str, supported: Sequence[str]):
    from transformers import AutoConfig

    from robustlab.models.hf_backend import unavailable

    config = AutoConfig.from_pretrained(src, local_files_only=cache_only, trust_remote_code=False)
    if config.model_type not in supported:
        raise unavailable(what, f"model_type {config.model_type!r} is not supported here "
                                f"(supported: {', '.join(supported)})")
    return config


# ---- the real models users know, per task, and whether they can be had here --------------------------

KNOWN_MODELS: dict[str, list[str]] = {
    "video-retrieval": ["hf-xclip:microsoft/xclip-base-patch32", "hf-xclip:microsoft/xclip-base-patch16-zero-shot"],
    "fusion": ["hf-vilt:dandelin/vilt-b32-finetuned-vqa", "hf-vilt:dandelin/vilt-b32-finetuned-coco"],
    "grounding": ["hf-grounding:google/owlvit-base-patch32", "hf-grounding:google/owlv2-base-patch16-ensemble",
                  "hf-grounding:IDEA-Research/grounding-dino-tiny"],
}


def availability(spec: str) -> tuple[bool, str]:
    """Whether a task-backend spec can be loaded here, and why not, without loading it (fast; for the UI).

    A local folder is available when it has a config.json; a hub repo when the hub is reachable or its config
    is in the HF cache (weights are checked at load time).
    """
    from robustlab.models import parse_spec
    from robustlab.models.hf_backend import offline_reason

    try:
        backend, rest = parse_spec(spec)
    except ValueError as e:
        return False, str(e)
    p = Path(rest).expanduser()
    if p.is_dir():
        return ((p / "config.json").exists(), "local folder" if (p / "config.json").exists()
                else f"{p} has no config.json")
    reason = offline_reason()
    if reason is None:
        return True, "hub reachable (downloaded on first use, then cached)"
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(rest, "config.json")
    except Exception:  # noqa: BLE001 - a malformed repo id, an unreadable cache: just not available
        hit = None
    if isinstance(hit, str):
        return True, "in the local HF cache"
    return False, f"{reason} and not in the local HF cache"


__all__ = ["KNOWN_MODELS", "availability", "Box", "GroundingModel", "FusionModel", "VideoRetrievalModel",
           "sample_frames", "as_frames",
           "hf_source", "load_config"]
