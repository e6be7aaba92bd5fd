"""The slices of a failure map: :func:`discover_slices` and :func:`metadata_slices` run on a map's own examples.

:func:`failure_slices` is what ``robustlab.failures(...)`` and ``robustlab failures`` call by default (``slices=False``
/ ``--no-slices`` skip it). The map's examples are per query (retrieval) or expression (grounding) or question
(VQA); slices are groups of *items* (dataset indices), so the examples are read per item:

* an item **holds clean** when at least one of its examples does not fail on the clean input; the items that fail
  clean at every example are left out of the population (they have no breaking point);
* per perturbation, the **slice severity** ``s*`` is the swept severity whose failure rate (an item breaking at
  ``s*`` or below) is nearest 0.35 (ties: the lower) -- the rule of the discovery benchmark
  (``benchmarks/bench_slice_discovery.py``), which reads no attribute; an item **fails** when one of its examples
  breaks at a severity in ``1..s*``; its breaking severity (``mean_breaking_severity`` of a slice) is the lowest;
* ``perturbation: null`` is every perturbation together: an item fails when it fails under any of them (each at its
  own ``s*``).

**Discovered** slices (``"kind": "discovered"``) come from :func:`robustlab.failures.slices.discover_slices` on the
model's own clean visual embeddings (the embedding cache: the sweep encoded them), the perturbed ones at ``s*`` (a
visual perturbation) and the items' own captions through the model's text tower -- never any metadata. A model with
no dual encoder (a fusion model for grounding or VQA) has no embeddings of its own: the embeddings then come from
the built-in CLIP of the same kind (``builtin:tiny-clip``, ``builtin:tiny-clip-video-meanp``), named in each slice's
``embedder``. **Metadata** slices (``"kind": "metadata"``) slice by the dataset's own attributes where it has them
(:func:`dataset_attributes`: the built-in world's scene attributes), side by side: the best ``k`` per perturbation,
each with ``significant`` (its Bonferroni-guarded score above 0; discovered slices are significant by construction).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from robustlab.engine.cache import EmbeddingCache
from robustlab.failures.slices import discover_slices, metadata_slices
from robustlab.models import load_model
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import RetrievalBench

TARGET_RATE = 0.35  # the slice severity: the swept severity whose failure rate is nearest this (the benchmark's rule)
EMBEDDERS = {"image": "builtin:tiny-clip", "video": "builtin:tiny-clip-video-meanp"}  # models without a dual encoder


def dataset_attributes(ds) -> Optional[dict]:
    """``{attribute: one value set per item}`` of a dataset that has attributes, else None: the built-in world's
    scene attributes (background, number of objects, the colours, shapes and textures present, size when all
    objects share one), or items whose ``meta`` holds ``"categories"`` (a list per item, e.g. COCO's)."""
    scenes = getattr(ds, "scenes", None)
    if scenes is not None and len(scenes) == len(ds) and all(hasattr(s, "objects") for s in scenes):
        attrs: dict = {"background": [], "objects": [], "color": [], "shape": [], "size": [], "texture": []}
        for sc in scenes:
            objs = sc.objects
            attrs["background"].append({sc.background})
            attrs["objects"].append({len(objs)})
            attrs["color"].append({o.color for o in objs})
            attrs["shape"].append({o.shape for o in objs})
            sizes = {o.size for o in objs}
            attrs["size"].append(sizes if len(sizes) == 1 else set())
            attrs["texture"].append({"striped"} if any(o.texture == "striped" for o in objs) else {"solid"})
        return attrs
    cats = [ds.item(i).meta.get("categories") for i in range(len(ds))]
    if any(cats):
        return {"category": [set(c or ()) for c in cats]}
    return None


def _per_item(fmap, n: int) -> tuple[np.ndarray, dict]:
    """(items holding clean, {perturbation: per-item lowest breaking severity >= 1, NaN for none})."""
    holds = np.zeros(n, bool)
    sev: dict = {}
    for it in fmap.items:
        i, at = int(it["item"]), it["breaks_at"]
        if at != 0:
            holds[i] = True
        row = sev.setdefault(it["perturbation"], np.full(n, np.nan))
        if at:
            row[i] = at if np.isnan(row[i]) else min(row[i], at)
    return holds, sev


def slice_severity(sev: np.ndarray, severities) -> int:
    """The swept severity whose failure rate (breaking at it or below) is nearest :data:`TARGET_RATE`."""
    rates = [float(np.mean(sev <= s)) for s in severities]
    return int(list(severities)[int(np.argmin([abs(r - TARGET_RATE) for r in rates]))])


def _caption(ds, i: int) -> str:
    item = ds.item(i)
    if item.texts:
        return str(item.texts[0])
    if item.refs:
        return str(item.refs[0].expression)
    return str(item.questions[0].question) if item.questions else ""


def _embedder(model, kind: str, device=None):
    """(the model that embeds, its spec): the map's model when it has a dual encoder, else the built-in CLIP."""
    need = ("encode_videos" if kind == "video" else "encode_images", "encode_texts")
    if all(callable(getattr(model, a, None)) for a in need):
        return model, getattr(model, "model_id", None)
    spec = EMBEDDERS[kind]
    return load_model(spec, device=device), spec


def memo_encoder(model):
    """``model.encode_texts`` remembered per list of texts (the same phrases are embedded once per model)."""
    memo: dict = {}

    def encode(texts):
        key = tuple(texts)
        if key not in memo:
            memo[key] = np.asarray(model.encode_texts(list(texts)), np.float32)
        return memo[key]
    return encode


def failure_slices(fmap, dataset, model, *, k: int = 5, min_size: Optional[int] = None, seed: int = 0,
                   n_boot: int = 1000, cache: Optional[EmbeddingCache] = None, metadata: bool = True) -> list[dict]:
    """The ``"slices"`` of a failure map (module docstring): per perturbation (``null`` first: all of them), the
    discovered slices best first, then the metadata slices best first. ``k``: the most of each kind per
    perturbation; ``min_size``: the smallest slice (default ``min(10, max(3, n // 10))``)."""
    n = len(dataset)
    holds, sev = _per_item(fmap, n)
    pop = np.flatnonzero(holds)
    min_size = int(min_size or min(10, max(3, n // 10)))
    if pop.size < 2 * min_size:
        return []
    emb_model, emb_spec = _embedder(model, dataset.kind)
    bench = RetrievalBench(emb_model, dataset, cache=cache if cache is not None else EmbeddingCache(), lazy=True)
    clean = bench.visuals()[2][pop]
    captions = [_caption(dataset, int(i)) for i in pop]
    encode = memo_encoder(emb_model)

    attrs = dataset_attributes(dataset) if metadata else None
    if attrs is not None:
        attrs = {a: [v[int(i)] for i in pop] for a, v in attrs.items()}
    axis = {p["perturbation"]: p["axis"] for p in fmap.perturbations}
    sevs = list(fmap.severities)
    cells = []  # (perturbation or None, failed over pop, breaking severity over pop, s*, perturbed embeddings)
    all_failed = np.zeros(pop.size, bool)
    all_sev = np.full(pop.size, np.nan)
    for name, row in sev.items():
        s = slice_severity(row[pop], sevs)
        failed = row[pop] <= s
        pert = None
        if axis.get(name) == "visual":
            pert = bench.visuals(Condition(name, s, int(fmap.perturb_seed)))[2][pop]
            bench.forget()
        cells.append((name, failed, np.where(failed, row[pop], np.nan), s, pert))
        all_failed |= failed
        all_sev = np.fmin(all_sev, np.where(failed, row[pop], np.nan))
    if len(cells) > 1:
        cells.insert(0, (None, all_failed, all_sev, None, None))
    out = []
    for name, failed, bsev, s, pert in cells:
        common = {"perturbation": name, "axis": axis.get(name) if name else None, "severity": s}
        found = discover_slices(failed, clean, pert, captions, encode, severity=bsev, k=k, min_size=min_size,
                                seed=seed, n_boot=n_boot)
        out += [_dict(x, pop, common, "discovered", emb_spec) for x in found]
        if attrs is not None:
            meta = metadata_slices(failed, attrs, severity=bsev, min_size=min_size, n_boot=n_boot, seed=seed)
            out += [_dict(x, pop, common, "metadata", None) for x in meta[:k]]
    return out


def _dict(s, pop: np.ndarray, common: dict, kind: str, embedder) -> dict:
    d = s.to_dict()
    d["members"] = [int(pop[i]) for i in d["members"]]
    d["examples"] = [int(pop[i]) for i in d["examples"]]
    d = {**common, "kind": kind, **d, "significant": bool(d["score"] > 0)}
    if embedder is not None:
        d["embedder"] = embedder
    for key in ("failure_rate", "rest_rate", "score", "difference"):
        d[key] = round(float(d[key]), 4)
    d["ci"] = [round(float(c), 4) for c in d["ci"]]
    if d.get("mean_breaking_severity") is not None:
        d["mean_breaking_severity"] = round(float(d["mean_breaking_severity"]), 3)
    return d


__all__ = ["failure_slices", "memo_encoder", "dataset_attributes", "slice_severity", "TARGET_RATE", "EMBEDDERS"]
