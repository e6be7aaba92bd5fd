"""Former home of the task protocols (kept so older imports work): the protocols, ``Box`` and the frame helpers
are in :mod:`robustlab.models.protocols`, ``VideoRetrievalModel`` in :mod:`robustlab.models.base`, the hub
loading helpers in :mod:`robustlab.models.hf_backend` and ``KNOWN_MODELS`` / ``availability`` in
:mod:`robustlab.models.registry`.
"""
from __future__ import annotations

from robustlab.models.base import VideoRetrievalModel
from robustlab.models.hf_backend import hf_source, load_config
from robustlab.models.protocols import Box, FusionModel, GroundingModel, as_frames, sample_frames
from robustlab.models.registry import KNOWN_MODELS, availability

__all__ = ["KNOWN_MODELS", "availability", "Box", "GroundingModel", "FusionModel", "VideoRetrievalModel",
           "sample_frames", "as_frames", "hf_source", "load_config"]
