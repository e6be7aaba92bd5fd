"""QUAG — QUadrant AveraGe (Rawal et al., "Dissecting Multimodality in VideoQA Transformer Models by Impairing
Modality Fusion", ICML 2024; [P1] of ``../shared/research/seeds_methods.md`` §1).

Implemented from the paper (§2.2 Eq. 1, the operator R, φ and Φ; App. A.1 on padding); the authors' released code is
GPL-3.0 and is not used here.

A fusion (single-stream) transformer's post-softmax attention ``A`` (queries × keys) splits into four quadrants by the
modality of the query and of the key: **VV** (visual queries × visual keys), **VT** (visual × text), **TV** (text ×
visual), **TT**. The row-wise average-and-replace operator ``R(A, W)`` replaces each row segment of quadrant ``W`` by
its mean over the segment's *valid* (non-padding) keys; everything else is kept. So:

* every row sum is kept (mean × count = sum), a post-softmax ``A`` stays row-stochastic;
* quadrants do not overlap, so the order of several ``R`` does not matter (each reads the original ``A``);
* padding is untouched: padded key columns keep their values (0 after a masked softmax) and padded query rows are left
  as they are (the paper applies ``R`` to the padding-free sub-block);
* ``φ(A, ∅)`` returns ``A`` itself (bit-identical); ``φ`` over all four quadrants gives every valid query a row that
  is uniform over the valid keys *of each modality*, scaled by the mass the row had put on that modality (it is
  uniform over all valid keys when those masses are proportional to the modality sizes).

``Φ(M, S)`` applies ``φ(·, S)`` to every fusion layer at inference time (:func:`replace_fn` gives the hook that the
fusion models' ``forward_with_attention(replace=...)`` and batched interventions call between softmax and value
mixing); a layer range is an extra, **not in the paper**.

Token layout. :class:`TokenLayout` gives the text and visual spans of the fusion sequence and, per sample, which
positions are valid. Special tokens belong to the modality the model gives them (the paper's convention; documented
per model): ViLT-style models (tiny-vilt, hf-vilt) put the text first, and ``[CLS]`` / ``[SEP]`` are text tokens;
a ViLT image's own CLS token (``[IMG_CLS]``) is a visual token. :meth:`TokenLayout.from_model` reads the spans from a
model's per-position layout (``robustlab.models.attention.TokenLayout``).

The four short-circuits named in the paper (:data:`PRESETS`): unimodal = {VV, TT}, crossmodal = {VT, TV}, video =
{VV, TV} (the individual video *keys* ablated), text = {TT, VT}. The input-ablation baselines of Table 1 —
language-only (no video) and video-only (no text) — are a different thing and are kept apart
(:data:`INPUT_BASELINES`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence, Union

import numpy as np

QUADRANTS = ("VV", "VT", "TV", "TT")  # (query modality, key modality); V = visual (video or image), T = text

PRESETS: dict[str, frozenset] = {
    "unimodal": frozenset({"VV", "TT"}),
    "crossmodal": frozenset({"VT", "TV"}),
    "video": frozenset({"VV", "TV"}),
    "text": frozenset({"TT", "VT"}),
}
PRESET_NOTES = {
    "unimodal": "unimodal short-circuit [VV, TT]: intra-modality token mixing reduced to averages (Theorem 2.1)",
    "crossmodal": "crossmodal short-circuit [VT, TV]: attention across modalities made uniform",
    "video": "video short-circuit [VV, TV]: the individual video keys ablated (Lemma 2.2: rank ≤ l_T + 2)",
    "text": "text short-circuit [TT, VT]: the individual text keys ablated",
}
# Table 1's classical modality ablations: the model run without one input. Not QUAG (no attention is touched).
INPUT_BASELINES = {
    "language-only": "the model without its visual input (language-only)",
    "video-only": "the model without its text input (video-only)",
}

Quadrants = Union[str, Iterable[str], None]


class QuagError(ValueError):
    """A bad QUAG request (unknown quadrant or preset, a layout that does not fit the attention)."""


def quadrant_set(quadrants: Quadrants) -> frozenset:
    """Normalise a preset name (``"unimodal"``), a comma list (``"VV,TT"``) or an iterable of quadrant codes to a
    frozenset of codes; ``None`` / ``""`` / ``[]`` is the empty set. Unknown names are one clear error."""
    if quadrants is None:
        return frozenset()
    if isinstance(quadrants, str):
        q = quadrants.strip()
        if q.lower() in PRESETS:
            return PRESETS[q.lower()]
        items = [s for s in q.replace("+", ",").replace(" ", ",").split(",") if s]
    else:
        items = list(quadrants)
    out = set()
    for s in items:
        if not isinstance(s, str):
            raise QuagError(f"quadrants are strings like 'VV', not {s!r}")
        code = s.strip().upper()
        if code not in QUADRANTS:
            raise QuagError(f"unknown quadrant or preset {s!r}; quadrants: {', '.join(QUADRANTS)}; "
                            f"presets: {', '.join(PRESETS)}")
        out.add(code)
    return frozenset(out)


def preset_name(quadrants: Quadrants) -> Optional[str]:
    """The paper's name of a quadrant set, or None when it is not one of the four."""
    s = quadrant_set(quadrants)
    return next((k for k, v in PRESETS.items() if v == s), None)


def _span(v, name: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in v)
    except (TypeError, ValueError):
        raise QuagError(f"TokenLayout.{name} must be (start, stop), got {v!r}") from None
    if a < 0 or b < a:
        raise QuagError(f"TokenLayout.{name} = ({a}, {b}) is not a span (0 ≤ start ≤ stop)")
    return a, b


@dataclass(frozen=True)
class TokenLayout:
    """Where each modality sits in the fusion sequence.

    text, visual  half-open spans ``(start, stop)`` of positions (they must not overlap; the paper puts the video
                  first, ViLT-style models the text first — any order works);
    valid         which positions are real tokens: None (all), an (N,) bool array, or (B, N) for a batch with
                  per-sample padding. Positions outside both spans (if any) are never touched.
    """

    text: tuple[int, int]
    visual: tuple[int, int]
    valid: Optional[np.ndarray] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        t, v = _span(self.text, "text"), _span(self.visual, "visual")
        object.__setattr__(self, "text", t)
        object.__setattr__(self, "visual", v)
        if t[0] < v[1] and v[0] < t[1]:
            raise QuagError(f"text span {t} and visual span {v} overlap")
        if self.valid is not None:
            va = self.valid
            if not hasattr(va, "shape"):
                va = np.asarray(va)
            if va.ndim not in (1, 2):
                raise QuagError(f"TokenLayout.valid must be (N,) or (B, N), got shape {tuple(va.shape)}")
            object.__setattr__(self, "valid", va)

    @property
    def n(self) -> int:
        """The smallest sequence length the spans fit in."""
        return max(self.text[1], self.visual[1])

    @property
    def order(self) -> str:
        return "text-first" if self.text[0] < self.visual[0] else "visual-first"

    @classmethod
    def from_model(cls, layout) -> "TokenLayout":
        """From a fusion model's per-position layout (``robustlab.models.attention.TokenLayout``: ``modality``,
        ``is_pad``); special tokens go with the modality the model assigned them. Each modality must be one
        contiguous span."""
        mod = np.asarray(layout.modality)
        spans = {}
        for m in ("text", "visual"):
            idx = np.flatnonzero(mod == m)
            if idx.size and idx[-1] - idx[0] + 1 != idx.size:
                raise QuagError(f"the model's {m} tokens are not contiguous; QUAG needs one span per modality")
            spans[m] = (int(idx[0]), int(idx[-1]) + 1) if idx.size else (0, 0)
        return cls(text=spans["text"], visual=spans["visual"], valid=~np.asarray(layout.is_pad, bool))

    def masks(self, batch: int, n: int, like=None):
        """(text, visual) boolean masks of shape (B, N): in the span and valid. ``like``: a torch tensor whose
        device to use (numpy arrays when None)."""
        if self.n > n:
            raise QuagError(f"the layout spans {self.n} positions but the attention has {n}")
        pos = np.arange(n)
        t = (pos >= self.text[0]) & (pos < self.text[1])
        v = (pos >= self.visual[0]) & (pos < self.visual[1])
        va = self.valid
        if like is not None:
            import torch

            dev = like.device
            t = torch.as_tensor(t, device=dev)
            v = torch.as_tensor(v, device=dev)
            if va is None:
                va = torch.ones(n, dtype=torch.bool, device=dev)
            else:
                va = torch.as_tensor(np.asarray(va) if not torch.is_tensor(va) else va, device=dev).bool()
        else:
            va = np.ones(n, bool) if va is None else np.asarray(va, bool)
        if va.shape[-1] != n:
            raise QuagError(f"TokenLayout.valid has {va.shape[-1]} positions but the attention has {n}")
        if va.ndim == 2 and va.shape[0] not in (1, batch):
            raise QuagError(f"TokenLayout.valid is for a batch of {va.shape[0]}, the attention's is {batch}")
        va = va.reshape(-1, n)
        t, v = t[None] & va, v[None] & va
        if like is not None:
            return t.expand(batch, n), v.expand(batch, n)
        return np.broadcast_to(t, (batch, n)), np.broadcast_to(v, (batch, n))


def apply(attn, layout: TokenLayout, quadrants: Quadrants):
    """φ(A, S): the row-wise average-and-replace operator R on each quadrant of ``quadrants`` (a preset name, codes,
    or a set; see :func:`quadrant_set`).

    ``attn``: post-softmax attention, batch × heads × queries × keys (a torch tensor or a numpy array; 2-D and 3-D
    arrays are taken as one sample). Returns the same type and shape; ``S = ∅`` returns ``attn`` itself."""
    S = quadrant_set(quadrants)
    if not S:
        return attn
    import torch

    is_np = not torch.is_tensor(attn)
    a = torch.from_numpy(np.ascontiguousarray(attn)) if is_np else attn
    if a.ndim < 2 or a.ndim > 4:
        raise QuagError(f"attention must be batch × heads × queries × keys, got {a.ndim} dimensions")
    shape = a.shape
    while a.ndim < 4:
        a = a.unsqueeze(0)
    B, _, Nq, Nk = a.shape
    if Nq != Nk:
        raise QuagError(f"QUAG needs self-attention (queries = keys), got {Nq} queries × {Nk} keys")
    t, v = layout.masks(B, Nk, like=a)
    by = {"T": t, "V": v}
    out = a.clone()
    for code in sorted(S):  # each R reads the original A: the order is irrelevant (disjoint quadrants)
        rows, cols = by[code[0]], by[code[1]]  # (B, N) each
        colf = cols.to(a.dtype)[:, None, None, :]  # B × 1 × 1 × K
        n = colf.sum(-1, keepdim=True).clamp_min(1)
        mean = (a * colf).sum(-1, keepdim=True) / n  # B × H × Q × 1: the row segment's mean over valid keys
        sel = rows[:, None, :, None] & cols[:, None, None, :]  # B × 1 × Q × K
        out = torch.where(sel, mean.expand_as(a), out)
    out = out.reshape(shape)
    return out.numpy() if is_np else out


def rank_diagnostic(attn, layout: TokenLayout, shortcircuits: Sequence[str] = ("video", "text"),
                    tol: Optional[float] = None) -> dict:
    """Rawal et al.'s Lemma 2.2 on one attention matrix (N × N, post-softmax; one head or the heads' mean): the
    singular values and numerical rank of A over its valid positions, and of φ(A, S) for each short-circuit, with
    the paper's bound — video SC: ρ ≤ l_T + 2, text SC: ρ ≤ l_V + 2 (l = the valid tokens of that modality).

    ``tol``: the rank threshold (default numpy's: σ_max · N · eps). Returns ``{"baseline": {"singular_values",
    "rank"}, "<sc>": {"singular_values", "rank", "bound", "holds"}, "l_text", "l_visual"}``."""
    a = np.asarray(attn, np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise QuagError(f"the rank diagnostic takes one N × N attention matrix, got shape {a.shape}")
    t, v = layout.masks(1, a.shape[0])
    t, v = np.asarray(t[0]), np.asarray(v[0])
    keep = t | v
    l_t, l_v = int(t.sum()), int(v.sum())

    def svd(m):
        sv = np.linalg.svd(m[np.ix_(keep, keep)], compute_uv=False)
        thr = tol if tol is not None else (sv.max(initial=0.0) * max(m.shape) * np.finfo(np.float64).eps)
        return sv, int((sv > thr).sum())

    sv, r = svd(a)
    out = {"baseline": {"singular_values": sv.tolist(), "rank": r}, "l_text": l_t, "l_visual": l_v}
    for name in shortcircuits:
        sv, r = svd(np.asarray(apply(a, layout, name), np.float64))
        qs = quadrant_set(name)
        bound = l_t + 2 if qs == PRESETS["video"] else l_v + 2 if qs == PRESETS["text"] else None
        out[name] = {"singular_values": sv.tolist(), "rank": r, "bound": bound,
                     "holds": None if bound is None else r <= bound}
    return out


def replace_fn(quadrants: Quadrants, layers: Optional[Sequence[int]] = None):
    """Φ as a hook: ``replace(layer_idx, probs, model_layout) -> probs`` for a fusion model's
    ``forward_with_attention(..., replace=...)``. ``layers``: apply only there (an extra, not in the paper: the
    paper's Φ is every fusion layer). The layout argument may be a model's per-position layout or a
    :class:`TokenLayout`."""
    S = quadrant_set(quadrants)
    chosen = None if layers is None else frozenset(int(i) for i in layers)
    cache: dict = {}

    def replace(layer_idx, probs, layout):
        if not S or (chosen is not None and int(layer_idx) not in chosen):
            return probs
        if not isinstance(layout, TokenLayout):
            key = id(layout)
            if key not in cache:
                cache.clear()
                cache[key] = (layout, TokenLayout.from_model(layout))
            layout = cache[key][1]
        return apply(probs, layout, S)

    replace.quadrants = S  # type: ignore[attr-defined]
    replace.layers = chosen  # type: ignore[attr-defined]
    return replace


QUAG_ATTENTION_MODES = {"video-avg": ("visual",), "text-avg": ("text",), "text-video-avg": ("visual", "text")}
CORRECTIONS = {
    "additive": "σ(QKᵀ/√d + log S), S = how many tokens each key stands for (§2.4; proportional attention, Bolya "
                "et al. 2023): the same as giving the mean key n copies",
    "multiplicative": "the averaged key's logit multiplied by log n (the released notebook and the A.4 pseudocode)",
}


class QuagAttention:
    """QUAG-attention (§2.4): in every fusion layer the layer input of a modality is averaged over its valid tokens
    *before* the key and value projections, so the keys/values shrink to [mean(visual); text] (``video-avg``),
    [visual; mean(text)] (``text-avg``) or [mean(visual); mean(text)] (``text-video-avg``); queries stay full
    length. ``correction``: "additive" (default, the paper's formula) or "multiplicative" (the released code).

    It is an intervention like :func:`replace_fn`'s hooks (pass it as ``replace=`` or to
    ``robustlab.models.attention.intervention``); the fusion model does the work (it has to change the key/value
    projections). What a capture records is the equivalent full N × N attention: the weight on an averaged key
    spread evenly over the valid tokens it stands for (exactly what mixes the values)."""

    def __init__(self, mode: str = "video-avg", correction: str = "additive", layers: Optional[Sequence[int]] = None):
        if mode not in QUAG_ATTENTION_MODES:
            raise QuagError(f"unknown QUAG-attention mode {mode!r}; modes: {', '.join(QUAG_ATTENTION_MODES)}")
        if correction not in CORRECTIONS:
            raise QuagError(f"unknown size correction {correction!r}; corrections: {', '.join(CORRECTIONS)}")
        self.mode, self.correction = mode, correction
        self.averaged = QUAG_ATTENTION_MODES[mode]
        self.layers = None if layers is None else frozenset(int(i) for i in layers)
        self.quag_attention = self

    def applies(self, layer_idx: int) -> bool:
        return self.layers is None or int(layer_idx) in self.layers

    def __call__(self, layer_idx, probs, layout):  # the model has already done the work
        return probs

    def __repr__(self) -> str:
        return f"QuagAttention({self.mode!r}, correction={self.correction!r})"

    def keys_values(self, y, layout: "TokenLayout"):
        """The reduced key/value *inputs* of one layer: ``y`` B × N × d (the layer's normalised input) ->
        (B × L' × d tokens, B × L' effective sizes, columns) where ``columns`` lists, in order, ("token", position)
        or ("mean", span, mask) so that :meth:`expand` can map L' columns back to N."""
        import torch

        B, N, _ = y.shape
        t, v = layout.masks(B, N, like=y)
        blocks = sorted([("text", layout.text, t), ("visual", layout.visual, v)], key=lambda b: b[1][0])
        toks, sizes, cols = [], [], []
        for name, (a, b), m in blocks:
            if b <= a:
                continue
            mm = m[:, a:b].to(y.dtype)
            if name in self.averaged:
                n = mm.sum(1, keepdim=True)
                toks.append(((y[:, a:b] * mm[..., None]).sum(1) / n.clamp_min(1))[:, None])
                sizes.append(n)
                cols.append(("mean", (a, b), mm))
            else:
                toks.append(y[:, a:b])
                sizes.append(mm)
                cols.extend(("token", p) for p in range(a, b))
        return torch.cat(toks, 1), torch.cat(sizes, 1), cols

    def correct(self, scores, sizes, cols):
        """Size correction of the B × H × N × L' logits; keys of size 0 (padding, an empty block) are masked."""
        import torch

        s = sizes[:, None, None, :]
        if self.correction == "additive":
            return scores + torch.log(s)  # log 0 = -inf: padding and empty blocks get no weight
        out = scores.clone()
        j = 0
        for c in cols:  # the released code: the averaged key's logit times log(n)
            if c[0] == "mean":
                out[..., j] = out[..., j] * torch.log(s[..., j].clamp_min(1))
            j += 1
        return out.masked_fill(s == 0, float("-inf"))

    def expand(self, probs, cols, n: int):
        """B × H × N × L' attention over the reduced keys -> the equivalent B × H × N × N attention."""

        B, H, Nq, _ = probs.shape
        full = probs.new_zeros(B, H, Nq, n)
        for j, c in enumerate(cols):
            if c[0] == "token":
                full[..., c[1]] = probs[..., j]
            else:
                (a, b), mm = c[1], c[2]
                share = mm / mm.sum(1, keepdim=True).clamp_min(1)  # B × n_block
                full[..., a:b] = probs[..., j:j + 1] * share[:, None, None, :]
        return full


def multiplications(l_text: int, l_visual: int, width: int, mlp: int = 0, *, mode: str = "text-video-avg",
                    scope: str = "attention") -> dict:
    """Multiplications of one fusion layer on one sequence: standard self-attention vs QUAG-attention (``mode``:
    video, text or text-video average), counted analytically (digest §1.9 — the paper gives no formula).

    ``scope``: "core" (K/V projections, QKᵀ, A·V), "attention" (+ Q and output projections) or "layer" (+ the MLP,
    2·L·d·d_ff). Averaging overhead (one division per averaged channel) is listed apart."""
    L, d = int(l_text) + int(l_visual), int(width)
    keys = {"video-avg": int(l_text) + 1, "text-avg": int(l_visual) + 1, "text-video-avg": 2}
    if mode not in keys:
        raise QuagError(f"unknown QUAG-attention mode {mode!r}; modes: {', '.join(keys)}")
    if scope not in ("core", "attention", "layer"):
        raise QuagError(f"unknown scope {scope!r}; scopes: core, attention, layer")
    Lp = keys[mode]

    def count(nk: int) -> int:
        m = 2 * nk * d * d + 2 * L * nk * d
        if scope in ("attention", "layer"):
            m += 2 * L * d * d
        if scope == "layer":
            m += 2 * L * d * int(mlp)
        return m

    std, quag = count(L), count(Lp)
    return {"standard": std, "quag_attention": quag, "saving": (std - quag) / std, "keys": Lp, "scope": scope,
            "mode": mode, "overhead_divisions": d * (2 if mode == "text-video-avg" else 1)}


__all__ = ["rank_diagnostic", "QUADRANTS", "PRESETS", "QUAG_ATTENTION_MODES", "CORRECTIONS", "QuagAttention",
           "PRESET_NOTES", "INPUT_BASELINES", "QuagError", "TokenLayout", "apply",
           "quadrant_set", "preset_name", "replace_fn", "multiplications"]
