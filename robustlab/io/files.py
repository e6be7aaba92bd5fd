"""Reading user media and caption files safely: every failure is an ``InputError`` with a one-line message.

Images are decoded with Pillow under a pixel limit (decompression bombs are refused before decoding),
verified, and converted to H×W×3 uint8 (gray, RGBA, palette and 16-bit inputs included). Caption files
may be plain text (one caption per line), CSV (columns ``image``/``filename``/``file`` and ``caption``/
``text``) or JSON (a list of strings, a list of {"image", "caption"} objects, or a {filename: caption} map).
"""
from __future__ import annotations

import csv
import io
import json
import os
import warnings
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from robustlab.io.convert import to_uint8_rgb

MAX_IMAGE_PIXELS = 40_000_000  # ~6300×6300; larger images are refused (decompression-bomb guard)


def _max_upload_bytes(default_mb: float = 50) -> int:
    """robustlab's own size limit per uploaded file: ``ROBUSTLAB_MAX_UPLOAD_MB`` (default 50 MB, Streamlit's
    ``server.maxUploadSize`` in .streamlit/config.toml is the same: each layer refuses what the other would)."""
    try:
        mb = float(os.environ.get("ROBUSTLAB_MAX_UPLOAD_MB", default_mb))
    except ValueError:
        mb = default_mb
    return int((mb if mb > 0 else default_mb) * 1024 * 1024)


MAX_UPLOAD_BYTES = _max_upload_bytes()
MAX_CAPTION_CHARS = 2000


class InputError(ValueError):
    """Bad user input; ``str(e)`` is a message fit to show to the user."""


def load_image(data: bytes | str | Path, name: str = "", max_pixels: int = MAX_IMAGE_PIXELS) -> np.ndarray:
    """Decode an image file (bytes or path) to H×W×3 uint8, or raise InputError saying why not."""
    if isinstance(data, (str, Path)):
        name = name or str(data)
        try:
            data = Path(data).read_bytes()
        except OSError as e:
            raise InputError(f"{name}: cannot read the file ({e.strerror or e})") from e
    label = name or "upload"
    fmt = None
    if not data:
        raise InputError(f"{label}: the file is empty")
    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(f"{label}: {len(data) / 1e6:.0f} MB is over the {MAX_UPLOAD_BYTES // 2**20} MB limit")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:
                w, h = probe.size
                fmt = probe.format
                if w * h > max_pixels:
                    raise InputError(f"{label}: {w}×{h} pixels is over the {max_pixels / 1e6:.0f}-megapixel limit "
                                     f"(a decompression-bomb guard); downscale it first")
                probe.verify()
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                if getattr(im, "n_frames", 1) > 1:
                    im.seek(0)
                arr = to_uint8_rgb(im)
    except InputError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise InputError(f"{label}: the image is over the {max_pixels / 1e6:.0f}-megapixel limit (a decompression-bomb "
                         f"guard; {e}); downscale it first") from e
    except UnidentifiedImageError as e:
        raise InputError(f"{label}: not an image robustlab can read ({type(e).__name__}: {e})") from e
    except (OSError, SyntaxError, ValueError, EOFError, TypeError) as e:
        raise InputError(f"{label}: the image file is corrupt or truncated ({fmt or 'unknown format'}: {e})") from e
    except Exception as e:  # noqa: BLE001 - a decoder failing in an unexpected way (e.g. IndexError) is still bad input
        raise InputError(f"{label}: the image file is corrupt or truncated ({fmt or 'unknown format'}: "
                         f"{type(e).__name__}: {e})") from e
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputError(f"{label}: the image has no pixels")
    return arr


def _decode_text(data: bytes | str, label: str) -> str:
    if isinstance(data, str):
        return data
    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(f"{label}: {len(data) / 1e6:.0f} MB is over the {MAX_UPLOAD_BYTES // 2**20} MB limit")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{label}: the file is not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r}); "
                         "save it as UTF-8") from e


def clean_caption(text, label: str = "caption") -> str:
    """Strip and validate one caption: non-empty, printable, at most MAX_CAPTION_CHARS."""
    if not isinstance(text, str):
        raise InputError(f"{label}: a caption must be text, got {type(text).__name__}")
    t = " ".join(text.replace("\x00", " ").split())
    if not t:
        raise InputError(f"{label}: the caption is empty")
    if len(t) > MAX_CAPTION_CHARS:
        raise InputError(f"{label}: the caption has {len(t)} characters (limit {MAX_CAPTION_CHARS})")
    return t


_IMG_KEYS = ("image", "filename", "file", "file_name", "image_id", "path", "name")
_CAP_KEYS = ("caption", "text", "captions", "sentence", "query")


def parse_captions(data: bytes | str, name: str = "captions.txt") -> list[tuple[str | None, str]]:
    """Parse a caption file into (image name or None, caption) pairs. Raises InputError on bad files."""
    label = name or "captions"
    text = _decode_text(data, label)
    suffix = Path(name).suffix.lower()
    pairs: list[tuple[str | None, str]] = []
    if suffix == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{label}: not valid JSON (line {e.lineno}: {e.msg})") from e
        except (ValueError, RecursionError) as e:  # a number over Python's 4300-digit limit, nesting too deep
            raise InputError(f"{label}: not a JSON file robustlab can read ({type(e).__name__}: "
                             f"{' '.join(str(e).split())[:160]})") from e
        if isinstance(obj, dict) and "annotations" in obj and isinstance(obj["annotations"], list):
            obj = obj["annotations"]
        if isinstance(obj, dict):
            for k, v in obj.items():
                for c in (v if isinstance(v, list) else [v]):
                    pairs.append((str(k), clean_caption(c, f"{label}[{k!r}]")))
        elif isinstance(obj, list):
            for i, item in enumerate(obj):
                if isinstance(item, str):
                    pairs.append((None, clean_caption(item, f"{label}[{i}]")))
                elif isinstance(item, dict):
                    ik = next((k for k in _IMG_KEYS if k in item), None)
                    ck = next((k for k in _CAP_KEYS if k in item), None)
                    if ck is None:
                        raise InputError(f"{label}[{i}]: no caption field (expected one of {', '.join(_CAP_KEYS)})")
                    caps = item[ck] if isinstance(item[ck], list) else [item[ck]]
                    for c in caps:
                        pairs.append((str(item[ik]) if ik else None, clean_caption(c, f"{label}[{i}]")))
                else:
                    raise InputError(f"{label}[{i}]: expected a string or an object, got {type(item).__name__}")
        else:
            raise InputError(f"{label}: expected a JSON list or object, got {type(obj).__name__}")
    elif suffix in (".csv", ".tsv"):
        try:
            dialect = csv.excel_tab if suffix == ".tsv" else csv.excel
            reader = csv.DictReader(io.StringIO(text), dialect=dialect)
            fields = [f.strip().lower() for f in (reader.fieldnames or [])]
            ck = next((k for k in _CAP_KEYS if k in fields), None)
            ik = next((k for k in _IMG_KEYS if k in fields), None)
            if ck is None:
                raise InputError(f"{label}: missing a caption column (found columns: {', '.join(fields) or 'none'}; "
                                 f"expected one of {', '.join(_CAP_KEYS)})")
            raw_fields = reader.fieldnames or []
            cmap = {f.strip().lower(): f for f in raw_fields}
            for i, row in enumerate(reader, start=2):
                c = row.get(cmap[ck])
                if c is None or not str(c).strip():
                    raise InputError(f"{label} line {i}: empty caption")
                img = row.get(cmap[ik]) if ik else None
                pairs.append((img.strip() if img else None, clean_caption(c, f"{label} line {i}")))
        except csv.Error as e:
            raise InputError(f"{label}: malformed CSV ({e})") from e
    else:
        for i, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                pairs.append((None, clean_caption(line, f"{label} line {i}")))
    if not pairs:
        raise InputError(f"{label}: no captions found")
    return pairs


def match_captions(image_names: list[str], pairs: list[tuple[str | None, str]]) -> list[str | None]:
    """Assign captions to images: by file name (with or without extension) when the file names them, else in
    order (one per line). Returns one caption (or None) per image."""
    named = [p for p in pairs if p[0]]
    if named:
        by: dict[str, str] = {}
        for n, c in named:
            by.setdefault(n, c)
            by.setdefault(Path(n).name, c)
            by.setdefault(Path(n).stem, c)
        return [by.get(n) or by.get(Path(n).name) or by.get(Path(n).stem) for n in image_names]
    caps = [c for _, c in pairs]
    return [caps[i] if i < len(caps) else None for i in range(len(image_names))]
