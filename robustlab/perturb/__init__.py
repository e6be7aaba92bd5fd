"""robustlab.perturb: one registry of image / video / text perturbations with reproducible records.

    >>> from robustlab.perturb import list_perturbations, perturb, regenerate
    >>> res = perturb(img, "gaussian_noise", severity=3, seed=0)    # PerturbResult(output, record)
    >>> out = regenerate(json.loads(json.dumps(res.record)), img)   # bit-for-bit the same output

Severity 0 is a clean pass-through; 1..5 follow the papers' tables (see each spec's ``severity_table`` and
``variants``). Sources: /work/shared/research/seeds_perturbations.md (§1.1, §1.3, §2.2).
Importing this package is cheap: cv2/PIL/nlpaug/torch are imported on first use.
"""
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
from robustlab.perturb import image, text, video  # noqa: F401,E402  (register the built-ins)

__all__ = [
    "list_perturbations", "perturb", "regenerate", "get_perturbation", "PerturbResult", "register",
    "PerturbationSpec", "VersionMismatchWarning",
]
