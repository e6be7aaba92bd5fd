"""Video retrieval through transformers: X-CLIP (``XCLIPModel``), text <-> video.

    hf-xclip:microsoft/xclip-base-patch32          a hub repo id
    hf-xclip:/path/to/folder                       a local save_pretrained folder

An :class:`EmbeddingModel` with a native ``encode_videos``: each video is sampled uniformly to the model's
``num_frames`` (centres of equal segments; short videos repeat frames), the frames go through the repo's CLIP
image processor, and X-CLIP's cross-frame vision tower + multi-frame integration transformer give one embedding.
Images are encoded as static videos (the image repeated ``num_frames`` times).

Embeddings are X-CLIP's dual-encoder features (``get_video_features`` / ``get_text_features``). X-CLIP's own
logits additionally condition each text on the video through its prompt generator; :meth:`video_text_scores`
gives those exact scores (videos × texts) when a ranking must match the paper's.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from robustlab.io.convert import to_uint8_rgb
from robustlab.models.base import VideoRetrievalModel
from robustlab.models.hf_base import (HFDualEncoder, config_image_size, features, processor_pixels,
                                      random_init_model)
from robustlab.models.protocols import sample_frames
from robustlab.models.registry import register_backend


def _normalise(x: torch.Tensor) -> np.ndarray:
    x = x.float()
    return (x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)).cpu().numpy().astype(np.float32)


class HFXClipModel(HFDualEncoder, VideoRetrievalModel):
    backend = "hf-xclip"
    MODEL_TYPES = ("xclip",)
    default_image_batch = 8  # an image is num_frames frames here
    default_video_batch = 4

    def _read_config(self, cfg) -> None:
        self.embed_dim = int(cfg.projection_dim)
        self.image_size = config_image_size(cfg.vision_config.image_size)
        self.num_frames = int(cfg.vision_config.num_frames)
        self.context_length = int(cfg.text_config.max_position_embeddings)

    @classmethod
    def _model_class(cls, config, what: str):
        from transformers import XCLIPModel  # optional heavy dependency

        return XCLIPModel

    @classmethod
    def from_config(cls, config, device=None, half: bool | None = None, seed: int = 0) -> "HFXClipModel":
        """A random-init X-CLIP from an in-memory ``XCLIPConfig`` (plumbing tests; never results)."""
        from transformers import XCLIPModel  # optional heavy dependency

        return random_init_model(cls, config, "xclip", "X-CLIP", XCLIPModel, seed, device=device, half=half,
                                 model_id=lambda v, size: f"hf-xclip:random-init/h{v.hidden_size}-"
                                                          f"l{v.num_hidden_layers}-t{v.num_frames}-{size}px")

    # ---- EmbeddingModel hooks --------------------------------------------------------------------
    def fingerprint_config(self) -> dict:
        return {**super().fingerprint_config(), "context_length": self.context_length, **self.parts_identity()}

    def preprocess_images(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        return processor_pixels(self.image_processor, images)

    def _video_features(self, clips: torch.Tensor) -> torch.Tensor:
        """B×T×C×H×W (T = num_frames) on device -> B×D (not normalised)."""
        return features(self.model.get_video_features(pixel_values=clips))

    def _image_features(self, pixels: torch.Tensor) -> torch.Tensor:
        clips = pixels.unsqueeze(1).expand(-1, self.num_frames, -1, -1, -1)
        return self._video_features(clips)

    def _text_tokens(self, texts: list[str]) -> dict[str, torch.Tensor]:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.context_length,
                             return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}

    def _text_features(self, texts: list[str]) -> torch.Tensor:
        return features(self.model.get_text_features(**self._text_tokens(texts)))

    # ---- videos -----------------------------------------------------------------------------------
    def preprocess_video(self, video: np.ndarray) -> torch.Tensor:
        """One T×H×W×3 video -> num_frames×C×H×W (CPU float32), frames sampled uniformly."""
        v = np.asarray(video)
        if v.ndim != 4:
            raise ValueError(f"a video must be T×H×W×3, got shape {v.shape}")
        frames = sample_frames(v, self.num_frames)
        return self.preprocess_images([to_uint8_rgb(f) for f in frames])

    def encode_videos(self, videos, batch_size: int | None = None, progress=None) -> np.ndarray:
        n = len(videos)
        bs = int(batch_size or self.default_video_batch)
        out = []
        with torch.inference_mode():
            for i in range(0, n, bs):
                clips = torch.stack([self.preprocess_video(v) for v in videos[i: i + bs]])
                out.append(_normalise(self._video_features(clips.to(self.device, dtype=self.dtype))))
                if progress:
                    progress(min(i + bs, n), n)
        return np.concatenate(out) if out else np.zeros((0, self.embed_dim), np.float32)

    def video_text_scores(self, videos, texts: Sequence[str]) -> np.ndarray:
        """X-CLIP's own logits (videos × texts), with the video-conditioned text prompts."""
        with torch.inference_mode():
            clips = torch.stack([self.preprocess_video(v) for v in videos]).to(self.device, dtype=self.dtype)
            out = self.model(pixel_values=clips, **self._text_tokens([str(t) for t in texts]))
        return out.logits_per_video.float().cpu().numpy()


@register_backend("hf-xclip", description="transformers X-CLIP text<->video retrieval (native video encoder)",
                  tasks=("video-retrieval", "retrieval"), example="hf-xclip:microsoft/xclip-base-patch32",
                  requires=("transformers",), model_types=("xclip",))
def load_spec(rest: str, device=None, **kwargs) -> HFXClipModel:
    """The ``hf-xclip:`` loader of the model registry."""
    return HFXClipModel.from_pretrained(rest, device=device, **kwargs)


__all__ = ["HFXClipModel", "load_spec"]
