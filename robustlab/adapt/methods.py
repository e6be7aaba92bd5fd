"""The test-time adaptation methods: a registry of small parts over one loop (:mod:`robustlab.adapt.loop`).

Each method turns one step's query features and scores into a loss (and, for HAT-VTR, chooses the pseudo-positives
and refines the output scores). Defaults are the papers' where they state them and otherwise the released HAT-VTR
configs (``bingqingzhang/vtr_tta``, MIT licence, ``config_tta/msrvtt/{v2t,t2v}/clip4clip_{tent,tcr,vtr,read,sar,
eata}.json``): batch 16, 3 steps per batch, AdamW with weight decay 1e-4, τ = 0.02, t = 0.1, con_ratio 0.3; lr 3e-5
for Tent, READ and SAR, 3e-4 for TCR and EATA, and for HAT-VTR 3e-4 on visual queries (v2t) and 3e-5 on text queries
(t2v); the Reliable Memory holds 100 pairs for text queries (the t2v config's ``max_queue_size``) and a batch's
worth, 16, for visual queries (the v2t config sets none and the code falls back to the batch size; the paper's App.
C.1 says 16). READ, SAR and EATA: :mod:`robustlab.adapt.baselines`.
"""
from __future__ import annotations

import fnmatch
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
import torch.nn.functional as F

from robustlab.adapt import baselines as B
from robustlab.adapt import losses as L
from robustlab.adapt.towers import AdaptError
from robustlab.io.params import BoundedParam as Param
from robustlab.io.params import Method as BaseMethod
from robustlab.io.params import ParamError

COMMON = (
    Param("batch_size", 16, "int", "queries per online batch (B)", 1, 4096),
    Param("steps", 3, "int", "gradient steps per batch (the released tta_steps)", 1, 100),
    Param("lr", None, "float", "AdamW learning rate (default: the released config's for this method and direction)",
          0.0, 1.0),  # 0 allowed: HAT-VTR at lr 0 is HSM's reranking alone (an ablation)
    Param("weight_decay", 1e-4, "float", "AdamW weight decay", 0.0, 1.0),
    Param("temperature", 0.02, "float", "τ of the softmax over scores", 1e-6, 10.0),
    Param("order", "dataset", "choice", "query stream order: the dataset's, or shuffled with the seed",
          choices=("dataset", "shuffled")),
    Param("seed", 0, "int", "seed of the shuffled order (the loop itself draws nothing at random)", 0, 2**31 - 1),
)


@dataclass(frozen=True)
class Method(BaseMethod):
    """An adaptation method: ``adapts`` (False: the baseline, nothing adapted), ``diagnostic`` (uses the ground
    truth: shown apart, never in a sweep's "all"); every adapting method also takes the COMMON parameters."""
    adapts: bool = True
    diagnostic: bool = False

    def all_params(self) -> tuple:
        return (COMMON if self.adapts else ()) + self.params

    def flags(self) -> dict:
        return {"adapts": self.adapts, "diagnostic": self.diagnostic}


def _e_margin(paper: str, note: str = "") -> Param:
    """E0, the entropy below which SAR and EATA call a query reliable; its default (None) is set by :func:`resolve`."""
    return Param("e_margin", None, "float", f"E0 in nats (default: {paper}'s 0.4·ln C with the gallery's N_G items as "
                                            f"the C classes{note})", 0.0, 100.0)


METHODS: dict[str, Method] = {
    "none": Method("none", "No adaptation", "—", "The shifted queries through the unadapted model (the baseline).",
                   adapts=False),
    "tent": Method(
        "tent", "Tent", "Wang et al. 2021, ICLR (arXiv:2006.10726)",
        "Minimises the entropy of each query's softmax over the whole gallery.", ()),
    "tcr": Method(
        "tcr", "TCR", "Li et al. 2025, ICLR (test-time adaptation for cross-modal retrieval with query shift)",
        "Noise-robust entropy over the batch's nearest gallery items, query uniformity and a modality gap held "
        "to that of a queue of reliable pairs (a batch's worth, filled during the first 10 batches).",
        (Param("t", 0.1, "float", "uniformity scale t (distances × t)", 0.0, 100.0),
         Param("ratio", 0.3, "float", "share of each batch offered to the queue (con_ratio)", 0.0, 1.0),
         Param("capacity", None, "int", "queue size (default: the batch size)", 1, 100000),
         Param("update_batches", 10, "int", "the queue is updated during the first N batches only", 1, 10**9))),
    "hat-vtr": Method(
        "hat-vtr", "HAT-VTR", "Zhang et al., HAT-VTR §4.2-4.3 (hubness-aware test-time adaptation)",
        "Pseudo-positives chosen through the Hubness Suppression Memory; the Reliable Memory's most diverse pairs "
        "set the entropy threshold and the cross-modal targets; multi-granular uniformity (across queries and "
        "within each video's frames) and cross-modal losses (modality gap and frame-level cross-moment); the "
        "output scores reranked by HSM.",
        (Param("t", 0.1, "float", "uniformity scale t (distances × t; the paper's t = 10 as a divisor)", 0.0, 100.0),
         Param("ratio", 0.3, "float", "share of each batch added to the Reliable Memory (con_ratio)", 0.0, 1.0),
         Param("capacity", None, "int", "Reliable Memory size (default: 100 for text queries, as the released t2v "
                                        "config; the batch size for visual queries, as its v2t config)", 1, 100000),
         Param("alpha", 100.0, "float", "HSM α: softmax over remembered queries (gallery term)", 0.0, 10000.0),
         Param("beta", 10.0, "float", "HSM β: softmax over the gallery (query term)", 0.0, 10000.0),
         Param("m", 0.5, "float", "HSM mix of the gallery term", 0.0, 1.0),
         Param("memory", None, "int", "HSM: batch matrices remembered (default: the released max(1, ⌊0.1·N_G⌋))",
               1, 10**9),
         Param("select", True, "bool", "choose pseudo-positives through HSM (Table 6's target selection)"),
         Param("rerank", True, "bool", "rerank the output scores with HSM (Table 6's posterior reranking)"),
         Param("na_over", "batch", "choice", "L_NA's softmax: over the batch's B pseudo-positives (the released "
                                             "code, which made the paper's tables) or the whole gallery (Eq. 3 "
                                             "as written); the Reliable Memory's entropies follow",
               choices=("batch", "gallery")))),
    "read": Method(
        "read", "READ", "Yang et al. 2024, ICLR (test-time adaptation against multi-modal reliability bias)",
        "Confidence-aware loss over each query's softmax over the gallery: confident queries (top probability above "
        "γ) are made more confident, the noisy ones are pushed down instead of fitted. READ's reliability-aware "
        "fusion adapts a fusion transformer's attention, which a dual-encoder retrieval model does not have: as in "
        "the HAT-VTR authors' code, the query tower's LayerNorms adapt instead. Its balance term is off by default "
        "(that code's setting; READ's own is 1).",
        (Param("gamma", 0.36787944117144233, "float", "γ: the confidence above which a query is sharpened "
                                                      "(READ: e⁻¹)", 1e-6, 1.0),
         Param("balance", 0.0, "float", "weight of READ's balance term (entropy of the batch's mean softmax, "
                                        "subtracted); 0: off, as the HAT-VTR authors' code", 0.0, 100.0))),
    "sar": Method(
        "sar", "SAR", "Niu et al. 2023, ICLR (sharpness-aware and reliable entropy minimisation)",
        "Reliable entropy (queries with entropy below E0) minimised with sharpness-aware minimisation: two forward "
        "and backward passes per step, the gradient taken at the weights perturbed by ρ along the first gradient; "
        "model recovery (the adapted LayerNorms and the optimiser reset when the moving average of the loss "
        "collapses below reset_em) is off by default: see reset_em.",
        (_e_margin("SAR"),
         Param("rho", 0.05, "float", "SAM's neighbourhood radius ρ", 0.0, 10.0),
         Param("reset_em", 0.0, "float", "model recovery: reset when the loss's moving average (0.9) falls below "
                                         "this. SAR's 0.2 resets almost at once here (the unadapted loss over "
                                         "the gallery at τ = 0.02 is already near or below it); default 0: off, "
                                         "as the HAT-VTR authors' code",
               0.0, 100.0))),
    "eata": Method(
        "eata", "EATA", "Niu et al. 2022, ICML (efficient test-time model adaptation without forgetting)",
        "Entropy minimised on reliable queries (entropy below E0) that are not redundant (the cosine of their "
        "softmax to the moving average of the queries kept so far below d_margin), each weighted by 1/exp(E − E0). "
        "No Fisher anti-forgetting term: it needs in-distribution samples the query stream does not have (the "
        "HAT-VTR authors' code passes none).",
        (_e_margin("EATA", "; the HAT-VTR authors' code uses 0.40"),
         Param("d_margin", 0.05, "float", "ε: a query whose softmax has |cosine| ≥ ε to the moving average is "
                                          "redundant", 0.0, 1.0))),
    "oracle": Method(
        "oracle", "Supervised LayerNorm ceiling (diagnostic)", "robustlab (not in the papers)",
        "Not test-time adaptation: the same LayerNorms trained online with the ground truth (cross-entropy to each "
        "query's true gallery item). How far updating only these parameters could go on this shift; a method "
        "that stays near it has used what the LayerNorms can give.", (), diagnostic=True),
}

LR = {("oracle", "text"): 3e-4, ("oracle", "visual"): 3e-4, ("tent", "text"): 3e-5, ("tent", "visual"): 3e-5,
      ("tcr", "text"): 3e-4, ("tcr", "visual"): 3e-4,
      ("hat-vtr", "text"): 3e-5, ("hat-vtr", "visual"): 3e-4,
      ("read", "text"): 3e-5, ("read", "visual"): 3e-5, ("sar", "text"): 3e-5, ("sar", "visual"): 3e-5,
      ("eata", "text"): 3e-4, ("eata", "visual"): 3e-4}


def list_methods(pattern: str | None = None) -> list[dict]:
    """Every method: name, label, source, description, params with defaults (None: chosen by direction).
    ``pattern``: only the methods whose name matches this wildcard (fnmatch, case-insensitive, as ``list_models``)."""
    return [m.to_dict() for name, m in METHODS.items()
            if not pattern or fnmatch.fnmatchcase(name.lower(), pattern.lower())]


def sweep_methods() -> list[Method]:
    """The methods ``--adapt all`` adds to a sweep (and the Benchmark page offers): every method that adapts, the
    diagnostic ones (the oracle) left out, in registry order."""
    return [m for m in METHODS.values() if m.adapts and not m.diagnostic]


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise AdaptError(f"unknown adaptation method {name!r}; methods: {', '.join(METHODS)}")
    return METHODS[name]


def check_params(method: str, params: dict) -> dict:
    """``params`` checked against ``method``'s declarations, before any work: known names, types, finite values
    within each declared range. -> the values converted (3.0 -> 3 for an int, "3e-4" -> 0.0003; None: the
    default, kept). AdaptError (a ValueError, one line) otherwise: ``"tent: steps must be an integer in [1, 100],
    got inf (not a finite number)"``."""
    m = get_method(method)
    known = {p.name: p for p in m.all_params()}
    bad = sorted(set(params) - set(known), key=str)
    if bad:
        raise AdaptError(f"{method} has no parameter {', '.join(map(str, bad))}; its parameters: "
                         f"{', '.join(known) or 'none'}")
    out = {}
    for k, v in params.items():
        try:
            out[k] = None if v is None else known[k].check(v, f"{method}: {k}")
        except ParamError as e:
            raise AdaptError(str(e)) from None
    return out


def resolve(method: str, side: str, n_gallery: int, params: dict) -> dict:
    """The method's full parameter set for a query ``side`` and gallery size, checked (one-line errors; see
    :func:`check_params`)."""
    m = get_method(method)
    out = m.defaults()
    out.update({k: v for k, v in check_params(method, params).items() if v is not None})
    if m.adapts and out.get("lr") is None:
        out["lr"] = LR[(method, side)]
    if "capacity" in out and out["capacity"] is None:
        out["capacity"] = 100 if (method == "hat-vtr" and side == "text") else int(out["batch_size"])
    if "e_margin" in out and out["e_margin"] is None:  # EATA's and SAR's E0 = 0.4·ln C, the gallery's items as C
        out["e_margin"] = 0.4 * math.log(max(2, n_gallery))
    if "memory" in out and out["memory"] is None:
        out["memory"] = max(1, int(0.1 * n_gallery))
    return out


# ---- the per-run state of each method ----------------------------------------------------------------------
@dataclass
class StepOut:
    loss: torch.Tensor
    parts: dict = field(default_factory=dict)


class Runner:
    """One method's state over one run (memories), reset by making a new one."""

    def __init__(self, method: str, params: dict, gallery: torch.Tensor, gallery_frames: Optional[torch.Tensor],
                 query_side: str, sync: Optional[Callable[[], None]] = None, weights: Optional[list] = None):
        self.method, self.p, self.side = method, params, query_side
        self.weights = list(weights or ())  # the adapted parameters (SAR perturbs and resets them)
        # seconds in HSM (target selection and output reranking) and in the Reliable Memory's update (HAT-VTR
        # §5.5's breakdown); ``sync`` waits for the device before each clock reading (CUDA runs asynchronously)
        self.timer = {"hsm": 0.0, "memory": 0.0}
        self.sync = sync or (lambda: None)
        self.memory_log: list[dict] = []  # per batch: the Reliable Memory's accuracy (a diagnostic, ground truth)
        self.gallery = gallery  # N_G × D, normalised
        self.gallery_frames = gallery_frames  # N_G × T × D (text queries, HAT-VTR) or None
        if method == "tcr":
            self.rm = L.ReliableMemory(int(params["capacity"]), params["ratio"], "tcr", params["temperature"])
        elif method == "hat-vtr":
            self.rm = L.ReliableMemory(int(params["capacity"]), params["ratio"], "diversity", params["temperature"])
            self.hsm = L.HubnessMemory(int(params["memory"]), params["alpha"], params["beta"], params["m"])
        self.rm_sizes: list[int] = []
        self.avg = None  # EATA: moving average of the kept queries' softmax
        self.ema, self.eps, self.resets = None, None, 0  # SAR: the loss's moving average, SAM's ε̂, resets so far
        if method == "sar":
            self.initial = [w.detach().clone() for w in self.weights]

    def _clock(self, key: str, t0: float) -> float:
        self.sync()
        t = time.perf_counter()
        self.timer[key] += t - t0
        return t

    def _update_memory(self, q, g, idx: torch.Tensor, truth, batch: int, logits=None) -> None:
        """The Reliable Memory's update at a batch's first step, and its log: the accuracy of the batch's
        pseudo-positives, of the pairs added and of all the pairs kept (``truth``: the true gallery items per
        query; used only for this record)."""
        self.sync()
        t0 = time.perf_counter()
        ids = idx.tolist()
        correct = None if truth is None else [int(i) in set(t) for i, t in zip(ids, truth)]
        added = self.rm.update(q, g, ids, correct, logits) if (self.method != "tcr" or batch < int(
            self.p["update_batches"])) else []
        self._clock("memory", t0)
        if correct is not None:
            self.memory_log.append({
                "batch": batch, "size": len(self.rm), "added": len(added),
                "batch_accuracy": float(sum(correct) / max(1, len(correct))),
                "added_accuracy": float(sum(correct[i] for i in added) / len(added)) if added else None,
                "accuracy": self.rm.accuracy()})

    def step(self, q: torch.Tensor, scores: torch.Tensor, step: int, batch: int,
             targets: Optional[torch.Tensor] = None, truth: Optional[list] = None,
             again: Optional[Callable[[], tuple]] = None) -> StepOut:
        """The loss of one step from the batch's features ``q`` (B×D or B×T×D) and scores (B×N_G); ``targets``:
        the true gallery index per query (the oracle only); ``truth``: per query, its true gallery items (the
        Reliable Memory's accuracy log only; no method sees it); ``again()``: the same batch's forward once more
        -> (features, scores) (SAR's second pass, at the perturbed weights)."""
        tau = self.p["temperature"]
        if self.method in ("read", "sar", "eata"):
            return self._baseline_step(scores, step, again)
        if self.method == "oracle":
            loss = F.cross_entropy(scores / tau, targets)
            return StepOut(loss, {"ce": float(loss.detach())})
        if self.method == "tent":
            loss = L.tent_loss(scores, tau)
            return StepOut(loss, {"entropy": float(loss.detach())})
        if self.method == "tcr":
            qg = L.frame_mean(q)
            idx = scores.detach().argmax(1)
            g = self.gallery[idx]
            if step == 0:
                self._update_memory(qg, g, idx, truth, batch)
            mq, mg = self.rm.features()
            rem = L.noise_robust_entropy(qg, g, self.rm.threshold(), tau)
            uni = L.uniformity(qg, self.p["t"])
            emg = (L.modality_gap(qg, g) - L.modality_gap(mq, mg)) ** 2
            return StepOut(rem + uni + emg, {"rem": float(rem.detach()), "uni": float(uni.detach()),
                                             "emg": float(emg.detach())})
        # HAT-VTR
        s = scores.detach()
        self.sync()
        t0 = time.perf_counter()
        idx = (self.hsm.refine(s) if self.p["select"] else s.cpu()).argmax(1).to(s.device)
        self._clock("hsm", t0)
        full = self.p.get("na_over") == "gallery"  # Eq. 3: the softmax over the whole gallery
        if self.side == "text":
            text = q
            g = self.gallery_frames[idx] if self.gallery_frames is not None else self.gallery[idx].unsqueeze(1)
            video = g
        else:
            text, g = self.gallery[idx], self.gallery[idx]
            video = q if q.dim() == 3 else q.unsqueeze(1)
        if step == 0:
            self._update_memory(q, g, idx, truth, batch, scores / tau if full else None)
        mq, mg = self.rm.features()
        mem_video, mem_text = (mg, mq) if self.side == "text" else (mq, mg)
        na = L.noise_robust_entropy_logits(scores / tau, self.rm.threshold()) if full \
            else L.noise_robust_entropy(q, g, self.rm.threshold(), tau)
        uni = L.multigranular_uniformity(q, self.p["t"])
        cm = L.cross_modal_multigranular(video, text, mem_video, mem_text)
        return StepOut(na + uni + cm, {"na": float(na.detach()), "mguni": float(uni.detach()),
                                       "mgcm": float(cm.detach())})

    def _baseline_step(self, scores: torch.Tensor, step: int, again) -> StepOut:
        tau, p = self.p["temperature"], self.p
        if self.method == "read":
            loss, parts = B.read_loss(scores, tau, p["gamma"], p["balance"])
            return StepOut(loss, parts)
        if self.method == "eata":
            loss, parts, _, kept_mean = B.eata_loss(scores, tau, p["e_margin"], p["d_margin"], self.avg)
            if step == 0:  # each batch enters the moving average once (the paper's one update per batch)
                self.avg = B.moving_average(self.avg, kept_mean)
            return StepOut(loss, parts)
        # SAR: the first pass's reliable entropy gives ε̂; the loss returned is the second pass's, at Θ + ε̂, on the
        # queries reliable in both; :meth:`before_update` goes back to Θ before the optimiser's step
        first, keep, ent = B.reliable_entropy(scores, tau, p["e_margin"])
        self.eps = B.sam_perturbation(first, self.weights, p["rho"])
        _, s2 = again()
        second, keep2, _ = B.reliable_entropy(s2, tau, p["e_margin"], among=keep)
        if bool(keep2.any()):
            self.ema = B.ema(self.ema, float(second.detach()))
        return StepOut(second, {"entropy": float(ent.detach().mean()), "first": float(first.detach()),
                                "reliable": int(keep.sum()), "reliable_second": int(keep2.sum())})

    def before_update(self) -> None:
        """After backward, before the optimiser's step: SAR goes back from Θ + ε̂ to Θ."""
        if self.eps is not None:
            B.sam_restore(self.weights, self.eps)
            self.eps = None

    def after_update(self, opt, out: StepOut) -> None:
        """After the optimiser's step: SAR's model recovery -- the adapted weights back to their initial values and
        the optimiser's state cleared when the loss's moving average has collapsed (``out.parts["reset"]``)."""
        if self.method != "sar":
            return
        out.parts["reset"] = 0
        if self.ema is not None and self.ema < self.p["reset_em"]:
            with torch.no_grad():
                for w, w0 in zip(self.weights, self.initial):
                    w.copy_(w0)
            opt.state.clear()
            self.ema, self.resets, out.parts["reset"] = None, self.resets + 1, 1

    def output(self, scores: torch.Tensor) -> torch.Tensor:
        """The batch's final scores (from the last step's forward): HSM-refined for HAT-VTR, as they are else."""
        s = scores.detach().float().cpu()
        if self.method != "hat-vtr":
            return s
        t0 = time.perf_counter()
        out = self.hsm.refine(s) if self.p["rerank"] else s
        self.hsm.push(s)
        self._clock("hsm", t0)
        return out


__all__ = ["METHODS", "Method", "Param", "Runner", "check_params", "get_method", "list_methods", "resolve"]
