"""The query side of a retrieval model, made differentiable for test-time adaptation.

A :class:`Tower` holds a *copy* of the model (the wrapper shallow-copied, its torch modules deep-copied), so the
model the caller passed -- which the dashboard shares between sessions -- is never modified, and the copy's
weights fingerprint changes as soon as its LayerNorms move: an adapted encoder can never read or write the
embedding-cache entries of the unadapted model (the cache keys on that fingerprint).

Which parameters adapt (HAT-VTR §5.1 and the released ``collect_parameters_with_ln``): the weight and bias of every
``LayerNorm`` of the query-side encoder, nothing else:

* text queries (t2i / t2v): the text tower. For the built-ins that is the trained text head over the frozen
  all-MiniLM-L6-v2 (MiniLM was frozen in training too and stays a fixed feature extractor here: its token states
  are computed once per batch); open_clip: the text transformer and ``ln_final``; transformers CLIP: ``text_model``.
* visual queries (i2t / v2t): the image tower, applied to every frame for videos. tiny-clip-video: the frame
  adapter and, for seqTransf, the temporal transformer (its CNN has BatchNorm, no LayerNorm, and is computed once
  per batch); the tiny-vit-clip family: its ViT image tower's LayerNorms too (every block, ``ln_pre``,
  ``ln_post``), as CLIP4Clip's visual encoder in HAT-VTR; open_clip: ``visual``; transformers CLIP:
  ``vision_model``. tiny-clip's image tower is a CNN with BatchNorm only: it has nothing to adapt on that side,
  and says so.

``encode`` gives L2-normalised ``B×D`` features, or ``B×T×D`` per-frame features for video queries (T = 1 for an
image), as the released code's losses expect; :meth:`Tower.pool` turns frames into the model's own video
embedding (mean of the normalised frames, re-normalised: CLIP4Clip's meanP, and tiny-clip-video's aggregate).
"""
from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robustlab.io.convert import to_uint8_rgb
from robustlab.models.builtin import TinyClip, minilm_tokens
from robustlab.models.builtin_video import _TinyClipVideo
from robustlab.models.protocols import sample_frames


class AdaptError(ValueError):
    """A model, direction or setting test-time adaptation cannot use (one line, for the UI and CLI)."""


def clone_model(model):
    """The wrapper shallow-copied with every torch module attribute deep-copied (the original is never touched)."""
    m = copy.copy(model)
    m.__dict__.pop("_fp_memo", None)
    for k, v in list(vars(model).items()):
        if isinstance(v, nn.Module):
            setattr(m, k, copy.deepcopy(v))
    return m


def layernorms(module: nn.Module, prefixes: Sequence[str] = ("",), exclude: Sequence[str] = ()) -> list:
    """(name, LayerNorm) under any of ``prefixes`` (dotted module names), not under ``exclude``."""
    out = []
    for name, mod in module.named_modules():
        if not isinstance(mod, nn.LayerNorm):
            continue
        if not any(name == p.rstrip(".") or name.startswith(p) for p in prefixes):
            continue
        if any(name.startswith(e) for e in exclude):
            continue
        out.append((name, mod))
    return out


class Tower:
    """A differentiable query encoder over a copy of ``model``. Subclasses set ``self.adapted`` (the copy),
    ``self.norms`` ((name, LayerNorm) pairs that adapt) and implement :meth:`prepare` and :meth:`encode`."""
    side: str = "text"  # "text" or "visual"
    frames: bool = False  # encode() returns B×T×D per-frame features

    def __init__(self, model, side: str, video: bool, clone: bool = True):
        self.model = model
        self.side = side
        self.frames = side == "visual"
        self.video = bool(video)
        self.adapted = clone_model(model) if clone else model  # clone=False: read-only use of the model itself
        self.device = getattr(model, "device", torch.device("cpu"))
        self.norms: list = []

    # ---- parameters -------------------------------------------------------------------------------------
    def parameters(self) -> list:
        ps = []
        for _, ln in self.norms:
            ps += [p for p in (ln.weight, ln.bias) if p is not None]
        return ps

    def setup(self) -> None:
        """Freeze everything of the copy, then let only the LayerNorms of the query side learn; eval mode
        (dropout off), as the released loop runs."""
        if not self.norms:
            raise AdaptError(self.no_norms_reason())
        for mod in self._modules():
            mod.eval()
            for p in mod.parameters():
                p.requires_grad_(False)
        for p in self.parameters():
            p.data = p.data.float() if p.dtype == torch.float16 else p.data
            p.requires_grad_(True)

    def _modules(self) -> list:
        return [v for v in vars(self.adapted).values() if isinstance(v, nn.Module)]

    def no_norms_reason(self) -> str:
        mid = getattr(self.model, "model_id", type(self.model).__name__)
        return f"{mid} has no LayerNorm on its {self.side} side to adapt"

    def state(self) -> dict:
        """A copy of the adapting parameters (what a reset restores)."""
        return {f"{n}.{k}": p.detach().clone() for n, ln in self.norms
                for k, p in (("weight", ln.weight), ("bias", ln.bias)) if p is not None}

    def load_state(self, state: dict) -> None:
        with torch.no_grad():
            for n, ln in self.norms:
                for k, p in (("weight", ln.weight), ("bias", ln.bias)):
                    if p is not None:
                        p.copy_(state[f"{n}.{k}"])
        self.adapted.__dict__.pop("_fp_memo", None)

    def n_parameters(self) -> int:
        return int(sum(p.numel() for p in self.parameters()))

    # ---- encoding ---------------------------------------------------------------------------------------
    def prepare(self, inputs: list) -> Any:
        """The frozen part of a batch of queries, computed once (no gradient)."""
        return list(inputs)

    def encode(self, prepared) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def pool(x: torch.Tensor) -> torch.Tensor:
        """B×T×D per-frame features -> the normalised B×D embedding (B×D passes through, normalised)."""
        if x.dim() == 3:
            x = F.normalize(x, dim=-1).mean(1)
        return F.normalize(x, dim=-1)



# ---- the generic towers (open_clip, transformers CLIP, and any EmbeddingModel with _text/_image_features) ----
_VISUAL_PREFIXES = ("visual.", "vision_model.", "image.", "adapter.", "temporal.")


def _side_norms(adapted, side: str) -> list:
    """The LayerNorms of one side of a backend's modules, by the backends' module names."""
    out = []
    for attr, mod in vars(adapted).items():
        if not isinstance(mod, nn.Module):
            continue
        for name, ln in layernorms(mod):
            visual = any(name.startswith(p) or name == p.rstrip(".") for p in _VISUAL_PREFIXES)
            if (side == "visual") == visual:
                out.append((f"{attr}.{name}", ln))
    return out


class TextTower(Tower):
    """Text queries through ``_text_features`` of the copy (tokenisation inside, every step)."""
    def __init__(self, model, video: bool = False, clone: bool = True):
        super().__init__(model, "text", video, clone)
        self.norms = _side_norms(self.adapted, "text")

    def encode(self, prepared) -> torch.Tensor:
        return F.normalize(self.adapted._text_features(list(prepared)).float(), dim=-1)


class VisualTower(Tower):
    """Image or video queries through ``_image_features`` of the copy, frame by frame for videos (the model's
    ``num_frames`` sampled uniformly, as its own video encoder does)."""
    def __init__(self, model, video: bool = False, clone: bool = True):
        super().__init__(model, "visual", video, clone)
        self.norms = _side_norms(self.adapted, "visual")

    def prepare(self, inputs: list):

        if not self.video:
            pix = self.adapted.preprocess_images([to_uint8_rgb(im) for im in inputs])
            return pix.unsqueeze(1)  # B×1×C×H×W
        n = int(getattr(self.model, "num_frames", 8) or 8)
        vids = []
        for v in inputs:
            fr = [to_uint8_rgb(f) for f in sample_frames(np.asarray(v), n)]
            vids.append(self.adapted.preprocess_images(fr))
        return torch.stack(vids)  # B×T×C×H×W

    def encode(self, prepared) -> torch.Tensor:
        b, t = prepared.shape[:2]
        dev = next((p.device for m in self._modules() for p in m.parameters()), torch.device("cpu"))
        x = self.adapted._image_features(prepared.flatten(0, 1).to(dev))
        return F.normalize(x.float(), dim=-1).view(b, t, -1)


# ---- the built-ins: the frozen parts computed once per batch ----------------------------------------------
class BuiltinTextTower(Tower):
    """tiny-clip / tiny-clip-video text queries: frozen MiniLM token states once per batch, the trained head's
    LayerNorms adapt."""
    def __init__(self, model, video: bool = False, clone: bool = True):
        super().__init__(model, "text", video, clone)
        net = self.adapted.net
        self.head = net.text[model.aggregator] if isinstance(net.text, nn.ModuleDict) else net.text
        prefix = f"text.{model.aggregator}." if isinstance(net.text, nn.ModuleDict) else "text."
        self.norms = [(f"net.{n}", ln) for n, ln in layernorms(net, (prefix,))]

    def prepare(self, inputs: list):

        texts = [t if str(t).strip() else "" for t in inputs]
        states, mask = minilm_tokens(texts, self.device, self.adapted.cfg["max_tokens"], torch.float32)
        return states.clone(), mask.clone()  # out of inference mode, so autograd can use them

    def encode(self, prepared) -> torch.Tensor:
        states, mask = prepared
        return F.normalize(self.head(states, mask).float(), dim=-1)


class BuiltinVideoTower(Tower):
    """tiny-clip-video visual queries: the frame CNN (BatchNorm, frozen) once per batch; the frame adapter's (meanP's
    own frame head's, where it has one) and, for seqTransf, the temporal transformer's LayerNorms adapt. The
    tiny-vit-clip video models' frame tower is a ViT: its LayerNorms adapt too, so it runs inside :meth:`encode`
    (with gradients) instead of once per batch. Frames after the temporal transformer, each normalised: the model's
    own video embedding is their normalised mean."""
    def __init__(self, model, video: bool = True, clone: bool = True):
        super().__init__(model, "visual", video, clone)
        net = self.adapted.net
        self.tune_tower = net.cfg.get("tower") == "vit"
        prefixes = (("image.",) if self.tune_tower else ()) \
            + (("meanp_frame.",) if net.own_head(model.aggregator) else ("adapter.",)) \
            + (("temporal.",) if model.aggregator == "seqtransf" else ())
        self.norms = [(f"net.{n}", ln) for n, ln in layernorms(net, prefixes)]

    def prepare(self, inputs: list):
        m = self.adapted
        if self.video:
            pix = torch.stack([m.preprocess_video(v) for v in inputs])
        else:

            pix = m.preprocess_images([to_uint8_rgb(im) for im in inputs]).unsqueeze(1)
        b, t = pix.shape[:2]
        if self.tune_tower:  # the ViT's LayerNorms adapt: the tower runs in encode()
            return pix.to(self.device, torch.float32)
        with torch.no_grad():
            f = m.net.image.features(pix.flatten(0, 1).to(self.device, torch.float32))
        return f.view(b, t, *f.shape[1:]).float()

    def encode(self, prepared) -> torch.Tensor:
        net, b, t = self.adapted.net, *prepared.shape[:2]
        # the trunk (with gradients when its LayerNorms adapt), then the aggregator's frame head
        f = net.image.features(prepared.flatten(0, 1)) if self.tune_tower else prepared.flatten(0, 1)
        f = net.frame_head(f, self.model.aggregator).view(b, t, -1)
        if self.model.aggregator == "seqtransf" and self.video:
            f = net.temporal(f)
        return F.normalize(f, dim=-1)


def frozen_frames(model, visuals: list, video: bool, batch: int = 64) -> torch.Tensor:
    """N×T×D normalised per-frame features of gallery images (T = 1) or videos from the model as it is (no
    copy, no gradient): the gallery side of HAT-VTR's frame-level loss for text queries."""
    t = BuiltinVideoTower(model, video, clone=False) if isinstance(model, _TinyClipVideo) \
        else VisualTower(model, video, clone=False)
    out = []
    with torch.no_grad():
        for i in range(0, len(visuals), batch):
            out.append(t.encode(t.prepare(visuals[i:i + batch])).float().cpu())
    return torch.cat(out) if out else torch.zeros(0, 1, 1)


def check(model, side: str, video: bool) -> None:
    """Raise :class:`AdaptError` (one line) when ``model`` has nothing to adapt on ``side``; copies nothing (the
    sweep's pre-flight check)."""
    t = _make(model, side, video, clone=False)
    if not t.norms:
        raise AdaptError(t.no_norms_reason())


def _make(model, side: str, video: bool, clone: bool) -> Tower:

    mid = getattr(model, "model_id", type(model).__name__)
    if side not in ("text", "visual"):
        raise AdaptError(f"side must be text or visual, got {side!r}")
    if isinstance(model, _TinyClipVideo):
        return BuiltinTextTower(model, video, clone) if side == "text" else BuiltinVideoTower(model, video, clone)
    if isinstance(model, TinyClip):
        if side == "visual" and model.cfg.get("tower") == "vit":
            return VisualTower(model, video, clone)  # tiny-vit-clip: the ViT's LayerNorms (module names image.*)
        if side == "visual":
            raise AdaptError(f"{mid} has no LayerNorm on its image side (a CNN with BatchNorm): test-time "
                             "adaptation of its image or frame queries has nothing to update; use a "
                             "tiny-clip-video model, or adapt text queries (t2i / t2v)")
        return BuiltinTextTower(model, video, clone)
    if callable(getattr(model, "_text_features", None)) and callable(getattr(model, "_image_features", None)):
        return TextTower(model, video, clone) if side == "text" else VisualTower(model, video, clone)
    raise AdaptError(f"{mid} does not expose its encoders to robustlab (no _text_features / _image_features): "
                     "test-time adaptation needs them")


def tower_for(model, side: str, video: bool) -> Tower:
    """The query tower of ``model`` on ``side`` ("text" or "visual"); ``video``: the visuals are videos.
    Raises :class:`AdaptError` (one line) for a model or side with nothing to adapt."""
    t = _make(model, side, video, clone=True)
    if not t.norms:
        raise AdaptError(t.no_norms_reason())
    t.setup()
    return t


__all__ = ["AdaptError", "Tower", "TextTower", "VisualTower", "BuiltinTextTower", "BuiltinVideoTower",
           "tower_for", "check", "frozen_frames", "clone_model", "layernorms"]
