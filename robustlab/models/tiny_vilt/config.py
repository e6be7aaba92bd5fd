"""tiny-vilt's checkpoint name, configuration and token-attribute groups. Part of :mod:`robustlab.models.tiny_vilt`."""
from __future__ import annotations

CHECKPOINT = "tiny-vilt.safetensors"

TINY_VILT_CONFIG = dict(
    width=128,
    layers=4,
    heads=4,
    mlp=384,
    text_width=384,     # MiniLM word-embedding width
    max_text=64,        # text positions incl. [CLS] and [SEP]
    feat_dim=384,       # visual token features: 128 (stage 3) + 256 (stage 4)
    image_grid=8,       # an image -> 8×8 tokens
    frame_grid=4,       # a video frame -> 4×4 tokens
    n_frames=8,
    image_size=64,
    channels=(32, 64, 128, 256),
    mean=0.5,
    std=0.25,
    answers=[],         # VQA answer vocabulary (filled from robustlab.datasets.synthetic.qa.ANSWERS at training time)
    pixel_patches=True,   # also embed raw pixel patches (ViLT-style linear patch embedding), added per token
    patch_size=8,         # ... of patch_size² pixels: an image's 8×8 grid at 64 px, a frame's 4×4 grid at 32 px
    token_mlp=256,        # visual tokens: an MLP (hidden width) over [CNN features ⊕ pixel patch] (0: two linear maps)
    pooled_vqa=True,      # VQA reads [CLS] and a text-conditioned attention-pooled summary of the visual tokens
    frame_diff=True,      # video tokens also embed their change since the previous sampled frame
    token_aux=True,       # a per-visual-token attribute head (colour / shape / size / cell / change / kind / direction)
    question_pool=2,      # VQA also reads the question's own words: this many learned attention pools over the
                          # input word embeddings (0: off), so relation words ("before", "last") reach the answer
)
# options added after checkpoints were first shipped, as they are for a checkpoint whose config lacks them
ADDED_OPTIONS_OFF = dict(question_pool=0)
# the per-visual-token attribute head's groups (robustlab.training.tiny_vilt trains them from the world's structure)
TOKEN_GROUPS = (("colour", 9), ("shape", 7), ("size", 3), ("change", 2), ("cell", 10), ("kind", 4),
                ("direction", 5))
TOKEN_AUX_CLASSES = sum(n for _, n in TOKEN_GROUPS)
