"""Files and media: safe reading of user files (``files``), image-like -> H×W×3 uint8 (``convert``), video
decoding/encoding through PyAV (``media``), a memo bounded in bytes (``memo``). Submodules load on first use so
``robustlab.io.convert`` stays light."""
from __future__ import annotations

import importlib

_LAZY = {
    "InputError": "robustlab.io.files", "load_image": "robustlab.io.files", "parse_captions": "robustlab.io.files",
    "match_captions": "robustlab.io.files", "clean_caption": "robustlab.io.files",
    "to_uint8_rgb": "robustlab.io.convert", "read_video": "robustlab.io.media", "write_mp4": "robustlab.io.media",
    "display_mp4": "robustlab.io.media",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in ("files", "convert", "media", "draw", "memo"):
        return importlib.import_module(f"robustlab.io.{name}")
    raise AttributeError(f"module 'robustlab.io' has no attribute {name!r}")
