"""Image perturbations. Importing this package registers them (numpy only at import; cv2/PIL/torch load lazily).

Registration order is listing order: the six v1 perturbations first (noise, blur, digital: their order is part
of the tested interface), then the rest of [P2]'s catalogue: speckle noise; glass, motion and zoom blur; snow,
frost, fog and brightness; contrast and elastic; stylize.
"""
from robustlab.perturb.image import noise, blur, digital  # noqa: F401  (registration side effects)
from robustlab.perturb.image import catalogue_noise, catalogue_blur, weather, catalogue_digital  # noqa: F401,E402
from robustlab.perturb.image import stylize  # noqa: F401,E402
