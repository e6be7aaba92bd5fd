"""Test-time adaptation against query shift: Tent, TCR and HAT-VTR on any retrieval model with LayerNorms.

``rl.adapt.run(model, dataset, method="hat-vtr", direction="t2v", condition="keyboard:3") -> AdaptResult`` runs one
method online over the shifted query stream (:mod:`robustlab.adapt.loop`); :func:`list_methods` gives every
method's parameters and defaults (the papers', else the released HAT-VTR configs: ``bingqingzhang/vtr_tta``, MIT).
"""
import sys

from robustlab.adapt.loop import QUERY_SIDE, AdaptResult, run
from robustlab.adapt.methods import METHODS, get_method, list_methods, resolve
from robustlab.adapt.towers import AdaptError, check, tower_for
from robustlab.tasks.base import register_adaptation

# the ``adapt`` axis of the task layer runs these methods (robustlab.tasks.base.adaptation)
register_adaptation(sys.modules[__name__])

__all__ = ["run", "AdaptResult", "AdaptError", "list_methods", "get_method", "resolve", "METHODS", "tower_for",
           "check", "QUERY_SIDE"]
