"""The weakest change that breaks each example (issue 47, item 3): a budgeted search over the catalogue.

    >>> res = rl.failures.search("builtin:tiny-clip", "builtin", n=20, budget=4000)
    >>> res.results[0]     # the most fragile example: its weakest breaking change, the rank it fell to, the thief
    >>> rl.failures.export_suite(res, "runs/suite")   # a basket export + suite.json; `robustlab regenerate runs/suite`

**What is searched.** Retrieval (t2i / i2t on images) on one example at a time: the example is a query (t2i: a
caption, i2t: an image) that finds its ground truth in the top ``k`` clean. A *change* perturbs the example's own
inputs only: its image (the query for i2t; for t2i its ground-truth item in the gallery, the rest of the gallery
kept clean) and/or its caption (the query for t2i; its own caption among the i2t gallery's). Image parts come from
the image catalogue (``visual``: default :data:`VISUAL`), text parts from the text edits behind the semantic gate
(``text``: default :data:`TEXT`, the gated variants: an edit whose sentence embedding strays too far from the
caption is rejected by :mod:`robustlab.perturb.text.gate`). Candidates: every single part at severities 1-5, and
every visual × text pair with both parts at severity <= ``pair_max`` (default 2). A part whose output is its input
(a no-op) or that the gate dropped is not a change and is skipped, never counted as robustness.

**Weakest, defined.** Changes are ordered by (the largest severity of their parts, the sum of their severities,
the number of parts, the catalogue order): a single part at severity 2 is weaker than a pair at (2, 2) and than a
single part at 3; a pair at (1, 1) is weaker than a single part at 2. The search walks the candidates in that order
for every example together (round-robin, so a budget is spread over the examples rather than spent on the first):
an example's first breaking candidate is its weakest breaking change among the candidates, and it leaves the
search. The ranking of the results: broken first, by the weakness of their change, then by how far their ground
truth fell (the rank, larger first), then by dataset index.

**Budget.** ``budget`` counts model evaluations: one per perturbed input the model encodes (an image or a
caption). Each part's embedding is kept per example, so a pair whose parts were tried alone costs nothing new; the
search stops before an evaluation would exceed the budget, and examples left unresolved are ``"exhausted"``. The
clean gallery (images and captions) is encoded once through the embedding cache, as a sweep encodes it; perturbed
inputs go through the cache too (a rerun costs no model call), and the counts (``evaluations``, cache ``hits``) are
in the result. ``progress(dict)`` is called after each candidate round.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from robustlab.bench.cells import load
from robustlab.datasets import build
from robustlab.engine.cache import EmbeddingCache, cached_encode_images, cached_encode_texts
from robustlab.failures.common import FailureError
from robustlab.metrics.retrieval import ranks as rank_of
from robustlab.perturb import get_perturbation, perturb
from robustlab.perturb.condition import dropped_reason
from robustlab.perturb.record import is_no_op
from robustlab.perturb.specs import split_variant
from robustlab.tasks.retrieval_bench import RetrievalBench, check_model

#: the default image catalogue: every ImageNet-C corruption robustlab has but glass_blur (seconds per image)
VISUAL = ("gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "defocus_blur", "motion_blur",
          "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate",
          "jpeg_compression")
#: the default text edits: Qiu et al.'s EDA edits behind the semantic gate (the gated variants)
TEXT = ("synonym_replacement/qiu_gated", "word_insertion/qiu_gated", "word_swap/qiu_gated",
        "word_deletion/qiu_gated", "insert_punctuation/qiu_gated")
SEVERITIES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Change:
    """One candidate: ``parts`` = ((axis, perturbation, severity), ...), ``order`` its catalogue position."""

    parts: tuple
    order: int = 0

    @property
    def weakness(self) -> tuple:
        """(largest severity, sum of severities, number of parts): smaller is weaker."""
        sev = [p[2] for p in self.parts]
        return (max(sev), sum(sev), len(sev))

    def key(self) -> tuple:
        return self.weakness + (self.order,)


def candidates(visual, text, pair_max: int = 2, severities=SEVERITIES) -> list[Change]:
    """Every single part and every visual × text pair (both at <= ``pair_max``), weakest first."""
    singles = [("visual", v, s) for v in visual for s in severities] + [("text", t, s) for t in text
                                                                       for s in severities]
    pairs = [(("visual", v, a), ("text", t, b)) for v in visual for t in text
             for a in severities for b in severities if a <= pair_max and b <= pair_max]
    out = [Change((p,), i) for i, p in enumerate(singles)] + [Change(p, len(singles) + i) for i, p in enumerate(pairs)]
    return sorted(out, key=Change.key)


def _check_names(names, kind: str) -> list[str]:
    out = []
    for n in names:
        base, variant = split_variant(n, None)
        try:
            spec = get_perturbation(base)
        except ValueError as e:
            raise FailureError(str(e)) from None
        if kind not in spec.applies_to:
            raise FailureError(f"{n!r} is a {spec.modality} perturbation, not a {kind} one")
        if variant and variant not in spec.variants:
            raise FailureError(f"{base!r} has no variant {variant!r}; variants: {', '.join(spec.variants)}")
        if not spec.available:
            raise FailureError(f"perturbation {base!r} is unavailable: {spec.reason}")
        out.append(n)
    return list(dict.fromkeys(out))


@dataclass
class SearchResult:
    """The search's outcome: ``results`` one dict per example, ranked (module docstring); the settings to rebuild
    it (``model``, ``dataset``, ``direction``, ``k``, ``perturb_seed``, ``visual``, ``text``, ``pair_max``); its
    cost (``evaluations``, ``budget``, ``hits``, ``seconds``, ``candidates_tried``)."""

    model: str
    dataset: dict
    direction: str
    k: int
    perturb_seed: int
    visual: list
    text: list
    pair_max: int
    budget: int
    evaluations: int = 0
    hits: int = 0
    seconds: float = 0.0
    candidates_tried: int = 0
    exhausted: bool = False
    results: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict, repr=False)  # (example, axis, name, severity) -> PerturbResult

    def to_json(self) -> dict:
        keys = ("model", "dataset", "direction", "k", "perturb_seed", "visual", "text", "pair_max", "budget",
                "evaluations", "hits", "seconds", "candidates_tried", "exhausted", "results")
        return {"schema": 1, **{k: getattr(self, k) for k in keys}}

    def broken(self) -> list[dict]:
        return [r for r in self.results if r["status"] == "broken"]


class _Example:
    def __init__(self, q: int, item: int, caption: int, positives: list):
        self.q, self.item, self.caption, self.positives = q, item, caption, positives
        self.emb: dict = {}  # (axis, name, severity) -> embedding, or None when not a change (no-op / dropped)
        self.spent = 0


def search(model: str = "builtin:tiny-clip", dataset="builtin", *, n: Optional[int] = None, split: Optional[str] = None,
           seed: Optional[int] = None, root=None, direction: str = "t2i", k: int = 1, visual=None, text=None,
           pair_max: int = 2, budget: int = 5000, perturb_seed: int = 0, device: Optional[str] = None,
           cache: Optional[EmbeddingCache] = None,
           progress: Optional[Callable[[dict], None]] = None) -> SearchResult:
    """The weakest breaking change of every example (module docstring). One-line :class:`FailureError` on bad
    input (an unknown or unavailable perturbation, a direction other than t2i / i2t, k < 1 or above the gallery,
    a budget below 1, a dataset without captions, a model that cannot embed images and texts)."""
    if direction not in ("t2i", "i2t"):
        raise FailureError(f"the search runs on image retrieval (t2i or i2t), got direction {direction!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise FailureError(f"k must be a positive integer, got {k!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise FailureError(f"budget must be a positive number of model evaluations, got {budget!r}")
    if not isinstance(pair_max, int) or not 0 <= pair_max <= 5:
        raise FailureError(f"pair_max must be in 0..5 (0: no pairs), got {pair_max!r}")
    vis = _check_names(VISUAL if visual is None else _split(visual), "image")
    txt = _check_names(TEXT if text is None else _split(text), "text")
    if not vis and not txt:
        raise FailureError("nothing to search: no visual and no text perturbation")
    opts = {k2: v for k2, v in (("split", split), ("n", n), ("seed", seed), ("root", root)) if v is not None}
    try:
        ds = build(str(dataset), **opts)
        m = load(str(model), device)
        if ds.kind != "image":
            raise FailureError(f"the search runs on image datasets; {ds.name} holds {ds.kind}s")
        check_model(m, "image")
        bench = RetrievalBench(m, ds, cache=cache if cache is not None else EmbeddingCache())
    except FailureError:
        raise
    except (KeyError, ValueError, TypeError) as e:
        raise FailureError(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)) from None
    gallery = len(ds) if direction == "t2i" else len(bench.caption_texts)
    if k > gallery:
        raise FailureError(f"k {k} is larger than the gallery: {direction} ranks {gallery}")
    t0 = time.process_time()
    hits0 = bench.cache.hits
    V, T = bench.visuals()[2], bench.texts()[2]  # the clean gallery, encoded once (the embedding cache)
    examples = _examples(bench, direction)
    res = SearchResult(model=str(model), dataset={"name": ds.name, "split": getattr(ds, "split", None), "n": len(ds),
                                                   "seed": getattr(ds, "seed", None),
                                                   "root": str(root) if root else None},
                       direction=direction, k=int(k), perturb_seed=int(perturb_seed), visual=vis, text=txt,
                       pair_max=int(pair_max), budget=int(budget))
    clean = {ex.q: _rank(V, T, ex, direction, {}) for ex in examples}
    open_ = [ex for ex in examples if clean[ex.q][0] <= k]
    found: dict = {}
    cands = candidates(vis, txt, pair_max)
    for ci, ch in enumerate(cands):
        if not open_ or res.exhausted:
            break
        res.candidates_tried = ci + 1
        still = []
        for ex in open_:
            cost = sum(1 for p in ch.parts if p not in ex.emb)
            if res.evaluations + cost > budget:
                res.exhausted = True
                still.append(ex)
                continue
            got = {}
            for p in ch.parts:
                if p not in ex.emb:
                    ex.emb[p] = _encode(bench, ds, ex, p, perturb_seed, res)
                    ex.spent += 1
                got[p[0]] = ex.emb[p]
            if any(v is None for v in got.values()):
                still.append(ex)  # a no-op or a dropped edit: no change to try
                continue
            r, top = _rank(V, T, ex, direction, got)
            if r > k:
                found[ex.q] = (ch, r, top)
            else:
                still.append(ex)
        open_ = still
        if progress:
            progress({"candidate": ci + 1, "candidates": len(cands), "open": len(open_), "broken": len(found),
                      "evaluations": res.evaluations, "budget": budget})
    res.results = _results(ds, examples, clean, found, {ex.q for ex in open_}, k, perturb_seed, direction, res)
    res.hits = bench.cache.hits - hits0
    res.seconds = round(time.process_time() - t0, 3)
    return res


def _split(x) -> list[str]:
    return [p.strip() for p in (x if isinstance(x, (list, tuple)) else str(x).split(",")) if p.strip()]


def _examples(bench: RetrievalBench, direction: str) -> list[_Example]:
    if direction == "t2i":
        return [_Example(q, int(bench.text_items[q]), q, list(bench.text_pos[q])) for q in range(len(bench.text_items))]
    return [_Example(q, int(i), int(bench.caption_of[int(i)]), list(bench.visual_pos[q]))
            for q, i in enumerate(bench.captioned)]


def _own(ds, bench, ex: _Example, axis: str):
    return (ds.visual(ex.item), "image") if axis == "visual" else (bench.caption_texts[ex.caption], "text")


def _seed(ex: _Example, axis: str, perturb_seed: int) -> int:
    return int(perturb_seed) + (ex.item if axis == "visual" else ex.caption)


def _encode(bench, ds, ex: _Example, part: tuple, perturb_seed: int, res: SearchResult):
    """The embedding of the example's own input under one part (one model evaluation), or None for a no-op or an
    edit the semantic gate dropped (no model call then)."""
    axis, name, sev = part
    x, kind = _own(ds, bench, ex, axis)
    r = perturb(x, name, sev, seed=_seed(ex, axis, perturb_seed))
    if is_no_op(r.record) or dropped_reason(r.record):
        return None
    res.inputs[(ex.q,) + part] = r
    res.evaluations += 1
    enc = cached_encode_images if kind == "image" else cached_encode_texts
    return np.asarray(enc(bench.model, [r.output], cache=bench.cache, records=[r.record]), np.float32)[0]


def _rank(V: np.ndarray, T: np.ndarray, ex: _Example, direction: str, got: dict) -> tuple[int, int]:
    """(the ground truth's rank, the target ranked first) with the example's own inputs replaced by ``got``."""
    if direction == "t2i":
        t = got.get("text", T[ex.q])
        row = t @ V.T
        if "visual" in got:
            row[ex.item] = t @ got["visual"]
    else:
        v = got.get("visual", V[ex.item])
        row = v @ T.T
        if "text" in got:
            row[ex.caption] = v @ got["text"]
    return int(rank_of(row[None, :], [ex.positives])[0]), int(np.argmax(row))


def _results(ds, examples, clean, found, open_q, k, perturb_seed, direction, res) -> list[dict]:
    out = []
    for ex in examples:
        r0 = clean[ex.q][0]
        d = {"item": ex.item, "id": str(ds.item(ex.item).id), "caption": ex.caption, "query": ex.q, "clean_rank": r0,
             "evaluations": ex.spent}
        if r0 > k:
            d.update(status="fails clean", change=None)
        elif ex.q in found:
            ch, r, top = found[ex.q]
            thief = top if direction == "t2i" else int(ds.text_items()[top])
            d.update(status="broken", change=[{"axis": a, "perturbation": p, "severity": s,
                                               "seed": _seed(ex, a, perturb_seed)} for a, p, s in ch.parts],
                     weakness=list(ch.weakness), rank=r, thief=thief, thief_id=str(ds.item(thief).id))
        else:
            d.update(status="exhausted" if ex.q in open_q and res.exhausted else "holds", change=None)
        out.append(d)
    order = {"broken": 0, "holds": 1, "exhausted": 2, "fails clean": 3}
    out.sort(key=lambda d: (order[d["status"]], tuple(d.get("weakness") or ()), -(d.get("rank") or 0), d["item"]))
    for i, d in enumerate(out):
        d["rank_in_suite"] = i + 1 if d["status"] == "broken" else None
    return out


def save(res: SearchResult, path) -> Path:
    p = Path(path)
    p.write_text(json.dumps(res.to_json(), indent=1) + "\n", encoding="utf-8")
    return p


__all__ = ["search", "SearchResult", "Change", "candidates", "VISUAL", "TEXT", "SEVERITIES", "save"]
