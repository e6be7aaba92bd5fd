"""The adaptation losses and memories of Tent, TCR and HAT-VTR, as plain functions on tensors.

Implemented from the papers (Wang et al. 2021, Tent; Li et al. 2025, TCR; Zhang et al., HAT-VTR §4.2-4.3, Eqs. 5-12);
where the papers leave a detail open, the settings and formulas follow the released HAT-VTR code
(``bingqingzhang/vtr_tta``, MIT licence, ``tta_model/{tent,tcr,hat_vtr}.py``): the entropy over the batch's
pseudo-positives (not the whole gallery), distances multiplied by ``t = 0.1`` (the paper's division by 10), the
uncentred frame-level cross-moment, the Reliable Memory's selection and capacity, and HSM's memory of raw score
matrices with the first batch unrefined.

Shapes: ``q`` queries B×D, or B×T×D per-frame features (videos); ``g`` their pseudo-positive gallery items, B×D or
B×T×D. Features arrive L2-normalised (per frame for frames).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F


def softmax_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Per-row entropy of softmax(logits): −Σ p log p (B)."""
    return -(logits.softmax(1) * logits.log_softmax(1)).sum(1)


def frame_mean(x: torch.Tensor) -> torch.Tensor:
    """B×T×D -> B×D mean over frames (not re-normalised, as the released code); B×D passes through."""
    return x.mean(1) if x.dim() == 3 else x


# ---- Tent -----------------------------------------------------------------------------------------------------
def tent_loss(scores: torch.Tensor, temperature: float = 0.02) -> torch.Tensor:
    """Tent (Wang et al. 2021): mean over queries of the entropy of softmax(scores / τ) over the whole gallery."""
    return softmax_entropy(scores / temperature).mean()


# ---- shared parts -------------------------------------------------------------------------------------------
def uniformity(x: torch.Tensor, t: float = 0.1) -> torch.Tensor:
    """Centre uniformity: mean_i exp(−‖x_i − x̄‖ · t) (TCR's L_UNI; HAT-VTR's L_inter, Eq. 7, with t = 1/10)."""
    return torch.exp(-torch.norm(x - x.mean(0), dim=1) * t).mean()


def multigranular_uniformity(x: torch.Tensor, t: float = 0.1) -> torch.Tensor:
    """HAT-VTR's L_MGUNI = L_inter + L_intra (Eqs. 7-8): across the batch's frame means and, for frames, within each
    video (each frame against its video's mean frame). Text (B×D): L_inter only."""
    if x.dim() == 2:
        return uniformity(x, t)
    inter = uniformity(x.mean(1), t)
    intra = torch.exp(-torch.norm(x - x.mean(1, keepdim=True), dim=2) * t).mean(1).mean()
    return inter + intra


def modality_gap(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """‖mean(normalize(a)) − mean(normalize(b))‖₂ (TCR, HAT-VTR Eq. 9)."""
    return torch.norm(F.normalize(a, dim=-1).mean(0) - F.normalize(b, dim=-1).mean(0))


def noise_robust_entropy(q: torch.Tensor, g: torch.Tensor, threshold: torch.Tensor, temperature: float = 0.02,
                         eps: float = 1e-3) -> torch.Tensor:
    """TCR's L_REM / HAT-VTR's L_NA (Eq. 11): the entropy η_i of softmax(q_i · gᵀ / τ) over the batch's B
    pseudo-positives, weighted by max(1 − η_i / (E_m + ε), 0) with E_m = ``threshold`` (the largest entropy in the
    memory), averaged over the queries with η_i ≤ E_m. No such query: 0 (the released code takes the mean of an
    empty tensor, NaN, which would poison the weights)."""
    return noise_robust_entropy_logits(frame_mean(q) @ frame_mean(g).t() / temperature, threshold, eps)


def noise_robust_entropy_logits(logits: torch.Tensor, threshold: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """L_NA (Eq. 11) on given logits: B × B for the released code's batch form (:func:`noise_robust_entropy`), or
    the scores over the whole gallery / τ (B × N_G: Eq. 3 as written, HAT-VTR's ``na_over="gallery"``)."""
    ent = softmax_entropy(logits)
    w = torch.clamp(1.0 - ent.detach() / (threshold + eps), min=0.0)
    keep = ent <= threshold
    if not bool(keep.any()):
        return ent.sum() * 0.0
    return (ent * w)[keep].mean()


def cross_modal_multigranular(video: torch.Tensor, text: torch.Tensor, mem_video: torch.Tensor,
                              mem_text: torch.Tensor) -> torch.Tensor:
    """HAT-VTR's L_MGCM = L_global + L_frame (Eqs. 9-10) as released: ``video`` B×T×D frames (T = 1 for images),
    ``text`` B×D; the memory's frame-mean video and text features (R×D).

    * L_global = (‖mean n(v̄) − mean n(t)‖ − ‖mean n(v̄_M) − mean n(t_M)‖)², v̄ = the frame mean;
    * L_frame = MSE(C_batch, C_M), C = the uncentred D×D cross-moment (1/(B·T)) Σ n(v_bf) n(t_b)ᵀ, the memory's
      with each frame-mean video repeated T times (= (1/R) Σ n(v̄_M) n(t_M)ᵀ)."""
    b, t, d = video.shape
    text_n = F.normalize(text, dim=-1)
    mv, mt = F.normalize(mem_video, dim=-1), F.normalize(mem_text, dim=-1)
    global_gap = torch.norm(F.normalize(video.mean(1), dim=-1).mean(0) - text_n.mean(0))
    mem_gap = torch.norm(mv.mean(0) - mt.mean(0))
    l_global = (global_gap - mem_gap) ** 2
    frames = F.normalize(video.reshape(b * t, d), dim=-1)
    texts = text_n.unsqueeze(1).expand(b, t, d).reshape(b * t, d)
    c_batch = frames.t() @ texts / (b * t)
    c_mem = mv.t() @ mt / mv.shape[0]
    return l_global + F.mse_loss(c_batch, c_mem)


# ---- memories -----------------------------------------------------------------------------------------------
@dataclass
class Entry:
    score: float  # TCR: its reliability indicator (lower is better); HAT-VTR: diversity (higher is better)
    query: torch.Tensor  # D (frame mean for frames)
    gallery: torch.Tensor  # D (frame mean for frames)
    entropy: torch.Tensor  # scalar
    index: int = -1  # the pseudo-positive's gallery index (-1: not given)
    correct: Optional[bool] = None  # whether it is one of the query's true items (a diagnostic; None: unknown)


@dataclass
class ReliableMemory:
    """HAT-VTR's Reliable Memory / TCR's queue of (query, pseudo-positive) pairs that supply the entropy threshold
    and the modality-gap and cross-moment targets. Updated at the first step of a batch: the ``ratio`` · B queries
    chosen by :meth:`select` are appended; once ``capacity`` is reached it keeps the ``capacity`` best."""

    capacity: int
    ratio: float = 0.3
    rule: str = "diversity"  # "diversity" (HAT-VTR: farthest from the batch centre) or "tcr" (TCR's indicator)
    temperature: float = 0.02
    entries: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entries)

    def update(self, q: torch.Tensor, g: torch.Tensor, index=None, correct=None,
               logits: Optional[torch.Tensor] = None) -> list[int]:
        """Add the batch's chosen pairs; returns the chosen batch indices. ``index`` / ``correct``: per query of
        the batch, its pseudo-positive's gallery index and whether that is a true item (kept with each entry for
        the memory's accuracy, a diagnostic; never used by the method); ``logits``: what the entropies are taken
        over (default: the B × B batch form, q · gᵀ / τ)."""
        with torch.no_grad():
            q, g = frame_mean(q).detach(), frame_mean(g).detach()
            k = int(self.ratio * q.shape[0])
            ent = softmax_entropy(q @ g.t() / self.temperature if logits is None else logits.detach())
            div_q = torch.norm(q - q.mean(0), dim=1)
            if self.rule == "tcr":  # TCR: 2·‖q − g‖ − div(q) − div(g), smallest first
                score = 2 * torch.norm(q - g, dim=1) - div_q - torch.norm(g - g.mean(0), dim=1)
                order = torch.argsort(score)[:k]
            else:  # HAT-VTR: the most diverse queries
                score = div_q
                order = torch.argsort(score, descending=True)[:k]
            for i in order.tolist():
                self.entries.append(Entry(float(score[i]), q[i].clone(), g[i].clone(), ent[i].clone(),
                                          -1 if index is None else int(index[i]),
                                          None if correct is None else bool(correct[i])))
            if len(self.entries) >= self.capacity:
                self.entries.sort(key=lambda e: e.score, reverse=self.rule != "tcr")
                del self.entries[self.capacity:]
            return order.tolist()

    def accuracy(self) -> Optional[float]:
        """The share of the kept pairs whose pseudo-positive is a true item (None when unknown or empty)."""
        known = [e.correct for e in self.entries if e.correct is not None]
        return float(sum(known) / len(known)) if known else None

    def threshold(self) -> torch.Tensor:
        return torch.stack([e.entropy for e in self.entries]).max()

    def features(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.stack([e.query for e in self.entries]), torch.stack([e.gallery for e in self.entries])


def hsm_weights(s: torch.Tensor, alpha: float = 100.0, beta: float = 10.0, m: float = 0.5) -> torch.Tensor:
    """Eq. 6 on stacked score rows S̄: m·S̄⊙softmax_col(α·S̄) + (1 − m)·S̄⊙softmax_row(β·S̄)."""
    return m * s * torch.softmax(alpha * s, dim=0) + (1 - m) * s * torch.softmax(beta * s, dim=1)


@dataclass
class HubnessMemory:
    """HAT-VTR's Hubness Suppression Memory (Eqs. 5-6) over the previous batches' raw score matrices. The current
    batch's rows are refined against memory + itself; with an empty memory they are returned as they are (the
    released code). ``keep``: how many batch matrices stay (the released max(1, ⌊0.1·N_G⌋)).

    Only the current rows of Eq. 6 are needed, and their gallery term depends on the remembered matrices only
    through each column's log-sum-exp of α·S_j, so that is what is kept: one N_G vector per batch instead of a
    B × N_G matrix (the same numbers as :func:`hsm_weights` on the stacked matrices; tested)."""

    keep: int
    alpha: float = 100.0
    beta: float = 10.0
    m: float = 0.5
    lse: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.lse)

    def refine(self, s: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            s = s.detach().float().cpu()
            if not self.lse:
                return s
            col = torch.logsumexp(torch.stack(self.lse + [torch.logsumexp(self.alpha * s, 0)]), 0)
            w_gallery = torch.exp(self.alpha * s - col)
            return self.m * s * w_gallery + (1 - self.m) * s * torch.softmax(self.beta * s, dim=1)

    def push(self, s: torch.Tensor) -> None:
        self.lse.append(torch.logsumexp(self.alpha * s.detach().float().cpu(), 0))
        if len(self.lse) > self.keep:
            del self.lse[:len(self.lse) - self.keep]


__all__ = ["softmax_entropy", "tent_loss", "uniformity", "multigranular_uniformity", "modality_gap",
           "noise_robust_entropy", "noise_robust_entropy_logits",
           "cross_modal_multigranular", "ReliableMemory", "HubnessMemory", "hsm_weights"]
