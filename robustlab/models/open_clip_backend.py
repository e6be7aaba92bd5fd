"""open_clip backend: any open_clip architecture with a pretrained tag, a local checkpoint, or random init.

    open_clip:ViT-B-32/laion2b_s34b_b79k    architecture + pretrained tag (downloaded once, then from the cache)
    open_clip:ViT-B-32/path/to/ckpt.pt       architecture + a local checkpoint (.safetensors or weights-only .pt)
    open_clip:ViT-B-32                       random init: plumbing tests only (``random_init=True``), never results
    open_clip:hf-hub:org/repo                an open_clip repo on the hub (open_clip's own schema)
    /path/to/folder                          a folder with open_clip_config.json and its weights

Local checkpoints are read by robustlab, never unpickled: ``.safetensors`` through safetensors, anything else
through ``torch.load(weights_only=True)`` (open_clip's own loader falls back to a full unpickle when torch.load
raises TypeError, so it is not handed user files). Images go through the model's own preprocess transform (PIL).
"""
from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from PIL import Image

from robustlab.models.base import EmbeddingModel
from robustlab.models.hub import hub_access, offline_reason, seeded, unavailable
from robustlab.models.registry import register_backend

_SCHEMAS = ("hf-hub:", "local-dir:")
_NUMPY_SUFFIXES = (".npz", ".npy")


def _open_clip():
    try:
        import open_clip
    except ImportError as e:  # pragma: no cover - a dependency
        raise unavailable("open_clip backend", "the open_clip_torch package is not installed", e) from e
    return open_clip


def _needs_hub(model_cfg: dict | None) -> bool:
    """Random-init/local loads still touch the hub for HF text towers and HF tokenizers."""
    text = (model_cfg or {}).get("text_cfg", {})
    return bool(text.get("hf_model_name") or text.get("hf_tokenizer_name"))


def _read_state_dict(path: Path) -> dict:
    """A state dict from a local file without unpickling arbitrary objects."""
    what = f"open_clip checkpoint {path}"
    if path.suffix.lower() == ".safetensors":
        from safetensors.torch import load_file

        try:
            obj = load_file(str(path), device="cpu")
        except Exception as e:
            raise unavailable(what, "not a readable safetensors file", e) from e
    else:
        try:
            obj = torch.load(str(path), map_location="cpu", weights_only=True)
        except Exception as e:
            raise unavailable(what, "not a weights-only checkpoint (robustlab never unpickles arbitrary objects; "
                                    "re-save the state dict with safetensors or torch.save)", e) from e
    if isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not obj or not all(torch.is_tensor(v) for v in obj.values()):
        raise unavailable(what, "the file holds no state dict of tensors")
    if next(iter(obj)).startswith("module."):
        obj = {k[len("module."):] if k.startswith("module.") else k: v for k, v in obj.items()}
    return obj


def _load_weights(model: torch.nn.Module, path: Path, arch: str) -> None:
    """Load a local checkpoint into an open_clip model, with open_clip's own state-dict fix-ups."""
    open_clip = _open_clip()
    what = f"open_clip checkpoint {path}"
    if path.suffix.lower() in _NUMPY_SUFFIXES:  # big_vision SigLIP weights: open_clip uses np.load (no pickle)
        try:
            open_clip.load_checkpoint(model, str(path))
        except Exception as e:
            raise unavailable(what, f"could not load big_vision weights into {arch}", e) from e
        return
    sd = _read_state_dict(path)
    from open_clip import factory as F

    try:
        sd = F.convert_state_dict(model, sd)
        if "positional_embedding" in sd and not hasattr(model, "positional_embedding"):
            sd = F.convert_to_custom_text_state_dict(sd)
        for key in ("logit_scale", "logit_bias"):
            mine = getattr(model, key, None)
            if key in sd and mine is not None and mine.ndim != sd[key].ndim:
                sd[key] = sd[key].reshape(mine.shape)
        if "logit_bias" not in sd and getattr(model, "logit_bias", None) is not None and "logit_scale" in sd:
            sd["logit_bias"] = torch.zeros_like(sd["logit_scale"])
        sd.pop("text.transformer.embeddings.position_ids", None)  # not a persistent buffer in transformers>=4.31
        F.resize_pos_embed(sd, model)
        F.resize_text_pos_embed(sd, model)
        model.load_state_dict(sd, strict=True)
    except Exception as e:
        raise unavailable(what, f"its weights do not fit architecture {arch} (is it the right ARCH?)", e) from e


def _find_dir_checkpoint(folder: Path) -> Path | None:
    preferred = ["open_clip_model.safetensors", "open_clip_pytorch_model.safetensors", "model.safetensors",
                 "open_clip_pytorch_model.bin", "open_clip_pytorch_model.pth", "pytorch_model.bin", "model.pth"]
    for name in preferred:
        if (folder / name).is_file():
            return folder / name
    found = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")) + sorted(folder.glob("*.pth")) + \
        sorted(folder.glob("*.pt"))
    return found[0] if found else None


class OpenClipModel(EmbeddingModel):
    """An open_clip model, its eval preprocess transform and tokenizer."""

    backend = "open_clip"

    def __init__(self, model, preprocess, tokenizer, *, model_id: str, embed_dim: int, device=None,
                 half: bool | None = None, random_init: bool = False, description: str = ""):
        super().__init__(device, half)
        self.model = model
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.embed_dim = int(embed_dim)
        size = getattr(getattr(model, "visual", None), "image_size", 224)
        self.image_size = int(size[0] if isinstance(size, (tuple, list)) else size)
        self.random_init = bool(random_init)
        self.description = description
        self._place()

    # ---- constructors -----------------------------------------------------------------------------
    @classmethod
    def _build(cls, model_name: str, *, model_id: str, pretrained: str | None = None, weights: Path | None = None,
               offline: str | None = None, random_init: bool = False, description: str = "", device=None,
               half: bool | None = None, local: bool = False, **create_kw) -> "OpenClipModel":
        open_clip = _open_clip()
        with hub_access(model_id, offline, local=local):
            with seeded(0):  # random init is reproducible (weights loaded afterwards overwrite it)
                model, _, preprocess = open_clip.create_model_and_transforms(
                    model_name, pretrained=pretrained, device="cpu", pretrained_image=False, pretrained_text=False,
                    weights_only=True, **create_kw)
            tokenizer = open_clip.get_tokenizer(model_name)
        if weights is not None:
            _load_weights(model, weights, model_name)
        embed_dim = getattr(getattr(model, "visual", None), "output_dim", None)
        tp = getattr(model, "text_projection", None)
        if embed_dim is None and tp is not None:
            embed_dim = tp.shape[-1] if torch.is_tensor(tp) else getattr(tp, "out_features", None)
        if embed_dim is None:
            with torch.inference_mode():
                embed_dim = model.encode_text(tokenizer(["a"])).shape[-1]
        return cls(model.eval(), preprocess, tokenizer, model_id=model_id, embed_dim=embed_dim, device=device,
                   half=half, random_init=random_init, description=description)

    @classmethod
    def from_spec(cls, arch: str, tag: str | None = None, device=None, half: bool | None = None) -> "OpenClipModel":
        """``arch`` + a pretrained tag, a local checkpoint path, or None (random init, plumbing only)."""
        open_clip = _open_clip()
        arch = str(arch).strip()
        tag = (str(tag).strip() or None) if tag is not None else None
        if arch.startswith(_SCHEMAS):  # open_clip's own schemas: the "tag" is the rest of the name
            name = arch + ("/" + tag if tag else "")
            if name.startswith("local-dir:"):
                return cls.from_checkpoint(name[len("local-dir:"):], device=device, half=half)
            return cls._build(name, model_id=f"open_clip:{name}", offline=offline_reason(), device=device, half=half,
                              description=f"open_clip {name}")
        cfg = open_clip.get_model_config(arch)
        if cfg is None:
            close = difflib.get_close_matches(arch, open_clip.list_models(), n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}?" if close else "see open_clip.list_models()"
            raise unavailable(f"open_clip:{arch}", f"unknown open_clip architecture ({hint})")
        if tag is None:
            return cls._build(arch, model_id=f"open_clip:{arch}", random_init=True, device=device, half=half,
                              offline=offline_reason() if _needs_hub(cfg) else None,
                              description=f"random-init open_clip {arch} (plumbing only, never results)")
        tags = open_clip.list_pretrained_tags_by_model(arch)
        if tag in tags or tag.lower() in tags:
            return cls._from_tag(arch, tag, cfg, device=device, half=half)
        path = Path(tag).expanduser()
        if path.is_file():
            return cls._build(arch, model_id=f"open_clip:{arch}/{tag}", weights=path, local=True, device=device,
                              half=half, offline=offline_reason() if _needs_hub(cfg) else None,
                              description=f"open_clip {arch} with local weights {path.name}")
        if "/" in tag or os.sep in tag or path.suffix in (".pt", ".pth", ".bin", ".safetensors", ".npz"):
            raise unavailable(f"open_clip:{arch}/{tag}", f"no such checkpoint file {str(path)!r}")
        shown = ", ".join(tags[:8]) + (", …" if len(tags) > 8 else "")
        raise unavailable(f"open_clip:{arch}/{tag}",
                          f"unknown pretrained tag for {arch} (known: {shown or 'none; pass a checkpoint path'})")

    @classmethod
    def _from_tag(cls, arch: str, tag: str, cfg: dict, device=None, half=None) -> "OpenClipModel":
        open_clip = _open_clip()
        pcfg = open_clip.get_pretrained_cfg(arch, tag) or {}
        offline = offline_reason()
        model_id = f"open_clip:{arch}/{tag}"
        if offline and pcfg.get("url") and not pcfg.get("hf_hub"):
            # plain-URL weights: urllib has no timeout, so offline only the cached file will do
            cached = Path("~/.cache/clip").expanduser() / os.path.basename(pcfg["url"])
            if not cached.is_file():
                raise unavailable(model_id, f"{offline} and no local copy in the cache")
        # the openai weights were trained with QuickGELU; the plain arch configs use GELU
        kw = {"force_quick_gelu": True} if pcfg.get("quick_gelu") and not cfg.get("quick_gelu") else {}
        return cls._build(arch, model_id=model_id, pretrained=tag, offline=offline, device=device, half=half,
                          description=f"open_clip {arch} pretrained on {tag}", **kw)

    @classmethod
    def from_checkpoint(cls, path: str, device=None, half: bool | None = None) -> "OpenClipModel":
        """A folder with ``open_clip_config.json`` (+ weights). A bare file's architecture can't be told:
        spell it ``open_clip:ARCH/PATH``."""
        p = Path(str(path)).expanduser()
        config_path = p / "open_clip_config.json"
        if p.is_dir() and config_path.is_file():
            try:
                model_cfg = json.loads(config_path.read_text(encoding="utf-8")).get("model_cfg")
            except (OSError, ValueError) as e:
                raise unavailable(f"open_clip folder {p}", "unreadable open_clip_config.json", e) from e
            weights = _find_dir_checkpoint(p)
            desc = f"open_clip from folder {p.name}" + ("" if weights else " (no weights: random init)")
            return cls._build(f"local-dir:{p}", model_id=f"open_clip:local-dir:{p}", weights=weights, local=True,
                              load_weights=False, random_init=weights is None, device=device, half=half,
                              offline=offline_reason() if _needs_hub(model_cfg) else None, description=desc)
        if p.is_dir():
            raise unavailable(f"model folder {p}", "it has neither config.json (transformers) nor "
                                                   "open_clip_config.json (open_clip)")
        raise unavailable(f"open_clip checkpoint {p}",
                          f"the architecture of a bare checkpoint file can't be inferred: write open_clip:ARCH/{path} "
                          f"(e.g. open_clip:ViT-B-32/{path})")

    # ---- EmbeddingModel hooks --------------------------------------------------------------------
    def modules(self) -> list[torch.nn.Module]:
        return [self.model]

    def fingerprint_config(self) -> dict:
        tok = self.tokenizer
        inner = getattr(tok, "tokenizer", None)  # open_clip's HFTokenizer wraps a transformers tokenizer
        return {**super().fingerprint_config(), "preprocess": repr(self.preprocess),
                "tokenizer": {"class": type(tok).__name__, "context_length": getattr(tok, "context_length", None),
                              "source": getattr(inner, "name_or_path", None)}}

    def preprocess_images(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        return torch.stack([self.preprocess(Image.fromarray(np.asarray(im, dtype=np.uint8))) for im in images]).float()

    def _image_features(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model.encode_image(pixels)

    def _text_features(self, texts: list[str]) -> torch.Tensor:
        tokens = self.tokenizer(list(texts))
        return self.model.encode_text(tokens.to(self.device))

    def __repr__(self) -> str:
        tail = " random-init" if self.random_init else ""
        return f"<{type(self).__name__} {self.model_id} on {self.device} {str(self.dtype)}{tail}>"


@register_backend("open_clip", description="any open_clip architecture with a pretrained tag or local weights (ARCH "
                                           "alone: random init, plumbing only)",
                  tasks=("retrieval", "video-retrieval"), example="open_clip:ViT-B-32/openai", requires=("open_clip",))
def load_spec(rest: str, device=None, **kwargs) -> OpenClipModel:
    """The ``open_clip:`` loader of the model registry: ``ARCH``, ``ARCH/TAG`` or ``ARCH/path/to/weights``."""
    arch, _, tag = rest.partition("/")
    return OpenClipModel.from_spec(arch, tag or None, device=device, **kwargs)


# a bare local path that is not a transformers folder: open_clip files (a folder with open_clip_config.json)
@register_backend("open_clip_path", description="a local open_clip folder (open_clip_config.json + weights), given as "
                                                "a bare path",
                  tasks=("retrieval", "video-retrieval"), example="/path/to/open_clip_folder", requires=("open_clip",),
                  listed=False)
def load_path(rest: str, device=None, **kwargs) -> OpenClipModel:
    """A local open_clip folder (``open_clip_config.json`` + weights) or checkpoint file, given as a bare path."""
    return OpenClipModel.from_checkpoint(rest, device=device, **kwargs)


__all__ = ["OpenClipModel", "load_spec", "load_path"]
