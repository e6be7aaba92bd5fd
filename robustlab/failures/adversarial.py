"""The weakest change that breaks each example (issue 47, items 3 and 6): a budgeted search over the catalogue.

    >>> res = rl.failures.search("builtin:tiny-clip", "builtin", n=20, budget=4000)
    >>> res.results[0]     # the most fragile example: its weakest breaking change, the rank it fell to, the thief
    >>> rl.failures.export_suite(res, "runs/suite")   # a basket export + suite.json; `robustlab regenerate runs/suite`
    >>> rl.failures.search("builtin:tiny-clip-video-seqtransf", "builtin-videos", n=12)      # video retrieval
    >>> rl.failures.search("builtin:tiny-vilt", "builtin-refs", task="grounding", n=12)     # grounding

**What is searched.** One example at a time, on the task's own inputs:

* **retrieval** (t2i / i2t on images, t2v / v2t on videos): the example is a query (t2i / t2v: a caption, i2t /
  v2t: an image or video) that finds its ground truth in the top ``k`` clean; it *fails* when the ground truth
  leaves the top ``k``. A change perturbs the example's own inputs only: its visual (the query for i2t / v2t; for
  t2i / t2v its ground-truth item in the gallery, the rest of the gallery kept clean) and/or its caption (the query
  for t2i / t2v; its own caption among the i2t / v2t gallery's).
* **grounding** (images): the example is one referring expression of an item whose predicted box is a hit clean
  (IoU > 0.5); it *fails* when IoU drops to 0.5 or below (the failure map's rule). A change perturbs the item's
  image and/or the expression (an edit that deletes every word leaves ``"?"``, as the grounding task does).

Visual parts come from the visual catalogue (``visual``: default :data:`VISUAL` for images, :data:`VIDEO` for
videos; names, ``name/variant``, ``category:NAME``), text parts from the text edits behind the semantic gate
(``text``: default :data:`TEXT`, the gated variants: an edit whose sentence embedding strays too far from the
sentence is rejected by :mod:`robustlab.perturb.text.gate`). Candidates: every single part at severities 1-5, and
every visual × text pair with both parts at severity <= ``pair_max`` (default 2). A part whose output is its input
(a no-op) or that the gate dropped is not a change and is skipped, never counted as robustness. Seeds are the
sweep's: retrieval visual ``perturb_seed + item``, caption ``perturb_seed + caption index``; grounding image and
expression ``perturb_seed + item``.

**Weakest, defined.** Changes are ordered by (the largest severity of their parts, the sum of their severities,
the number of parts, the catalogue order): a single part at severity 2 is weaker than a pair at (2, 2) and than a
single part at 3; a pair at (1, 1) is weaker than a single part at 2. The search walks the candidates in that order
for every example together (round-robin, so a budget is spread over the examples rather than spent on the first):
an example's first breaking candidate is its weakest breaking change among the candidates, and it leaves the
search. The ranking of the results: broken first, by the weakness of their change, then by how far they fell
(retrieval: the rank, larger first; grounding: the IoU, lower first), then by dataset index.

**Budget.** ``budget`` counts model evaluations. Retrieval: one per perturbed input the model encodes (an image, a
video or a caption); each part's embedding is kept per example, so a pair whose parts were tried alone costs
nothing new. Grounding: one per (image, expression) pair the model grounds (a pair's parts are perturbed without
a model call). The search stops before an evaluation would exceed the budget, and examples left unresolved are
``"exhausted"``. Retrieval encodes the clean gallery once through the embedding cache, as a sweep does (videos
lazily: only the frames the model samples); perturbed inputs go through the cache too (a rerun costs no model
call), and the counts (``evaluations``, cache ``hits``) are in the result. ``progress(dict)`` is called after each
candidate round; ``cancel`` (a ``threading.Event``) is checked between examples: once set, the search returns
what it found so far with ``cancelled`` true (the examples not yet resolved are ``"cancelled"``).

``dataset`` is a registered name (with ``root`` / ``split`` / ``n`` / ``seed``) or a
:class:`~robustlab.datasets.base.Dataset` object, used as it is (a dashboard upload, a dataset you built).
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from robustlab.bench.cells import load
from robustlab.bench.spec import SweepError, parse_perturbations
from robustlab.datasets import build
from robustlab.datasets.base import Dataset
from robustlab.engine.cache import EmbeddingCache, cached_encode_images, cached_encode_texts, cached_encode_videos
from robustlab.failures.common import IOU_HIT, FailureError
from robustlab.metrics.retrieval import ranks as rank_of
from robustlab.perturb import perturb
from robustlab.perturb.condition import dropped_reason
from robustlab.perturb.record import is_no_op
from robustlab.tasks.grounding import ground_many
from robustlab.tasks.retrieval_bench import DIRECTIONS, RetrievalBench, check_model

#: the default image catalogue: every ImageNet-C corruption robustlab has but glass_blur (seconds per image)
VISUAL = ("gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "defocus_blur", "motion_blur",
          "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate",
          "jpeg_compression")
#: the default video catalogue: the frame-wise corruptions that are cheap on a clip, and Schiappa et al.'s
#: temporal and camera perturbations (no codec: it needs ffmpeg)
VIDEO = ("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "brightness", "contrast", "pixelate",
         "jpeg_compression", "sampling", "reverse_sampling", "jumble", "box_jumble", "freeze", "static_rotate",
         "rotate", "translate")
#: the default text edits: Qiu et al.'s EDA edits behind the semantic gate (the gated variants)
TEXT = ("synonym_replacement/qiu_gated", "word_insertion/qiu_gated", "word_swap/qiu_gated",
        "word_deletion/qiu_gated", "insert_punctuation/qiu_gated")
SEVERITIES = (1, 2, 3, 4, 5)
SEARCH_TASKS = ("retrieval", "grounding")


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
    """The perturbations ``names`` (a list, or a comma-separated string; ``"none"``: none) selects for ``kind``
    (the sweep's spellings and checks: ``name/variant``, ``category:NAME``; one-line FailureError)."""
    if not names:
        return []
    try:
        return parse_perturbations(names if isinstance(names, str) else list(names), kind)
    except SweepError as e:
        raise FailureError(str(e)) from None


@dataclass
class SearchResult:
    """The search's outcome: ``results`` one dict per example, ranked (module docstring); the settings to rebuild
    it (``model``, ``dataset``, ``task``, ``direction``, ``k``, ``perturb_seed``, ``visual``, ``text``,
    ``pair_max``); its cost (``evaluations``, ``budget``, ``hits``, ``seconds``, ``candidates_tried``);
    ``cancelled`` when it was stopped. ``source`` is the Dataset object searched when one was passed (not in the
    JSON)."""

    model: str
    dataset: dict
    direction: Optional[str]
    k: Optional[int]
    perturb_seed: int
    visual: list
    text: list
    pair_max: int
    budget: int
    task: str = "retrieval"
    evaluations: int = 0
    hits: int = 0
    seconds: float = 0.0
    candidates_tried: int = 0
    exhausted: bool = False
    cancelled: bool = False
    results: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict, repr=False)  # (example, axis, name, severity) -> PerturbResult
    source: Optional[Dataset] = field(default=None, repr=False, compare=False)

    @property
    def metric(self) -> str:
        return "iou" if self.task == "grounding" else "rank"

    def to_json(self) -> dict:
        keys = ("model", "dataset", "task", "direction", "k", "perturb_seed", "visual", "text", "pair_max", "budget",
                "evaluations", "hits", "seconds", "candidates_tried", "exhausted", "cancelled", "results")
        return {"schema": 1, "metric": self.metric, "threshold": IOU_HIT if self.task == "grounding" else None,
                **{k: getattr(self, k) for k in keys}}

    def broken(self) -> list[dict]:
        return [r for r in self.results if r["status"] == "broken"]


class _Example:
    """One example: retrieval ``q`` (its query index), ``item``, ``caption``, ``positives``; grounding ``q`` (its
    expression's position), ``item``, ``ref`` (the expression's index in the item), ``expression``, ``box``."""

    def __init__(self, q: int, item: int, caption: Optional[int] = None, positives=None, ref: Optional[int] = None,
                 expression: str = "", box=None):
        self.q, self.item, self.caption, self.positives = q, item, caption, positives
        self.ref, self.expression, self.box = ref, expression, box
        self.emb: dict = {}  # (axis, name, severity) -> embedding (grounding: the perturbed input), or None
        self.spent = 0


# ---- the two tasks: what an example is, what an evaluation costs, what fails -------------------------------------
class _Retrieval:
    """Retrieval on images or videos: embeddings, ranks and thieves."""

    def __init__(self, model, ds, direction: str, k: int, perturb_seed: int, cache, res: SearchResult):
        self.model, self.ds, self.direction, self.k, self.seed0, self.res = model, ds, direction, k, perturb_seed, res
        self.bench = RetrievalBench(model, ds, cache=cache if cache is not None else EmbeddingCache(), lazy=True)
        self.V, self.T = self.bench.visuals()[2], self.bench.texts()[2]  # the clean gallery, encoded once

    def examples(self) -> list[_Example]:
        return _examples(self.bench, self.direction)

    def seed(self, ex: _Example, axis: str) -> int:
        return int(self.seed0) + (ex.item if axis == "visual" else ex.caption)

    def own(self, ex: _Example, axis: str):
        return self.ds.visual(ex.item) if axis == "visual" else self.bench.caption_texts[ex.caption]

    def clean(self, ex: _Example) -> tuple:
        return _rank(self.V, self.T, ex, self.direction, {})

    def cost(self, ex: _Example, ch: Change) -> int:
        return sum(1 for p in ch.parts if p not in ex.emb)

    def evaluate(self, ex: _Example, ch: Change):
        """(rank, the target ranked first), or None when a part changed nothing."""
        for p in ch.parts:
            if p not in ex.emb:
                ex.emb[p] = self._encode(ex, p)
        got = {p[0]: ex.emb[p] for p in ch.parts}
        if any(v is None for v in got.values()):
            return None
        return _rank(self.V, self.T, ex, self.direction, got)

    def _encode(self, ex: _Example, part: tuple):
        """The embedding of the example's own input under one part (one model evaluation), or None for a no-op or
        an edit the semantic gate dropped (no model call then). A video is perturbed whole; the model samples its
        frames as it samples the clean one's."""
        axis, name, sev = part
        r = _perturbed(self.own(ex, axis), name, sev, self.seed(ex, axis))
        if r is None:
            return None
        self.res.inputs[(ex.q,) + part] = r
        self.res.evaluations += 1
        ex.spent += 1
        enc = cached_encode_texts if axis == "text" else \
            cached_encode_videos if self.ds.kind == "video" else cached_encode_images
        return np.asarray(enc(self.model, [r.output], cache=self.bench.cache, records=[r.record]), np.float32)[0]

    def fails(self, value) -> bool:
        return value[0] > self.k

    def fell(self, value) -> float:
        return -value[0]  # the further the ground truth fell, the higher it ranks

    def fields(self, ex: _Example, clean, value) -> dict:
        d = {"caption": ex.caption, "clean_rank": clean[0]}
        if value is not None:
            top = value[1]
            thief = top if self.direction[0] == "t" else int(self.ds.text_items()[top])
            d.update(rank=value[0], thief=thief, thief_id=str(self.ds.item(thief).id))
        return d

    @property
    def hits(self) -> int:
        return self.bench.cache.hits


class _Grounding:
    """Grounding on images: the predicted box's IoU with the expression's box."""

    def __init__(self, model, ds, perturb_seed: int, res: SearchResult):
        self.model, self.ds, self.seed0, self.res = model, ds, perturb_seed, res
        self._images: dict = {}

    def examples(self) -> list[_Example]:
        return _ref_examples(self.ds)

    def seed(self, ex: _Example, axis: str) -> int:
        return int(self.seed0) + ex.item

    def image(self, item: int):
        if item not in self._images:
            self._images[item] = self.ds.visual(item)
        return self._images[item]

    def own(self, ex: _Example, axis: str):
        return self.image(ex.item) if axis == "visual" else ex.expression

    def _ground(self, ex: _Example, image, expression: str) -> float:
        return round(float(ground_many(self.model, [image], [expression])[0].iou(ex.box)), 6)

    def clean(self, ex: _Example) -> float:
        return self._ground(ex, self.image(ex.item), ex.expression)

    def cost(self, ex: _Example, ch: Change) -> int:
        return 0 if any(p in ex.emb and ex.emb[p] is None for p in ch.parts) else 1

    def evaluate(self, ex: _Example, ch: Change):
        """The IoU with the change's parts applied (one model evaluation), or None when a part changed nothing."""
        for p in ch.parts:
            if p not in ex.emb:
                r = _perturbed(self.own(ex, p[0]), p[1], p[2], self.seed(ex, p[0]))
                if r is not None:
                    self.res.inputs[(ex.q,) + p] = r
                ex.emb[p] = None if r is None else r.output
        got = {p[0]: ex.emb[p] for p in ch.parts}
        if any(v is None for v in got.values()):
            return None
        self.res.evaluations += 1
        ex.spent += 1
        text = got.get("text", ex.expression)
        return self._ground(ex, got.get("visual", self.image(ex.item)), text if text.strip() else "?")

    def fails(self, value) -> bool:
        return not value > IOU_HIT

    def fell(self, value) -> float:
        return value

    def fields(self, ex: _Example, clean, value) -> dict:
        d = {"ref": ex.ref, "expression": ex.expression, "clean_iou": clean}
        if value is not None:
            d.update(iou=value, thief=None, thief_id=None)
        return d

    hits = 0


def _perturbed(x, name: str, severity: int, seed: int):
    """The PerturbResult of ``x`` under one part, or None when it changed nothing (a no-op, a dropped edit)."""
    r = perturb(x, name, severity, seed=seed)
    return None if is_no_op(r.record) or dropped_reason(r.record) else r


# ---- the search ---------------------------------------------------------------------------------------------------
def search(model: str = "builtin:tiny-clip", dataset="builtin", *, task: str = "retrieval", n: Optional[int] = None,
           split: Optional[str] = None, seed: Optional[int] = None, root=None, direction: Optional[str] = None,
           k: int = 1, visual=None, text=None, pair_max: int = 2, budget: int = 5000, perturb_seed: int = 0,
           device: Optional[str] = None, cache: Optional[EmbeddingCache] = None,
           progress: Optional[Callable[[dict], None]] = None,
           cancel: Optional[threading.Event] = None) -> SearchResult:
    """The weakest breaking change of every example (module docstring). One-line :class:`FailureError` on bad
    input (an unknown task or unavailable perturbation, a direction the dataset has not, k < 1 or above the
    gallery, a budget below 1, a dataset without captions or referring expressions, a model that cannot do the
    task)."""
    if task not in SEARCH_TASKS:
        raise FailureError(f"the search runs on {' and '.join(SEARCH_TASKS)}, not {task!r}")
    if task == "grounding" and direction is not None:
        raise FailureError(f"direction is a retrieval option; grounding has none (got {direction!r})")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise FailureError(f"k must be a positive integer, got {k!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise FailureError(f"budget must be a positive number of model evaluations, got {budget!r}")
    if not isinstance(pair_max, int) or not 0 <= pair_max <= 5:
        raise FailureError(f"pair_max must be in 0..5 (0: no pairs), got {pair_max!r}")
    ds, ds_info = _dataset(dataset, n=n, split=split, seed=seed, root=root)
    kind = ds.kind if ds.kind in ("image", "video") else "image"
    if task == "grounding" and kind != "image":
        raise FailureError(f"grounding runs on images; {ds.name} holds {ds.kind}s")
    vis = _check_names((VIDEO if kind == "video" else VISUAL) if visual is None else visual, kind)
    txt = _check_names(TEXT if text is None else text, "text")
    if not vis and not txt:
        raise FailureError("nothing to search: no visual and no text perturbation")
    if task == "retrieval":
        direction = direction or DIRECTIONS[kind][0]
        if direction not in DIRECTIONS[kind]:
            raise FailureError(f"direction {direction!r} is not one of {ds.name}'s ({', '.join(DIRECTIONS[kind])})")
    res = SearchResult(model=str(model), dataset=ds_info, task=task, direction=direction,
                       k=int(k) if task == "retrieval" else None, perturb_seed=int(perturb_seed), visual=vis,
                       text=txt, pair_max=int(pair_max), budget=int(budget),
                       source=dataset if isinstance(dataset, Dataset) else None)
    scorer = _scorer(model, ds, res, device, cache)
    t0 = time.process_time()
    hits0 = scorer.hits
    examples = scorer.examples()
    clean = {ex.q: scorer.clean(ex) for ex in examples}
    open_ = [ex for ex in examples if not scorer.fails(clean[ex.q])]
    found: dict = {}
    cands = candidates(vis, txt, pair_max)
    for ci, ch in enumerate(cands):
        if not open_ or res.exhausted or res.cancelled:
            break
        if cancel is not None and cancel.is_set():
            res.cancelled = True
            break
        res.candidates_tried = ci + 1
        still = []
        for ex in open_:
            if cancel is not None and cancel.is_set():
                res.cancelled = True
            if res.cancelled or res.evaluations + scorer.cost(ex, ch) > budget:
                res.exhausted = res.exhausted or not res.cancelled
                still.append(ex)
                continue
            value = scorer.evaluate(ex, ch)
            if value is not None and scorer.fails(value):
                found[ex.q] = (ch, value)
            else:
                still.append(ex)  # it holds, or a part was a no-op / a dropped edit: no change to try
        open_ = still
        if progress:
            progress({"candidate": ci + 1, "candidates": len(cands), "open": len(open_), "broken": len(found),
                      "evaluations": res.evaluations, "budget": budget})
    res.results = _results(ds, examples, clean, found, {ex.q for ex in open_}, scorer, res)
    res.seconds = round(time.process_time() - t0, 3)
    res.hits = scorer.hits - hits0
    return res


def _dataset(dataset, *, n=None, split=None, seed=None, root=None) -> tuple[Dataset, dict]:
    """(the dataset, how the result names it): a Dataset object as it is, else the registered one built."""
    if isinstance(dataset, Dataset):
        if split is not None or seed is not None or root is not None or (n is not None and n != len(dataset)):
            raise FailureError("split, seed, root and n choose a registered dataset; a Dataset object is searched as "
                               f"it is ({len(dataset)} items)")
        if len(dataset) == 0:
            raise FailureError(f"the dataset {dataset.name or ''} is empty".replace("  ", " "))
        return dataset, {"name": dataset.name, "split": getattr(dataset, "split", None), "n": len(dataset),
                         "seed": None, "root": None, "object": True}
    opts = {k2: v for k2, v in (("split", split), ("n", n), ("seed", seed), ("root", root)) if v is not None}
    try:
        ds = build(str(dataset), **opts)
    except (KeyError, ValueError, TypeError) as e:
        raise FailureError(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)) from None
    return ds, {"name": ds.name, "split": getattr(ds, "split", None), "n": len(ds), "seed": getattr(ds, "seed", None),
                "root": str(root) if root else None}


def _scorer(model, ds, res: SearchResult, device, cache):
    """The task's scorer on the loaded model (one-line FailureError for a model or dataset it cannot do)."""
    try:
        m = load(str(model), device)
        if res.task == "grounding":
            if not (callable(getattr(m, "ground", None)) or callable(getattr(m, "ground_batch", None))):
                raise FailureError(f"model {model!r} cannot ground referring expressions; use a grounding model, "
                                   "e.g. builtin:tiny-vilt")
            scorer = _Grounding(m, ds, res.perturb_seed, res)
            if not any(ex for ex in scorer.examples()):
                raise FailureError(f"{ds.name} has no ground truth for grounding: no item has a referring "
                                   "expression with a box")
            return scorer
        check_model(m, ds.kind)
        scorer = _Retrieval(m, ds, res.direction, res.k, res.perturb_seed, cache, res)
    except FailureError:
        raise
    except (SweepError, KeyError, ValueError, TypeError) as e:
        raise FailureError(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)) from None
    gallery = len(ds) if res.direction[0] == "t" else len(scorer.bench.caption_texts)
    if res.k > gallery:
        raise FailureError(f"k {res.k} is larger than the gallery: {res.direction} ranks {gallery}")
    return scorer


def _examples(bench: RetrievalBench, direction: str) -> list[_Example]:
    """Retrieval's examples: every caption (t2i / t2v) or every captioned visual (i2t / v2t), in order."""
    if direction[0] == "t":
        return [_Example(q, int(bench.text_items[q]), q, list(bench.text_pos[q])) for q in range(len(bench.text_items))]
    return [_Example(q, int(i), int(bench.caption_of[int(i)]), list(bench.visual_pos[q]))
            for q, i in enumerate(bench.captioned)]


def _ref_examples(ds) -> list[_Example]:
    """Grounding's examples: every referring expression of every item, in order."""
    out = []
    for i in range(len(ds)):
        for r, ref in enumerate(ds.item(i).refs or ()):
            out.append(_Example(len(out), i, ref=r, expression=ref.expression, box=ref.box))
    return out


def _rank(V: np.ndarray, T: np.ndarray, ex: _Example, direction: str, got: dict) -> tuple[int, int]:
    """(the ground truth's rank, the target ranked first) with the example's own inputs replaced by ``got``."""
    if direction[0] == "t":
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


def _results(ds, examples, clean, found, open_q, scorer, res: SearchResult) -> list[dict]:
    out = []
    for ex in examples:
        c = clean[ex.q]
        ch, value = found.get(ex.q, (None, None))
        d = {"item": ex.item, "id": str(ds.item(ex.item).id), "query": ex.q, **scorer.fields(ex, c, value),
             "evaluations": ex.spent}
        if scorer.fails(c):
            d.update(status="fails clean", change=None)
        elif ch is not None:
            d.update(status="broken", change=[{"axis": a, "perturbation": p, "severity": s,
                                               "seed": scorer.seed(ex, a)} for a, p, s in ch.parts],
                     weakness=list(ch.weakness))
        else:
            left = ex.q in open_q
            d.update(status="cancelled" if left and res.cancelled else "exhausted" if left and res.exhausted
                     else "holds", change=None)
        out.append(d)
    order = {"broken": 0, "holds": 1, "exhausted": 2, "cancelled": 3, "fails clean": 4}
    out.sort(key=lambda d: (order[d["status"]], tuple(d.get("weakness") or ()),
                            scorer.fell(_value(d)) if d["status"] == "broken" else 0, d["item"], d["query"]))
    for i, d in enumerate(out):
        d["rank_in_suite"] = i + 1 if d["status"] == "broken" else None
    return out


def _value(d: dict):
    """A broken result's outcome as its scorer reads it: (rank, _) for retrieval, the IoU for grounding."""
    return d["iou"] if "iou" in d else (d["rank"], None)


def save(res: SearchResult, path) -> Path:
    p = Path(path)
    p.write_text(json.dumps(res.to_json(), indent=1) + "\n", encoding="utf-8")
    return p


__all__ = ["search", "SearchResult", "Change", "candidates", "VISUAL", "VIDEO", "TEXT", "SEVERITIES",
           "SEARCH_TASKS", "save"]
