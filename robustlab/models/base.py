"""The model protocol every backend implements.

A backend turns images (H×W×3 uint8 arrays), videos (T×H×W×3 uint8) and texts (str) into L2-normalised
embeddings in one shared space. Backends implement three small hooks; batching, device placement, half
precision, ``torch.inference_mode`` and caching live in :mod:`robustlab.engine`, so every backend gets them
the same way.

    preprocess_images(list[np.ndarray]) -> torch.Tensor   (CPU, float32, N×C×H×W)
    _image_features(torch.Tensor on device) -> torch.Tensor  (N×D, not yet normalised)
    _text_features(list[str]) -> torch.Tensor               (N×D, not yet normalised)

Videos are encoded by frame pooling (mean of the normalised frame embeddings) unless a backend overrides
``encode_videos``.

Every model (dual encoders here, and the fusion / grounding models that do not embed) also has a weights
**fingerprint** (:class:`Fingerprinted`): the embedding cache and the result records key on it, not on the
display id ``model_id`` (which is the same for every ``builtin:tiny-clip`` checkpoint and for every random-init
model of one architecture).
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from robustlab.engine.batching import encode_images, encode_texts
from robustlab.engine.device import resolve_device
from robustlab.engine.errors import ModelUnavailable  # noqa: F401 - defined in the core, re-exported here
from robustlab.models.protocols import sample_frame_indices

ProgressFn = Callable[[int, int], None]


@dataclass
class ModelInfo:
    model_id: str
    backend: str
    embed_dim: int
    image_size: int
    device: str
    dtype: str
    n_params: int
    description: str = ""
    random_init: bool = False  # plumbing-test models: never shown as results
    extra: dict = field(default_factory=dict)
    fingerprint: str = ""  # weights fingerprint (see Fingerprinted); model_id is for display


FINGERPRINT_VERSION = "robustlab-fingerprint-v1"
FINGERPRINT_CHARS = 16


def _tensors(module: torch.nn.Module):
    """(name, tensor) of every parameter and buffer (persistent or not) of a module, each tensor once."""
    seen: set[int] = set()
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        if t is None or id(t) in seen:
            continue
        seen.add(id(t))
        yield name, t


def _version(t: torch.Tensor) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # an inference-mode tensor has no version counter (and cannot be changed in place)
        return -1


def _state_token(module: torch.nn.Module) -> tuple:
    """Cheap (microseconds per tensor) token of a module's tensors: which objects, where their data is, and
    their version counters. Any in-place change through autograd-visible ops (``p.add_``, ``copy_``,
    ``load_state_dict``, an optimizer step) bumps a version; ``module.to`` / ``half`` / assigning a new
    Parameter change the object or the data pointer. Changes through ``p.data`` bypass the version counter:
    call :meth:`Fingerprinted.refresh_fingerprint` after those."""
    return tuple((name, id(t), _version(t), t.data_ptr() if t.device.type != "meta" else 0, t.dtype,
                  tuple(t.shape)) for name, t in _tensors(module))


def module_digest(module: torch.nn.Module) -> str:
    """sha256 (hex) of a module's parameters and buffers: names, dtypes, shapes and bytes, in module order.

    Independent of the device (the bytes are read back to the CPU), dependent on the dtype (a half-precision
    copy computes different embeddings, so it has a different digest).
    """
    h = hashlib.sha256()
    for name, t in _tensors(module):
        t = t.detach()
        h.update(f"{name}|{str(t.dtype).replace('torch.', '')}|{tuple(t.shape)}|".encode())
        if t.device.type == "meta" or t.numel() == 0:
            continue
        if t.is_quantized:
            t = t.dequantize()
        flat = t.reshape(-1)
        if flat.device.type != "cpu":
            flat = flat.cpu()
        flat = flat.contiguous()
        if flat.dtype == torch.bool:
            flat = flat.to(torch.uint8)
        h.update(flat.view(torch.uint8).numpy().data)
    return h.hexdigest()


# digests of modules, shared by every model that holds them (e.g. the frozen MiniLM text tower of the built-ins):
# module -> (state token, digest); the token decides whether the digest is still valid
_DIGESTS: "weakref.WeakKeyDictionary[torch.nn.Module, tuple[tuple, str]]" = weakref.WeakKeyDictionary()
_DIGESTS_LOCK = threading.Lock()


def _memo_digest(module: torch.nn.Module, token: tuple, force: bool = False) -> str:
    with _DIGESTS_LOCK:
        hit = None if force else _DIGESTS.get(module)
    if hit is not None and hit[0] == token:
        return hit[1]
    d = module_digest(module)
    with _DIGESTS_LOCK:
        _DIGESTS[module] = (token, d)
    return d


def _config_json(cfg: Any) -> str:
    s = json.dumps(cfg, sort_keys=True, default=str)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", s)  # reprs of functions / objects: no per-process addresses


class Fingerprinted:
    """A short hex digest of what decides a model's outputs: its weights (every parameter and buffer of
    :meth:`fingerprint_modules`: names, shapes, dtypes, bytes), its class and :meth:`fingerprint_config`
    (preprocessing, aggregator, frame count…; whatever the backend's outputs depend on besides weights).

    * Computed once and memoised: sha256 over the bytes (about 1.7 GB/s here; well under a second for a
      ViT-B-32), and each module's digest is shared by every model holding that module.
    * Kept valid cheaply: every access compares a token of the tensors (object ids, data pointers, version
      counters) with the one the digest was made from, so weights changed in place through torch ops
      (``p.add_``, ``copy_``, ``load_state_dict``, an optimizer step), moved or cast, or replaced by new
      Parameters, get a new fingerprint on the next access, without rehashing when nothing changed.
    * Writes through ``p.data`` (and raw storage writes) bypass the version counters: call
      :meth:`refresh_fingerprint` after those. It rehashes everything.

    Two random-init models of one architecture (one ``model_id``) with different seeds have different
    fingerprints; the same weights loaded twice (same checkpoint, same dtype) have the same one, whatever their
    ``model_id`` says. A model without torch modules (a test double) is told apart by its ``model_id``.
    """
    def modules(self) -> list[torch.nn.Module]:
        """The torch modules of the backend."""
        return []

    def fingerprint_modules(self) -> list[torch.nn.Module]:
        """The modules whose weights decide the outputs (default :meth:`modules`; the built-ins add the frozen
        text encoder they share)."""
        return list(self.modules())

    def fingerprint_config(self) -> dict:
        """What besides the weights decides the outputs (JSON-able; ``str`` is applied to anything else)."""
        return {}

    def _fingerprint_identity(self, mods: list) -> str:
        ident = {"class": f"{type(self).__module__}.{type(self).__qualname__}", "config": self.fingerprint_config()}
        if not mods:  # a model without torch weights (a test double, a rule): its id is all there is to tell
            ident["model_id"] = str(getattr(self, "model_id", ""))
        return _config_json(ident)

    def _compute_fingerprint(self, force: bool) -> str:
        mods = self.fingerprint_modules()
        tokens = tuple(_state_token(m) for m in mods)
        ident = self._fingerprint_identity(mods)
        h = hashlib.sha256(FINGERPRINT_VERSION.encode())
        h.update(ident.encode())
        for m, tok in zip(mods, tokens):
            h.update(b"|" + _memo_digest(m, tok, force=force).encode())
        fp = h.hexdigest()[:FINGERPRINT_CHARS]
        self.__dict__["_fp_memo"] = (tokens, ident, fp)
        return fp

    @property
    def fingerprint(self) -> str:
        """16 hex characters; see the class docstring for what it covers and when it is recomputed."""
        memo = self.__dict__.get("_fp_memo")
        if memo is not None:
            mods = self.fingerprint_modules()
            if memo[0] == tuple(_state_token(m) for m in mods) and memo[1] == self._fingerprint_identity(mods):
                return memo[2]
        return self._compute_fingerprint(force=False)

    def refresh_fingerprint(self) -> str:
        """Rehash every weight (bypassing all memos) and return the new fingerprint. Needed only after writes
        the version counters do not see (``p.data[...] = …``, ``p.data.copy_(…)``)."""
        return self._compute_fingerprint(force=True)


class EmbeddingModel(Fingerprinted):
    """Base class of every dual-encoder backend (builtin, open_clip, hf)."""
    model_id: str = "abstract"
    backend: str = "abstract"
    embed_dim: int = 0
    image_size: int = 224
    random_init: bool = False
    description: str = ""
    # texts are cheap to batch large; images are limited by memory
    default_image_batch: int = 64
    default_text_batch: int = 256

    def __init__(self, device: str | torch.device | None = None, half: bool | None = None):

        self.device = resolve_device(device)
        self.half = (self.device.type == "cuda") if half is None else bool(half)
        self.dtype = torch.float16 if self.half else torch.float32

    # ---- hooks a backend implements -------------------------------------------------------------
    def preprocess_images(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        raise NotImplementedError

    def _image_features(self, pixels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _text_features(self, texts: list[str]) -> torch.Tensor:
        raise NotImplementedError

    def modules(self) -> list[torch.nn.Module]:
        """The torch modules of the backend (moved to device/dtype once by ``_place``)."""
        return []

    def fingerprint_config(self) -> dict:
        return {"embed_dim": int(self.embed_dim), "image_size": int(self.image_size)}

    # ---- shared plumbing --------------------------------------------------------------------------
    def _place(self) -> None:
        for m in self.modules():
            m.to(self.device)
            if self.half:
                m.half()
            m.eval()

    def n_params(self) -> int:
        return sum(p.numel() for m in self.modules() for p in m.parameters())

    def info(self) -> ModelInfo:
        return ModelInfo(
            model_id=self.model_id,
            backend=self.backend,
            embed_dim=self.embed_dim,
            image_size=self.image_size,
            device=str(self.device),
            dtype=str(self.dtype).replace("torch.", ""),
            n_params=self.n_params(),
            description=self.description,
            random_init=self.random_init,
            fingerprint=self.fingerprint,
        )

    def encode_images(self, images, batch_size: int | None = None, progress: ProgressFn | None = None) -> np.ndarray:

        return encode_images(self, images, batch_size=batch_size, progress=progress)

    def encode_texts(self, texts, batch_size: int | None = None, progress: ProgressFn | None = None) -> np.ndarray:

        return encode_texts(self, texts, batch_size=batch_size, progress=progress)

    def encode_videos(self, videos, batch_size: int | None = None, progress: ProgressFn | None = None) -> np.ndarray:
        """Frame pooling: mean of the normalised per-frame embeddings, re-normalised."""
        out = []
        for i, v in enumerate(videos):
            v = np.asarray(v)
            if v.ndim != 4:
                raise ValueError(f"a video must be T×H×W×3, got shape {v.shape}")
            f = self.encode_images(list(v), batch_size=batch_size)
            m = f.mean(0)
            out.append(m / max(np.linalg.norm(m), 1e-12))
            if progress:
                progress(i + 1, len(videos))
        return np.stack(out).astype(np.float32) if out else np.zeros((0, self.embed_dim), np.float32)

    def similarity(self, text_emb: np.ndarray, image_emb: np.ndarray) -> np.ndarray:
        """Cosine similarity, queries × gallery (both already L2-normalised)."""
        return np.asarray(text_emb, np.float32) @ np.asarray(image_emb, np.float32).T

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id} on {self.device} {str(self.dtype)}>"


class VideoRetrievalModel(EmbeddingModel):
    """An EmbeddingModel whose ``encode_videos`` is native (not frame pooling of ``encode_images``)."""
    num_frames: int = 8

    def frame_indices(self, t: int) -> np.ndarray:
        """The frames this model samples from a ``t``-frame video (lazy perturbation perturbs only these)."""
        return sample_frame_indices(int(t), int(self.num_frames))

    def encode_videos(self, videos, batch_size=None, progress=None) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def fingerprint_config(self) -> dict:
        return {**super().fingerprint_config(), "num_frames": int(self.num_frames)}
