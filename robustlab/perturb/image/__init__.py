"""Image perturbations. Importing this package registers them (numpy only at import; cv2/PIL/torch load lazily).

One module per family: ``noise`` (gaussian, shot, impulse, speckle), ``blur`` (defocus, glass, motion, zoom),
``digital`` (jpeg_compression, pixelate, contrast, elastic_transform), ``weather`` (snow, frost, fog, brightness)
and ``stylize``. The listing order (the six v1 perturbations first, then the rest of [P2]'s catalogue) is declared
in :data:`robustlab.perturb.table.PERTURBATIONS`, so the order of the imports below does not matter.
"""
from robustlab.perturb.image import blur, digital, noise, stylize, weather  # noqa: F401  (registration side effects)
