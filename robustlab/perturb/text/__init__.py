"""Text perturbations. Importing this package registers them; nlpaug itself is imported on first use."""
from robustlab.perturb.text import char  # noqa: F401  (registration side effects)
