"""What the export's writer, reader and regeneration share: the layout's names and limits, the write errors, and
the file encoders (PNG, NPZ, MP4). Part of :mod:`robustlab.export.manifest`."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

from robustlab.io import media
from robustlab.io.files import load_image

MANIFEST = "manifest.jsonl"
MANIFEST_SCHEMA = 1
MAX_MEMBER_BYTES = 2 * 1024**3  # refuse to read a zip member that inflates beyond this (zip-bomb guard)
IMAGE_EXTS = {".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff"}
VIDEO_EXTS = {".mp4", ".webm", ".avi", ".mov", ".mkv", ".m4v", ".mpg", ".mpeg"}
TEXT_EXTS = {".txt", ".csv", ".tsv", ".json"}
REQUIRED_KEYS = ("manifest", "id", "kind", "perturbation", "variant", "severity", "seed", "params", "versions",
                 "record", "source", "clean", "perturbed", "model")
_DISK_ERRNOS = {28, 122, 30, 27}  # ENOSPC, EDQUOT, EROFS, EFBIG: nothing more can be written there
PEELING_CSV, PEELING_TSV = "peeling/tests.csv", "peeling/tests.tsv"


class ExportWriteError(OSError):
    """An export or a rebuilt export could not be written (a full disk, a read-only folder); nothing half-written
    was left. ``results``: the verifications of ``regenerate_export``, complete even so (None elsewhere)."""

    def __init__(self, errno_: int | None, message: str, results: list | None = None):
        super().__init__(errno_, message)
        self.message, self.results = message, results

    def __str__(self) -> str:
        return self.message


def disk_full(e: BaseException) -> bool:
    """Whether ``e`` says the destination can take no more (full disk, quota, read-only, file too large)."""
    return isinstance(e, OSError) and e.errno in _DISK_ERRNOS


def describe_write_error(e: OSError, where) -> str:
    """One line for a failed write: what happened and where."""
    why = e.strerror or str(e)
    if e.errno in (28, 122):
        why = "the disk is full" + (" (quota)" if e.errno == 122 else "")
    elif e.errno == 30:
        why = "the folder is read-only"
    return f"cannot write to {where}: {why}"


# ---- encoders -------------------------------------------------------------------------------------------
def encode_png(arr: np.ndarray) -> bytes:
    b = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(arr, dtype=np.uint8), "RGB").save(b, format="PNG", compress_level=6)
    return b.getvalue()


def decode_png(data: bytes, name: str = "") -> np.ndarray:
    return load_image(data, name=name)


def encode_npz(frames: np.ndarray, fps: float) -> bytes:
    b = io.BytesIO()
    np.savez_compressed(b, frames=np.ascontiguousarray(frames, dtype=np.uint8), fps=np.float64(fps))
    return b.getvalue()


def decode_npz(data: bytes) -> tuple[np.ndarray, float]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        frames, fps = z["frames"], float(z["fps"])
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"clean video frames must be T×H×W×3 uint8, got {frames.dtype} {frames.shape}")
    return frames, fps


def encode_mp4(frames: np.ndarray, fps: float) -> bytes:
    return media.write_mp4(frames, fps)
