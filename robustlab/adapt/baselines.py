"""The losses and per-run state of the other TTA baselines HAT-VTR compares against: EATA, SAR and READ.

Implemented from the papers: EATA (Niu et al., ICML 2022, "Efficient Test-Time Model Adaptation without
Forgetting", Eqs. 3-6), SAR (Niu et al., ICLR 2023, "Towards Stable Test-Time Adaptation in Dynamic Wild World",
Eqs. 2-5 and the model recovery of §4) and READ (Yang et al., ICLR 2024, "Test-time Adaptation against Multi-modal
Reliability Bias", the confidence-aware loss L_ra and the balance term L_bal). How they are applied to retrieval
follows the HAT-VTR authors' released code (``bingqingzhang/vtr_tta``, MIT licence, ``tta_model/{eata,sar,read}.py``,
``config_tta/``; settings only, no code copied): every method updates the same LayerNorms of the query tower, and
its "class distribution" is each query's softmax over the whole gallery at τ = 0.02 (the gallery items play the
classes). All functions take the step's score matrix B × N_G (cosines) and the temperature.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from robustlab.adapt.losses import softmax_entropy


def _mean_or_zero(x: torch.Tensor, keep: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Mean of ``x[keep]``; a zero that still depends on ``like`` (so backward runs and gives zero gradients) when
    nothing is kept -- the papers' "no reliable sample, no update"."""
    return x[keep].mean() if bool(keep.any()) else like.sum() * 0.0


# ---- EATA -------------------------------------------------------------------------------------------------------
def eata_loss(scores: torch.Tensor, temperature: float, e_margin: float, d_margin: float,
              avg: Optional[torch.Tensor]) -> tuple[torch.Tensor, dict, torch.Tensor, torch.Tensor]:
    """EATA's sample-efficient entropy (Eqs. 3-6): a query enters when it is reliable (entropy E < E0 = ``e_margin``)
    and non-redundant (|cos(softmax, ``avg``)| < ``d_margin``, ``avg`` the moving average of the kept queries'
    softmax; every reliable query is non-redundant while there is none), weighted by 1/exp(E − E0) (detached).

    -> (loss: mean of the weighted entropies of the kept queries, 0 when none; parts; the kept mask; the kept
    queries' mean softmax, to update the moving average with)."""
    logits = scores / temperature
    ent = softmax_entropy(logits)
    p = logits.softmax(1)
    reliable = ent < e_margin
    keep = reliable.clone()
    if avg is not None:
        cos = torch.nn.functional.cosine_similarity(p.detach(), avg.unsqueeze(0), dim=1)
        keep &= cos.abs() < d_margin
    w = torch.exp(-(ent.detach() - e_margin))  # 1 / exp(E − E0)
    loss = _mean_or_zero(ent * w, keep, scores)
    parts = {"entropy": float(ent.detach().mean()), "reliable": int(reliable.sum()), "kept": int(keep.sum())}
    return loss, parts, keep, p.detach()[keep].mean(0) if bool(keep.any()) else None


def moving_average(avg: Optional[torch.Tensor], new: Optional[torch.Tensor], decay: float = 0.9):
    """EATA's Eq. 4: m ← decay·m + (1 − decay)·new (the first: new); no new sample: unchanged."""
    if new is None:
        return avg
    return new if avg is None else decay * avg + (1 - decay) * new


# ---- SAR --------------------------------------------------------------------------------------------------------
def reliable_entropy(scores: torch.Tensor, temperature: float, e_margin: float,
                     among: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SAR's reliable entropy (Eq. 2): the mean entropy of the queries with E < E0 (and in ``among``, the first
    pass's selection, for the second pass). -> (loss, 0 when none; the mask; the per-query entropies)."""
    ent = softmax_entropy(scores / temperature)
    keep = ent.detach() < e_margin
    if among is not None:
        keep &= among
    return _mean_or_zero(ent, keep, scores), keep, ent


def sam_perturbation(loss: torch.Tensor, weights: list, rho: float) -> list:
    """SAM's ε̂(Θ) = ρ·∇L/‖∇L‖₂ (SAR Eq. 4), added to ``weights`` in place (climb to the local maximum Θ + ε̂).
    The gradient is taken with autograd.grad, so the weights' ``.grad`` stay untouched. -> the ε̂ added (undo with
    :func:`sam_restore`); all zeros when the loss has no gradient (no reliable query)."""
    grads = torch.autograd.grad(loss, weights, allow_unused=True) if loss.requires_grad else [None] * len(weights)
    grads = [torch.zeros_like(w) if g is None else g for g, w in zip(grads, weights)]
    norm = torch.norm(torch.stack([g.norm(2) for g in grads]), 2) if grads else torch.tensor(0.0)
    scale = rho / (float(norm) + 1e-12)
    eps = [g * scale for g in grads]
    with torch.no_grad():
        for w, e in zip(weights, eps):
            w.add_(e)
    return eps


def sam_restore(weights: list, eps: list) -> None:
    """Back from Θ + ε̂ to Θ (the gradient taken there stays in ``.grad`` for the optimiser's step)."""
    with torch.no_grad():
        for w, e in zip(weights, eps):
            w.sub_(e)


def ema(value: Optional[float], new: float, decay: float = 0.9) -> float:
    """SAR's moving average of the second pass's loss (its model-recovery signal)."""
    return new if value is None else decay * value + (1 - decay) * new


# ---- READ -------------------------------------------------------------------------------------------------------
def read_loss(scores: torch.Tensor, temperature: float, gamma: float = math.exp(-1),
              balance: float = 0.0) -> tuple[torch.Tensor, dict]:
    """READ's confidence-aware loss L_ra = (1/B) Σ_i p_i log(e·γ / p_i), p_i the largest probability of query i's
    softmax over the gallery (γ = e⁻¹: −p log p): its gradient −log(p/γ) makes queries above γ more confident and
    pushes the noisy ones below γ down instead of fitting them; minus ``balance`` × L_bal, the entropy of the
    batch's mean softmax (READ's balance term against collapse onto few classes -- here few gallery items).
    -> (loss, parts)."""
    p = (scores / temperature).softmax(1)
    pm = p.max(1).values
    ra = (pm * (1.0 + math.log(gamma) - torch.log(pm.clamp_min(1e-12)))).mean()
    parts = {"ra": float(ra.detach()), "confident": int((pm.detach() > gamma).sum())}
    if balance:
        pbar = p.mean(0)
        bal = -(pbar * torch.log(pbar.clamp_min(1e-12))).sum()
        parts["bal"] = float(bal.detach())
        return ra - balance * bal, parts
    return ra, parts


__all__ = ["eata_loss", "moving_average", "reliable_entropy", "sam_perturbation", "sam_restore", "ema",
           "read_loss"]
