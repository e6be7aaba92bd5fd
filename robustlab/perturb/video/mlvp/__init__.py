"""MLVP video perturbations (12 types × 5 severities; HAT-VTR paper App. E, Table 37; code ``vtr_tta``).

Spec: /work/shared/research/seeds_methods.md §3.2, §6 rows V2–V13, §7 rows 5–10. Names are prefixed ``mlvp_``.
MLVP's design principle is *temporal consistency*: one noise pattern, fractal, displacement field, style or mask
per video, the same on every frame (the per-frame, fresh-randomness counterparts are the image perturbations of
the same name applied to a video). Where MLVP reuses an ImageNet-C operator (fog, elastic, style) we call the
registered image perturbation on every frame with an identically seeded generator (``fixed_pattern``), so the
operator is the image one and the realisation is shared; these specs are unavailable until that image
perturbation is registered. MLVP's levels (§3 grouping, used as tags): low = gaussian, impulse, fog, snow,
elastic, H.264; mid = motion blur, defocus, occlusion; high = style, event insertion, temporal scrambling
(Table 36 lists H.264 as mid and occlusion as high; we follow §3 and the main tables).

Input: the frames of one clip (T×H×W×3 uint8, consecutive frames). MLVP's pipeline samples 12 frames uniformly
(``robustlab.io.media.read_video(..., num_frames=12)``); the flow-based blurs and H.264 run on the full video
there, here on the frames given. Where the paper and the released code disagree the default follows the digest's
§7 table and the other behaviour is a named variant.

The package registers the perturbations in the paper's order of listing: :mod:`.appearance` (noise, fog, elastic,
style, snow, H.264), :mod:`.motion` (motion blur, defocus), :mod:`.content` (occlusion, event insertion,
scrambling), then :mod:`.plans` (their lazy frame plans); :mod:`.common` holds what they share, and
:mod:`.context` the per-item side information a caller supplies for occlusion (the main object's boxes) and event
insertion (a donor pool of the dataset's own videos, matched by the model's embeddings). Their cards (source,
tags, variants, notes and severity tables) are data, a TOML file beside each module (``appearance.toml``,
``motion.toml``, ``content.toml``; :func:`robustlab.perturb.specs.card_from_data`).
"""
from __future__ import annotations

from robustlab.perturb.video.mlvp.common import CHUNK  # noqa: F401
from robustlab.perturb.video.mlvp.appearance import (  # noqa: F401
    ELASTIC_OPS, FOG_OPS, STYLE_OPS, image_op_params, mlvp_elastic, mlvp_fog, mlvp_gaussian_noise, mlvp_h264,
    mlvp_impulse_noise, mlvp_snow, mlvp_style,
)
from robustlab.perturb.video.mlvp.motion import (  # noqa: F401
    N_DIRECTIONS, linear_motion_kernel, mlvp_defocus, mlvp_disk_kernel, mlvp_motion_blur, optical_flows,
)
from robustlab.perturb.video.mlvp.content import (  # noqa: F401
    BOX_CENTRE, BOX_FALLBACK, BOX_OBJECT, CORPUS_FALLBACK, CORPUS_OWN, CORPUS_PX, CORPUS_SEED, CORPUS_SIZE,
    CORPUS_SYNTHETIC, add_donor_source, centre_box, donor_clip, embed, event_corpus, mlvp_event_insertion,
    mlvp_occlusion, mlvp_temporal_scrambling, occlude, occluder_rects, occlusion_boxes, scramble_indices,
    set_event_clips,
)
from robustlab.perturb.video.mlvp.context import DonorPool, ItemContext  # noqa: F401
from robustlab.perturb.video.mlvp import plans  # noqa: F401,E402  (registers the lazy plans, after the perturbations)

__all__ = ["occlude", "occluder_rects", "centre_box", "embed", "event_corpus", "optical_flows", "linear_motion_kernel",
           "mlvp_disk_kernel", "scramble_indices", "image_op_params", "set_event_clips", "occlusion_boxes",
           "add_donor_source", "donor_clip", "DonorPool", "ItemContext"]
