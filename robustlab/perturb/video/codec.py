"""[P1] Schiappa et al. codec perturbations through real encoders (PyAV / FFmpeg's libavcodec, in memory).

[C1] runs ``ffmpeg -i in -c:v mpeg2video -q:v {20s} -f vob`` ("MPEG1", ``codec1``) and
``ffmpeg -i in -c:v mpeg4 -q:v {15s} out.avi`` ("MPEG2", ``codec2``). The encoders are named after the code,
not the paper's labels: codec1 is MPEG-2 video, codec2 is MPEG-4 Part 2.

Quantiser saturation (measured, and tested): FFmpeg's -q:v becomes a frame quality that the MPEG encoders turn
into a quantiser clipped to [qmin, qmax] = [2, 31]. So codec1's q = 20/40/60/80/100 quantises with 20/31/31/31/31
and severities 2–5 give **bit-identical** output; codec2's 15/30/45/60/75 quantise with 15/30/31/31/31, so 3–5
are identical and 2 is only slightly milder. The tables keep the code's q values and add ``effective_qscale``;
``effective=`` declares what the encoder is given, so those severities are encoded once per clip and shared, each
with its own record (:mod:`robustlab.perturb.share`), and ``keep_frames`` lets the lazy path convert only the
sampled frames back to RGB.
(robustlab fixes the quantiser with qmin = qmax = that value, I and P frames alike: what fixed-qscale mode does;
see ``robustlab.io.media.encode_decode``.) The container (VOB / AVI) does not change the pixels and is skipped.
"""
from __future__ import annotations

import numpy as np

from robustlab.perturb.registry import register
from robustlab.perturb.video._common import C1_OFFLINE, P1, frames_of


QMIN, QMAX = 2, 31  # == robustlab.io.media.QSCALE_MIN/MAX (not imported here: keeps `import` free of PIL/av)


def _q_table(codec: str, step: int) -> dict:
    return {s: {"codec": codec, "qscale": step * s, "effective_qscale": min(max(step * s, QMIN), QMAX), "fps": 30}
            for s in range(1, 6)}


def _encode(x: np.ndarray, params: dict, rng: np.random.Generator, keep=None) -> np.ndarray:
    from robustlab.io.media import encode_decode  # PyAV and PIL: importing robustlab.perturb stays numpy-only

    return encode_decode(frames_of(x), params["codec"], qscale=int(params["qscale"]), fps=float(params["fps"]),
                         keep=keep)


def _effective(params: dict) -> dict:
    """What the encoder is given: the quantiser after its clamp to [2, 31] (severities with equal ones share one
    output, robustlab.perturb.share), the codec and the frame rate."""
    from robustlab.io.media import effective_qscale  # the encoder's own clamp; PIL/av stay out of `import`

    return {"codec": params["codec"], "qscale": effective_qscale(params["qscale"]), "fps": float(params["fps"])}


_NOTE = ("deterministic: one-threaded encoder, bit-exact DCT/IDCT; RGB→YUV 4:2:0 (BT.601) by robustlab, odd sizes "
         "padded with edge pixels and cropped back")

register(
    "codec1", modality="video", category="digital",
    source=f"{P1} ('MPEG1', JSON 'Codec1'); {C1_OFFLINE}: ffmpeg -c:v mpeg2video -q:v 20s",
    severity_table=_q_table("mpeg2video", 20),
    variants={"mpeg1video": _q_table("mpeg1video", 20)},
    default_variant="mpeg2video",
    variant_notes={
        "mpeg2video": "the code's encoder (mpeg2video, despite the 'MPEG1' label); q:v 20/40/60/80/100 -> "
                      "effective 20/31/31/31/31 (s2–s5 identical)",
        "mpeg1video": "the paper's label taken literally: FFmpeg's MPEG-1 encoder with the same q:v (not in [C1])",
    },
    description="Whole-video MPEG-2 encode → decode at a fixed quantiser (FFmpeg's mpeg2video, GOP 12, no "
                f"B-frames, as `ffmpeg -q:v`); {_NOTE}.",
    tags=("p1", "digital", "codec", "video-only", "deterministic"), requires=("av",), effective=_effective,
    keep_frames=True,
)(_encode)

register(
    "codec2", modality="video", category="digital",
    source=f"{P1} ('MPEG2', JSON 'Codec2'); {C1_OFFLINE}: ffmpeg -c:v mpeg4 -q:v 15s",
    severity_table=_q_table("mpeg4", 15),
    default_variant="mpeg4",
    variant_notes={"mpeg4": "the code's encoder (MPEG-4 Part 2, despite the 'MPEG2' label); q:v 15/30/45/60/75 "
                            "-> effective 15/30/31/31/31 (s3–s5 identical)"},
    description="Whole-video MPEG-4 Part 2 encode → decode at a fixed quantiser (FFmpeg's mpeg4, GOP 12, no "
                f"B-frames, as `ffmpeg -q:v`); {_NOTE}.",
    tags=("p1", "digital", "codec", "video-only", "deterministic"), requires=("av",), effective=_effective,
    keep_frames=True,
)(_encode)
