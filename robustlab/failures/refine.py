"""``--refine``: the breaking parameter value between two severities (issue 47, item 1).

An example that holds at severity ``a`` (the swept severity just below its ``breaks_at``) and fails at ``b =
breaks_at`` is bisected between the two severities' parameters: ``params(t) = params(a) + t · (params(b) -
params(a))`` for ``t`` in [0, 1] (an integer parameter rounded to the nearest integer), ``steps`` halvings (default
6, so ``t`` is known to 1/64). ``t = 0`` holds and ``t = 1`` fails by the sweep; each step evaluates the midpoint
and keeps the half where the outcome changes. The example's item then carries ``"refined"``:

* ``refinable: true`` -- ``from_severity`` / ``to_severity`` (a, b), ``t`` (the lowest failing fraction found) and
  ``t_pass`` (the highest holding one; ``t - t_pass = 2**-steps``), ``params`` (the breaking parameters, at ``t``),
  ``params_pass`` (at ``t_pass``), ``changed`` (the parameters that vary), ``value`` (rank or IoU or 1/0 answer at
  ``params``, a VQA answer scored as the VQA task scores it: :func:`robustlab.tasks.vqa.judge`) and ``record``:
  the perturbation record of the example's own input at ``params`` (``severity`` b, ``"params_override": true``,
  the seed, the input's and output's hashes), so ``robustlab.perturb.regenerate(record, clean_input)`` (and
  ``robustlab regenerate`` of a basket export) rebuilds it bit for bit;
* ``refinable: false`` with ``why``: the example breaks at the lowest swept severity (no holding severity's
  parameters to start from: severity 0 is the clean input, not a parameter value), or the two severities differ in a
  parameter that is not a number (a mode, a string, a list).

What is re-evaluated at ``params(t)`` is what the sweep perturbed: a gallery perturbation (the visuals for t2i, the
captions for i2t) perturbs the whole gallery at ``params(t)`` (each item with its own seed, as in the sweep; one
gallery per ``t``, shared by every example bisected over the same two severities), a query perturbation (the image
of an i2t query, the caption of a t2i query, a grounding image or expression, a VQA image or question) only the
example's own input. A video is perturbed whole at ``params(t)`` and the model samples its frames, as it samples
the sweep's lazily perturbed ones (the same frames, bit for bit), so a video example refines as an image does.
Encodings here bypass the embedding cache (its keys name a severity, not parameters).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from robustlab.engine.cache import EmbeddingCache
from robustlab.failures.common import IOU_HIT
from robustlab.metrics.retrieval import ranks as rank_of
from robustlab.perturb import get_perturbation, perturb
from robustlab.perturb.specs import split_variant
from robustlab.tasks.grounding import ground_many
from robustlab.tasks.retrieval_bench import RetrievalBench
from robustlab.tasks.vqa import answers_with_scores, judge

STEPS = 6
SCALARS = (str, int, float, bool, type(None))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def table(name: str, severity: int) -> dict:
    """The parameters of ``name`` (``name/variant``) at ``severity`` from its severity table."""
    base, variant = split_variant(name, None)
    spec = get_perturbation(base)
    return dict(spec.variants[variant or spec.default_variant][int(severity)])


def refinable(name: str, lo: int, hi: int) -> tuple[bool, str, list]:
    """(refinable, why not, the parameters that change) between severities ``lo`` and ``hi`` of ``name``."""
    if lo < 1:
        return False, f"breaks at the lowest swept severity (s{hi}): no holding severity's parameters to start from", []
    a, b = table(name, lo), table(name, hi)
    if set(a) != set(b):
        return False, f"severities {lo} and {hi} have different parameters", []
    if not all(isinstance(v, SCALARS) for v in list(a.values()) + list(b.values())):
        return False, "a parameter is not a scalar (a list or a table)", []
    changed = sorted(key for key in a if a[key] != b[key])
    odd = [key for key in changed if not (_number(a[key]) and _number(b[key]))]
    if odd:
        return False, f"{', '.join(odd)} between severities {lo} and {hi} is not a number", []
    if not changed:
        return False, f"severities {lo} and {hi} have the same parameters", []
    return True, "", changed


def interpolate(a: dict, b: dict, t: float) -> dict:
    """``a + t · (b - a)`` on the numeric parameters that differ (integers in both rounded); the rest as ``a``."""
    out = dict(a)
    for key, va in a.items():
        vb = b[key]
        if va != vb and _number(va) and _number(vb):
            v = va + t * (vb - va)
            out[key] = int(round(v)) if isinstance(va, int) and isinstance(vb, int) else float(v)
    return out


def bisect(fails, steps: int = STEPS) -> tuple[float, float]:
    """(lowest failing t, highest holding t) after ``steps`` halvings of [0, 1], ``fails(0)`` false and
    ``fails(1)`` true assumed."""
    lo, hi = 0.0, 1.0
    for _ in range(int(steps)):
        mid = (lo + hi) / 2
        if fails(mid):
            hi = mid
        else:
            lo = mid
    return hi, lo


class _Evaluator:
    """The outcome of one example of a failure map with its perturbation at explicit parameters."""

    def __init__(self, fmap, ds, model, cache):
        self.fmap, self.ds, self.model, self.cache = fmap, ds, model, cache
        self.seed = int(fmap.perturb_seed)
        self._bench = None
        self._galleries: dict = {}

    @property
    def bench(self) -> RetrievalBench:
        if self._bench is None:
            self._bench = RetrievalBench(self.model, self.ds, cache=self.cache or EmbeddingCache(), lazy=True)
        return self._bench

    def own_input(self, it: dict):
        """(the example's own clean input, its seed): what its record is made from."""
        if it["axis"] == "visual":
            return self.ds.visual(int(it["item"])), int(it["seed"])
        if self.fmap.task == "retrieval":
            return self.ds.texts()[int(it["caption"])], int(it["seed"])
        item = self.ds.item(int(it["item"]))
        if self.fmap.task == "grounding":
            return item.refs[int(it["ref"])].expression, int(it["seed"])
        return item.questions[int(it["question"])].question, int(it["seed"])

    def _encode(self, axis: str, xs: list) -> np.ndarray:
        """Embeddings of perturbed captions (``axis`` "text") or visuals (images, or videos whole: the model
        samples their frames as the sweep's lazy perturbation does, bit for bit)."""
        if axis == "text":
            return np.asarray(self.model.encode_texts(xs), np.float32)
        enc = self.model.encode_videos if self.ds.kind == "video" else self.model.encode_images
        return np.asarray(enc(xs), np.float32)

    def _gallery(self, name: str, hi: int, params: dict, key) -> np.ndarray:
        if key not in self._galleries:
            if self.fmap.direction[0] == "t":  # the visuals are the gallery
                xs = [perturb(self.ds.visual(j), name, hi, seed=self.seed + j, params=params).output
                      for j in range(len(self.ds))]
                self._galleries[key] = self._encode("visual", xs)
            else:  # the captions are the gallery
                xs = [perturb(t, name, hi, seed=self.seed + j, params=params).output
                      for j, t in enumerate(self.bench.caption_texts)]
                self._galleries[key] = self._encode("text", xs)
        return self._galleries[key]

    def value(self, it: dict, hi: int, params: dict, key):
        """The example's rank / IoU / 1-0 answer with its perturbation at ``params`` (record severity ``hi``)."""
        name, task = it["perturbation"], self.fmap.task
        if task == "retrieval":
            b, t_first = self.bench, self.fmap.direction[0] == "t"
            if t_first:  # a caption queries the visuals
                q = int(it["caption"])
                pos, query, targets = b.text_pos[q], b.texts()[2][q], b.visuals()[2]
            else:  # a visual queries the captions
                i = int(it["item"])
                pos, query, targets = b.visual_pos[b.captioned.index(i)], b.visuals()[2][i], b.texts()[2]
            if (it["axis"] == "visual") == t_first:  # the perturbation is on the gallery's side
                targets = self._gallery(name, hi, params, key)
            else:
                x, s = self.own_input(it)
                query = self._encode(it["axis"], [perturb(x, name, hi, seed=s, params=params).output])[0]
            return int(rank_of((query @ targets.T)[None, :], [list(pos)])[0])
        item = self.ds.item(int(it["item"]))
        x, s = self.own_input(it)
        out = perturb(x, name, hi, seed=s, params=params).output
        if it["axis"] == "text":
            out = out if out.strip() else "?"
        visual = out if it["axis"] == "visual" else self.ds.visual(int(it["item"]))
        if task == "grounding":
            ref = item.refs[int(it["ref"])]
            expr = out if it["axis"] == "text" else ref.expression
            return round(float(ground_many(self.model, [visual], [expr])[0].iou(ref.box)), 6)
        qa = item.questions[int(it["question"])]
        question = out if it["axis"] == "text" else qa.question
        a, s = answers_with_scores(self.model, [visual], [question])[0]
        return judge(qa, a, s)[0]  # as the VQA task scores it (a multiple-choice question: the option picked)

    def fails(self, value) -> bool:
        if self.fmap.metric == "rank":
            return value > int(self.fmap.k)
        if self.fmap.metric == "iou":
            return not value > IOU_HIT
        return not value


def refine_item(ev: _Evaluator, it: dict, steps: int = STEPS) -> dict:
    """The ``"refined"`` object of one item (module docstring); None when it does not break under a perturbation."""
    at = it["breaks_at"]
    if not at:
        return None
    swept = [int(s) for s in it.get("ranks", it.get("scores", {}))]
    lo = max([s for s in swept if s < at], default=0)
    ok, why, changed = refinable(it["perturbation"], lo, at)
    if not ok:
        return {"refinable": False, "why": why}
    a, b = table(it["perturbation"], lo), table(it["perturbation"], at)
    values: dict = {}

    def fails(t: float) -> bool:
        p = interpolate(a, b, t)
        values[t] = ev.value(it, at, p, (it["perturbation"], it["axis"], lo, at, t))
        return ev.fails(values[t])
    t, t_pass = bisect(fails, steps)
    params = interpolate(a, b, t)
    if t not in values:  # no midpoint failed: the breaking parameters are the failing severity's own
        values[t] = ev.value(it, at, params, (it["perturbation"], it["axis"], lo, at, t))
    x, seed = ev.own_input(it)
    record = perturb(x, it["perturbation"], at, seed=seed, params=params).record
    return {"refinable": True, "from_severity": lo, "to_severity": at, "steps": int(steps), "t": t, "t_pass": t_pass,
            "changed": changed, "params": params, "params_pass": interpolate(a, b, t_pass),
            "value": values.get(t), "record": record}


def refine_items(fmap, ds, model, steps: int = STEPS, cache: Optional[EmbeddingCache] = None) -> list[dict]:
    """Every item of ``fmap`` with ``"refined"`` added to those that break under a perturbation (``breaks_at`` >= 1)."""
    ev = _Evaluator(fmap, ds, model, cache)
    out = []
    for it in fmap.items:
        r = refine_item(ev, it, steps)
        out.append({**it, "refined": r} if r is not None else dict(it))
    return out


__all__ = ["refine_items", "refine_item", "refinable", "interpolate", "bisect", "table", "STEPS"]
