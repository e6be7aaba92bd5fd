"""The tiny ViT CLIP family: ``builtin:tiny-vit-clip`` (image–text) and ``builtin:tiny-vit-clip-video-meanp`` /
``-seqtransf`` (CLIP4Clip's heads over the same frame tower).

Built like the papers' models, small: a CLIP-style pre-LN vision transformer at 96 px (12-px patches, width 128,
6 blocks, LayerNorm throughout, no BatchNorm; :class:`robustlab.models.builtin.ViTTower`), whose projection reads
the class token and the 8×8 patch tokens, and the frozen all-MiniLM-L6-v2 text tower with a trained head, as
tiny-clip. Trained by ``robustlab train tiny-vit-clip`` with
the kind of data diversity that makes pretrained models degrade gradually (textured backgrounds, lighting, crops
and colour jitter; none of the benchmark's perturbations), the video heads by ``robustlab train
tiny-vit-clip-video`` over the frozen frame tower. The checkpoints' metadata hold the config, the recipe and the
held-out numbers; their model cards are ``assets/<name>.md``.
"""
from __future__ import annotations

from robustlab.models.builtin import TINY_CLIP_CONFIG, TinyClip
from robustlab.models.builtin_video import TinyClipVideoMeanP, TinyClipVideoSeqTransf
from robustlab.models.registry import register_builtin

# frame_grid: the image projection sees the class token and the patch tokens pooled to 8×8 cells (at 12-px patches,
# every patch token) after ``ln_post``; what its second training stage fits over the frozen trunk
TINY_VIT_CLIP_CONFIG = dict(TINY_CLIP_CONFIG, tower="vit", image_size=96, patch=12, width=128, layers=6, heads=4,
                            mlp=4, frame_grid=8)
TINY_VIT_CLIP_CHECKPOINT = "tiny-vit-clip.safetensors"
TINY_VIT_CLIP_VIDEO_CONFIG = dict(TINY_VIT_CLIP_CONFIG, num_frames=8, temporal_layers=2, temporal_heads=4,
                                  temporal_ff=512, frame_adapter=512, frame_grid=8)
TINY_VIT_CLIP_VIDEO_CHECKPOINT = "tiny-vit-clip-video.safetensors"


@register_builtin("tiny-vit-clip", task="retrieval", tasks=("retrieval", "video-retrieval"),
                  checkpoint=TINY_VIT_CLIP_CHECKPOINT,
                  description="CLIP-style dual encoder: frozen all-MiniLM-L6-v2 text tower + tiny pre-LN ViT image "
                              "tower (96 px, 12-px patches, 6 blocks, LayerNorm throughout; the projection reads the "
                              "class token and the 8×8 patch tokens), trained on robustlab's synthetic world with "
                              "background, lighting and colour diversity",
                  tags=("image", "text", "contrastive", "offline", "vit", "layernorm"))
class TinyVitClip(TinyClip):
    checkpoint_file = TINY_VIT_CLIP_CHECKPOINT


_VIDEO = dict(task="video-retrieval", tasks=("video-retrieval", "retrieval"), checkpoint=TINY_VIT_CLIP_VIDEO_CHECKPOINT)


@register_builtin("tiny-vit-clip-video-meanp", **_VIDEO,
                  description="tiny-vit-clip frame tower (96-px ViT, 8 frames; meanP's own layers after the frozen "
                              "trunk) + CLIP4Clip meanP: mean of frame embeddings (order-invariant); frozen "
                              "all-MiniLM-L6-v2 text tower with a trained head",
                  tags=("video", "image", "text", "contrastive", "offline", "meanP", "vit", "layernorm"))
class TinyVitClipVideoMeanP(TinyClipVideoMeanP):
    checkpoint_file = TINY_VIT_CLIP_VIDEO_CHECKPOINT
    recipe = "tiny-vit-clip-video"


@register_builtin("tiny-vit-clip-video-seqtransf", **_VIDEO,
                  description="tiny-vit-clip frame tower (96-px ViT, 8 frames) + CLIP4Clip seqTransf: 2-layer "
                              "temporal transformer with frame positions (order-sensitive); frozen MiniLM text tower "
                              "+ head",
                  tags=("video", "image", "text", "contrastive", "offline", "seqTransf", "vit", "layernorm"))
class TinyVitClipVideoSeqTransf(TinyClipVideoSeqTransf):
    checkpoint_file = TINY_VIT_CLIP_VIDEO_CHECKPOINT
    recipe = "tiny-vit-clip-video"


__all__ = ["TINY_VIT_CLIP_CONFIG", "TINY_VIT_CLIP_CHECKPOINT", "TINY_VIT_CLIP_VIDEO_CONFIG",
           "TINY_VIT_CLIP_VIDEO_CHECKPOINT", "TinyVitClip", "TinyVitClipVideoMeanP", "TinyVitClipVideoSeqTransf"]
