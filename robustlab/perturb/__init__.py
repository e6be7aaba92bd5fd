"""robustlab.perturb: one registry of image / video / text perturbations with reproducible records.

This package is also callable: ``robustlab.perturb(x, name, severity, seed=0)`` (``rl.perturb``, the README's
functional API) is :func:`perturb`, and ``import robustlab.perturb.registry as R`` works (issue 46).

    >>> from robustlab.perturb import list_perturbations, perturb, regenerate
    >>> res = perturb(img, "gaussian_noise", severity=3, seed=0)    # PerturbResult(output, record)
    >>> out = regenerate(json.loads(json.dumps(res.record)), img)   # bit-for-bit the same output

Severity 0 is a clean pass-through; 1..5 follow the papers' tables (see each spec's ``severity_table`` and
``variants``). Sources: /work/shared/research/seeds_perturbations.md (§1.1, §1.3, §2.2).
Importing this package imports the built-ins' modules (:data:`robustlab.perturb.table.PERTURBATIONS`), which is
cheap: cv2/PIL/nlpaug/torch are imported on first use.
"""
import sys
import types

from robustlab.perturb.registry import (
    PerturbationSpec,
    PerturbResult,
    VersionMismatchWarning,
    get_perturbation,
    list_perturbations,
    perturb,
    regenerate,
    register,
)
from robustlab.perturb.specs import _ensure_loaded

_ensure_loaded()  # the built-ins: the modules of robustlab.perturb.table.PERTURBATIONS (NumPy only at import)

__all__ = [
    "list_perturbations", "perturb", "regenerate", "get_perturbation", "PerturbResult", "register",
    "PerturbationSpec", "VersionMismatchWarning",
]


class _CallablePackage(types.ModuleType):
    """Calling this package calls :func:`perturb`: ``rl.perturb`` is the package, so that both ``rl.perturb(x,
    name, severity)`` and ``import robustlab.perturb.registry as R`` work (issue 46)."""

    def __call__(self, *args, **kwargs):
        return perturb(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
