"""Uploaded files, decoded: :func:`load_upload` turns the bytes of an uploaded image, video or caption file into a
:class:`LoadedInput` (or one line of ``InputError`` saying why not), with its provenance (:func:`upload_source`).

Used by the dataset of uploads (:mod:`robustlab.datasets.uploads`) and by the dashboard and the export basket
(:mod:`robustlab.export.basket` re-exports everything here).
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np

from robustlab.io import files as io_files  # by module: the upload limit is read (and patched) at call time
from robustlab.io import media as io_media

KINDS = ("image", "video", "text")


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def upload_source(name: str, data: bytes, **extra) -> dict:
    """An uploaded file: its name as given and the SHA-256 of its bytes."""
    return {"type": "upload", "name": str(name), "sha256": sha256(data), "bytes": len(data), **extra}


@dataclasses.dataclass
class LoadedInput:
    """A decoded input ready to perturb: an image, a video, or a list of captions (one example each)."""

    kind: str
    data: Any  # H×W×3 uint8 | T×H×W×3 uint8 | list[str]
    source: dict
    label: str
    fps: float | None = None
    note: str = ""  # e.g. "downscaled to 320 px, first 300 of 900 frames"


def load_upload(kind: str, name: str, data: bytes, *, max_frames: int = 600, max_side: int | None = None,
                num_frames: int | None = None) -> LoadedInput:
    """Decode an uploaded file of ``kind`` ("image", "video", "text") or raise ``InputError`` saying why not.

    Videos go through ``robustlab.io.media.read_video`` (``num_frames`` samples uniformly; ``max_frames``
    and ``max_side`` bound the work); caption files through ``robustlab.io.files.parse_captions`` (UTF-8,
    one caption per line, CSV or JSON).
    """
    label = name or "upload"
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise io_files.InputError(f"{label}: the file is empty")
    if len(data) > io_files.MAX_UPLOAD_BYTES:
        raise io_files.InputError(f"{label}: {len(data) / 1e6:.0f} MB is over the "
                                  f"{io_files.MAX_UPLOAD_BYTES // 2**20} MB limit")
    src = upload_source(name, bytes(data))
    if kind == "image":
        try:
            arr = io_files.load_image(bytes(data), name=label)
        except io_files.InputError:
            raise
        except Exception as e:  # noqa: BLE001 - a decoder failing in an unexpected way is still bad input
            raise io_files.InputError(f"{label}: the image file is corrupt or unreadable "
                                      f"({type(e).__name__}: {e})") from e
        return LoadedInput("image", arr, src, label, note=f"{arr.shape[1]}×{arr.shape[0]} px")
    if kind == "text":
        caps = [c for _, c in io_files.parse_captions(bytes(data), label)]
        return LoadedInput("text", caps, src, label)
    if kind != "video":
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    try:
        v = io_media.read_video(bytes(data), num_frames=num_frames, max_frames=max_frames, max_side=max_side,
                                name=label)
    except io_files.InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a decoder failing in an unexpected way is still bad input
        raise io_files.InputError(f"{label}: not a video robustlab can read ({type(e).__name__}: {e})") from e
    frames = np.ascontiguousarray(v.frames, dtype=np.uint8)
    if frames.ndim != 4 or frames.shape[0] < 1:
        raise io_files.InputError(f"{label}: the video has no frames")
    fps = float(getattr(v, "fps", 0) or 0) or 25.0
    t, h, w = frames.shape[:3]
    note = f"{t} frames, {w}×{h} px, {fps:.3g} fps"
    total, (oh, ow) = getattr(v, "n_frames_total", t), getattr(v, "original_size", (h, w))
    if total != t or (oh, ow) != (h, w):
        note += f" (from {total} frames at {ow}×{oh} px)"
    return LoadedInput("video", frames, {**src, "video": {"frames": int(t), "fps": fps, "original_frames": int(total),
                                                          "original_size": [int(oh), int(ow)],
                                                          "max_frames": max_frames, "max_side": max_side}},
                       label, fps=fps, note=note)


__all__ = ["KINDS", "LoadedInput", "load_upload", "sha256", "upload_source"]
