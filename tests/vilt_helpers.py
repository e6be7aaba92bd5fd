"""ViLT models for the QUAG and intervention tests: the shipped tiny-vilt (skipped when its checkpoint is
missing) and a random-init transformers ViLT (plumbing only). Shared here, on the tests' import path, so a test
module never depends on another one having been collected first."""
from __future__ import annotations

import pytest


def _tiny_vilt():
    from robustlab.models.checkpoints import checkpoint_path
    from robustlab.models.tiny_vilt import CHECKPOINT

    if not checkpoint_path(CHECKPOINT).exists():
        pytest.skip("assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")
    from robustlab.models import load_model

    return load_model("builtin:tiny-vilt", device="cpu")


def _random_vilt():
    """A random-init transformers ViLT VQA model of a tiny config (plumbing only)."""
    pytest.importorskip("transformers")
    from transformers import ViltConfig

    from robustlab.models.hf_fusion import HFViltModel

    cfg = ViltConfig(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4, image_size=32,
                     patch_size=8, max_position_embeddings=40, vocab_size=300, initializer_range=0.2,
                     id2label={0: "yes", 1: "no"}, label2id={"yes": 0, "no": 1})
    return HFViltModel.from_config(cfg, head="vqa", device="cpu")
