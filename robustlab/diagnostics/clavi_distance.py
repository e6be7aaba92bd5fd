"""CLAVI's representation-sensitivity analysis (Rawal et al. App. B.7, Table 16, Fig. 8): how far apart are a fusion
model's attention matrices on a complement pair, once their tokens are put in correspondence — and are correctly
answered pairs further apart than wrongly answered ones?

Implemented from the paper's text (its released code is GPL-3.0 and is not used).

A complement pair's two inputs hold different tokens (a text complement: "before" ↔ "after") or the same tokens in
another order (a video complement: the two actions swapped), so their attention matrices cannot be compared cell by
cell. The paper treats each attention matrix (one layer, one head) as a weighted directed complete graph, finds the
node correspondence by a linear sum assignment (the modified Jonker–Volgenant algorithm of Crouse 2016, which is
what :func:`scipy.optimize.linear_sum_assignment` implements), and takes the L2 distance of the aligned matrices,
averaged over heads and layers.

The paper does not give the assignment's cost matrix. Here (:func:`align`), decided once and documented:

* the nodes are the valid (non-padding) tokens of each input; when the counts differ, the smaller graph gets
  isolated dummy nodes (zero rows and columns) so both have k = max(n, m) nodes;
* node i's signature is its outgoing and its incoming edge weights, each sorted in descending order —
  ``[sort(A[i, :]), sort(A[:, i])]`` — which does not depend on how the other nodes are numbered; the cost of
  matching node i of A with node j of B is the Euclidean distance of their signatures. For B = P A Pᵀ (the same
  graph renumbered) the true correspondence costs 0, so the assignment finds it whenever the signatures are distinct;
* the distance is the Frobenius (L2) norm ``‖A − B[π][:, π]‖`` of A and B renumbered by the assignment π;
* ``same_modality=True`` (**not in the paper**) forbids matching a text token with a visual one.

The CLAVI analysis (:func:`complement_distances`, :func:`dataset_distances`): for every question of the chosen
types (default BA, the paper's Table 16), the *video* complement pairs (V, Q) ↔ (V′, Q) and the *text* complement
pairs (X, Q) ↔ (X, Q′) on X = V and V′; a pair is "correct" when the model answers both of its inputs right
(Fig. 8's green), "incorrect" otherwise (red). :meth:`DistanceResult.table` gives Table 16's mean and variance per
kind and outcome, :meth:`DistanceResult.histogram` Fig. 8's histograms.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from robustlab.tasks.clavi_scoring import COMPLEMENT, ClaviError, _norm

KINDS = ("video", "text")
OUTCOMES = ("correct", "incorrect")
LABELS = {"x": "L2 distance of the aligned attention matrices (mean over layers and heads)", "y": "complement pairs",
          "title": "CLAVI complement-pair attention distance (Rawal et al. App. B.7, Fig. 8)",
          "video": "video complements: (V, Q) ↔ (V′, Q)", "text": "text complements: (X, Q) ↔ (X, Q′)",
          "correct": "consistently correct (both right)", "incorrect": "at least one wrong"}
_FORBID = 1e6  # the cost of a match same_modality forbids (attention weights are ≤ 1: signatures differ by < 2√k)


def _square(a, name: str) -> np.ndarray:
    m = np.asarray(a, np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise ClaviError(f"{name} must be one non-empty N × N attention matrix, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ClaviError(f"{name} has non-finite values")
    return m


def _pad(m: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((k, k))
    out[: len(m), : len(m)] = m
    return out


def align(a, b, modality_a: Optional[Sequence[str]] = None, modality_b: Optional[Sequence[str]] = None,
          same_modality: bool = False) -> dict:
    """Align attention matrix ``b`` to ``a`` (node correspondence by linear sum assignment on the nodes' sorted
    in/out edge weights) and measure their distance. Returns ``{"distance": ‖A − B[π][:, π]‖_F, "perm": π (node i
    of A ↔ node π[i] of B, on the padded k nodes), "cost": the assignment's total signature cost, "k"}``."""
    A, B = _square(a, "the first matrix"), _square(b, "the second matrix")
    k = max(len(A), len(B))
    A, B = _pad(A, k), _pad(B, k)

    def signatures(m):
        return np.concatenate([-np.sort(-m, 1), -np.sort(-m.T, 1)], 1)

    sa, sb = signatures(A), signatures(B)
    sq = (sa * sa).sum(1)[:, None] + (sb * sb).sum(1)[None, :] - 2.0 * sa @ sb.T  # ‖s_i − s_j‖², as a product
    cost = np.sqrt(np.clip(sq, 0.0, None))
    if same_modality:
        if modality_a is None or modality_b is None:
            raise ClaviError("same_modality needs the modality of every node of both matrices")
        ma, mb = np.full(k, "", object), np.full(k, "", object)  # dummy nodes ("") match anything
        if len(modality_a) != len(a) or len(modality_b) != len(b):
            raise ClaviError("the modality lists must have one entry per node")
        ma[: len(modality_a)], mb[: len(modality_b)] = list(modality_a), list(modality_b)
        clash = (ma[:, None] != mb[None, :]) & (ma[:, None] != "") & (mb[None, :] != "")
        cost = cost + _FORBID * clash
    rows, perm = linear_sum_assignment(cost)
    aligned = B[np.ix_(perm, perm)]
    return {"distance": float(np.linalg.norm(A - aligned)), "perm": perm.tolist(),
            "cost": float(cost[rows, perm].sum()), "k": int(k)}


def capture_distance(cap_a, cap_b, same_modality: bool = False) -> float:
    """The mean over layers and heads of :func:`align`'s distance between two attention captures
    (``robustlab.models.attention.AttentionCapture``: L × H × N × N and the layout), on their valid tokens."""
    if cap_a.attentions.shape[:2] != cap_b.attentions.shape[:2]:
        raise ClaviError(f"the captures have {cap_a.attentions.shape[:2]} and {cap_b.attentions.shape[:2]} "
                         "layers × heads: not one model")
    ka, kb = ~np.asarray(cap_a.layout.is_pad, bool), ~np.asarray(cap_b.layout.is_pad, bool)
    ma, mb = np.asarray(cap_a.layout.modality)[ka], np.asarray(cap_b.layout.modality)[kb]
    d = [align(cap_a.attentions[li, h][np.ix_(ka, ka)], cap_b.attentions[li, h][np.ix_(kb, kb)], ma, mb,
               same_modality)["distance"]
         for li in range(cap_a.n_layers) for h in range(cap_a.n_heads)]
    return float(np.mean(d))


@dataclass
class DistanceResult:
    """Every complement pair measured: ``rows`` (id, kind "video"/"text", qtype, the two inputs, correct, distance)
    with the settings; :meth:`table` (Table 16) and :meth:`histogram` (Fig. 8) are computed from the rows."""

    rows: list
    qtypes: tuple
    same_modality: bool = False
    method: str = "swap"
    seed: int = 0
    model_id: str = ""
    labels: dict = field(default_factory=lambda: dict(LABELS))

    def distances(self, kind: str, outcome: Optional[str] = None) -> np.ndarray:
        return np.array([r["distance"] for r in self.rows if r["kind"] == kind
                         and (outcome is None or r["correct"] == (outcome == "correct"))], np.float64)

    def table(self) -> list[dict]:
        """Table 16: per kind (video / text complement) and outcome (correct / incorrect): pairs, mean, variance
        (population variance, ddof 0; None where no pair)."""
        out = []
        for kind in KINDS:
            for oc in OUTCOMES:
                d = self.distances(kind, oc)
                out.append({"kind": kind, "outcome": oc, "pairs": int(d.size),
                            "mean": float(d.mean()) if d.size else None,
                            "variance": float(d.var()) if d.size else None})
        return out

    def histogram(self, kind: str, bins: int = 20) -> dict:
        """Fig. 8: shared bin edges over both outcomes of ``kind``, and the count per bin of each outcome."""
        allv = self.distances(kind)
        lo, hi = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 1.0)
        edges = np.linspace(lo, hi if hi > lo else lo + 1e-9, int(bins) + 1)
        return {"edges": edges, **{oc: np.histogram(self.distances(kind, oc), edges)[0] for oc in OUTCOMES}}

    def to_dict(self) -> dict:
        return {"analysis": "clavi-complement-distance", "paper": "Rawal et al. 2024, App. B.7, Table 16, Fig. 8",
                "qtypes": list(self.qtypes), "same_modality": self.same_modality, "method": self.method,
                "seed": self.seed, "model": self.model_id, "table": self.table(), "rows": self.rows,
                "labels": dict(self.labels)}


def _answer(cap) -> str:
    o = cap.outputs
    return _norm(o.get("vqa_answer") or o.get("answer") or "")


def _check(model, qtypes) -> tuple:
    if not callable(getattr(model, "forward_with_attention", None)):
        mid = getattr(model, "model_id", type(model).__name__)
        raise ClaviError(f"the complement-pair distance needs a fusion model's attention (builtin:tiny-vilt, "
                         f"hf-vilt:...); {mid} has none")
    tasks = getattr(model, "supported_tasks", None)
    if tasks is not None and "clavi" not in tasks:
        raise ClaviError(f"{getattr(model, 'model_id', type(model).__name__)} answers no video questions (its head "
                         f"serves {', '.join(tasks) or 'nothing'}); CLAVI needs a VQA model")
    qt = tuple(dict.fromkeys(str(q).strip().upper() for q in qtypes))
    bad = [q for q in qt if q not in COMPLEMENT]
    if not qt or bad:
        raise ClaviError(f"question types {', '.join(bad) or '(none)'}: complement pairs exist for "
                         f"{', '.join(COMPLEMENT)}")
    return qt


def complement_distances(model, pairs, *, qtypes: Sequence[str] = ("BA",), same_modality: bool = False,
                         progress: Optional[Callable[[int, int], None]] = None, method: str = "swap",
                         seed: int = 0) -> DistanceResult:
    """The analysis over CLAVI pairs: ``pairs`` = [(id, Pair, questions)] (the 19 questions of
    :func:`robustlab.diagnostics.clavi.questions`). One attention capture per (video, question) used."""
    qt = _check(model, qtypes)
    pairs = list(pairs)
    rows = []
    for n_done, (pid, pair, qs) in enumerate(pairs, start=1):
        caps: dict = {}

        def cap(video: str, qi: int):
            if (video, qi) not in caps:
                frames = pair.video if video == "V" else pair.complement
                caps[video, qi] = model.forward_with_attention(frames, qs[qi].question)
            return caps[video, qi]

        def right(video: str, qi: int) -> bool:
            q = qs[qi]
            return _answer(cap(video, qi)) == _norm(q.answer_v if video == "V" else q.answer_c)

        for qi, q in enumerate(qs):
            if q.qtype not in qt:
                continue
            rows.append({"id": pid, "kind": "video", "qtype": q.qtype, "a": f"V · {q.question}",
                         "b": f"V′ · {q.question}", "correct": right("V", qi) and right("C", qi),
                         "distance": capture_distance(cap("V", qi), cap("C", qi), same_modality)})
            if q.prime:
                continue
            p = q.partner
            for video, tag in (("V", "V"), ("C", "V′")):
                rows.append({"id": pid, "kind": "text", "qtype": q.qtype, "a": f"{tag} · {q.question}",
                             "b": f"{tag} · {qs[p].question}", "correct": right(video, qi) and right(video, p),
                             "distance": capture_distance(cap(video, qi), cap(video, p), same_modality)})
        if progress:
            progress(n_done, len(pairs))
    return DistanceResult(rows=rows, qtypes=qt, same_modality=bool(same_modality), method=method, seed=int(seed),
                          model_id=str(getattr(model, "model_id", "")))


def dataset_distances(model, dataset, n: int = 20, *, qtypes: Sequence[str] = ("BA",), method: str = "swap",
                      seed: int = 0, same_modality: bool = False,
                      progress: Optional[Callable[[int, int], None]] = None) -> DistanceResult:
    """The analysis over the first ``n`` CLAVI pairs a dataset builds (``dataset.clavi(i, seed=, method=)``: the
    built-in event videos)."""
    _check(model, qtypes)
    if not callable(getattr(dataset, "clavi", None)):
        raise ClaviError(f"dataset {getattr(dataset, 'name', dataset)!r} builds no CLAVI pairs (use builtin-videos)")
    if int(n) < 1:
        raise ClaviError(f"n must be at least 1, got {n}")
    pairs = []
    for i in range(len(dataset)):
        got = dataset.clavi(i, seed=seed, method=method)
        if got is not None:
            pairs.append((dataset.item(i).id, *got))
        if len(pairs) >= int(n):
            break
    if not pairs:
        raise ClaviError(f"dataset {dataset.name} has no video with two distinct actions")
    return complement_distances(model, pairs, qtypes=qtypes, same_modality=same_modality, progress=progress,
                                method=method, seed=seed)


__all__ = ["align", "capture_distance", "complement_distances", "dataset_distances", "DistanceResult", "KINDS",
           "OUTCOMES", "LABELS"]
