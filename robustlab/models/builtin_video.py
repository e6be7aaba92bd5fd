"""Built-in text↔video retrieval models: ``builtin:tiny-clip-video-meanp`` and ``builtin:tiny-clip-video-seqtransf``.

Both are tiny-clip (:mod:`robustlab.models.builtin`) with CLIP4Clip's temporal aggregation on top
(Luo et al., "CLIP4Clip", 2021, §3.3):

* frame tower: tiny-clip's 64-px CNN image tower plus a residual MLP adapter, applied to ``num_frames`` frames
  sampled uniformly over the video (:func:`robustlab.models.protocols.sample_frames`);
* **meanP** (parameter-free): the mean of the L2-normalised frame embeddings. It is invariant to the order of
  the sampled frames, so it *cannot* tell a video from its time reversal beyond what the set of frames says;
* **seqTransf**: the frame embeddings (L2-normalised, scaled to unit variance per dimension) plus learned
  frame-position embeddings go through a small transformer encoder; its output is added back to the frame
  embeddings (residual), each frame is L2-normalised and the frames are mean-pooled. The position embeddings make
  it order-sensitive;
* text tower: the frozen all-MiniLM-L6-v2 with a trained head per variant (a :class:`TextHead` each).

One checkpoint (``assets/tiny-clip-video.safetensors``, made by ``robustlab train tiny-clip-video``) holds the
shared frame tower, the temporal transformer and both text heads (the tiny-vit-clip family's also meanP's own
frame head, :class:`MeanPFrameHead`); its metadata holds the config, the training
recipe and the held-out quality figures. An image is a one-frame video (the frame repeated ``num_frames``
times), so both models also work on image galleries.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robustlab.engine.batching import _run_batched
from robustlab.io.convert import to_uint8_rgb
from robustlab.models.base import VideoRetrievalModel
from robustlab.models.builtin import (
    TINY_CLIP_CONFIG,
    TextHead,
    image_tower,
    load_checkpoint,
    load_minilm,
    minilm_tokens,
    open_builtin,
    preprocess_64,
    save_checkpoint,
)
from robustlab.models.protocols import sample_frames
from robustlab.models.registry import register_builtin

CHECKPOINT = "tiny-clip-video.safetensors"
AGGREGATORS = ("meanp", "seqtransf")

TINY_CLIP_VIDEO_CONFIG = dict(
    TINY_CLIP_CONFIG,
    num_frames=8,
    temporal_layers=2,
    temporal_heads=4,
    temporal_ff=512,
    frame_adapter=512,
)


class TemporalTransformer(nn.Module):
    """CLIP4Clip's seqTransf head: frames + position embeddings -> transformer encoder, residual to the input."""
    def __init__(self, embed_dim=256, num_frames=8, temporal_layers=2, temporal_heads=4, temporal_ff=512, **_):
        super().__init__()
        self.scale = float(np.sqrt(embed_dim))
        self.pos = nn.Parameter(torch.randn(num_frames, embed_dim) * 0.5)
        layer = nn.TransformerEncoderLayer(embed_dim, temporal_heads, dim_feedforward=temporal_ff, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, temporal_layers, enable_nested_tensor=False)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        # frames: B×T×D (T == num_frames). Frames are L2-normalised and scaled to unit variance per dimension,
        # so the transformer's updates (and the position embeddings) are not drowned by the residual.
        t = frames.shape[1]
        if t > self.pos.shape[0]:
            raise ValueError(f"seqTransf was trained on {self.pos.shape[0]} frames, got {t}")
        x = F.normalize(frames, dim=-1) * self.scale
        return self.encoder(x + self.pos[:t].to(x.dtype)) + x


class FrameAdapter(nn.Module):
    """A residual MLP on each frame embedding (zero-initialised output: starts as the identity)."""
    def __init__(self, embed_dim=256, frame_adapter=512, **_):
        super().__init__()
        self.mlp = nn.Sequential(nn.LayerNorm(embed_dim), nn.Linear(embed_dim, frame_adapter), nn.GELU(),
                                 nn.Linear(frame_adapter, embed_dim))
        nn.init.zeros_(self.mlp[-1].weight)
        nn.init.zeros_(self.mlp[-1].bias)

    def forward(self, x):
        return x + self.mlp(x)


class TokenMLP(nn.Module):
    """A residual MLP on each W-wide token of a flattened token grid (zero-initialised output: the identity)."""
    def __init__(self, width=128, hidden=256):
        super().__init__()
        self.width = int(width)
        self.mlp = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))
        nn.init.zeros_(self.mlp[-1].weight)
        nn.init.zeros_(self.mlp[-1].bias)

    def forward(self, x):  # N×(tokens·W)
        t = x.view(len(x), -1, self.width)
        return (t + self.mlp(t)).flatten(1)


class MeanPFrameHead(nn.Module):
    """meanP's own frame head over the shared trunk's tokens (``meanp_frame_head`` = the token MLP's width): a
    token MLP, a projection and a frame adapter, trained for meanP alone (CLIP4Clip fine-tunes a frame tower per
    head; here the trunk is shared and frozen, the layers after it are meanP's). Started as the shared projection
    and adapter, so its first frame embeddings are the shared ones."""
    def __init__(self, width=128, embed_dim=256, frame_grid=0, meanp_frame_head=256, **cfg):
        super().__init__()
        self.tokens = TokenMLP(width, int(meanp_frame_head))
        self.proj = nn.Linear(width * (1 + int(frame_grid) ** 2), embed_dim, bias=False)
        self.adapter = FrameAdapter(embed_dim=embed_dim, **cfg)

    def forward(self, feats):
        return self.adapter(self.proj(self.tokens(feats)))


class TinyClipVideoNet(nn.Module):
    """The trainable parts of both variants (what the checkpoint holds)."""
    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = dict(cfg)
        self.image = image_tower(cfg)  # tiny-clip's CNN, or the ViT of the tiny-vit-clip family
        self.adapter = FrameAdapter(**cfg) if cfg.get("frame_adapter") else nn.Identity()
        if cfg.get("meanp_frame_head"):  # a ViT frame tower only (the head reads its tokens)
            self.meanp_frame = MeanPFrameHead(**cfg)
        self.temporal = TemporalTransformer(**cfg)
        self.text = nn.ModuleDict({a: TextHead(**cfg) for a in AGGREGATORS})
        self.logit_scale = nn.ParameterDict(
            {a: nn.Parameter(torch.tensor(float(np.log(1 / 0.07)))) for a in AGGREGATORS})

    def own_head(self, aggregator: str) -> bool:
        """Whether ``aggregator`` has its own frame head (meanP with ``meanp_frame_head``)."""
        return aggregator == "meanp" and hasattr(self, "meanp_frame")

    def frame_head(self, feats: torch.Tensor, aggregator: str = "seqtransf") -> torch.Tensor:
        """The frame trunk's features (``image.features``) -> N×D frame embeddings of ``aggregator``: the shared
        projection and adapter, or meanP's own head."""
        if self.own_head(aggregator):
            return self.meanp_frame(feats)
        return self.adapter(self.image.proj(feats))

    def frame_embeddings(self, pixels: torch.Tensor, aggregator: str = "seqtransf") -> torch.Tensor:
        """N×3×H×W frames -> N×D frame embeddings (the frame tower: the image tower's trunk, then
        :meth:`frame_head`)."""
        return self.frame_head(self.image.features(pixels), aggregator)

    def aggregate(self, frames: torch.Tensor, aggregator: str) -> torch.Tensor:
        """B×T×D frame embeddings -> B×D video embeddings (not yet normalised)."""
        if aggregator == "seqtransf":
            frames = self.temporal(frames)
        elif aggregator != "meanp":
            raise ValueError(f"unknown aggregator {aggregator!r}; one of {AGGREGATORS}")
        return F.normalize(frames, dim=-1).mean(1)

    def video_features(self, pixels: torch.Tensor, aggregator: str) -> torch.Tensor:
        """B×T×3×H×W pixels -> B×D."""
        b, t = pixels.shape[:2]
        f = self.frame_embeddings(pixels.flatten(0, 1), aggregator).view(b, t, -1)
        return self.aggregate(f, aggregator)


class _TinyClipVideo(VideoRetrievalModel):
    backend = "builtin"
    aggregator = "meanp"
    name = "tiny-clip-video"
    checkpoint_file = CHECKPOINT
    recipe = "tiny-clip-video"  # the `robustlab train` recipe that makes the checkpoint
    default_image_batch = 64
    default_text_batch = 128
    default_video_batch = 32

    def __init__(self, device=None, half=None, checkpoint: str | Path | None = None,
                 net: TinyClipVideoNet | None = None):
        super().__init__(device=device, half=half)
        open_builtin(self, checkpoint, net, lambda path: load_tiny_clip_video(path, self.recipe))
        self.num_frames = int(self.cfg["num_frames"])
        self._place()
        load_minilm()[1].to(self.device)

    def modules(self):
        return [self.net]

    def fingerprint_modules(self):
        return [self.net, load_minilm()[1]]

    def fingerprint_config(self):
        # both variants share one net: the aggregator (and the text head it picks) tells them apart
        return {**super().fingerprint_config(), "cfg": self.cfg, "aggregator": self.aggregator}

    # images: a one-frame video (the frame repeated num_frames times)
    def preprocess_images(self, images):
        return preprocess_64(images, self.image_size, self.cfg["mean"], self.cfg["std"])

    def _image_features(self, pixels):
        f = self.net.frame_embeddings(pixels, self.aggregator)
        frames = f.unsqueeze(1).expand(-1, self.num_frames, -1)
        return self.net.aggregate(frames, self.aggregator)

    def _text_features(self, texts):
        texts = [t if t.strip() else "" for t in texts]
        states, mask = minilm_tokens(texts, self.device, self.cfg["max_tokens"], self.dtype)
        return self.net.text[self.aggregator](states, mask)

    def preprocess_video(self, video) -> torch.Tensor:
        """One video (T×H×W×3, any length and size) -> num_frames×3×S×S float tensor."""
        v = np.asarray(video)
        if v.ndim == 3 and v.shape[-1] not in (1, 3, 4):  # T×H×W grayscale frames
            v = v[..., None]
        if v.ndim != 4 or v.shape[0] == 0:
            raise ValueError(f"a video must be a T×H×W×3 array with at least one frame, got shape {v.shape}")
        frames = [to_uint8_rgb(f) for f in sample_frames(v, self.num_frames)]
        return self.preprocess_images(frames)

    def encode_videos(self, videos, batch_size: int | None = None, progress=None) -> np.ndarray:
        """L2-normalised N×D embeddings of videos (T×H×W×3 uint8 arrays; ``num_frames`` sampled uniformly)."""
        videos = videos if isinstance(videos, (list, tuple)) else list(videos)

        def step(i: int, j: int) -> torch.Tensor:
            pix = torch.stack([self.preprocess_video(v) for v in videos[i:j]])
            pix = pix.to(self.device, dtype=self.dtype, non_blocking=True)
            return self.net.video_features(pix, self.aggregator)

        return _run_batched(self, "video", len(videos), step, batch_size, progress, None)

    def info(self):
        i = super().info()
        i.extra = {k: v for k, v in self.meta.items() if k in ("quality", "train")}
        i.extra["aggregator"] = self.aggregator
        i.extra["num_frames"] = self.num_frames
        return i


@register_builtin("tiny-clip-video-meanp", task="video-retrieval", tasks=("video-retrieval", "retrieval"),
                  checkpoint=CHECKPOINT,
                  description="tiny-clip frame tower (64 px, 8 frames) + CLIP4Clip meanP: mean of frame embeddings "
                              "(order-invariant); frozen all-MiniLM-L6-v2 text tower with a trained head",
                  tags=("video", "image", "text", "contrastive", "offline", "meanP"))
class TinyClipVideoMeanP(_TinyClipVideo):
    aggregator = "meanp"


@register_builtin("tiny-clip-video-seqtransf", task="video-retrieval", tasks=("video-retrieval", "retrieval"),
                  checkpoint=CHECKPOINT,
                  description="tiny-clip frame tower (64 px, 8 frames) + CLIP4Clip seqTransf: 2-layer temporal "
                              "transformer with frame positions (order-sensitive); frozen MiniLM text tower + head",
                  tags=("video", "image", "text", "contrastive", "offline", "seqTransf"))
class TinyClipVideoSeqTransf(_TinyClipVideo):
    aggregator = "seqtransf"


def save_tiny_clip_video(net: TinyClipVideoNet, path: Path, meta: dict) -> None:

    save_checkpoint(net, path, meta)


def load_tiny_clip_video(path: Path, recipe: str = "tiny-clip-video") -> tuple[TinyClipVideoNet, dict]:
    """A video checkpoint of either family (its config names the frame tower) and its metadata."""
    return load_checkpoint(path, TinyClipVideoNet, TINY_CLIP_VIDEO_CONFIG, recipe,
                           hint=" (15-60 minutes on 2 CPU cores)")


__all__ = ["TINY_CLIP_VIDEO_CONFIG", "TinyClipVideoNet", "TinyClipVideoMeanP", "TinyClipVideoSeqTransf",
           "TemporalTransformer", "MeanPFrameHead", "TokenMLP",
           "save_tiny_clip_video", "load_tiny_clip_video", "AGGREGATORS", "CHECKPOINT"]
