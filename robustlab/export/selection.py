"""Basket examples from a selection on the Embeddings view (items picked on the t-SNE map): the perturbed
versions of the selected items with their records, and where each item came from (regenerable)."""
from __future__ import annotations

import numpy as np

from robustlab.diagnostics.views import EmbeddingPoints, caption_columns, selected_items
from robustlab.export.basket import builtin_source, make_example
from robustlab.perturb.condition import Condition


def _model_info(model_id: str, clean_emb, pert_emb) -> dict | None:
    if not model_id:
        return None
    return {"id": model_id, "view": "embeddings",
            "scores": {"cosine_clean_vs_perturbed": round(float(np.dot(clean_emb, pert_emb)), 6)}}


def gallery_source(dataset, i: int, field: str | None = None) -> dict:
    """Where item ``i`` came from, for a basket example: the built-in world (regenerable from seed and index), an
    upload (its content hash), or a dataset on disk (name, split, root, item id)."""
    meta = dataset.item(i).meta
    extra = {"field": field} if field else {}
    name = dataset.item(i).id
    if getattr(dataset, "source", None) == "builtin":
        if dataset.kind == "video":  # robustlab.datasets.synthetic.world.sample_video(seed, index)
            if field is None:
                extra["size"] = int(np.asarray(dataset.visual(i)).shape[1])
            return builtin_source("video", meta.get("seed", 0), meta.get("index", i), name, **extra)
        return builtin_source("gallery", meta.get("seed", 0), i, name, **extra)
    if getattr(dataset, "source", None) == "upload":
        src = {"type": "upload", "name": name, "gallery_index": int(i), **extra}
        if meta.get("hash"):
            src["content_hash"] = meta["hash"]
        return src
    return {"type": "dataset", **dataset.item_source(i), **extra}


def selection_examples(bench, points: EmbeddingPoints, rows, visual_cond: Condition, text_cond: Condition,
                       model_id: str = "") -> list:
    """Basket examples (``robustlab.export.basket.Example``) for the perturbed versions of the selected items: one per
    (item, modality) whose modality is perturbed, with its perturbation record. Clean-only selections give []."""
    ds = bench.dataset
    col = caption_columns(bench)
    fps = float(getattr(ds, "fps", 8.0)) if bench.kind == "video" else None
    out = []
    for item, mod in selected_items(points, rows):
        if mod == bench.kind and not visual_cond.clean:
            vis, recs, emb = bench.visuals(visual_cond)
            clean_emb = bench.visuals(Condition())[2]
            ex = make_example(mod, ds.visual(item), (vis[item], recs[item]), gallery_source(ds, item),
                              label=ds.item(item).id, fps=fps,
                              model=_model_info(model_id, clean_emb[item], emb[item]))
        elif mod == "text" and not text_cond.clean and item in col:
            j = col[item]
            caps, recs, emb = bench.texts(text_cond)
            clean_caps, _, clean_emb = bench.texts(Condition())
            ex = make_example("text", clean_caps[j], (caps[j], recs[j]), gallery_source(ds, item, "caption"),
                              label=f"{ds.item(item).id} caption",
                              model=_model_info(model_id, clean_emb[j], emb[j]))
        else:
            continue
        out.append(ex)
    return out


__all__ = ["gallery_source", "selection_examples"]
