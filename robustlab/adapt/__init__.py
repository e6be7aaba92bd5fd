"""Test-time adaptation against query shift: Tent, TCR and HAT-VTR on any retrieval model with LayerNorms.

``rl.adapt.run(model, dataset, method="hat-vtr", direction="t2v", condition="keyboard:3") -> AdaptResult`` runs one
method online over the shifted query stream (:mod:`robustlab.adapt.loop`); :func:`list_methods` gives every
method's parameters and defaults (the papers', else the released HAT-VTR configs: ``bingqingzhang/vtr_tta``, MIT);
:mod:`robustlab.adapt.analyses` gives HAT-VTR's analyses of runs (R@1 vs severity before and after, the time
breakdown, the Reliable Memory's accuracy, the adapted top-k and score heatmap).
"""
from robustlab.adapt.analyses import SeverityCurve, heatmap, memory_accuracy, severity_curve, time_breakdown, top_k
from robustlab.adapt.loop import QUERY_SIDE, AdaptResult, run
from robustlab.adapt.methods import METHODS, get_method, list_methods, resolve, sweep_methods
from robustlab.adapt.towers import AdaptError, check, tower_for

# the ``adapt`` axis of the task layer runs these methods (robustlab.tasks.conditions.adaptation): declared in
# robustlab.ABOVE and imported by name at its first use, so nothing registers here

__all__ = ["run", "AdaptResult", "AdaptError", "list_methods", "get_method", "sweep_methods", "resolve", "METHODS",
           "tower_for", "check", "QUERY_SIDE", "severity_curve", "SeverityCurve", "time_breakdown", "memory_accuracy",
           "top_k", "heatmap"]
