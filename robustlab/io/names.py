"""Safe names for files written or read inside an export: :func:`safe_component` turns any label into one
file-name component valid on every OS, :func:`safe_member` validates a relative path (a zip member or a file under
an export folder) or raises ValueError. In ``io`` so that every layer that writes such files (PEELING's exports in
``diagnostics``, the zip/folder exports in ``export``) checks names the same way."""
from __future__ import annotations

import re
import unicodedata

MAX_NAME = 60
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


def safe_component(name: str, default: str = "item", max_len: int = MAX_NAME) -> str:
    """A file-name component safe on every OS: ASCII letters, digits, ``.``, ``_`` and ``-`` only, no leading
    dot, no ``..``, not a Windows device name, at most ``max_len`` characters."""
    s = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", s)
    s = re.sub(r"\.{2,}", ".", s)
    s = re.sub(r"_{2,}", "_", s).strip("._- ")
    s = s[:max_len].rstrip("._- ")
    if not s or s.split(".")[0].lower() in _WINDOWS_RESERVED:
        s = f"{default}_{s}" if s else default
    return s


_SAFE_PART = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\Z")  # \Z: "$" would let a trailing newline in


def safe_member(path: str) -> str:
    """Validate a relative path inside an export; return it or raise ValueError.

    Every component must be 1–200 characters of ASCII letters, digits, ``.``, ``_`` and ``-``, must not start
    with a dot, contain ``..`` or be a Windows device name. So absolute paths, drive letters, backslashes,
    ``..``, empty components and control characters are all refused.
    """
    if not isinstance(path, str) or not path or len(path) > 1000:
        raise ValueError(f"unsafe path in export: {path!r}")
    for p in path.split("/"):
        if not _SAFE_PART.match(p) or ".." in p or p.split(".")[0].lower() in _WINDOWS_RESERVED:
            raise ValueError(f"unsafe path in export: {path!r}")
    return path
