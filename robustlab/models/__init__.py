"""Models: one factory, ``load_model(spec)``, over three backends.

    builtin:NAME            robustlab's own models (assets/), trained offline on the synthetic world
    open_clip:ARCH/TAG      any open_clip architecture and pretrained tag (or open_clip:ARCH/path/to/ckpt.pt)
    hf:REPO_ID              transformers CLIP (repo id or a local folder)
    /path/to/dir_or_file    a local transformers folder (has config.json) or an open_clip checkpoint

``list_models()`` lists the built-in names with whether their weights are present here.
"""
from __future__ import annotations

import os
from pathlib import Path

from robustlab.models.base import EmbeddingModel, ModelInfo, ModelUnavailable
from robustlab.models.registry import register_builtin, list_builtin, get_builtin

OFFLINE_ALTERNATIVES = "offline alternatives: builtin:tiny-clip (see `robustlab models`)"


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a model spec into (backend, rest)."""
    spec = str(spec).strip()
    if not spec:
        raise ValueError("empty model spec; try builtin:tiny-clip")
    for prefix in ("builtin:", "open_clip:", "hf:"):
        if spec.startswith(prefix):
            rest = spec[len(prefix):].strip()
            if not rest:
                raise ValueError(f"model spec {spec!r} names no model")
            return prefix[:-1], rest
    p = Path(spec).expanduser()
    if p.exists():
        if p.is_dir() and (p / "config.json").exists():
            return "hf", str(p)
        return "open_clip_path", str(p)
    raise ValueError(
        f"unknown model spec {spec!r}: use builtin:NAME, open_clip:ARCH/TAG, hf:REPO_ID or a local path; "
        + OFFLINE_ALTERNATIVES
    )


def load_model(spec: str = "builtin:tiny-clip", device: str | None = None, **kwargs) -> EmbeddingModel:
    """Load a model from its spec. Raises ModelUnavailable with a one-line reason when it can't be had here."""
    backend, rest = parse_spec(spec)
    if backend == "builtin":
        return get_builtin(rest)(device=device, **kwargs)
    if backend in ("open_clip", "open_clip_path"):
        from robustlab.models.open_clip_backend import OpenClipModel

        if backend == "open_clip_path":
            return OpenClipModel.from_checkpoint(rest, device=device, **kwargs)
        arch, _, tag = rest.partition("/")
        return OpenClipModel.from_spec(arch, tag or None, device=device, **kwargs)
    if backend == "hf":
        from robustlab.models.hf_backend import HFClipModel

        return HFClipModel.from_pretrained(rest, device=device, **kwargs)
    raise ValueError(f"unknown backend {backend!r}")  # pragma: no cover


def list_models() -> list[dict]:
    return list_builtin()


__all__ = ["EmbeddingModel", "ModelInfo", "ModelUnavailable", "load_model", "list_models", "parse_spec",
           "register_builtin", "OFFLINE_ALTERNATIVES"]
