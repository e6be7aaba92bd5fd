"""Find the failures: where each example breaks (:mod:`robustlab.failures.breaking`).

    >>> import robustlab as rl
    >>> fmap = rl.failures("builtin:tiny-clip", "builtin", n=50, perturbations="gaussian_noise,defocus_blur")
    >>> fmap.items[0]      # {"item", "id", "perturbation", "breaks_at", "ranks", "thief", ...}
    >>> fmap.save("runs/failures")   # failures.json next to the sweep's cells
    >>> res = rl.failures.search("builtin:tiny-clip", "builtin", n=20, budget=3000)   # the weakest breaking changes
    >>> rl.failures.export_suite(res, "runs/suite")      # `robustlab regenerate runs/suite` rebuilds and re-scores
    >>> rl.failures.search("builtin:tiny-vilt", "builtin-refs", task="grounding", n=12)  # videos and grounding too
    >>> rl.failures("builtin:tiny-clip", rl.datasets.build("builtin", n=50), perturbations="fog")  # a Dataset object

This package is callable: ``robustlab.failures(...)`` (``rl.failures``) is :func:`failures`, and ``import
robustlab.failures.breaking`` still works (as ``rl.perturb``). It sits above the sweeps (``robustlab.bench``) and
below the command line (``robustlab failures``).
"""
import sys
import types

from robustlab.failures.breaking import (FILE, HUB_SIZE, IOU_HIT, SCHEMA, SCHEMA_PATH, TASKS, FailureError,
                                         FailureMap, failure_spec, failures, resolve_perturbations, schema)
from robustlab.failures.refine import refine_items
from robustlab.failures.adversarial import SearchResult, candidates, search
from robustlab.failures.slicing import dataset_attributes, failure_slices
from robustlab.failures.suite import export_suite, rescore_suite

__all__ = ["failures", "FailureMap", "FailureError", "failure_spec", "resolve_perturbations", "schema", "SCHEMA",
           "SCHEMA_PATH", "TASKS", "IOU_HIT", "HUB_SIZE", "FILE", "failure_slices", "dataset_attributes",
           "refine_items", "search", "SearchResult", "candidates", "export_suite", "rescore_suite"]


class _CallablePackage(types.ModuleType):
    """Calling this package calls :func:`failures` (``rl.failures(model, dataset, ...)``)."""

    def __call__(self, *args, **kwargs):
        return failures(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
