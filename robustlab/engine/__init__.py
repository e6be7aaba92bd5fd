"""Inference core: device choice, batching, and the on-disk embedding cache."""
from robustlab.engine.device import resolve_device, describe_devices
from robustlab.engine.batching import auto_batch_size, encode_images, encode_texts, is_oom, to_uint8_rgb
from robustlab.engine.cache import (
    EmbeddingCache, content_hash, default_cache_dir, cached_encode_images, cached_encode_texts,
    cached_encode_videos, model_key,
)

__all__ = [
    "resolve_device", "describe_devices", "encode_images", "encode_texts", "to_uint8_rgb", "auto_batch_size", "is_oom",
    "EmbeddingCache", "content_hash", "default_cache_dir", "cached_encode_images", "cached_encode_texts",
    "cached_encode_videos", "model_key",
]
