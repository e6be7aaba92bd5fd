"""Video perturbations. Importing this package registers them (numpy only at import; PIL, cv2, scipy and PyAV
load on first use).

Every video perturbation takes a T×H×W×3 uint8 clip and returns a T'×H'×W'×3 uint8 one (the spec's
``output_note`` says when T' or the size differ); severity 0 is the clean pass-through, everything is seeded
through the registry's generator, and records regenerate bit for bit (codecs included).

- ``temporal``: [P1] Schiappa et al. sampling, reverse_sampling, jumble, box_jumble, freeze (video-only).
- ``camera``: [P1] static_rotate, rotate (per-frame wobble), translate (camera shake); also accept single images.
- ``codec``: [P1] codec1 (MPEG-2 video, q:v 20s) and codec2 (MPEG-4 Part 2, q:v 15s) through real encoders.
- ``mlvp``: the 12 MLVP perturbations (``mlvp_*``): temporally fixed noise, fog, snow, elastic, H.264 at the
  bitrate ladder, motion-aware blur and defocus, main-object occlusion, style, event insertion, scrambling.

[P1]'s per-frame noise, blur and JPEG perturbations are the image perturbations applied to a video: the registry
runs them frame by frame with fresh randomness per frame ([P1] §3.1: "Blur, Noise, and Camera perturbations are all
applied frame-by-frame"), in one vectorised call on the frame stack for ``batched`` ops. Sources and decisions:
/work/shared/research/seeds_perturbations.md §1.2 and seeds_methods.md §3.2, §7.
"""
from robustlab.perturb.video import temporal, camera, codec, mlvp  # noqa: F401  (registration side effects)
