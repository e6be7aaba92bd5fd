"""Batching for every backend: images or texts in, L2-normalised float32 embeddings out.

Runs under ``torch.inference_mode``, moves each batch to the model's device and dtype (half on GPU),
and reports progress as ``progress(done, total)`` after every batch.

Batch size
----------
With no ``batch_size`` the core picks one (:func:`auto_batch_size`): the model's default
(``default_image_batch`` / ``default_text_batch``) on CPU; on CUDA the same start, grown after the first batch
when the measured peak memory per item says a larger batch fits comfortably in the free memory
(:func:`batch_for_memory`). Either way, a CUDA out-of-memory error is never fatal while the batch can shrink:
the cache is emptied, the batch halved, and the *same* items are tried again, so the result is the one the
full batch would have given. The size that worked is remembered for the model (per kind), so later calls start
there instead of running out of memory again. ``stats`` (a dict, optional) receives what happened:
``batch_size`` (the start), ``final_batch_size``, ``oom_backoffs`` and ``n``.
"""
from __future__ import annotations

import logging
import threading
import weakref
from typing import Callable, Sequence

import numpy as np
import torch

from robustlab.io.convert import to_uint8_rgb  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

# CPU: the model's default is a good batch (big enough to amortise Python overhead, small enough for the cache)
CPU_MAX_BATCH = 256
# CUDA: a grown batch never exceeds this many times the model's default, nor this absolute size
GROW_FACTOR_MAX = 4
CUDA_MAX_BATCH = 1024
# fraction of the free GPU memory a grown batch may plan to use (the rest is headroom for fragmentation)
MEMORY_HEADROOM = 0.6

_OOM_MARKERS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
                "can't allocate memory")

# batch sizes that worked after an OOM back-off, per model object and kind ("image" / "text")
_learned: "weakref.WeakKeyDictionary[object, dict[str, int]]" = weakref.WeakKeyDictionary()
_learned_lock = threading.Lock()


def is_oom(exc: BaseException) -> bool:
    """True for a CUDA (or allocator) out-of-memory error, whatever torch version raised it."""
    oom_cls = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_cls is not None and isinstance(exc, oom_cls):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in _OOM_MARKERS)


def _release_memory(device: torch.device) -> None:
    if device.type == "cuda" and torch.cuda.is_available():
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def _default_batch(model, kind: str) -> int:
    return max(1, int(getattr(model, f"default_{kind}_batch", 64)))


def learned_batch_size(model, kind: str = "image") -> int | None:
    """The batch size an earlier OOM back-off settled on for this model (None when none happened)."""
    try:
        with _learned_lock:
            return _learned.get(model, {}).get(kind)
    except TypeError:  # an unhashable / non-weakrefable model object
        return None


def _remember(model, kind: str, bs: int) -> None:
    try:
        with _learned_lock:
            _learned.setdefault(model, {})[kind] = int(bs)
    except TypeError:
        pass


def forget_batch_sizes(model) -> None:
    """Drop what the back-off learned for ``model`` (e.g. after moving it to another device)."""
    try:
        with _learned_lock:
            _learned.pop(model, None)
    except TypeError:
        pass


def auto_batch_size(model, kind: str = "image", n: int | None = None) -> int:
    """The batch size to start from: the model's default (capped on CPU), or what an OOM back-off learned."""
    bs = _default_batch(model, kind)
    if getattr(model, "device", torch.device("cpu")).type != "cuda":
        bs = min(bs, CPU_MAX_BATCH)
    learned = learned_batch_size(model, kind)
    if learned is not None:
        bs = min(bs, learned)
    if n is not None and n > 0:
        bs = min(bs, n)
    return max(1, bs)


def batch_for_memory(current: int, per_item_bytes: float, free_bytes: float, cap: int,
                     headroom: float = MEMORY_HEADROOM) -> int:
    """The batch that fits ``headroom`` of the free memory at ``per_item_bytes`` each, within [current, cap].

    Never shrinks (shrinking is the OOM back-off's job), grows in powers of two of ``current``.
    """
    if per_item_bytes <= 0 or free_bytes <= 0 or current >= cap:
        return current
    fits = int(free_bytes * headroom / per_item_bytes)
    bs = current
    while bs * 2 <= min(fits, cap):
        bs *= 2
    return bs


def _normalise(x: torch.Tensor) -> np.ndarray:
    x = x.float()
    x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return x.cpu().numpy().astype(np.float32, copy=False)


def _run_batched(model, kind: str, n: int, step: Callable[[int, int], torch.Tensor], batch_size: int | None,
                 progress, stats: dict | None) -> np.ndarray:
    """The shared loop: ``step(i, j)`` encodes items i..j-1 to raw features; OOM halves and retries."""
    explicit = batch_size is not None and int(batch_size) > 0
    bs = max(1, int(batch_size)) if explicit else auto_batch_size(model, kind, n)
    learned = learned_batch_size(model, kind)
    if learned is not None:  # an explicit size that ran out of memory before starts where the back-off ended
        bs = min(bs, learned)
    start_bs = bs
    device = getattr(model, "device", torch.device("cpu"))
    # grow once on CUDA when the size was ours to choose and nothing has had to back off yet
    may_grow = not explicit and learned is None and device.type == "cuda" and torch.cuda.is_available()
    cap = min(CUDA_MAX_BATCH, _default_batch(model, kind) * GROW_FACTOR_MAX)
    backoffs = 0
    out: list[np.ndarray] = []
    i = 0
    with torch.inference_mode():
        while i < n:
            j = min(i + bs, n)
            measure = may_grow and i == 0 and j < n
            if measure:
                torch.cuda.synchronize(device)
                base = torch.cuda.memory_allocated(device)
                torch.cuda.reset_peak_memory_stats(device)
            oom = False
            try:
                feats = _normalise(step(i, j))
            except Exception as e:  # noqa: BLE001  (only OOM is handled; everything else propagates)
                if not is_oom(e) or bs == 1:
                    raise
                oom = True
            if oom:  # outside the except block, so the traceback's tensors are already released
                _release_memory(device)
                bs = max(1, bs // 2)
                backoffs += 1
                may_grow = False
                _remember(model, kind, bs)
                log.warning("out of memory encoding %ss with %s: batch size halved to %d",
                            kind, getattr(model, "model_id", model), bs)
                continue
            out.append(feats)
            if measure:
                peak = torch.cuda.max_memory_allocated(device) - base
                free, _total = torch.cuda.mem_get_info(device)
                bs = batch_for_memory(bs, peak / max(j - i, 1), free, cap)
                may_grow = False
            i = j
            if progress:
                progress(i, n)
    if stats is not None:
        stats.update(n=n, batch_size=start_bs, final_batch_size=bs, oom_backoffs=backoffs)
    if not out:
        return np.zeros((0, int(getattr(model, "embed_dim", 0))), np.float32)
    return np.concatenate(out)


def encode_images(model, images: Sequence, batch_size: int | None = None, progress=None,
                  stats: dict | None = None) -> np.ndarray:
    """Images (H×W×3, any dtype ``to_uint8_rgb`` accepts) → N×D L2-normalised float32 embeddings."""
    images = images if isinstance(images, (list, tuple)) else list(images)

    def step(i: int, j: int) -> torch.Tensor:
        batch = [to_uint8_rgb(im) for im in images[i:j]]
        pix = model.preprocess_images(batch).to(model.device, dtype=model.dtype, non_blocking=True)
        return model._image_features(pix)

    return _run_batched(model, "image", len(images), step, batch_size, progress, stats)


def encode_texts(model, texts: Sequence[str], batch_size: int | None = None, progress=None,
                 stats: dict | None = None) -> np.ndarray:
    """Texts → N×D L2-normalised float32 embeddings."""
    texts = [str(t) for t in texts]

    def step(i: int, j: int) -> torch.Tensor:
        return model._text_features(texts[i:j])

    return _run_batched(model, "text", len(texts), step, batch_size, progress, stats)
