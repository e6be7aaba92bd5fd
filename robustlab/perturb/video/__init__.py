"""Video perturbations: none registered yet (a later issue adds them).

Planned, from [P1] Schiappa et al. 2022 (see /work/shared/research/seeds_perturbations.md §1.2): temporal
(sampling, reverse_sampling, jumble, box_jumble, freeze), camera (static_rotate, rotate, translate) and codecs
(mpeg1/mpeg2 via ffmpeg). They will register with ``modality="video"`` and receive a T×H×W×3 uint8 array.

Until then, every image perturbation accepts a T×H×W×3 video and applies itself frame by frame with fresh
randomness per frame ([P1] §3.1: "Blur, Noise, and Camera perturbations are all applied frame-by-frame"),
vectorised over the whole stack where the operation is element-wise (the noise family).
"""
