"""Models: one factory, ``load_model(spec)``, over one registry of built-in models and backends.

    builtin:NAME            robustlab's own models (assets/), trained offline on the synthetic world
    open_clip:ARCH/TAG      any open_clip architecture and pretrained tag (or open_clip:ARCH/path/to/ckpt.pt)
    hf:REPO_ID              transformers CLIP / SigLIP (repo id or a local folder)
    hf-xclip:REPO_ID        X-CLIP text<->video retrieval (an EmbeddingModel with native encode_videos)
    hf-vilt:REPO_ID         ViLT fusion: VQA or image-text matching head, attention capture/replacement
    hf-grounding:REPO_ID    OWL-ViT / OWLv2 / Grounding DINO: best box for a referring expression
    /path/to/dir_or_file    a local transformers folder (has config.json) or an open_clip checkpoint

Layout: :mod:`~robustlab.models.registry` (``register_backend`` by prefix, ``register_builtin`` by name,
``load_model``, ``list_models(pattern, task=)``), :mod:`~robustlab.models.base` (the ``EmbeddingModel`` base
class, weights fingerprints, ``ModelUnavailable``), :mod:`~robustlab.models.protocols` (the task protocols,
``Box``, task names, ``model_tasks`` / ``can`` for a loaded model), :mod:`~robustlab.models.checkpoints` (where
the built-in checkpoints live).
"""
from __future__ import annotations

from robustlab.models.base import EmbeddingModel, Fingerprinted, ModelInfo, ModelUnavailable, VideoRetrievalModel
from robustlab.models.protocols import TASKS, can, model_tasks
from robustlab.models.registry import (OFFLINE_ALTERNATIVES, get_builtin, list_backends, list_builtin, list_models,
                                       load_model, parse_spec, register_backend, register_builtin)

__all__ = ["EmbeddingModel", "VideoRetrievalModel", "Fingerprinted", "ModelInfo", "ModelUnavailable", "load_model",
           "list_models", "list_backends", "parse_spec", "register_backend", "register_builtin", "model_tasks", "can",
           "TASKS", "OFFLINE_ALTERNATIVES"]
