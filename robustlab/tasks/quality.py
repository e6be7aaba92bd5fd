"""A model's quality on a built-in held-out split, as a training recipe stores it in its checkpoint's metadata."""
from __future__ import annotations

from robustlab.datasets import build
from robustlab.tasks.registry import get


def heldout_quality(task: str, model, dataset: str, n: int, pairs: int | None = None,
                    size: int | None = None) -> dict:
    """Flat metrics (rounded to 4 places) of ``task`` on the first ``n`` items of a built-in dataset's held-out
    test split (world seed 1000), clean, rendered at ``size`` px (default: the dataset's): what a training recipe
    stores in its checkpoint's metadata."""
    opts = {"n": pairs} if pairs is not None else {}
    ds = build(dataset, split="test", n=int(n), **({"size": int(size)} if size else {}))
    r = get(task).evaluate(model, ds, **opts)[0]
    flat = {k: round(v, 4) if isinstance(v, float) else v for k, v in r.flat().items()}
    return {**flat, "n": r.n, "dataset": r.dataset, "seed": ds.params.get("seed"),
            **({"size": ds.params.get("size")} if size else {})}


__all__ = ["heldout_quality"]
