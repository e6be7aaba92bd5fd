"""Attention capture and replacement for fusion (single-stream) transformers.

:class:`AttentionCapture` holds, for one input, every layer's post-softmax attention (``L × H × N × N`` float32
numpy, rows = queries, columns = keys) together with the :class:`TokenLayout` that says what each of the ``N``
positions is: text or visual, which frame and patch a visual token comes from, padding, and special tokens
(``[CLS]``, ``[SEP]``, the image CLS of each frame).

Replacement (QUAG and friends) is a callable ``replace(layer_idx, probs, layout) -> probs`` called inside every
self-attention layer after the softmax, before the values are mixed. ``probs`` is a torch tensor
``B × H × N × N`` on the model's device; return a tensor of the same shape (or ``None`` to keep ``probs``).
What is captured is what the layer actually used, i.e. the replaced probabilities.

:func:`patched_forwards` is the generic mechanism: it swaps ``forward`` on given module instances (never on the
class, so other models are untouched) and restores them on exit, even on error.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np
import torch

ReplaceFn = Callable[[int, torch.Tensor, "TokenLayout"], Optional[torch.Tensor]]

TEXT, VISUAL = "text", "visual"


@dataclass
class TokenLayout:
    """What each of the N sequence positions is.

    modality[i]  "text" or "visual"
    special[i]   "" for an ordinary token, else its name: "[CLS]", "[SEP]", "[IMG_CLS]", ...
    is_pad[i]    padding (masked out as a key)
    frame[i]     the frame a visual token belongs to (0 for a single image), -1 for text
    patch[i]     (row, col) of a visual patch token in its frame's patch grid, (-1, -1) otherwise
    tokens[i]    a readable label: the text token, "[IMG_CLS]", "f0 p(2,3)", "[PAD]" ...
    """

    modality: np.ndarray
    special: np.ndarray
    is_pad: np.ndarray
    frame: np.ndarray
    patch: np.ndarray
    tokens: list[str] = field(default_factory=list)
    grid: tuple[int, int] = (0, 0)  # patch grid (rows, cols) of one frame
    n_frames: int = 0

    def __post_init__(self) -> None:
        n = len(self.modality)
        for name in ("special", "is_pad", "frame", "patch"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"layout field {name} has {len(getattr(self, name))} entries, expected {n}")

    def __len__(self) -> int:
        return len(self.modality)

    @property
    def is_text(self) -> np.ndarray:
        return self.modality == TEXT

    @property
    def is_visual(self) -> np.ndarray:
        return self.modality == VISUAL

    @property
    def is_special(self) -> np.ndarray:
        return self.special != ""

    @property
    def is_patch(self) -> np.ndarray:
        return self.is_visual & ~self.is_special & ~self.is_pad

    def indices(self, modality: str | None = None, *, content_only: bool = False,
                frame: int | None = None) -> np.ndarray:
        """Positions of a modality (all when None); ``content_only`` drops padding and special tokens."""
        m = np.ones(len(self), bool) if modality is None else (self.modality == modality)
        if content_only:
            m &= ~self.is_pad & ~self.is_special
        if frame is not None:
            m &= self.frame == frame
        return np.flatnonzero(m)

    @property
    def text_idx(self) -> np.ndarray:
        return self.indices(TEXT)

    @property
    def visual_idx(self) -> np.ndarray:
        return self.indices(VISUAL)

    @property
    def pad_idx(self) -> np.ndarray:
        return np.flatnonzero(self.is_pad)

    def special_idx(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.special == name)

    def masks(self, device=None) -> dict[str, torch.Tensor]:
        """Boolean torch masks (N,) by kind, handy inside a ``replace`` callable."""
        out = {"text": self.is_text, "visual": self.is_visual, "pad": self.is_pad, "special": self.is_special,
               "patch": self.is_patch}
        return {k: torch.as_tensor(v, device=device) for k, v in out.items()}


@dataclass
class AttentionCapture:
    """Post-softmax attention of every layer and head for one input, with its token layout and the outputs."""

    attentions: np.ndarray  # L × H × N × N float32
    layout: TokenLayout
    outputs: dict[str, Any] = field(default_factory=dict)  # e.g. {"logits": np.ndarray, "itm_score": float}
    replaced: bool = False
    model_id: str = ""

    def __post_init__(self) -> None:
        a = self.attentions
        if a.ndim != 4 or a.shape[2] != a.shape[3] or a.shape[2] != len(self.layout):
            raise ValueError(f"attentions must be L×H×N×N with N={len(self.layout)}, got {a.shape}")

    @property
    def n_layers(self) -> int:
        return int(self.attentions.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.attentions.shape[1])

    @property
    def n_tokens(self) -> int:
        return int(self.attentions.shape[2])

    def block(self, layer: int, head: int | None, query: str, key: str, content_only: bool = True) -> np.ndarray:
        """The (query-modality × key-modality) block of a layer's attention (head-averaged when head is None)."""
        a = self.attentions[layer]
        a = a.mean(0) if head is None else a[head]
        qi = self.layout.indices(query, content_only=content_only)
        ki = self.layout.indices(key, content_only=content_only)
        return a[np.ix_(qi, ki)]

    def mass(self, query: str, key: str) -> np.ndarray:
        """L × H: attention mass that ``query`` tokens (content) put on ``key`` tokens (all of that modality)."""
        qi = self.layout.indices(query, content_only=True)
        ki = self.layout.indices(key)
        if len(qi) == 0:
            return np.zeros(self.attentions.shape[:2], np.float32)
        return self.attentions[:, :, qi][:, :, :, ki].sum(-1).mean(-1)


# ---- replacement helpers -------------------------------------------------------------------------------

def identity(layer_idx: int, probs: torch.Tensor, layout: TokenLayout) -> torch.Tensor:
    return probs


def uniform(layer_idx: int, probs: torch.Tensor, layout: TokenLayout) -> torch.Tensor:
    """Every query attends uniformly over the non-padding keys."""
    keep = (~torch.as_tensor(layout.is_pad, device=probs.device)).to(probs.dtype)
    row = keep / keep.sum().clamp_min(1)
    return row.expand_as(probs).clone()


def only_layers(layers: Sequence[int], fn: ReplaceFn) -> ReplaceFn:
    """Apply ``fn`` in the given layers only."""
    chosen = set(int(i) for i in layers)

    def wrapped(layer_idx, probs, layout):
        return fn(layer_idx, probs, layout) if layer_idx in chosen else probs

    return wrapped


def apply_replace(replace: Optional[ReplaceFn], layer_idx: int, probs: torch.Tensor,
                  layout: Optional[TokenLayout]) -> torch.Tensor:
    """Call ``replace`` and check its result (same shape; None keeps ``probs``)."""
    if replace is None:
        return probs
    out = replace(layer_idx, probs, layout)
    if out is None:
        return probs
    if not torch.is_tensor(out):
        out = torch.as_tensor(np.asarray(out), device=probs.device)
    if tuple(out.shape) != tuple(probs.shape):
        raise ValueError(f"replace returned shape {tuple(out.shape)} for layer {layer_idx}, "
                         f"expected {tuple(probs.shape)}")
    return out.to(device=probs.device, dtype=probs.dtype)


class AttentionRecorder:
    """Collects each layer's (possibly replaced) probabilities during one forward."""

    records = True  # a model doing QUAG-attention hands it the equivalent N × N attention to record

    def __init__(self, n_layers: int, replace: Optional[ReplaceFn] = None, layout: Optional[TokenLayout] = None):
        self.n_layers = n_layers
        self.replace = replace
        self.layout = layout
        self.probs: list[Optional[torch.Tensor]] = [None] * n_layers

    def __call__(self, layer_idx: int, probs: torch.Tensor) -> torch.Tensor:
        probs = apply_replace(self.replace, layer_idx, probs, self.layout)
        self.probs[layer_idx] = probs.detach()
        return probs

    def stacked(self, batch_index: int = 0) -> np.ndarray:
        missing = [i for i, p in enumerate(self.probs) if p is None]
        if missing:
            raise RuntimeError(f"no attention recorded for layers {missing}")
        return torch.stack([p[batch_index] for p in self.probs]).float().cpu().numpy()


@contextlib.contextmanager
def patched_forwards(patches: Sequence[tuple[torch.nn.Module, Callable]]) -> Iterator[None]:
    """Set ``module.forward = fn`` on each instance for the duration; restore exactly what was there before."""
    saved = []
    try:
        for module, fn in patches:
            saved.append((module, "forward" in module.__dict__, module.__dict__.get("forward")))
            module.forward = fn
        yield
    finally:
        for module, had, old in reversed(saved):
            if had:
                module.forward = old
            else:
                module.__dict__.pop("forward", None)


class BatchHook:
    """``hook(layer_idx, probs)`` for a batched forward: calls ``replace`` with the batch's layout (a
    :class:`robustlab.diagnostics.quag.TokenLayout` with per-sample valid masks)."""

    records = False

    def __init__(self, replace: ReplaceFn, layout):
        self.replace, self.layout = replace, layout

    def __call__(self, layer_idx: int, probs: torch.Tensor) -> torch.Tensor:
        return apply_replace(self.replace, layer_idx, probs, self.layout)


# ---- interventions scoped to the caller ------------------------------------------------------------------
# The dashboard serves many sessions (threads) from one cached model, so an ablation must never be a property of the
# model: it lives in a context variable, which each thread sees on its own (a new thread starts with none).
_INTERVENTION: contextvars.ContextVar = contextvars.ContextVar("robustlab_attention_intervention", default=None)
_LAYER_HOOK: contextvars.ContextVar = contextvars.ContextVar("robustlab_attention_layer_hook", default=None)


@contextlib.contextmanager
def intervention(replace: Optional[ReplaceFn]) -> Iterator[None]:
    """Within the block, every fusion forward of *this thread* (this context) calls ``replace(layer_idx, probs,
    layout)`` after each layer's softmax — VQA, ITM, grounding and batched evaluation alike. Other threads, e.g.
    other dashboard sessions sharing the model, are not affected; blocks nest (the innermost wins); ``None`` turns
    an outer intervention off. Batched forwards pass a :class:`robustlab.diagnostics.quag.TokenLayout` (spans and
    per-sample valid masks) as ``layout``; single forwards (``forward_with_attention``) pass the model's
    per-position layout."""
    token = _INTERVENTION.set(replace)
    try:
        yield
    finally:
        _INTERVENTION.reset(token)


def current_intervention() -> Optional[ReplaceFn]:
    """The ``replace`` of the innermost :func:`intervention` block of this context, or None."""
    return _INTERVENTION.get()


@contextlib.contextmanager
def layer_hook(hook: Optional[Callable]) -> Iterator[None]:
    """For models whose attention modules dispatch through :func:`dispatching_forward`: ``hook(layer_idx, probs)``
    for the forwards of this context."""
    token = _LAYER_HOOK.set(hook)
    try:
        yield
    finally:
        _LAYER_HOOK.reset(token)


def dispatching_forward(original: Callable, hooked: Callable[[Callable], Callable]) -> Callable:
    """A module ``forward`` installed once for good: it runs ``original`` unless this context has a
    :func:`layer_hook`, and then ``hooked(hook)`` — the explicit-math forward with the hook between softmax and
    value mixing. Installing per call instead would leak one session's hook into another's concurrent forward."""

    def forward(*args, **kwargs):
        hook = _LAYER_HOOK.get()
        if hook is None:
            return original(*args, **kwargs)
        return hooked(hook)(*args, **kwargs)

    forward.robustlab_dispatch = True  # type: ignore[attr-defined]
    return forward


__all__ = ["AttentionCapture", "TokenLayout", "ReplaceFn", "AttentionRecorder", "patched_forwards",
           "apply_replace", "identity", "uniform", "only_layers", "TEXT", "VISUAL", "intervention",
           "current_intervention", "layer_hook", "dispatching_forward", "BatchHook"]
