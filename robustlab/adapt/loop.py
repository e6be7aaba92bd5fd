"""The one adaptation loop: online over the shifted query stream, any method of :mod:`robustlab.adapt.methods`.

Per run (one method, one direction, one query shift): the gallery embeddings are computed once with the unadapted
model and stay fixed; the query tower is a fresh copy of the model (so every run starts from the same saved
weights, and the model passed in is never changed); the queries stream in batches of B in dataset order; each
batch gets ``steps`` gradient steps on the query side's LayerNorms (AdamW), continually across batches; a batch's
output scores come from its last step's forward (HSM-reranked for HAT-VTR), as in the released loop
(``tta_main.py``; ``bingqingzhang/vtr_tta``, MIT). R@K before (clean, shifted) and after are on the same queries.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import torch

from robustlab.adapt.methods import Runner, check_params, get_method, resolve
from robustlab.adapt.towers import AdaptError, check, frozen_frames, tower_for
from robustlab.metrics.retrieval import MDR_CONVENTIONS, retrieval
from robustlab.perturb.condition import Condition
from robustlab.perturb.condition import check as check_condition
from robustlab.tasks.conditions import QUERY_SIDE  # noqa: F401 - re-exported (robustlab.adapt.QUERY_SIDE)
from robustlab.tasks.retrieval_bench import RetrievalBench


@dataclass
class AdaptResult:
    """What one run gives: R@K on clean, shifted and adapted queries, the per-step losses, the embeddings."""

    method: str
    direction: str
    condition: dict
    params: dict
    n_queries: int
    n_gallery: int
    metrics: dict  # {"clean": {R@1...}, "shifted": {...}, "adapted": {...}}
    losses: list  # one dict per (batch, step): batch, step, loss and the method's parts
    seconds: dict  # prepare (frozen parts) / adapt / total; per_1000_queries = (prepare + adapt) per 1,000 queries
    adapted_parameters: int
    query_clean: Optional[np.ndarray] = field(default=None, repr=False)  # N_Q × D, unadapted, clean queries
    query_shifted: Optional[np.ndarray] = field(default=None, repr=False)  # N_Q × D, unadapted, shifted queries
    query_adapted: Optional[np.ndarray] = field(default=None, repr=False)  # N_Q × D, as the adapted stream saw them
    gallery: Optional[np.ndarray] = field(default=None, repr=False)  # N_G × D
    scores_shifted: Optional[np.ndarray] = field(default=None, repr=False)  # N_Q × N_G
    scores_adapted: Optional[np.ndarray] = field(default=None, repr=False)  # N_Q × N_G (HSM-reranked for HAT-VTR)
    positives: Optional[list] = field(default=None, repr=False)
    model_fingerprint: str = ""
    adapted_fingerprint: str = ""
    spread: dict = field(default_factory=dict)  # mean pairwise cosine of the queries: clean / shifted / adapted
    # HAT-VTR §5.5's breakdown, measured with time.perf_counter around each phase (the device synchronised before
    # each reading): {"seconds": {phase: s}, "per_1000_queries": {...}, "share": {phase: fraction of the sum}}
    timing: dict = field(default_factory=dict)
    # per batch (TCR, HAT-VTR): the Reliable Memory's size and the accuracy of its pseudo-labels against the ground
    # truth (of the batch's pseudo-positives, of the pairs added, of all the pairs kept) -- a diagnostic only
    memory: list = field(default_factory=list)
    mdr: str = "median"  # the median-rank convention of the metrics' MdR (robustlab.metrics.retrieval.median_rank)

    def to_json(self) -> dict:
        """Plain JSON (no arrays)."""
        return {"method": self.method, "direction": self.direction, "condition": self.condition,
                "params": self.params, "n_queries": self.n_queries, "n_gallery": self.n_gallery,
                "metrics": self.metrics, "losses": self.losses, "seconds": self.seconds,
                "adapted_parameters": self.adapted_parameters, "spread": self.spread, "timing": self.timing,
                "memory": self.memory, "mdr": self.mdr,
                "model_fingerprint": self.model_fingerprint,
                "adapted_fingerprint": self.adapted_fingerprint}

    def loss_curve(self, key: str = "loss") -> list[float]:
        """The last step's value of ``key`` per batch."""
        last: dict[int, float] = {}
        for r in self.losses:
            last[r["batch"]] = r.get(key, float("nan"))
        return [last[b] for b in sorted(last)]

    def memory_curve(self, key: str = "accuracy") -> list:
        """Per batch, ``key`` of the Reliable Memory's log: "accuracy" (all the pairs kept), "added_accuracy",
        "batch_accuracy" or "size" (None where undefined: nothing added, an empty memory)."""
        return [r.get(key) for r in self.memory]


def _condition(condition, side: str, kind: str):
    if condition is None or condition == "" or condition == "none":
        return Condition()
    if isinstance(condition, Condition):
        c = condition
    elif isinstance(condition, dict):
        c = Condition.from_dict(condition)
    else:
        try:
            c = Condition.parse(str(condition))
        except ValueError as e:
            raise AdaptError(str(e)) from None
    if not c.clean:
        try:
            check_condition(c, "text" if side == "text" else kind)
        except (KeyError, ValueError) as e:
            raise AdaptError(str(e).strip("'\"")) from None
    return c


PHASES = ("prepare", "forward", "loss", "hsm", "memory", "backward")


def _timing(t: dict, n_queries: int) -> dict:
    """The phases' seconds, per 1,000 queries and shares of their sum (HAT-VTR Table 15's layout)."""
    total = sum(t.values())
    return {"seconds": {k: round(v, 5) for k, v in t.items()},
            "per_1000_queries": {k: round(v * 1000.0 / max(1, n_queries), 5) for k, v in t.items()},
            "share": {k: round(v / total, 4) if total > 0 else 0.0 for k, v in t.items()}}


def run(model, dataset, method: str = "hat-vtr", direction: str = "t2v", condition=None, *, bench=None,
        progress: Optional[Callable[[int, int], None]] = None, keep_arrays: bool = True, mdr: str = "median",
        **params) -> AdaptResult:
    """Adapt ``model``'s query tower online on ``dataset``'s queries under a query shift and score the result.

    ``direction``: t2v / v2t on videos, t2i / i2t on images; ``condition``: the query shift, a perturbation of the
    query side (``"gaussian_noise:5"``, a :class:`~robustlab.perturb.condition.Condition`, or None for clean
    queries); ``bench``: a :class:`~robustlab.tasks.retrieval_bench.RetrievalBench`
    to reuse (its embeddings and perturbed inputs are memoised); ``progress(done, total)`` per batch;
    ``params``: the method's (``robustlab.adapt.list_methods()``); ``mdr``: the median-rank convention of the
    metrics ("median", or "lower" as HAT-VTR's released code). The model itself is never modified."""
    t0 = time.perf_counter()
    if mdr not in MDR_CONVENTIONS:
        raise AdaptError(f"mdr must be one of {', '.join(MDR_CONVENTIONS)}, got {mdr!r}")
    get_method(method)
    check_params(method, params)  # finite and in range before any work (one line)
    if bench is None:
        bench = RetrievalBench(model, dataset, lazy=True)
    kind = bench.kind
    dirs = ("t2v", "v2t") if kind == "video" else ("t2i", "i2t")
    if direction not in dirs:
        raise AdaptError(f"direction must be {' or '.join(dirs)} for a {kind} dataset, got {direction!r}")
    side = QUERY_SIDE[direction]
    if get_method(method).adapts:  # a model with nothing to adapt on this side: say so before any work
        check(model, side, video=kind == "video")
    cond = _condition(condition, side, kind)
    clean = Condition()
    vc, tc = (clean, cond) if side == "text" else (cond, clean)
    m_clean = bench.score_matrix(direction)
    m_shift = bench.score_matrix(direction, vc, tc)
    n_gallery = int(m_shift.scores.shape[1])
    p = resolve(method, side, n_gallery, params)
    positives = [list(np.atleast_1d(x)) for x in m_shift.positives] if not isinstance(m_shift.positives, np.ndarray) \
        else m_shift.positives
    out = {"clean": retrieval(m_clean.scores, positives, mdr=mdr),
           "shifted": retrieval(m_shift.scores, positives, mdr=mdr)}
    if side == "text":
        q_inputs = bench.texts(tc)[0]
        g_emb = bench.visuals(clean)[2]
    else:
        vis = bench.visuals(vc)[0]
        q_inputs = [vis[int(i)] for i in m_shift.queries]
        g_emb = bench.texts(clean)[2]
    qe_shift = m_shift_queries(bench, direction, vc, tc)
    qe_clean = m_shift_queries(bench, direction, clean, clean)
    seconds = {"prepare": 0.0, "adapt": 0.0}
    phase = dict.fromkeys(PHASES, 0.0)
    memory_log: list = []
    losses: list[dict] = []
    fp = getattr(model, "fingerprint", "") or ""
    if not get_method(method).adapts:
        scores, q_adapt, n_par, afp = m_shift.scores, qe_shift, 0, fp
    else:
        tower = tower_for(model, side, video=kind == "video")
        n_par = tower.n_parameters()
        dev = next(iter(tower.parameters())).device
        gallery = torch.from_numpy(np.ascontiguousarray(g_emb, np.float32)).to(dev)
        g_frames = None
        if method == "hat-vtr" and side == "text":
            ts = time.perf_counter()
            g_frames = frozen_frames(model, bench.visuals(clean)[0], kind == "video").to(dev)
            seconds["prepare"] += time.perf_counter() - ts
            phase["prepare"] += time.perf_counter() - ts
        sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else None
        runner = Runner(method, p, gallery, g_frames, side, sync=sync, weights=tower.parameters())
        tick = sync or (lambda: None)
        first_pos = torch.tensor([int(np.atleast_1d(x)[0]) for x in positives], dtype=torch.long, device=dev)
        opt = torch.optim.AdamW(tower.parameters(), lr=p["lr"], weight_decay=p["weight_decay"])
        order = np.arange(len(q_inputs))
        if p["order"] == "shuffled":
            order = np.random.default_rng(int(p["seed"])).permutation(len(q_inputs))
        bs = int(p["batch_size"])
        nb = (len(order) + bs - 1) // bs
        scores = np.zeros((len(order), n_gallery), np.float32)
        q_adapt = np.zeros((len(order), gallery.shape[1]), np.float32)
        for b in range(nb):
            idx = order[b * bs:(b + 1) * bs]
            truth = [np.atleast_1d(positives[int(i)]).tolist() for i in idx]
            tick()
            ts = time.perf_counter()
            with torch.no_grad():
                prepared = tower.prepare([q_inputs[int(i)] for i in idx])
            tick()
            t1 = time.perf_counter()
            seconds["prepare"] += t1 - ts
            phase["prepare"] += t1 - ts
            def forward(prepared=prepared):  # the batch's forward: (features, pooled, scores)
                q = tower.encode(prepared)
                qg = tower.pool(q)
                return q, qg, qg @ gallery.t()

            for step in range(int(p["steps"])):
                with torch.enable_grad():
                    ta = time.perf_counter()
                    q, qg, s = forward()
                    tick()
                    tb = time.perf_counter()
                    inner = runner.timer["hsm"] + runner.timer["memory"]
                    so = runner.step(q if q.dim() == 3 else qg, s, step, b,
                                     targets=first_pos[torch.as_tensor(idx, dtype=torch.long)], truth=truth,
                                     again=lambda: forward()[1:])  # a second pass (SAR's sharpness-aware step)
                    tick()
                    tc = time.perf_counter()
                    opt.zero_grad(set_to_none=True)
                    so.loss.backward()
                    runner.before_update()
                    opt.step()
                    runner.after_update(opt, so)
                    tick()
                    td = time.perf_counter()
                phase["forward"] += tb - ta
                phase["loss"] += (tc - tb) - (runner.timer["hsm"] + runner.timer["memory"] - inner)
                phase["backward"] += td - tc
                losses.append({"batch": b, "step": step, "loss": float(so.loss.detach()), **so.parts})
                last_s, last_q = s.detach(), qg.detach()
            scores[idx] = runner.output(last_s).numpy()
            q_adapt[idx] = last_q.float().cpu().numpy()
            seconds["adapt"] += time.perf_counter() - t1
            if progress:
                progress(b + 1, nb)
        phase["hsm"], phase["memory"] = runner.timer["hsm"], runner.timer["memory"]
        memory_log = runner.memory_log
        tower.adapted.__dict__.pop("_fp_memo", None)
        afp = getattr(tower.adapted, "fingerprint", "") or ""
        if not all(np.isfinite(x["loss"]) for x in losses):
            raise AdaptError(f"{method}: the loss became non-finite (lr {p['lr']} may be too high for this model)")
    out["adapted"] = retrieval(scores, positives, mdr=mdr)
    seconds["total"] = time.perf_counter() - t0
    nq = max(1, len(q_inputs))
    seconds["per_1000_queries"] = (seconds["prepare"] + seconds["adapt"]) * 1000.0 / nq
    seconds = {k: round(v, 4) for k, v in seconds.items()}
    res = AdaptResult(method, direction, cond.to_dict(), p, len(q_inputs), n_gallery, out, losses, seconds, n_par,
                      model_fingerprint=fp, adapted_fingerprint=afp, timing=_timing(phase, len(q_inputs)),
                      memory=memory_log, mdr=mdr,
                      spread={k: mean_cosine(v) for k, v in (("clean", qe_clean), ("shifted", qe_shift),
                                                             ("adapted", q_adapt))})
    if keep_arrays:
        res.query_clean, res.query_shifted, res.query_adapted = qe_clean, qe_shift, q_adapt
        res.gallery, res.scores_shifted, res.scores_adapted = np.asarray(g_emb), m_shift.scores, scores
        res.positives = positives
    return res


def mean_cosine(x: np.ndarray) -> float:
    """Mean pairwise cosine similarity of the rows (0 for spread-out queries, near 1 when they collapse onto one
    point: the query shift's hubness seen from the query side)."""
    x = np.asarray(x, np.float64)
    n = len(x)
    if n < 2:
        return float("nan")
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    s = x.sum(0)
    return round(float((s @ s - n) / (n * n - n)), 6)


def m_shift_queries(bench, direction: str, vc, tc) -> np.ndarray:
    """The unadapted query embeddings of ``direction`` under (visual, text) conditions."""
    if direction[0] == "t":
        return bench.texts(tc)[2]
    s = bench.score_matrix(direction, vc, tc)
    return bench.visuals(vc)[2][np.asarray(s.queries, dtype=np.int64)]


__all__ = ["AdaptResult", "run", "QUERY_SIDE"]
