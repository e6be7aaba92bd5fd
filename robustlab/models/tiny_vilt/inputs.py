"""tiny-vilt's input checks: a text, and an image or video turned into uint8 RGB frames within the size limits.
Part of :mod:`robustlab.models.tiny_vilt`."""
from __future__ import annotations

import numpy as np

from robustlab.io.convert import to_uint8_rgb

MAX_SIDE = 8192          # bigger images are refused (a clear message, not a memory blow-up)
MAX_PIXELS = 40_000_000
MAX_FRAMES = 10_000


def check_text(text, what: str = "text") -> str:
    if not isinstance(text, str):
        raise ValueError(f"the {what} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"the {what} is empty; type a few words")
    return text.strip()


def check_visual(image_or_frames) -> list[np.ndarray]:
    """An image (H×W, H×W×1/3/4, PIL) or a video (T×H×W×3 array or list of frames) -> uint8 RGB frames."""
    if image_or_frames is None:
        raise ValueError("no image given")
    try:
        if isinstance(image_or_frames, (list, tuple)):
            frames = list(image_or_frames)
        else:
            a = image_or_frames if hasattr(image_or_frames, "mode") else np.asarray(image_or_frames)  # PIL stays
            if isinstance(a, np.ndarray):
                if a.dtype == object or a.dtype.kind in "SUV":
                    raise ValueError(f"an image must hold numbers, got dtype {a.dtype}")
                if a.ndim == 4:
                    if a.shape[-1] != 3:
                        raise ValueError(f"a video must be T×H×W×3, got shape {a.shape}")
                    frames = list(a)
                elif a.ndim in (2, 3):
                    frames = [a]
                else:
                    raise ValueError(f"an image must be H×W(×C) and a video T×H×W×3, got shape {a.shape}")
            else:
                frames = [a]
        if not frames:
            raise ValueError("no image or frames given")
        if len(frames) > MAX_FRAMES:
            raise ValueError(f"{len(frames)} frames is too many (at most {MAX_FRAMES})")
        first = frames[0]
        shp = (first.size[1], first.size[0]) if hasattr(first, "mode") else np.shape(first)[:2]
        if len(shp) < 2 or min(shp) < 8:
            raise ValueError(f"the image is too small ({'×'.join(map(str, shp))} px; at least 8×8)")
        if max(shp) > MAX_SIDE or shp[0] * shp[1] > MAX_PIXELS:
            raise ValueError(f"the image is too large ({shp[1]}×{shp[0]} px; at most {MAX_SIDE} px a side and "
                             f"{MAX_PIXELS // 1_000_000} megapixels)")
        out = [to_uint8_rgb(f) for f in frames]
    except ValueError as e:
        raise ValueError(str(e)) from None
    except (TypeError, AttributeError) as e:
        raise ValueError(f"not an image: {e}") from None
    if len({f.shape for f in out}) > 1:
        raise ValueError("all frames of a video must have the same size")
    return out
