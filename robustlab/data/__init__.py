"""Data: the built-in synthetic world, galleries, and safe reading of user files.

Submodules: ``world`` (scene/video generator), ``gallery`` (demo gallery, uploads), ``io`` (safe file
reading), ``convert`` (image-like -> H×W×3 uint8). Imported lazily so ``robustlab.data.convert`` stays light.
"""
import importlib

_LAZY = {
    "Gallery": "robustlab.data.gallery", "builtin_gallery": "robustlab.data.gallery",
    "ingest_uploads": "robustlab.data.gallery", "InputError": "robustlab.data.io", "load_image": "robustlab.data.io",
    "parse_captions": "robustlab.data.io", "match_captions": "robustlab.data.io", "clean_caption": "robustlab.data.io",
    "to_uint8_rgb": "robustlab.data.convert",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in ("world", "gallery", "io", "convert"):
        return importlib.import_module(f"robustlab.data.{name}")
    raise AttributeError(name)
