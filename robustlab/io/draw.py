"""Drawing on images for display: labelled boxes (grounding)."""
from __future__ import annotations

import numpy as np

from robustlab.io.convert import to_uint8_rgb


def _box_list(b) -> list[float]:
    return [round(float(v), 2) for v in (b.as_tuple() if hasattr(b, "as_tuple") else b)[:4]]


def draw_boxes(image, boxes: list[tuple], scale: int | None = None):
    """The image (upscaled so that its long side is ≥ 384 px) with labelled boxes drawn on it.

    ``boxes``: (box as Box or (x0, y0, x1, y1) in image pixels, colour, label)."""
    from PIL import Image, ImageDraw


    im = Image.fromarray(to_uint8_rgb(image))
    f = scale or max(1, int(np.ceil(384 / max(im.size))))
    if f > 1:
        im = im.resize((im.size[0] * f, im.size[1] * f), Image.NEAREST)
    d = ImageDraw.Draw(im)
    w = max(2, int(round(max(im.size) / 160)))
    for b, colour, label in boxes:
        x0, y0, x1, y1 = (float(v) * f for v in _box_list(b))
        d.rectangle([x0, y0, x1, y1], outline=colour, width=w)
        if label:
            ty = y0 - 12 if y0 >= 12 else y1 + 2
            d.rectangle([x0, ty, x0 + 7 * len(label) + 4, ty + 12], fill=colour)
            d.text((x0 + 2, ty), label, fill=(255, 255, 255))
    return im


__all__ = ["draw_boxes"]
