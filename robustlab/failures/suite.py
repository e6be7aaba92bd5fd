"""An adversarial suite: the search's weakest breaking changes as a basket export that regenerates bit for bit.

:func:`export_suite` writes the broken examples of a :class:`~robustlab.failures.adversarial.SearchResult` (ranked, the
weakest first) as one basket export (:mod:`robustlab.export`): each example is one manifest entry, its first
perturbed part the entry and the other its ``parts`` (a visual × text pair), each with its clean input (an image, a
video's exact frames, a caption or a referring expression), its perturbed output and its perturbation record; the
entry's ``model`` holds the model, the task, the example, its change, the score it fell to (retrieval: the rank;
grounding: the IoU) and the thief. ``suite.json`` beside the manifest holds the search's settings (model, dataset,
task, direction, k, seeds) and the ranked list. ``robustlab regenerate DIR`` then regenerates every perturbed input
from its record and checks it against the record's hash and the exported file (as for any export), and, as the
folder holds ``suite.json``, re-scores each example (:func:`rescore_suite`): the model is loaded, the dataset
rebuilt (retrieval: the clean gallery encoded through the embedding cache), the example's own inputs replaced by
the regenerated ones, and its rank (IoU) must be the recorded one. A part that is a no-op is never a change (the
search skips it), so every exported part changed its input. A suite searched on a Dataset object (not a registered
name) regenerates the same; re-scoring it needs that object (``rescore_suite(dir, dataset=...)``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np

from robustlab.bench.cells import load
from robustlab.datasets import build
from robustlab.engine.cache import EmbeddingCache
from robustlab.export.basket import make_example
from robustlab.export.manifest import export_dir
from robustlab.export.manifest.reader import ExportReader, load_clean
from robustlab.export.manifest.regenerate import regenerate_record
from robustlab.export.selection import gallery_source
from robustlab.failures.adversarial import SearchResult, _Example, _examples, _rank, _ref_examples
from robustlab.failures.common import IOU_HIT, FailureError
from robustlab.tasks.grounding import ground_many
from robustlab.tasks.retrieval_bench import RetrievalBench

SUITE = "suite.json"
FPS = 8.0  # a video's frame rate in the export when its dataset has none


def _source(ds, res: SearchResult, r: dict, axis: str) -> dict:
    """Where the example's clean input came from (:func:`robustlab.export.selection.gallery_source`), with the
    search's dataset and the example's place in it."""
    d = res.dataset
    extra = {"dataset": d["name"], "split": d.get("split"), "n": d.get("n"), "item": int(r["item"])}
    if axis == "text":
        extra.update({"ref": int(r["ref"])} if res.task == "grounding" else {"caption": int(r["caption"])})
    field = None if axis == "visual" else "expression" if res.task == "grounding" else "caption"
    return {**gallery_source(ds, int(r["item"]), field), **extra}


def _dataset(info: dict, given=None):
    """The suite's dataset: ``given`` (a Dataset object) or the registered one rebuilt from ``info``."""
    if given is not None:
        return given
    if info.get("object"):
        raise FailureError(f"this suite was searched on a Dataset object ({info.get('name')}), not a registered "
                           "dataset: pass it (rescore_suite(dir, dataset=...)) to re-score")
    return build(info["name"], **{k: v for k, v in info.items() if k in ("split", "n", "seed", "root")
                                  and v is not None})


def export_suite(res: SearchResult, out, top: Optional[int] = None) -> Path:
    """Write the suite (module docstring) into the folder ``out``; returns it. One-line FailureError when nothing
    broke."""
    broken = res.broken()[: top if top else None]
    if not broken:
        raise FailureError("nothing to export: the search found no breaking change")
    ds = _dataset(res.dataset, res.source)
    fps = float(getattr(ds, "fps", None) or FPS) if ds.kind == "video" else None
    examples = []
    for r in broken:
        parts = []
        for p in r["change"]:
            pr = res.inputs[(r["query"], p["axis"], p["perturbation"], p["severity"])]
            visual = p["axis"] == "visual"
            kind = ds.kind if visual else "text"
            clean = ds.visual(r["item"]) if visual else r["expression"] if res.task == "grounding" \
                else ds.texts()[r["caption"]]
            parts.append(make_example(kind, clean, (pr.output, pr.record), _source(ds, res, r, p["axis"]),
                                      label=f"{r['id']}-{p['axis']}", fps=fps if kind == "video" else None))
        scores = ({"clean_iou": r["clean_iou"], "iou": r["iou"]} if res.task == "grounding"
                  else {"clean_rank": r["clean_rank"], "rank": r["rank"]})
        model = {"id": res.model, "view": "search", "task": res.task, "direction": res.direction, "k": res.k,
                 "item": r["item"], "query": r["query"], "change": r["change"], "weakness": r["weakness"],
                 "scores": scores, "thief": r.get("thief"), "thief_id": r.get("thief_id"),
                 "rank_in_suite": r["rank_in_suite"],
                 **({"ref": r["ref"]} if res.task == "grounding" else {"caption": r["caption"]})}
        main = parts[0]
        examples.append(make_example(main.kind, main.clean, (main.output, main.record), main.source,
                                     label=str(r["id"]), fps=main.fps, model=model, parts=parts[1:] or None))
    out = Path(out)
    export_dir(examples, out)
    suite = {"schema": 1, **{k: v for k, v in res.to_json().items() if k != "results"}, "examples": broken}
    (out / SUITE).write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")
    return out


def is_suite(src) -> bool:
    p = Path(src)
    return p.is_dir() and (p / SUITE).is_file()


def rescore_suite(src, device: Optional[str] = None, cache: Optional[EmbeddingCache] = None,
                  dataset=None) -> list[dict]:
    """Re-score every example of a suite folder from its regenerated inputs: ``[{"id", "item", "rank" (grounding:
    "iou"), "recorded", "same", "breaks"}]`` (module docstring). ``dataset``: the Dataset object a suite searched on
    one was made from."""
    p = Path(src)
    suite = json.loads((p / SUITE).read_text(encoding="utf-8"))
    ds = _dataset(suite["dataset"], dataset)
    model = load(suite["model"], device)
    grounding = suite.get("task", "retrieval") == "grounding"
    if grounding:
        by_key = {(ex.item, ex.ref): ex for ex in _ref_examples(ds)}
    else:
        bench = RetrievalBench(model, ds, cache=cache if cache is not None else EmbeddingCache(), lazy=True)
        V, T = bench.visuals()[2], bench.texts()[2]
        by_key = {(ex.item, ex.caption): ex for ex in _examples(bench, suite["direction"])}
    out = []
    with ExportReader(p) as reader:
        for _n, entry, _err in reader.entries():
            if entry is None:
                continue
            info = entry.get("model") or {}
            ex: _Example = by_key[(int(info["item"]), int(info["ref" if grounding else "caption"]))]
            got = {}
            for e in [entry] + list(entry.get("parts") or ()):
                clean, _fps = load_clean(e, reader.read(e["clean"]["path"]))
                got["text" if e["kind"] == "text" else "visual"] = (e["kind"], regenerate_record(clean, e["record"]))
            if grounding:
                image = got["visual"][1] if "visual" in got else ds.visual(ex.item)
                text = got["text"][1] if "text" in got else ex.expression
                value = round(float(ground_many(model, [image], [text if text.strip() else "?"])[0].iou(ex.box)), 6)
                rec = float(info["scores"]["iou"])
                out.append({"id": entry["id"], "item": ex.item, "ref": ex.ref, "iou": value, "recorded": rec,
                            "same": abs(value - rec) <= 1e-6, "breaks": not value > IOU_HIT})
                continue
            emb = {axis: np.asarray(_encode(model, kind, x), np.float32)[0] for axis, (kind, x) in got.items()}
            rank, _top = _rank(V, T, ex, suite["direction"], emb)
            rec = int(info["scores"]["rank"])
            out.append({"id": entry["id"], "item": ex.item, "rank": rank, "recorded": rec, "same": rank == rec,
                        "breaks": rank > int(suite["k"])})
    return out


def _encode(model, kind: str, x):
    if kind == "text":
        return model.encode_texts([x])
    return model.encode_videos([x]) if kind == "video" else model.encode_images([x])


__all__ = ["export_suite", "rescore_suite", "is_suite", "SUITE"]
