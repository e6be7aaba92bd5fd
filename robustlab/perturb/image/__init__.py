"""Image perturbations. Importing this package registers them (numpy only at import; cv2/PIL load lazily)."""
from robustlab.perturb.image import noise, blur, digital  # noqa: F401  (registration side effects)
