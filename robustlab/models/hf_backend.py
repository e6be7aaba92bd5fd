"""Hugging Face ``transformers`` backend: CLIP (and SigLIP) dual encoders from a hub repo or a local folder.

    hf:openai/clip-vit-base-patch32      a hub repo id (downloaded once, then read from the HF cache)
    hf:/path/to/folder                   a local folder written by ``save_pretrained`` (config.json + weights)

Remote code is never trusted (``trust_remote_code=False`` everywhere). Images go through the repo's own image
processor (the PIL backend where transformers offers one, for fidelity to how the weights were trained), texts
through its tokenizer.

This module also holds the hub-access helpers the open_clip backend shares: an offline check that answers in
seconds (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``, else a short TCP probe of the hub), a context that runs
the hub libraries cache-only when offline, and the one-line :class:`ModelUnavailable` every failed load raises.
"""
from __future__ import annotations

import contextlib
import copy
import os
import socket
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence
from urllib.parse import urlparse

import numpy as np
import torch

from robustlab.models.base import EmbeddingModel, ModelUnavailable

# ---- hub access (shared with the open_clip backend) -----------------------------------------------------

PROBE_TIMEOUT_S = 3.0
_PROBE_TTL_S = 60.0
_probe_cache: dict[str, tuple[float, str | None]] = {}
_offline_lock = threading.RLock()
_TRUE = {"1", "on", "yes", "true"}


def offline_alternatives() -> str:
    from robustlab.models.registry import OFFLINE_ALTERNATIVES  # lazy: the registry names this module

    return OFFLINE_ALTERNATIVES


def one_line(text, limit: int = 240) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def unavailable(what: str, why: str, err: BaseException | str | None = None) -> ModelUnavailable:
    """The one-line error: what failed, why, the underlying error, and what works offline."""
    detail = ""
    if err is not None:
        detail = one_line(f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else err)
        detail = f" [{detail}]"
    return ModelUnavailable(one_line(f"{what} unavailable: {why}{detail}; {offline_alternatives()}", 600))


def _hub_endpoint() -> str:
    try:
        from huggingface_hub import constants

        return constants.ENDPOINT
    except Exception:  # pragma: no cover - huggingface_hub is a dependency of transformers and open_clip
        return "https://huggingface.co"


def offline_reason(url: str | None = None) -> str | None:
    """Why the hub (or ``url``) can't be reached from here, or None when it can.

    ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` are read at call time (the hub libraries read them at import);
    otherwise one TCP connection with a short timeout (to the proxy when one is set), cached for a minute.
    """
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"offline mode ({var} is set), so no hub access"
    u = urlparse(url or _hub_endpoint())
    proxy = os.environ.get(f"{u.scheme}_proxy".upper()) or os.environ.get(f"{u.scheme}_proxy") or \
        os.environ.get("ALL_PROXY") or os.environ.get("all_proxy")
    target = urlparse(proxy if "//" in (proxy or "") else f"http://{proxy}") if proxy else u
    host = target.hostname or "huggingface.co"
    port = target.port or (443 if target.scheme == "https" else 80)
    key = f"{host}:{port}"
    now = time.monotonic()
    hit = _probe_cache.get(key)
    if hit and now - hit[0] < _PROBE_TTL_S:
        return hit[1]
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            reason = None
    except OSError as e:
        reason = f"no network/hub access ({host} unreachable: {one_line(e, 80)})"
    _probe_cache[key] = (now, reason)
    return reason


@contextlib.contextmanager
def _hub_cache_only() -> Iterator[None]:
    """Run the hub libraries cache-only: cached files load, anything else fails at once (no retries)."""
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover
        yield
        return
    with _offline_lock:
        before = constants.HF_HUB_OFFLINE
        constants.HF_HUB_OFFLINE = True
        try:
            yield
        finally:
            constants.HF_HUB_OFFLINE = before


def _is_load_error(e: BaseException) -> bool:
    if isinstance(e, (OSError, RuntimeError, ValueError, ImportError)):
        return True
    root = type(e).__module__.split(".")[0]
    return root in {"httpx", "requests", "urllib3", "huggingface_hub", "open_clip", "transformers", "safetensors"}


@contextlib.contextmanager
def hub_access(what: str, offline: str | None, local: bool = False) -> Iterator[None]:
    """Wrap a load that may touch the hub: offline it runs cache-only; a failure becomes one-line ModelUnavailable."""
    with (_hub_cache_only() if offline else contextlib.nullcontext()):
        try:
            yield
        except ModelUnavailable:
            raise
        except Exception as e:
            if not _is_load_error(e):
                raise
            if offline:
                why = f"{offline} and no local copy in the cache"
            elif local:
                why = "could not load the local files"
            else:
                why = "download or load failed (no network/hub access, or no local weights)"
            raise unavailable(what, why, e) from e


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Deterministic random init that leaves the global RNG state alone."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


# ---- transformers helpers -----------------------------------------------------------------------------

def _tf_major() -> int:
    import transformers

    try:
        return int(transformers.__version__.split(".")[0])
    except ValueError:  # pragma: no cover
        return 5


def _float32_kw() -> dict:
    # v5 defaults to dtype="auto" (the checkpoint's dtype); load float32, _place halves on GPU
    return {"dtype": torch.float32} if _tf_major() >= 5 else {"torch_dtype": torch.float32}


def _load_image_processor(src: str, local_files_only: bool):
    from transformers import AutoImageProcessor

    kw = {"backend": "pil"} if _tf_major() >= 5 else {"use_fast": False}
    try:
        return AutoImageProcessor.from_pretrained(src, local_files_only=local_files_only, trust_remote_code=False, **kw)
    except (TypeError, ValueError, KeyError):
        return AutoImageProcessor.from_pretrained(src, local_files_only=local_files_only, trust_remote_code=False)


def _clip_image_processor(size: int):
    """A CLIP image processor built in memory (PIL backend where transformers has one)."""
    import transformers

    cls = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    return cls(size={"shortest_edge": size}, crop_size={"height": size, "width": size})


BOS, EOS = "<|startoftext|>", "<|endoftext|>"


def byte_tokenizer(max_length: int = 77):
    """A tokenizer that needs no vocab files: byte-level (256 ids), lower-cased, ``BOS text EOS``, EOS pads.

    ids 0..255 are the bytes, 256 is BOS, 257 is EOS. For random-init models only (plumbing tests).
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    vocab[BOS], vocab[EOS] = 256, 257
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([BOS, EOS])
    tk.post_processor = processors.TemplateProcessing(single=f"{BOS} $A {EOS}", special_tokens=[(BOS, 256), (EOS, 257)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=BOS, eos_token=EOS, pad_token=EOS,
                                   model_max_length=max_length)


def _features(out) -> torch.Tensor:
    """transformers 4.x returns a tensor from get_*_features; 5.x a model output whose pooler_output is projected."""
    if torch.is_tensor(out):
        return out
    for name in ("image_embeds", "text_embeds", "pooler_output"):
        v = getattr(out, name, None)
        if torch.is_tensor(v):
            return v
    if isinstance(out, (tuple, list)) and len(out) > 1 and torch.is_tensor(out[1]):
        return out[1]
    raise TypeError(f"unexpected feature output type {type(out).__name__} from transformers")


def _image_size(v) -> int:
    return int(v[0] if isinstance(v, (tuple, list)) else v)


def tokenizer_for_text_config(tcfg):
    """The in-memory byte tokenizer for a random-init text tower, with the config's special ids set to match
    (mutates ``tcfg``: pass a copy)."""
    tok = byte_tokenizer(int(tcfg.max_position_embeddings))
    if tcfg.vocab_size < len(tok):
        raise ValueError(f"text_config.vocab_size={tcfg.vocab_size} is smaller than the byte tokenizer's {len(tok)} ids")
    tcfg.bos_token_id, tcfg.eos_token_id, tcfg.pad_token_id = tok.bos_token_id, tok.eos_token_id, tok.pad_token_id
    return tok


def processor_identity(image_processor) -> dict:
    """What of an image processor decides the pixels (its class and settings), for fingerprints."""
    try:
        d = image_processor.to_dict()
    except Exception:  # noqa: BLE001 - an unusual processor: its repr is the best we have
        d = {"repr": repr(image_processor)}
    d = {k: v for k, v in d.items() if k not in ("processor_class", "_processor_class")}
    return {"class": type(image_processor).__name__, "settings": d}


def tokenizer_identity(tokenizer) -> dict:
    """A tokenizer's class, size and special tokens (for fingerprints; the vocab comes with the weights' repo)."""
    out: dict = {"class": type(tokenizer).__name__}
    try:
        out["size"] = len(tokenizer)
    except TypeError:
        pass
    for k in ("model_max_length", "context_length", "padding_side"):
        v = getattr(tokenizer, k, None)
        if isinstance(v, (int, str)):
            out[k] = v
    special = getattr(tokenizer, "all_special_tokens", None)
    if isinstance(special, list):
        out["special"] = [str(t) for t in special]
    return out


def processor_pixels(image_processor, images) -> torch.Tensor:
    """H×W×3 uint8 images through a transformers image processor -> float32 CPU pixel tensor."""
    arrs = [np.ascontiguousarray(np.asarray(im, dtype=np.uint8)) for im in images]
    out = image_processor(images=arrs, return_tensors="pt", input_data_format="channels_last")
    return out["pixel_values"].float().cpu()


class HFClipModel(EmbeddingModel):
    """A transformers CLIP/SigLIP model, its image processor and tokenizer."""

    backend = "hf"
    SUPPORTED = ("clip", "siglip")

    def __init__(self, model, image_processor, tokenizer, *, model_id: str, device=None, half: bool | None = None,
                 random_init: bool = False, description: str = ""):
        super().__init__(device, half)
        self.model = model
        self.image_processor = image_processor
        self.tokenizer = tokenizer
        cfg = model.config
        self.model_type = cfg.model_type
        self.model_id = model_id
        self.random_init = bool(random_init)
        self.description = description or f"transformers {type(model).__name__}"
        tcfg, vcfg = cfg.text_config, cfg.vision_config
        if self.model_type == "clip":
            self.embed_dim = int(cfg.projection_dim)
        else:
            self.embed_dim = int(getattr(tcfg, "projection_size", None) or tcfg.hidden_size)
        self.image_size = _image_size(vcfg.image_size)
        self.context_length = int(getattr(tcfg, "max_position_embeddings", 77))
        self._place()

    # ---- constructors -----------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, repo_or_dir: str, device=None, half: bool | None = None) -> "HFClipModel":
        """A hub repo id or a local ``save_pretrained`` folder. Offline: the HF cache only, failing in seconds."""
        src = str(repo_or_dir).strip()
        p = Path(src).expanduser()
        local = p.is_dir()
        if local:
            src, offline, cache_only = str(p), None, True
        else:
            if src.startswith(("/", "./", "../", "~", ".")) or src.count("/") > 1:
                raise unavailable(f"hf:{src}", "no such local folder (and not a hub repo id of the form org/name)")
            offline = offline_reason()
            cache_only = offline is not None
        what = f"hf:{src}"
        with hub_access(what, offline, local=local):
            from transformers import AutoConfig, AutoTokenizer

            config = AutoConfig.from_pretrained(src, local_files_only=cache_only, trust_remote_code=False)
            if config.model_type not in cls.SUPPORTED:
                raise unavailable(what, f"model_type {config.model_type!r} is not supported by the hf backend "
                                        f"(supported: {', '.join(cls.SUPPORTED)})")
            if config.model_type == "clip":
                from transformers import CLIPModel as model_cls
            else:
                from transformers import SiglipModel as model_cls
            model = model_cls.from_pretrained(src, config=config, local_files_only=cache_only, **_float32_kw())
            image_processor = _load_image_processor(src, cache_only)
            tokenizer = AutoTokenizer.from_pretrained(src, local_files_only=cache_only, trust_remote_code=False)
        return cls(model, image_processor, tokenizer, model_id=f"hf:{repo_or_dir}", device=device, half=half,
                   description=f"transformers {type(model).__name__} from {src}")

    @classmethod
    def from_config(cls, config, device=None, half: bool | None = None, seed: int = 0) -> "HFClipModel":
        """A random-init CLIP from an in-memory ``CLIPConfig`` (plumbing tests; never results).

        No processor files exist, so the image processor is built from the config's image size and the tokenizer
        is :func:`byte_tokenizer` (the config's BOS/EOS/PAD ids are set to match it).
        """
        from transformers import CLIPModel

        if getattr(config, "model_type", None) != "clip":
            mt = getattr(config, "model_type", None)
            raise ValueError(f"from_config builds CLIP models only, got model_type {mt!r}")
        config = copy.deepcopy(config)
        tok = tokenizer_for_text_config(config.text_config)
        with seeded(seed):
            model = CLIPModel(config)
        size = _image_size(config.vision_config.image_size)
        v = config.vision_config
        return cls(model, _clip_image_processor(size), tok, device=device, half=half, random_init=True,
                   model_id=f"hf:random-init/clip-h{v.hidden_size}-l{v.num_hidden_layers}-{size}px",
                   description="random-init transformers CLIPModel (plumbing only, never results)")

    # ---- EmbeddingModel hooks --------------------------------------------------------------------
    def modules(self) -> list[torch.nn.Module]:
        return [self.model]

    def fingerprint_config(self) -> dict:
        return {**super().fingerprint_config(), "model_type": self.model_type, "context_length": self.context_length,
                "image_processor": processor_identity(self.image_processor),
                "tokenizer": tokenizer_identity(self.tokenizer)}

    def preprocess_images(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        return processor_pixels(self.image_processor, images)

    def _image_features(self, pixels: torch.Tensor) -> torch.Tensor:
        return _features(self.model.get_image_features(pixel_values=pixels))

    def _text_features(self, texts: list[str]) -> torch.Tensor:
        padding = "max_length" if self.model_type == "siglip" else True  # SigLIP was trained on max-length padding
        enc = self.tokenizer(list(texts), padding=padding, truncation=True, max_length=self.context_length,
                             return_tensors="pt")
        inputs = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        return _features(self.model.get_text_features(**inputs))


# ---- loading helpers shared by the transformers task backends (hf-xclip, hf-vilt, hf-grounding) --------------

def hf_source(prefix: str, repo_or_dir: str) -> tuple[str, str | None, bool, bool, str]:
    """(src, offline_reason, local_files_only, is_local, what) for a hub repo id or a local folder.

    Same rules as ``hf:``: a local folder loads local files only; a repo id is checked against the hub in
    seconds and loads cache-only when offline. Raises a one-line ModelUnavailable for a missing local folder.
    """
    src = str(repo_or_dir).strip()
    p = Path(src).expanduser()
    what = f"{prefix}:{src}"
    if p.is_dir():
        return str(p), None, True, True, what
    if src.startswith(("/", "./", "../", "~", ".")) or src.count("/") > 1:
        raise unavailable(what, "no such local folder (and not a hub repo id of the form org/name)")
    offline = offline_reason()
    return src, offline, offline is not None, False, what


def load_config(src: str, cache_only: bool, what: str, supported: Sequence[str]):
    """A transformers config (local files only when ``cache_only``), refused in one line unless its model_type
    is one of ``supported``."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(src, local_files_only=cache_only, trust_remote_code=False)
    if config.model_type not in supported:
        raise unavailable(what, f"model_type {config.model_type!r} is not supported here "
                                f"(supported: {', '.join(supported)})")
    return config


def load_spec(rest: str, device=None, **kwargs) -> "HFClipModel":
    """The ``hf:`` loader of the model registry."""
    return HFClipModel.from_pretrained(rest, device=device, **kwargs)
