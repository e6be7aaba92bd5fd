"""QUAG's simulation study (Rawal et al., ICML 2024, §3, App. A.5, Fig. 2): data with a known degree of crossmodal
coupling α, a small transformer trained on it for each α, and the % increase of its test MSE after the crossmodal
short-circuit. The paper finds that the increase grows with α: the more the target needs the other modality, the
more ablating crossmodal attention hurts — which is what validates QUAG as a way of impairing fusion.

Implemented from the paper's text (its released code is GPL-3.0 and is not used).

**Data** (§3; :func:`make_data`). Two modalities of ``tokens`` tokens (paper: 15) and ``dim`` features (paper: 100):

1. m₁, m₂ ~ 𝒩(0, I), each tokens × dim; z = [m₁ ‖ m₂] (2·tokens × dim, tokens stacked);
2. the target y ∈ ℝ^{2·tokens}: y_i = (1/dim) Σ_j p_j z_ij with p_j = 10 · sin(jπ / (2·dim + 2)) — the paper's
   p_j = 10 · sin(jπ/202) at dim = 100 (a weighted mean: the plain mean tends to 0);
3. t = (1 − α) m₁ − α m₂ and v = (1 − α) m₂ − α m₁, α ∈ [0, 0.5) the crossmodal coupling coefficient (the paper
   says α ∈ (0, 0.5); α = 0.5 makes v = −t and the target unrecoverable, so it is refused).

The model reads the sequence [t ‖ v] and predicts y_i at token i. Since m₁ = ((1 − α) t + α v) / (1 − 2α), the text
token i needs the video token i (and vice versa) in proportion to α: at α = 0 each token's own input suffices.

**Model** (App. A.5; :class:`SimTransformer`): a transformer encoder of ``layers`` layers (paper: 4), width
``width`` (paper: 100 = the data's dim), MLP ``mlp`` (paper: 400 = 4 × width), a learnable modality encoding and a
sinusoidal position encoding, dropout in the embedding, the attention and the penultimate layer; Adam at lr 1e-3,
MSE loss. Choices the paper leaves open, made here and labelled **not in the paper**: the number of heads (4), a
linear input projection dim → width (the identity's shape at the paper's sizes), positions counted within each
modality (token i of t and of v share a position code), pre-layer-norm layers, dropout 0.1, and the weights of the
epoch with the lowest validation MSE kept. The attention math is explicit, so the short-circuits act between the
softmax and the value mixing of every layer (Φ of :mod:`robustlab.models.quag`; the text block comes first).

**Protocol** (:func:`simulate`): for each α, fresh data (seeded), a fresh model (seeded) trained on the train split,
then the test MSE clean and under each short-circuit (default: the crossmodal one, the paper's Fig. 2; the other
three presets on request), and the % increase 100 · (MSE_SC − MSE) / MSE. :data:`PAPER` is the paper's A.5 setting
(40,000 samples split 24k / 8k / 8k, 2,000 epochs, batch 1,024 — hours on a CPU); :data:`QUICK` is a reduced one
that runs in minutes on a CPU (smaller data and model, fewer epochs; **not the paper's sizes**).
The result is a :class:`SimulationResult` (arrays and every parameter), which the CLI (``robustlab quag-sim``) prints
and the Attention page draws.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Optional, Sequence

import numpy as np
import torch
from torch import nn

from robustlab.models import quag

X_LABEL = "α (crossmodal coupling coefficient)"
Y_LABEL = "% increase in test MSE after the {sc} short-circuit"
TITLE = "QUAG simulation study (Rawal et al. §3, Fig. 2)"


class SimulationError(ValueError):
    """A bad simulation setting (one line)."""


@dataclass(frozen=True)
class SimulationConfig:
    """Every setting of the study; see the module docstring for which are the paper's."""

    tokens: int = 15
    dim: int = 100
    width: int = 100
    layers: int = 4
    heads: int = 4
    mlp: int = 400
    dropout: float = 0.1
    samples: int = 40_000
    split: tuple[float, float, float] = (0.6, 0.2, 0.2)  # train / validation / test: 24k / 8k / 8k
    epochs: int = 2000
    batch: int = 1024
    lr: float = 1e-3

    def check(self) -> "SimulationConfig":
        ints = {"tokens": 1, "dim": 1, "width": 1, "layers": 1, "heads": 1, "mlp": 1, "samples": 10, "epochs": 1,
                "batch": 1}
        for k, lo in ints.items():
            v = getattr(self, k)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
                raise SimulationError(f"{k} must be an integer ≥ {lo}, got {v!r}")
        if self.width % self.heads:
            raise SimulationError(f"width {self.width} is not divisible by heads {self.heads}")
        if not 0 <= float(self.dropout) < 1:
            raise SimulationError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if not float(self.lr) > 0:
            raise SimulationError(f"lr must be > 0, got {self.lr!r}")
        s = tuple(float(x) for x in self.split)
        if len(s) != 3 or min(s) <= 0 or abs(sum(s) - 1) > 1e-9:
            raise SimulationError(f"split must be three positive fractions summing to 1, got {self.split!r}")
        if min(int(self.samples * f) for f in s) < 1:
            raise SimulationError(f"{self.samples} samples leave an empty split; use more samples")
        return self


PAPER = SimulationConfig()  # App. A.5
QUICK = SimulationConfig(tokens=4, dim=16, width=32, layers=2, heads=2, mlp=128, samples=3000, epochs=30, batch=64,
                         lr=2e-3)  # not the paper's sizes: minutes on a CPU for five α (see docs/quag.md)
CONFIGS = {"quick": QUICK, "paper": PAPER}
DEFAULT_ALPHAS = (0.05, 0.15, 0.25, 0.35, 0.45)


@dataclass
class SimulationResult:
    """What :func:`simulate` measured: per α (``alphas``), the clean test MSE (``mse``), the test MSE under each
    short-circuit (``mse_sc[name]``) and its % increase (``increase[name]``), the best validation MSE and the
    epoch it came from; with the config, seed, short-circuits, device and seconds. ``labels`` are the chart's."""

    alphas: np.ndarray
    mse: np.ndarray
    mse_sc: dict
    increase: dict
    val_mse: np.ndarray
    best_epoch: np.ndarray
    config: SimulationConfig
    seed: int
    shortcircuits: tuple
    seconds: float = 0.0
    device: str = "cpu"
    labels: dict = field(default_factory=dict)

    @property
    def main(self) -> str:
        """The short-circuit the paper plots (crossmodal when run, else the first)."""
        return "crossmodal" if "crossmodal" in self.shortcircuits else self.shortcircuits[0]

    def rows(self) -> list[dict]:
        """One row per α: alpha, mse, and mse_<sc> / increase_<sc> (%) per short-circuit."""
        out = []
        for i, a in enumerate(self.alphas):
            r = {"alpha": float(a), "mse": float(self.mse[i]), "val_mse": float(self.val_mse[i]),
                 "best_epoch": int(self.best_epoch[i])}
            for sc in self.shortcircuits:
                r[f"mse_{sc}"] = float(self.mse_sc[sc][i])
                r[f"increase_{sc}_pct"] = float(self.increase[sc][i])
            out.append(r)
        return out

    def to_dict(self) -> dict:
        return {"study": "quag-simulation", "paper": "Rawal et al. 2024, §3, App. A.5, Fig. 2", "seed": self.seed,
                "config": asdict(self.config), "shortcircuits": list(self.shortcircuits), "device": self.device,
                "seconds": round(self.seconds, 3), "labels": dict(self.labels), "rows": self.rows()}


def _weights(dim: int) -> np.ndarray:
    """p_j = 10 · sin(jπ / (2·dim + 2)), j = 1..dim (the paper's 10 · sin(jπ/202) at dim = 100)."""
    return 10.0 * np.sin(np.arange(1, dim + 1) * np.pi / (2 * dim + 2))


def check_alpha(alpha) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise SimulationError(f"α must be a number in [0, 0.5), got {alpha!r}") from None
    if not 0.0 <= a < 0.5:
        raise SimulationError(f"α must be in [0, 0.5) (at 0.5, v = −t and the target is lost), got {a:g}")
    return a


def make_data(n: int, alpha: float, tokens: int = 15, dim: int = 100, seed: int = 0):
    """(x, y): x = [t ‖ v] of shape n × 2·tokens × dim (float32), y of shape n × 2·tokens (§3, steps 1–3)."""
    a = check_alpha(alpha)
    rng = np.random.default_rng(seed)
    m1 = rng.standard_normal((n, tokens, dim))
    m2 = rng.standard_normal((n, tokens, dim))
    y = np.concatenate([m1, m2], 1) @ _weights(dim) / dim
    x = np.concatenate([(1 - a) * m1 - a * m2, (1 - a) * m2 - a * m1], 1)
    return x.astype(np.float32), y.astype(np.float32)


def _sinusoid(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    out = torch.zeros(n, d)
    out[:, 0::2] = torch.sin(pos * freq)
    out[:, 1::2] = torch.cos(pos * freq)[:, : d // 2]
    return out


class _Layer(nn.Module):
    """Pre-LN encoder layer with explicit attention: ``hook(layer_idx, probs)`` between softmax and value mixing."""

    def __init__(self, width: int, heads: int, mlp: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, mlp), nn.GELU(), nn.Dropout(dropout), nn.Linear(mlp, width))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, hook=None, layer_idx: int = 0):
        B, N, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, N, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // self.heads), -1)
        if hook is not None:
            probs = hook(layer_idx, probs)
        ctx = (self.drop(probs) @ v).transpose(1, 2).reshape(B, N, D)
        x = x + self.drop(self.out(ctx))
        return x + self.drop(self.mlp(self.ln2(x)))


class SimTransformer(nn.Module):
    """The study's model: [t ‖ v] (B × 2·tokens × dim) -> one number per token (B × 2·tokens)."""

    def __init__(self, cfg: SimulationConfig):
        super().__init__()
        w = cfg.width
        self.tokens = cfg.tokens
        self.inp = nn.Linear(cfg.dim, w)
        self.modality = nn.Parameter(torch.randn(2, w) * 0.02)  # learnable modality encoding: text, video
        self.register_buffer("pos", _sinusoid(cfg.tokens, w), persistent=False)  # within each modality
        self.emb_drop = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(_Layer(w, cfg.heads, cfg.mlp, cfg.dropout) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(w)
        self.pen_drop = nn.Dropout(cfg.dropout)  # the penultimate layer's dropout
        self.head = nn.Linear(w, 1)
        self.layout = quag.TokenLayout(text=(0, cfg.tokens), visual=(cfg.tokens, 2 * cfg.tokens))

    def forward(self, x, shortcircuit: Optional[str] = None):
        add = torch.cat([self.pos + self.modality[0], self.pos + self.modality[1]], 0)
        h = self.emb_drop(self.inp(x) + add[: x.shape[1]])
        hook = None
        if shortcircuit:
            S = quag.quadrant_set(shortcircuit)
            hook = (lambda i, p: quag.apply(p, self.layout, S)) if S else None  # Φ: every layer
        for i, layer in enumerate(self.layers):
            h = layer(h, hook, i)
        return self.head(self.pen_drop(self.norm(h))).squeeze(-1)


def _mse(model, x, y, shortcircuit=None, batch: int = 2048) -> float:
    model.eval()
    tot = 0.0
    with torch.no_grad():
        for s in range(0, len(x), batch):
            tot += float(((model(x[s:s + batch], shortcircuit) - y[s:s + batch]) ** 2).sum())
    return tot / (len(x) * y.shape[1])


def train_one(alpha: float, cfg: SimulationConfig, seed: int = 0, device: str = "cpu",
              shortcircuits: Sequence[str] = ("crossmodal",)) -> dict:
    """One α: data, a trained model (best validation epoch) and its test MSE clean and per short-circuit."""
    cfg.check()
    x, y = make_data(cfg.samples, alpha, cfg.tokens, cfg.dim, seed=seed)
    n_tr, n_va = int(cfg.samples * cfg.split[0]), int(cfg.samples * cfg.split[1])
    dev = torch.device(device)
    xt, yt = torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev)
    tr, va, te = slice(0, n_tr), slice(n_tr, n_tr + n_va), slice(n_tr + n_va, cfg.samples)
    g = torch.Generator().manual_seed(int(seed))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = SimTransformer(cfg).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        best, best_epoch, best_state = float("inf"), 0, None
        for epoch in range(cfg.epochs):
            model.train()
            order = torch.randperm(n_tr, generator=g).to(dev)
            for s in range(0, n_tr, cfg.batch):
                idx = order[s:s + cfg.batch]
                loss = ((model(xt[tr][idx]) - yt[tr][idx]) ** 2).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            val = _mse(model, xt[va], yt[va])
            if val < best:
                best, best_epoch = val, epoch + 1
                best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
        model.load_state_dict(best_state)
        out = {"mse": _mse(model, xt[te], yt[te]), "val_mse": best, "best_epoch": best_epoch}
        out["mse_sc"] = {sc: _mse(model, xt[te], yt[te], sc) for sc in shortcircuits}
    return out


def simulate(alphas: Sequence[float] = DEFAULT_ALPHAS, config: SimulationConfig | str = "quick", *, seed: int = 0,
             shortcircuits: Sequence[str] = ("crossmodal",), device: str = "cpu", threads: Optional[int] = None,
             progress: Optional[Callable[[int, int], None]] = None, **overrides) -> SimulationResult:
    """Rawal et al.'s Fig. 2: for each α a model trained on α-coupled data, and the % increase of its test MSE after
    each short-circuit (default the crossmodal one). ``config``: "quick", "paper" or a :class:`SimulationConfig`;
    ``overrides`` change single fields (``epochs=20``). The same ``seed`` gives the same data and initial model
    for every α (and the same numbers on the same device). ``threads``: torch's CPU threads while it runs (restored
    after; one is fastest for the quick setting on a shared machine)."""
    if isinstance(config, str):
        if config not in CONFIGS:
            raise SimulationError(f"unknown simulation config {config!r}; configs: {', '.join(CONFIGS)}")
        config = CONFIGS[config]
    bad = set(overrides) - set(SimulationConfig.__dataclass_fields__)
    if bad:
        raise SimulationError(f"unknown simulation setting(s) {', '.join(sorted(bad))}; settings: "
                              f"{', '.join(SimulationConfig.__dataclass_fields__)}")
    cfg = replace(config, **overrides).check()
    al = [check_alpha(a) for a in alphas]
    if not al:
        raise SimulationError("give at least one α")
    scs = []
    for sc in shortcircuits:
        name = quag.preset_name(sc) or "+".join(q for q in quag.QUADRANTS if q in quag.quadrant_set(sc))
        if not name:
            raise SimulationError(f"short-circuit {sc!r} selects no quadrant")
        scs.append(name)
    if not scs:
        raise SimulationError("give at least one short-circuit (e.g. crossmodal)")
    if threads is not None and int(threads) < 1:
        raise SimulationError(f"threads must be at least 1, got {threads}")
    t0 = time.perf_counter()
    runs = []
    keep = torch.get_num_threads()
    try:
        if threads is not None:
            torch.set_num_threads(int(threads))
        for i, a in enumerate(al):
            runs.append(train_one(a, cfg, seed=seed, device=device, shortcircuits=scs))
            if progress:
                progress(i + 1, len(al))
    finally:
        torch.set_num_threads(keep)
    mse = np.array([r["mse"] for r in runs])
    mse_sc = {sc: np.array([r["mse_sc"][sc] for r in runs]) for sc in scs}
    inc = {sc: 100.0 * (v - mse) / mse for sc, v in mse_sc.items()}
    res = SimulationResult(alphas=np.array(al), mse=mse, mse_sc=mse_sc, increase=inc,
                           val_mse=np.array([r["val_mse"] for r in runs]),
                           best_epoch=np.array([r["best_epoch"] for r in runs]), config=cfg, seed=int(seed),
                           shortcircuits=tuple(scs), seconds=time.perf_counter() - t0, device=str(device))
    res.labels = {"x": X_LABEL, "y": Y_LABEL.format(sc=res.main), "title": TITLE,
                  "series": {sc: f"{sc} short-circuit" for sc in scs}}
    return res


__all__ = ["SimulationConfig", "SimulationResult", "SimulationError", "SimTransformer", "PAPER", "QUICK", "CONFIGS",
           "DEFAULT_ALPHAS", "make_data", "check_alpha", "train_one", "simulate", "X_LABEL", "Y_LABEL", "TITLE"]
