"""QUAG (Rawal et al.): quadrant-based attention ablation. The mechanism lives with the models it intervenes on
(:mod:`robustlab.models.quag`, the layer the model interventions need); this is its name among the diagnostics."""
from robustlab.models.quag import *  # noqa: F401,F403
from robustlab.models.quag import __all__  # noqa: F401
