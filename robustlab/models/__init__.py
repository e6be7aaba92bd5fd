"""Models: one factory, ``load_model(spec)``, over three backends.

    builtin:NAME            robustlab's own models (assets/), trained offline on the synthetic world
    open_clip:ARCH/TAG      any open_clip architecture and pretrained tag (or open_clip:ARCH/path/to/ckpt.pt)
    hf:REPO_ID              transformers CLIP (repo id or a local folder)
    /path/to/dir_or_file    a local transformers folder (has config.json) or an open_clip checkpoint

Task backends (transformers; see robustlab.models.tasks for their protocols):

    hf-xclip:REPO_ID        X-CLIP text<->video retrieval (an EmbeddingModel with native encode_videos)
    hf-vilt:REPO_ID         ViLT fusion: VQA or image-text matching head, attention capture/replacement
    hf-grounding:REPO_ID    OWL-ViT / OWLv2 / Grounding DINO: best box for a referring expression

``list_models()`` lists the built-in names with whether their weights are present here.
"""
from __future__ import annotations

import os
from pathlib import Path

from robustlab.models.base import EmbeddingModel, ModelInfo, ModelUnavailable
from robustlab.models.registry import register_builtin, list_builtin, get_builtin

OFFLINE_ALTERNATIVES = "offline alternatives: builtin:tiny-clip (see `robustlab models`)"

# ---- task backends (video retrieval, fusion, grounding through transformers) -----------------------------
TASK_PREFIXES = ("hf-xclip:", "hf-vilt:", "hf-grounding:")


def _load_task_backend(backend: str, rest: str, device, **kwargs):
    if backend == "hf-xclip":
        from robustlab.models.hf_video import HFXClipModel

        return HFXClipModel.from_pretrained(rest, device=device, **kwargs)
    if backend == "hf-vilt":
        from robustlab.models.hf_fusion import HFViltModel

        return HFViltModel.from_pretrained(rest, device=device, **kwargs)
    if backend == "hf-grounding":
        from robustlab.models.hf_grounding import HFGroundingModel

        return HFGroundingModel.from_pretrained(rest, device=device, **kwargs)
    return None


# model_type in a local folder's config.json -> task backend (CLIP/SigLIP and anything else stay on ``hf``)
_TASK_MODEL_TYPES = {"xclip": "hf-xclip", "vilt": "hf-vilt", "owlvit": "hf-grounding", "owlv2": "hf-grounding",
                     "grounding-dino": "hf-grounding"}


def _task_backend_of_folder(folder: Path) -> str | None:
    import json

    try:
        model_type = json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    return _TASK_MODEL_TYPES.get(model_type)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a model spec into (backend, rest)."""
    spec = str(spec).strip()
    if not spec:
        raise ValueError("empty model spec; try builtin:tiny-clip")
    for prefix in ("builtin:", "open_clip:", "hf:") + TASK_PREFIXES:
        if spec.startswith(prefix):
            rest = spec[len(prefix):].strip()
            if not rest:
                raise ValueError(f"model spec {spec!r} names no model")
            return prefix[:-1], rest
    p = Path(spec).expanduser()
    if p.exists():
        if p.is_dir() and (p / "config.json").exists():
            return _task_backend_of_folder(p) or "hf", str(p)
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
    if backend + ":" in TASK_PREFIXES:
        return _load_task_backend(backend, rest, device, **kwargs)
    if backend == "hf":
        from robustlab.models.hf_backend import HFClipModel

        return HFClipModel.from_pretrained(rest, device=device, **kwargs)
    raise ValueError(f"unknown backend {backend!r}")  # pragma: no cover


def list_models() -> list[dict]:
    return list_builtin()


__all__ = ["EmbeddingModel", "ModelInfo", "ModelUnavailable", "load_model", "list_models", "parse_spec",
           "register_builtin", "OFFLINE_ALTERNATIVES"]
