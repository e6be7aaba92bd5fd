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
    scaled = [(tuple(float(v) * f for v in _box_list(b)), colour, label) for b, colour, label in boxes]
    for (x0, y0, x1, y1), colour, _ in scaled:
        d.rectangle([x0, y0, x1, y1], outline=colour, width=w)
    for (box, colour, label), rect in zip(scaled, label_rects([(bx, lb) for bx, _, lb in scaled], im.size)):
        if rect is not None:
            d.rectangle(list(rect), fill=colour)
            d.text((rect[0] + 2, rect[1]), label, fill=(255, 255, 255))
    return im


def label_rects(boxes: list[tuple], size: tuple[int, int]) -> list[tuple | None]:
    """Where each box's label goes ((x0, y0, x1, y1) in pixels, None without a label): above or below a corner of
    its box, the first spot that covers no earlier label (else below them), so that a perturbed box at the ground
    truth's corner never hides the "truth" label. ``boxes``: ((x0, y0, x1, y1), label) in pixels."""
    placed: list[tuple] = []
    out: list[tuple | None] = []
    for (x0, y0, x1, y1), label in boxes:
        if not label:
            out.append(None)
            continue
        lw = 7 * len(label) + 4
        spots = [(x0, y0 - 12), (x0, y1 + 2), (x1 - lw, y0 - 12), (x1 - lw, y1 + 2), (x0, y0 + 2), (x1 - lw, y1 - 14)]
        spots = [(min(max(x, 0), size[0] - lw), y) for x, y in spots if 0 <= y <= size[1] - 12]
        free = [(x, y) for x, y in spots if not any(_overlap((x, y, x + lw, y + 12), r) for r in placed)]
        tx, ty = (free or spots or [(x0, y0)])[0]
        while not free and any(_overlap((tx, ty, tx + lw, ty + 12), r) for r in placed):
            ty += 13  # nowhere free around the box: below the labels already there
        placed.append((tx, ty, tx + lw, ty + 12))
        out.append(placed[-1])
    return out


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


__all__ = ["draw_boxes", "label_rects"]
