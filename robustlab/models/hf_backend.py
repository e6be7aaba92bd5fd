"""Hugging Face ``transformers`` backend: CLIP (and SigLIP) dual encoders from a hub repo or a local folder.

    hf:openai/clip-vit-base-patch32      a hub repo id (downloaded once, then read from the HF cache)
    hf:/path/to/folder                   a local folder written by ``save_pretrained`` (config.json + weights)

Remote code is never trusted (``trust_remote_code=False`` everywhere). Images go through the repo's own image
processor (the PIL backend where transformers offers one, for fidelity to how the weights were trained), texts
through its tokenizer. The loading, placement and identity pieces the transformers backends share are in
:mod:`robustlab.models.hf_base`, the hub access (offline check, cache-only loads, one-line errors) in
:mod:`robustlab.models.hub`; the names this module used to hold are re-exported below.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from robustlab.models.base import EmbeddingModel
from robustlab.models.hf_base import (BOS, EOS, HFDualEncoder, HFParts, byte_tokenizer,  # noqa: F401
                                      clip_image_processor, config_image_size, features, hf_source, load_config,
                                      processor_identity, processor_pixels, random_init_description,
                                      random_init_model, tokenizer_for_text_config, tokenizer_identity)
from robustlab.models.hub import (PROBE_TIMEOUT_S, hub_access, offline_alternatives, offline_reason,  # noqa: F401
                                  one_line, seeded, unavailable)
from robustlab.models.registry import register_backend


class HFClipModel(HFDualEncoder, EmbeddingModel):
    """A transformers CLIP/SigLIP model, its image processor and tokenizer."""

    backend = "hf"
    SUPPORTED = MODEL_TYPES = ("clip", "siglip")
    UNSUPPORTED_BY = "by the hf backend"
    NAME_RESOLVED = True

    def _read_config(self, cfg) -> None:
        self.model_type = cfg.model_type
        tcfg, vcfg = cfg.text_config, cfg.vision_config
        if self.model_type == "clip":
            self.embed_dim = int(cfg.projection_dim)
        else:
            self.embed_dim = int(getattr(tcfg, "projection_size", None) or tcfg.hidden_size)
        self.image_size = config_image_size(vcfg.image_size)
        self.context_length = int(getattr(tcfg, "max_position_embeddings", 77))

    # ---- constructors -----------------------------------------------------------------------------
    @classmethod
    def _model_class(cls, config, what: str):
        if config.model_type == "clip":
            from transformers import CLIPModel  # optional heavy dependency

            return CLIPModel
        from transformers import SiglipModel  # optional heavy dependency

        return SiglipModel

    @classmethod
    def from_config(cls, config, device=None, half: bool | None = None, seed: int = 0) -> "HFClipModel":
        """A random-init CLIP from an in-memory ``CLIPConfig`` (plumbing tests; never results).

        No processor files exist, so the image processor is built from the config's image size and the tokenizer
        is :func:`byte_tokenizer` (the config's BOS/EOS/PAD ids are set to match it).
        """
        from transformers import CLIPModel  # optional heavy dependency

        return random_init_model(cls, config, "clip", "CLIP", CLIPModel, seed, device=device, half=half,
                                 model_id=lambda v, size: f"hf:random-init/clip-h{v.hidden_size}-"
                                                          f"l{v.num_hidden_layers}-{size}px")

    # ---- EmbeddingModel hooks --------------------------------------------------------------------
    def fingerprint_config(self) -> dict:
        return {**super().fingerprint_config(), "model_type": self.model_type, "context_length": self.context_length,
                **self.parts_identity()}

    def preprocess_images(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        return processor_pixels(self.image_processor, images)

    def _image_features(self, pixels: torch.Tensor) -> torch.Tensor:
        return features(self.model.get_image_features(pixel_values=pixels))

    def _text_features(self, texts: list[str]) -> torch.Tensor:
        padding = "max_length" if self.model_type == "siglip" else True  # SigLIP was trained on max-length padding
        enc = self.tokenizer(list(texts), padding=padding, truncation=True, max_length=self.context_length,
                             return_tensors="pt")
        inputs = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        return features(self.model.get_text_features(**inputs))


@register_backend("hf", description="transformers CLIP / SigLIP dual encoder (hub repo id or local folder)",
                  tasks=("retrieval", "video-retrieval"), example="hf:openai/clip-vit-base-patch32",
                  requires=("transformers",), model_types=("clip", "siglip"))
def load_spec(rest: str, device=None, **kwargs) -> HFClipModel:
    """The ``hf:`` loader of the model registry."""
    return HFClipModel.from_pretrained(rest, device=device, **kwargs)


__all__ = ["HFClipModel", "load_spec", "byte_tokenizer", "tokenizer_for_text_config", "processor_identity",
           "tokenizer_identity", "processor_pixels", "hf_source", "load_config", "offline_reason", "hub_access",
           "unavailable", "seeded", "one_line"]
