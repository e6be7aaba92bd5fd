"""A failure map's items, read back from the sweep's cells. The reading lives at the sweeps' layer
(:mod:`robustlab.bench.report_breaks`: a plain sweep's report reads its cells the same way); this module keeps the
names the failures layer and its tests use. (:mod:`robustlab.failures.breaking` runs the sweep; the module
docstring there says what each field means.)"""
from __future__ import annotations

from robustlab.bench.report_breaks import (_breaks, _expand, _grounding_items, _items, _retrieval_arrays,
                                           _retrieval_items, _summary, _thieves, _vqa_items, _with_baseline)

__all__ = ["_breaks", "_expand", "_items", "_retrieval_arrays", "_retrieval_items", "_grounding_items",
           "_vqa_items", "_with_baseline", "_summary", "_thieves"]
