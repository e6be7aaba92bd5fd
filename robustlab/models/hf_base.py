"""What the four transformers backends share (``hf:``, ``hf-xclip:``, ``hf-vilt:``, ``hf-grounding:``).

* Loading: :func:`hf_source` (a local folder loads local files only; a hub repo id is checked against the hub in
  seconds and loads cache-only when offline), :func:`load_config` (refused in one line unless its ``model_type``
  is supported) and :func:`load_pretrained` (config, weights in float32, the repo's image processor with the PIL
  backend where transformers has one, its tokenizer), all with ``trust_remote_code=False`` and every failure a
  one-line :class:`~robustlab.models.base.ModelUnavailable` (:mod:`robustlab.models.hub`).
* Random init for plumbing tests: in-memory tokenizers that need no vocab files (:func:`byte_tokenizer`, CLIP
  layout; :func:`bert_byte_tokenizer`, BERT layout) and image processors built from a config's sizes.
* :class:`HFParts`, the mixin of the backend classes: the model, its image processor and tokenizer, device and
  dtype placement, the processor and tokenizer identity for fingerprints, ``n_params`` / ``info``, and
  ``from_pretrained`` over :func:`load_pretrained`; :class:`HFDualEncoder`, the constructor of the dual encoders
  (CLIP/SigLIP, X-CLIP) on top of it.

transformers itself is imported inside the functions that need it (an optional heavy dependency), so importing a
backend module stays light.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from robustlab.engine.device import resolve_device
from robustlab.io.access import read_roots
from robustlab.models.base import ModelInfo
from robustlab.models.hub import hub_access, offline_reason, seeded, unavailable

# ---- transformers versions, weights and processors ---------------------------------------------------------


def _tf_major() -> int:
    import transformers  # optional heavy dependency

    try:
        return int(transformers.__version__.split(".")[0])
    except ValueError:  # pragma: no cover
        return 5


def float32_kw() -> dict:
    """``from_pretrained`` keywords that load float32 weights (v5 defaults to the checkpoint's dtype; a backend
    halves on GPU when it places the model)."""
    return {"dtype": torch.float32} if _tf_major() >= 5 else {"torch_dtype": torch.float32}


def load_image_processor(src: str, local_files_only: bool):
    """The repo's image processor, the PIL backend where transformers offers one (fidelity to training)."""
    from transformers import AutoImageProcessor  # optional heavy dependency

    kw = {"backend": "pil"} if _tf_major() >= 5 else {"use_fast": False}
    try:
        return AutoImageProcessor.from_pretrained(src, local_files_only=local_files_only, trust_remote_code=False, **kw)
    except (TypeError, ValueError, KeyError):
        return AutoImageProcessor.from_pretrained(src, local_files_only=local_files_only, trust_remote_code=False)


def clip_image_processor(size: int):
    """A CLIP image processor built in memory (PIL backend where transformers has one)."""
    import transformers  # optional heavy dependency

    cls = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    return cls(size={"shortest_edge": size}, crop_size={"height": size, "width": size})


def processor_pixels(image_processor, images) -> torch.Tensor:
    """H×W×3 uint8 images through a transformers image processor -> float32 CPU pixel tensor."""
    arrs = [np.ascontiguousarray(np.asarray(im, dtype=np.uint8)) for im in images]
    out = image_processor(images=arrs, return_tensors="pt", input_data_format="channels_last")
    return out["pixel_values"].float().cpu()


def features(out) -> torch.Tensor:
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


def config_image_size(v) -> int:
    """A config's image size (an int, or a pair whose first side is taken)."""
    return int(v[0] if isinstance(v, (tuple, list)) else v)


# ---- tokenizers without vocab files (random-init models) ----------------------------------------------------

BOS, EOS = "<|startoftext|>", "<|endoftext|>"
CLS, SEP, PAD, UNK, MASK = "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"


def byte_tokenizer(max_length: int = 77):
    """A tokenizer that needs no vocab files: byte-level (256 ids), lower-cased, ``BOS text EOS``, EOS pads.

    ids 0..255 are the bytes, 256 is BOS, 257 is EOS. For random-init models only (plumbing tests).
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors  # optional heavy
    from transformers import PreTrainedTokenizerFast  # optional heavy dependency

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


def bert_byte_tokenizer(max_length: int = 40):
    """A BERT-layout tokenizer that needs no vocab files: ``[CLS] bytes [SEP]``, [PAD]=0, lower-cased.

    ids 0..4 are [PAD] [UNK] [CLS] [SEP] [MASK], 5..260 the bytes. For random-init models only (plumbing tests).
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors  # optional heavy
    from transformers import PreTrainedTokenizerFast  # optional heavy dependency

    specials = [PAD, UNK, CLS, SEP, MASK]
    vocab = {s: i for i, s in enumerate(specials)}
    for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet())):
        vocab[ch] = len(specials) + i
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
    tk.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(specials)
    tk.post_processor = processors.TemplateProcessing(single=f"{CLS} $A {SEP}", pair=f"{CLS} $A {SEP} $B {SEP}",
                                                      special_tokens=[(CLS, 2), (SEP, 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token=PAD, unk_token=UNK, cls_token=CLS,
                                   sep_token=SEP, mask_token=MASK, model_max_length=max_length)


def tokenizer_for_text_config(tcfg):
    """The in-memory byte tokenizer for a random-init text tower, with the config's special ids set to match
    (mutates ``tcfg``: pass a copy)."""
    tok = byte_tokenizer(int(tcfg.max_position_embeddings))
    if tcfg.vocab_size < len(tok):
        raise ValueError(f"text_config.vocab_size={tcfg.vocab_size} is smaller than "
                         f"the byte tokenizer's {len(tok)} ids")
    tcfg.bos_token_id, tcfg.eos_token_id, tcfg.pad_token_id = tok.bos_token_id, tok.eos_token_id, tok.pad_token_id
    return tok


def random_init_description(model) -> str:
    return f"random-init transformers {type(model).__name__} (plumbing only, never results)"


def random_init_model(cls, config, model_type: str, label: str, model_class: Callable, seed: int,
                      model_id: Callable, **kwargs):
    """``cls`` over a random-init ``model_type`` model built from an in-memory config (a copy: the tokenizer's
    special ids are set on it), seeded without touching the global RNG: what every backend's ``from_config`` is
    (plumbing tests; never results). ``model_id(vision_config, image_size)`` names it; ``kwargs`` go to ``cls``
    (device, half). ValueError (one line) for another ``model_type``."""
    if getattr(config, "model_type", None) != model_type:
        raise ValueError(f"from_config builds {label} models only, got model_type "
                         f"{getattr(config, 'model_type', None)!r}")
    config = copy.deepcopy(config)
    tok = tokenizer_for_text_config(config.text_config)
    with seeded(seed):
        model = model_class(config)
    size = config_image_size(config.vision_config.image_size)
    return cls(model, clip_image_processor(size), tok, random_init=True, model_id=model_id(config.vision_config, size),
               description=random_init_description(model), **kwargs)


# ---- identities (fingerprints) -------------------------------------------------------------------------------

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


# ---- loading ------------------------------------------------------------------------------------------------

def hf_source(prefix: str, repo_or_dir: str) -> tuple[str, str | None, bool, bool, str]:
    """(src, offline_reason, local_files_only, is_local, what) for a hub repo id or a local folder.

    A local folder loads local files only; a repo id is checked against the hub in seconds and loads cache-only
    when offline. Raises a one-line ModelUnavailable for a missing local folder. In a process confined to data
    roots (the dashboard: :func:`robustlab.io.access.read_roots`) a name of the hub's form (``name``, ``org/name``)
    is always a repo id, never a folder of that name next to the server: what a viewer's spec means doesn't depend on
    what lies on the disk (the dashboard checked it as a hub spec, ``spec_source(spec, disk=False)``).
    """
    src = str(repo_or_dir).strip()
    p = Path(src).expanduser()
    what = f"{prefix}:{src}"
    hub_form = not (src.startswith(("/", "~", ".", "\\")) or "\\" in src or ".." in src.split("/")
                    or src.count("/") > 1)
    try:
        local_dir = p.is_dir() and not (hub_form and read_roots() is not None)
    except (OSError, ValueError):  # a name the file system refuses to look up (too long): not a local folder
        local_dir = False
    if local_dir:
        return str(p), None, True, True, what
    if src.startswith(("/", "./", "../", "~", ".")) or src.count("/") > 1:
        raise unavailable(what, "no such local folder (and not a hub repo id of the form org/name)")
    offline = offline_reason()
    return src, offline, offline is not None, False, what


def load_config(src: str, cache_only: bool, what: str, supported: Sequence[str], by: str = "here"):
    """A transformers config (local files only when ``cache_only``), refused in one line unless its model_type
    is one of ``supported`` ("is not supported ``by``")."""
    from transformers import AutoConfig  # optional heavy dependency

    config = AutoConfig.from_pretrained(src, local_files_only=cache_only, trust_remote_code=False)
    if config.model_type not in supported:
        raise unavailable(what, f"model_type {config.model_type!r} is not supported {by} "
                                f"(supported: {', '.join(supported)})")
    return config


def load_pretrained(prefix: str, repo_or_dir: str, supported: Sequence[str], model_class: Callable, *,
                    by: str = "here", name_resolved: bool = False):
    """``(model, image_processor, tokenizer, src)`` of a hub repo id or a local ``save_pretrained`` folder.

    ``model_class(config, what)`` picks the transformers class for the config (it may refuse with
    :func:`~robustlab.models.hub.unavailable`); the weights load in float32. ``name_resolved`` names a local
    folder by its resolved path in the messages (``hf:`` always has).
    """
    src, offline, cache_only, local, what = hf_source(prefix, repo_or_dir)
    if name_resolved:
        what = f"{prefix}:{src}"
    with hub_access(what, offline, local=local):
        from transformers import AutoTokenizer  # optional heavy dependency

        config = load_config(src, cache_only, what, supported, by=by)
        model = model_class(config, what).from_pretrained(src, config=config, local_files_only=cache_only,
                                                         **float32_kw())
        image_processor = load_image_processor(src, cache_only)
        tokenizer = AutoTokenizer.from_pretrained(src, local_files_only=cache_only, trust_remote_code=False)
    return model, image_processor, tokenizer, src


# ---- the backend classes' mixin -----------------------------------------------------------------------------

class HFParts:
    """A transformers model with its image processor and tokenizer (the mixin of the transformers backends).

    A backend sets ``backend`` (its spec prefix) and ``MODEL_TYPES`` and implements ``_model_class(config, what)``;
    :meth:`from_pretrained` then loads ``PREFIX:REPO_OR_DIR`` through :func:`load_pretrained`.
    """

    backend: str  # the spec prefix
    MODEL_TYPES: tuple[str, ...] = ()
    UNSUPPORTED_BY = "here"  # the end of "model_type 'x' is not supported ..." for a refused config
    NAME_RESOLVED = False  # see load_pretrained

    def _hold(self, model, image_processor, tokenizer, *, model_id: str, random_init: bool = False,
              description: str = "") -> None:
        self.model = model
        self.image_processor = image_processor
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.random_init = bool(random_init)
        self.description = description or f"transformers {type(model).__name__}"

    def _place_model(self, device, half: bool | None) -> None:
        """``device``, ``half`` (default: on CUDA) and ``dtype`` set, the model moved there in eval mode."""
        self.device = resolve_device(device)
        self.half = (self.device.type == "cuda") if half is None else bool(half)
        self.dtype = torch.float16 if self.half else torch.float32
        self.model = self.model.to(self.device, dtype=self.dtype).eval()

    @classmethod
    def _model_class(cls, config, what: str):
        raise NotImplementedError

    @classmethod
    def from_pretrained(cls, repo_or_dir: str, device=None, half: bool | None = None):
        """A hub repo id or a local ``save_pretrained`` folder. Offline: the HF cache only, failing in seconds."""
        model, image_processor, tokenizer, src = load_pretrained(
            cls.backend, repo_or_dir, cls.MODEL_TYPES, cls._model_class, by=cls.UNSUPPORTED_BY,
            name_resolved=cls.NAME_RESOLVED)
        return cls(model, image_processor, tokenizer, model_id=f"{cls.backend}:{repo_or_dir}", device=device,
                   half=half, description=f"transformers {type(model).__name__} from {src}")

    def modules(self) -> list[torch.nn.Module]:
        return [self.model]

    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def parts_identity(self) -> dict:
        """The image processor's and the tokenizer's identity (for ``fingerprint_config``)."""
        return {"image_processor": processor_identity(self.image_processor),
                "tokenizer": tokenizer_identity(self.tokenizer)}

    def _info(self, embed_dim: int, extra: dict) -> ModelInfo:
        return ModelInfo(model_id=self.model_id, backend=self.backend, embed_dim=embed_dim, image_size=self.image_size,
                         device=str(self.device), dtype=str(self.dtype).replace("torch.", ""),
                         n_params=self.n_params(), description=self.description, random_init=self.random_init,
                         fingerprint=self.fingerprint, extra=extra)


class HFDualEncoder(HFParts):
    """The constructor of the transformers dual encoders (CLIP/SigLIP in :mod:`robustlab.models.hf_backend`, X-CLIP
    in :mod:`robustlab.models.hf_video`): the embedding model's own set-up (``device``, ``half``), the parts held,
    what the config says read by ``_read_config``, then the model placed. Mixed in before the embedding model's
    base class."""

    def __init__(self, model, image_processor, tokenizer, *, model_id: str, device=None, half: bool | None = None,
                 random_init: bool = False, description: str = ""):
        super().__init__(device, half)
        self._hold(model, image_processor, tokenizer, model_id=model_id, random_init=random_init,
                   description=description)
        self._read_config(model.config)
        self._place()

    def _read_config(self, cfg) -> None:
        """Set the embedding size, image size, context length... from the model's config."""
        raise NotImplementedError


__all__ = ["HFParts", "HFDualEncoder", "hf_source", "load_config", "load_pretrained", "load_image_processor",
           "float32_kw", "clip_image_processor", "processor_pixels", "features", "config_image_size", "byte_tokenizer",
           "bert_byte_tokenizer", "tokenizer_for_text_config", "random_init_description", "processor_identity",
           "tokenizer_identity", "BOS", "EOS"]
