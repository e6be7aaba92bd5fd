"""An adversarial suite: the search's weakest breaking changes as a basket export that regenerates bit for bit.

:func:`export_suite` writes the broken examples of a :class:`~robustlab.failures.adversarial.SearchResult` (ranked, the
weakest first) as one basket export (:mod:`robustlab.export`): each example is one manifest entry, its first
perturbed part the entry and the other its ``parts`` (a visual × text pair), each with its clean input, its
perturbed output and its perturbation record; the entry's ``model`` holds the model, the example, its change, the
rank its ground truth fell to and the thief. ``suite.json`` beside the manifest holds the search's settings (model,
dataset, direction, k, seeds) and the ranked list. ``robustlab regenerate DIR`` then regenerates every perturbed
input from its record and checks it against the record's hash and the exported file (as for any export), and, as
the folder holds ``suite.json``, re-scores each example (:func:`rescore_suite`): the model is loaded, the clean
gallery encoded (the embedding cache), the example's own inputs replaced by the regenerated ones, and its rank must
be the recorded one. A part that is a no-op is never a change (the search skips it), so every exported part changed
its input.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np

from robustlab.bench.cells import load
from robustlab.datasets import build
from robustlab.engine.cache import EmbeddingCache
from robustlab.export.basket import builtin_source, combined_example
from robustlab.export.manifest import export_dir
from robustlab.export.manifest.reader import ExportReader, load_clean
from robustlab.export.manifest.regenerate import regenerate_record
from robustlab.failures.common import FailureError
from robustlab.failures.adversarial import SearchResult, _Example, _rank, _examples
from robustlab.tasks.retrieval_bench import RetrievalBench

SUITE = "suite.json"


def _source(res: SearchResult, item: int, axis: str, caption: int) -> dict:
    """Where the example's clean input came from: a built-in world item, or item ``item`` of a dataset on disk."""
    d = res.dataset
    extra = {"dataset": d["name"], "split": d.get("split"), "n": d.get("n"), "item": int(item)}
    if axis == "text":
        extra["caption"] = int(caption)
    if str(d["name"]).startswith("builtin"):
        return builtin_source("gallery", d.get("seed") or 0, item, **extra)
    return {"type": "dataset", "name": f"{d['name']}-{item}", "root": d.get("root"), **extra}


def export_suite(res: SearchResult, out, top: Optional[int] = None) -> Path:
    """Write the suite (module docstring) into the folder ``out``; returns it. One-line FailureError when nothing
    broke."""
    broken = res.broken()[: top if top else None]
    if not broken:
        raise FailureError("nothing to export: the search found no breaking change")
    ds = build(res.dataset["name"], **{k: v for k, v in res.dataset.items() if k in ("split", "n", "seed", "root")
                                        and v is not None})
    examples = []
    for r in broken:
        q = r["caption"] if res.direction == "t2i" else None
        parts = []
        for p in r["change"]:
            key = (_query(res, r), p["axis"], p["perturbation"], p["severity"])
            pr = res.inputs[key]
            clean = ds.visual(r["item"]) if p["axis"] == "visual" else ds.texts()[r["caption"]]
            parts.append(("image" if p["axis"] == "visual" else "text", clean, (pr.output, pr.record),
                          _source(res, r["item"], p["axis"], r["caption"]), f"{r['id']}-{p['axis']}"))
        model = {"id": res.model, "view": "search", "direction": res.direction, "k": res.k, "item": r["item"],
                 "caption": r["caption"], "query": q, "change": r["change"], "weakness": r["weakness"],
                 "scores": {"clean_rank": r["clean_rank"], "rank": r["rank"]}, "thief": r["thief"],
                 "thief_id": r["thief_id"], "rank_in_suite": r["rank_in_suite"]}
        ex = combined_example(parts, model=model, label=str(r["id"]))
        if ex is not None:
            examples.append(ex)
    out = Path(out)
    export_dir(examples, out)
    suite = {"schema": 1, **{k: v for k, v in res.to_json().items() if k != "results"}, "examples": broken}
    (out / SUITE).write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")
    return out


def _query(res: SearchResult, r: dict) -> int:
    """The example's query index (t2i: its caption; i2t: its position among the captioned items)."""
    return r["caption"] if res.direction == "t2i" else r["query"]


def is_suite(src) -> bool:
    p = Path(src)
    return p.is_dir() and (p / SUITE).is_file()


def rescore_suite(src, device: Optional[str] = None, cache: Optional[EmbeddingCache] = None) -> list[dict]:
    """Re-score every example of a suite folder from its regenerated inputs: ``[{"id", "item", "rank",
    "recorded", "same", "breaks"}]`` (module docstring)."""
    p = Path(src)
    suite = json.loads((p / SUITE).read_text(encoding="utf-8"))
    d = suite["dataset"]
    ds = build(d["name"], **{k: v for k, v in d.items() if k in ("split", "n", "seed", "root") and v is not None})
    model = load(suite["model"], device)
    bench = RetrievalBench(model, ds, cache=cache if cache is not None else EmbeddingCache())
    V, T = bench.visuals()[2], bench.texts()[2]
    by_item = {(ex.item, ex.caption): ex for ex in _examples(bench, suite["direction"])}
    out = []
    with ExportReader(p) as reader:
        for _n, entry, _err in reader.entries():
            if entry is None:
                continue
            info = entry.get("model") or {}
            ex: _Example = by_item[(int(info["item"]), int(info["caption"]))]
            got = {}
            for e in [entry] + list(entry.get("parts") or ()):
                clean, _fps = load_clean(e, reader.read(e["clean"]["path"]))
                output = regenerate_record(clean, e["record"])
                emb = model.encode_images([output]) if e["kind"] == "image" else model.encode_texts([output])
                got["visual" if e["kind"] == "image" else "text"] = np.asarray(emb, np.float32)[0]
            rank, _top = _rank(V, T, ex, suite["direction"], got)
            rec = int(info["scores"]["rank"])
            out.append({"id": entry["id"], "item": ex.item, "rank": rank, "recorded": rec, "same": rank == rec,
                        "breaks": rank > int(suite["k"])})
    return out


__all__ = ["export_suite", "rescore_suite", "is_suite", "SUITE"]
