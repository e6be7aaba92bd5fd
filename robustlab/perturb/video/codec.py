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
from robustlab.perturb.video._common import frames_of


# == robustlab.io.media.QSCALE_MIN/MAX (not imported here: keeps `import` free of PIL/av); codec.toml's
# effective_qscale is each q:v clamped to [QMIN, QMAX]
QMIN, QMAX = 2, 31


def _encode(x: np.ndarray, params: dict, rng: np.random.Generator, keep=None) -> np.ndarray:
    from robustlab.io.media import encode_decode  # PyAV and PIL: importing robustlab.perturb stays numpy-only

    return encode_decode(frames_of(x), params["codec"], qscale=int(params["qscale"]), fps=float(params["fps"]),
                         keep=keep)


def _effective(params: dict) -> dict:
    """What the encoder is given: the quantiser after its clamp to [2, 31] (severities with equal ones share one
    output, robustlab.perturb.share), the codec and the frame rate."""
    from robustlab.io.media import effective_qscale  # the encoder's own clamp; PIL/av stay out of `import`

    return {"codec": params["codec"], "qscale": effective_qscale(params["qscale"]), "fps": float(params["fps"])}


register("codec1", requires=("av",), effective=_effective, keep_frames=True)(_encode)

register("codec2", requires=("av",), effective=_effective, keep_frames=True)(_encode)
