"""The model protocol every backend implements.

A backend turns images (H×W×3 uint8 arrays), videos (T×H×W×3 uint8) and texts (str) into L2-normalised
embeddings in one shared space. Backends implement three small hooks; batching, device placement, half
precision, ``torch.inference_mode`` and caching live in :mod:`robustlab.engine`, so every backend gets them
the same way.

    preprocess_images(list[np.ndarray]) -> torch.Tensor   (CPU, float32, N×C×H×W)
    _image_features(torch.Tensor on device) -> torch.Tensor  (N×D, not yet normalised)
    _text_features(list[str]) -> torch.Tensor               (N×D, not yet normalised)

Videos are encoded by frame pooling (mean of the normalised frame embeddings) unless a backend overrides
``encode_videos``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

ProgressFn = Callable[[int, int], None]


class ModelUnavailable(RuntimeError):
    """A model that cannot be loaded here (no weights offline, missing package). The message is one line."""


@dataclass
class ModelInfo:
    model_id: str
    backend: str
    embed_dim: int
    image_size: int
    device: str
    dtype: str
    n_params: int
    description: str = ""
    random_init: bool = False  # plumbing-test models: never shown as results
    extra: dict = field(default_factory=dict)


class EmbeddingModel:
    """Base class of every dual-encoder backend (builtin, open_clip, hf)."""

    model_id: str = "abstract"
    backend: str = "abstract"
    embed_dim: int = 0
    image_size: int = 224
    random_init: bool = False
    description: str = ""
    # texts are cheap to batch large; images are limited by memory
    default_image_batch: int = 64
    default_text_batch: int = 256

    def __init__(self, device: str | torch.device | None = None, half: bool | None = None):
        from robustlab.engine.device import resolve_device

        self.device = resolve_device(device)
        self.half = (self.device.type == "cuda") if half is None else bool(half)
        self.dtype = torch.float16 if self.half else torch.float32

    # ---- hooks a backend implements -------------------------------------------------------------
    def preprocess_images(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        raise NotImplementedError

    def _image_features(self, pixels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _text_features(self, texts: list[str]) -> torch.Tensor:
        raise NotImplementedError

    def modules(self) -> list[torch.nn.Module]:
        """The torch modules of the backend (moved to device/dtype once by ``_place``)."""
        return []

    # ---- shared plumbing --------------------------------------------------------------------------
    def _place(self) -> None:
        for m in self.modules():
            m.to(self.device)
            if self.half:
                m.half()
            m.eval()

    def n_params(self) -> int:
        return sum(p.numel() for m in self.modules() for p in m.parameters())

    def info(self) -> ModelInfo:
        return ModelInfo(
            model_id=self.model_id,
            backend=self.backend,
            embed_dim=self.embed_dim,
            image_size=self.image_size,
            device=str(self.device),
            dtype=str(self.dtype).replace("torch.", ""),
            n_params=self.n_params(),
            description=self.description,
            random_init=self.random_init,
        )

    def encode_images(self, images, batch_size: int | None = None, progress: ProgressFn | None = None) -> np.ndarray:
        from robustlab.engine.batching import encode_images

        return encode_images(self, images, batch_size=batch_size, progress=progress)

    def encode_texts(self, texts, batch_size: int | None = None, progress: ProgressFn | None = None) -> np.ndarray:
        from robustlab.engine.batching import encode_texts

        return encode_texts(self, texts, batch_size=batch_size, progress=progress)

    def encode_videos(self, videos, batch_size: int | None = None, progress: ProgressFn | None = None) -> np.ndarray:
        """Frame pooling: mean of the normalised per-frame embeddings, re-normalised."""
        out = []
        for i, v in enumerate(videos):
            v = np.asarray(v)
            if v.ndim != 4:
                raise ValueError(f"a video must be T×H×W×3, got shape {v.shape}")
            f = self.encode_images(list(v), batch_size=batch_size)
            m = f.mean(0)
            out.append(m / max(np.linalg.norm(m), 1e-12))
            if progress:
                progress(i + 1, len(videos))
        return np.stack(out).astype(np.float32) if out else np.zeros((0, self.embed_dim), np.float32)

    def similarity(self, text_emb: np.ndarray, image_emb: np.ndarray) -> np.ndarray:
        """Cosine similarity, queries × gallery (both already L2-normalised)."""
        return np.asarray(text_emb, np.float32) @ np.asarray(image_emb, np.float32).T

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id} on {self.device} {str(self.dtype)}>"
