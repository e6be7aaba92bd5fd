"""Reading user media and caption files safely: every failure is an ``InputError`` with a one-line message.

Images are decoded with Pillow under a pixel limit (decompression bombs are refused before decoding),
verified, and converted to H×W×3 uint8 (gray, RGBA, palette and 16-bit inputs included). Caption files
may be plain text (one caption per line), CSV (columns ``image``/``filename``/``file`` and ``caption``/
``text``) or JSON (a list of strings, a list of {"image", "caption"} objects, or a {filename: caption} map).

Size before read: a file is ``os.stat``-ed (a symlink's target) before it is opened, and read at most up to its
limit (:func:`check_file_size`, :func:`read_file_capped`, :func:`open_capped`); a browser upload's ``.size`` is
checked before ``getvalue()`` (:func:`uploaded_bytes`); a folder is scanned up to ``MAX_FOLDER_FILES`` entries
(:func:`scan_folder`). Under the dashboard's data roots what is read is what was checked (:func:`open_fd`), and a
message names a file as ``shown_path`` does, the same for one outside the roots, missing or unreadable
(:mod:`robustlab.io.confined`). Limits:
``ROBUSTLAB_MAX_UPLOAD_MB`` (50; uploads, and media and captions files read from a folder),
``ROBUSTLAB_MAX_ANNOTATION_MB`` (2048; the local dataset loaders' annotation files), ``ROBUSTLAB_MAX_FOLDER_FILES``
(20000 entries).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from robustlab.io import confined
from robustlab.io.confined import NO_SUCH, is_dir, is_file, reason, shown_path, visible  # noqa: F401 - re-exported
from robustlab.io.convert import to_uint8_rgb

MAX_IMAGE_PIXELS = 40_000_000  # ~6300×6300; larger images are refused (decompression-bomb guard)


UPLOAD_SETTING = "ROBUSTLAB_MAX_UPLOAD_MB"
ANNOTATION_SETTING = "ROBUSTLAB_MAX_ANNOTATION_MB"
FOLDER_SETTING = "ROBUSTLAB_MAX_FOLDER_FILES"


def _env_number(name: str, default: float) -> float:
    """A positive number from the environment variable ``name``; ``default`` when unset, unreadable or not > 0."""
    try:
        v = float(os.environ.get(name, default))
    except ValueError:
        return default
    return v if v > 0 and v == v and v != float("inf") else default


def _max_upload_bytes(default_mb: float = 50) -> int:
    """robustlab's own size limit per uploaded file: ``ROBUSTLAB_MAX_UPLOAD_MB`` (default 50 MB, Streamlit's
    ``server.maxUploadSize`` in .streamlit/config.toml is the same: each layer refuses what the other would).
    The same limit holds for every media or captions file read from a folder (the ``upload`` dataset, the
    images of the local dataset loaders)."""
    return int(_env_number(UPLOAD_SETTING, default_mb) * 1024 * 1024)


def _max_annotation_bytes(default_mb: float = 2048) -> int:
    """The size limit of one annotation file (JSON / JSON lines / CSV) of a local dataset copy:
    ``ROBUSTLAB_MAX_ANNOTATION_MB`` (default 2048 MB: COCO's and RefCOCO's files are a few hundred MB)."""
    return int(_env_number(ANNOTATION_SETTING, default_mb) * 1024 * 1024)


def _max_folder_files(default: int = 20_000) -> int:
    """How many entries of one folder are scanned at most: ``ROBUSTLAB_MAX_FOLDER_FILES`` (default 20000)."""
    return max(1, int(_env_number(FOLDER_SETTING, default)))


MAX_UPLOAD_BYTES = _max_upload_bytes()
MAX_ANNOTATION_BYTES = _max_annotation_bytes()
MAX_FOLDER_FILES = _max_folder_files()
MAX_CAPTION_CHARS = 2000


class InputError(ValueError):
    """Bad user input; ``str(e)`` is a message fit to show to the user."""


# ---- under the dashboard's data roots: what is read is what was checked (robustlab.io.confined) -------------------
def cannot_read(label: str, e: BaseException | None = None) -> InputError:
    """The one line for a file that can't be had: under the data roots always the same reason (a viewer can't tell
    outside from missing from unreadable); otherwise the system's."""
    return InputError(f"{label}: cannot read the file ({reason(e)})")


def open_fd(path: str | os.PathLike, label: str | None = None) -> int:
    """:func:`robustlab.io.confined.open_fd` (under the data roots: the checked file, never a symlink swapped in since),
    InputError (one line naming ``label``) when it can't be had."""
    try:
        return confined.open_fd(path)
    except (OSError, ValueError) as e:
        raise cannot_read(_label(Path(path), label), e) from e


# ---- size before read: every file a user can make the server read is stat-ed first ---------------------------------
def _mb(n: int, digits: str = ".4g") -> str:
    """A size for a message: ``50 MB`` (``digits`` formats the MB), or ``1234 bytes`` under 0.1 MB."""
    return f"{format(n / 2**20, digits)} MB" if n >= 2**20 / 10 else f"{int(n)} bytes"


def too_big(label: str, size: int, limit: int, setting: str = UPLOAD_SETTING) -> InputError:
    """The one-line error for a file of ``size`` bytes over ``limit``."""
    return InputError(f"{label}: {_mb(size, '.1f')} is over the {_mb(limit)} limit (set {setting} to change it)")


def _label(path: Path, label: str | None) -> str:
    return label or Path(path).name or "file"


def check_file_size(path: str | Path, limit: int | None = None, label: str | None = None,
                    setting: str = UPLOAD_SETTING) -> int:
    """``path``'s size from ``os.stat`` (a symlink's target), without reading it; InputError (one line naming
    ``label``, default the file's name, the limit and ``setting``) when it is missing, not a regular file
    (a folder, a FIFO, a device) or over ``limit`` bytes (default ``MAX_UPLOAD_BYTES``). Under the dashboard's data
    roots a file outside them, missing or unreadable, or whose name can't be looked up, is the same line."""
    limit = MAX_UPLOAD_BYTES if limit is None else int(limit)
    label = _label(path, label)
    if not visible(path):  # the dashboard's data roots: outside them is the same as missing
        raise cannot_read(label)
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:
        raise cannot_read(label, e) from e
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{label}: not a regular file")
    if st.st_size > limit:
        raise too_big(label, st.st_size, limit, setting)
    return st.st_size


def _open_checked(path: str | Path, limit: int, label: str, setting: str) -> int:
    """A read-only descriptor of ``path`` after ``check_file_size``, opened by :func:`open_fd` (under the data
    roots: the checked file, never one swapped in since); the opened file is stat-ed again (a file swapped between
    the two is caught). Opened non-blocking, so a FIFO swapped in never hangs the open."""
    check_file_size(path, limit, label, setting)
    fd = open_fd(path, label)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{label}: not a regular file")
        if st.st_size > limit:
            raise too_big(label, st.st_size, limit, setting)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_checked(path: str | Path, limit: int | None = None, label: str | None = None,
                 setting: str = UPLOAD_SETTING):
    """``path`` as a seekable binary file (``open(path, "rb")``), stat-ed against ``limit`` (default
    ``MAX_UPLOAD_BYTES``) before it is opened and opened by :func:`open_fd`: for a reader that needs to seek (an
    image header, a video container, a parquet footer). The caller reads at most what it needs. InputError."""
    limit = MAX_UPLOAD_BYTES if limit is None else int(limit)
    label = _label(path, label)
    return os.fdopen(_open_checked(path, limit, label, setting), "rb")


def read_file_capped(path: str | Path, limit: int | None = None, label: str | None = None,
                     setting: str = UPLOAD_SETTING) -> bytes:
    """The bytes of ``path``, stat-ed before it is read (see :func:`check_file_size`), and read at most
    ``limit + 1`` bytes: a file that grows between the stat and the read is still refused. InputError."""
    limit = MAX_UPLOAD_BYTES if limit is None else int(limit)
    label = _label(path, label)
    fd = _open_checked(path, limit, label, setting)
    try:
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(limit + 1)
    except OSError as e:
        raise cannot_read(label, e) from e
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise InputError(f"{label}: the file grew past the {_mb(limit)} limit while it was read "
                         f"(set {setting} to change it)")
    return data


class _CappedRaw(io.RawIOBase):
    """A raw binary stream over a descriptor that raises InputError once more than ``limit`` bytes were read."""

    def __init__(self, fd: int, limit: int, label: str, setting: str):
        super().__init__()
        self._f = os.fdopen(fd, "rb", buffering=0)
        self._left, self._limit, self._label, self._setting = limit, limit, label, setting

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        want = min(len(b), self._left + 1)
        if want <= 0:
            return 0
        with memoryview(b) as mv:
            n = self._f.readinto(mv[:want]) or 0
        self._left -= n
        if self._left < 0:
            raise InputError(f"{self._label}: the file grew past the {_mb(self._limit)} limit while it was read "
                             f"(set {self._setting} to change it)")
        return n

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


def open_capped(path: str | Path, limit: int | None = None, label: str | None = None,
                setting: str = UPLOAD_SETTING, encoding: str | None = None, newline: str | None = None):
    """``open(path, "rb")`` (or text with ``encoding``) after :func:`check_file_size`, for reading a large file
    as a stream (JSON lines, CSV); reading more than ``limit`` bytes raises InputError."""
    limit = MAX_UPLOAD_BYTES if limit is None else int(limit)
    label = _label(path, label)
    fd = _open_checked(path, limit, label, setting)
    try:
        raw = _CappedRaw(fd, limit, label, setting)
    except BaseException:
        os.close(fd)
        raise
    buf = io.BufferedReader(raw, buffer_size=1 << 20)
    return buf if encoding is None else io.TextIOWrapper(buf, encoding=encoding, newline=newline)


def scan_folder(root: str | Path, cap: int | None = None, suffixes: tuple[str, ...] | None = None,
                label: str | None = None) -> list[Path]:
    """The files directly in ``root`` (symlinks followed to files) whose name ends in one of ``suffixes``
    (case-insensitive; None: any), sorted by name. At most ``cap`` entries (default ``MAX_FOLDER_FILES``, every
    entry counts, matching or not) are looked at: a folder with more is one InputError naming the cap and
    ``ROBUSTLAB_MAX_FOLDER_FILES``. Nothing is read."""
    cap = MAX_FOLDER_FILES if cap is None else int(cap)
    root = Path(root)
    label = label or root.name or shown_path(root)
    sfx = tuple(s.lower() for s in suffixes) if suffixes is not None else None
    found: list[str] = []
    seen = 0
    try:
        with os.scandir(root) as it:
            for entry in it:
                seen += 1
                if seen > cap:
                    raise InputError(f"{label}: the folder holds more than {cap} entries, the limit of one folder "
                                     f"(set {FOLDER_SETTING} to change it, or split the folder)")
                if sfx is not None and not entry.name.lower().endswith(sfx):
                    continue
                try:
                    # follows a symlink: its target must be a file (inside the dashboard's data roots, if any)
                    if entry.is_file() and visible(entry.path):
                        found.append(entry.name)
                except OSError:
                    continue
    except (OSError, ValueError) as e:
        raise InputError(f"{label}: cannot list the folder ({reason(e)})") from e
    return [root / n for n in sorted(found)]


def uploaded_bytes(f, limit: int | None = None) -> bytes:
    """The content of a browser upload (Streamlit's ``UploadedFile``: ``.name``, ``.size``, ``.getvalue()``),
    its ``.size`` checked against ``limit`` (default ``MAX_UPLOAD_BYTES``) *before* ``getvalue()`` copies it.
    InputError (one line naming the file, the limit and its setting) when it is over."""
    limit = MAX_UPLOAD_BYTES if limit is None else int(limit)
    label = getattr(f, "name", "") or "upload"
    size = getattr(f, "size", None)
    if size is None and hasattr(f, "getbuffer"):
        with f.getbuffer() as mv:  # a view, not a copy
            size = mv.nbytes
    if size is not None and int(size) > limit:
        raise too_big(label, int(size), limit)
    data = f.getvalue()
    if len(data) > limit:
        raise too_big(label, len(data), limit)
    return data


def load_image(data: bytes | str | Path, name: str = "", max_pixels: int = MAX_IMAGE_PIXELS) -> np.ndarray:
    """Decode an image file (bytes or path) to H×W×3 uint8, or raise InputError saying why not."""
    if isinstance(data, (str, Path)):
        name = name or shown_path(data)
        data = read_file_capped(data, MAX_UPLOAD_BYTES, name)  # stat-ed before it is read
    label = name or "upload"
    fmt = None
    if not data:
        raise InputError(f"{label}: the file is empty")
    if len(data) > MAX_UPLOAD_BYTES:
        raise too_big(label, len(data), MAX_UPLOAD_BYTES)
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
                if getattr(im, "is_animated", False):  # not n_frames: that walks (and decodes) every frame
                    im.seek(0)
                arr = to_uint8_rgb(im)
    except InputError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise InputError(f"{label}: the image is over the {max_pixels / 1e6:.0f}-megapixel limit (a decompression-bomb "
                         f"guard; {e}); downscale it first") from e
    except UnidentifiedImageError as e:  # Pillow's own text names the in-memory stream ("<_io.BytesIO object…>")
        raise InputError(f"{label}: not an image robustlab can read (no image format recognised"
                         f"{', it looks like text' if _looks_like_text(data) else ''})") from e
    except (OSError, SyntaxError, ValueError, EOFError, TypeError) as e:
        raise InputError(f"{label}: the image file is corrupt or truncated ({fmt or 'unknown format'}: "
                         f"{_reason(e, label)})") from e
    except Exception as e:  # noqa: BLE001 - a decoder failing in an unexpected way (e.g. IndexError) is still bad input
        raise InputError(f"{label}: the image file is corrupt or truncated ({fmt or 'unknown format'}: "
                         f"{type(e).__name__}: {_reason(e, label)})") from e
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputError(f"{label}: the image has no pixels")
    return arr


_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def _reason(e: BaseException, label: str) -> str:
    """A decoder's message for a user: one line, and an in-memory stream's repr (``<_io.BytesIO object at 0x…>``,
    what Pillow names a file it was given as bytes) replaced by the file's ``label``."""
    return _OBJECT_REPR.sub(label, " ".join(str(e).split()))[:300]


def _looks_like_text(data: bytes) -> bool:
    head = data[:512]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3:  # a multi-byte character cut at the end is still text
            return False
    return bool(head.strip()) and not any(b < 9 or 13 < b < 32 for b in head)


def _decode_text(data: bytes | str, label: str) -> str:
    if isinstance(data, str):
        return data
    if len(data) > MAX_UPLOAD_BYTES:
        raise too_big(label, len(data), MAX_UPLOAD_BYTES)
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


# the file names a "name<TAB or ,>caption" line may start with (robustlab.datasets.uploads' IMAGE_SUFFIXES and
# VIDEO_SUFFIXES: tests/io/test_upload_pairing.py checks they agree)
MEDIA_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff",
                  ".mp4", ".webm", ".mov", ".avi", ".mkv", ".m4v", ".mpg", ".mpeg", ".ogv")
_SFX = "|".join(re.escape(s) for s in MEDIA_SUFFIXES)
_NAMED_LINE = (re.compile(rf"^\s*([^\t]*?(?:{_SFX}))\s*\t\s*(\S.*)$", re.IGNORECASE),  # name<TAB>caption
               re.compile(rf"^\s*([^\t,]*?(?:{_SFX}))\s*,\s*(\S.*)$", re.IGNORECASE))  # name, caption


def _named_line(line: str):
    return next((m for m in (r.match(line) for r in _NAMED_LINE) if m and m.group(1).strip()), None)


def _header_format(line: str) -> str | None:
    """".csv" / ".tsv" when ``line`` is a header row naming a file column and a caption column (and nothing else):
    text typed or saved as ``.txt`` that starts ``file,caption`` is read as that table."""
    sep = "\t" if "\t" in line else ","
    fields = [f.strip().lower() for f in line.split(sep)]
    if len(fields) >= 2 and all(f in _IMG_KEYS + _CAP_KEYS for f in fields) \
            and any(f in _IMG_KEYS for f in fields) and any(f in _CAP_KEYS for f in fields):
        return ".tsv" if sep == "\t" else ".csv"
    return None


def parse_captions(data: bytes | str, name: str = "captions.txt") -> list[tuple[str | None, str]]:
    """Parse a caption file into (image name or None, caption) pairs. Raises InputError on bad files.

    Plain text (any other suffix, and typed captions) is one caption per line, with no file name; except that text
    whose every non-empty line is ``name.png<TAB>caption`` or ``name.png, caption`` (a media file name first) names
    the files, and text whose first line is a ``file,caption`` header is read as CSV (TSV with tabs)."""
    label = name or "captions"
    text = _decode_text(data, label)
    suffix = Path(name).suffix.lower()
    if suffix not in (".json", ".csv", ".tsv"):
        first = next((line for line in text.splitlines() if line.strip()), "")
        suffix = _header_format(first) or suffix
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
        rows = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
        named = [_named_line(line) for _, line in rows]
        if rows and all(named):  # every line "name.png, caption": named
            for (i, _), m in zip(rows, named):
                pairs.append((m.group(1).strip(), clean_caption(m.group(2), f"{label} line {i}")))
        else:
            for i, line in rows:
                pairs.append((None, clean_caption(line, f"{label} line {i}")))
    if not pairs:
        raise InputError(f"{label}: no captions found")
    return pairs


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def _listing(names, k: int = 5) -> str:
    """Up to ``k`` names for a one-line message (whitespace collapsed, each at most 80 characters)."""
    names = [" ".join(str(n).split()) for n in names]
    names = [n if len(n) <= 80 else n[:79] + "…" for n in names]
    return ", ".join(names[:k]) + (f" … ({len(names) - k} more)" if len(names) > k else "")


def _base(name: str) -> str:
    """A file name without its folders (``/`` or ``\\``)."""
    return str(name).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _stem(name: str) -> str:
    b = _base(name)
    return b.rsplit(".", 1)[0] if "." in b.lstrip(".") else b


def _targets(key: str, names: list[str]) -> list[str]:
    """The distinct ``names`` a caption's file name ``key`` means: the one it equals; else those it equals without
    folders (``photos/a.png`` names ``a.png``); else those whose name without extension it is (``a`` names
    ``a.png``). ``a.png`` never names ``a.jpg``."""
    if key in names:
        return [key]
    b = _base(key)
    same = [n for n in names if _base(n) == b]
    return same or [n for n in names if _stem(n) == b]


@dataclass
class Pairing:
    """Captions paired with files (:func:`pair_captions`): ``captions`` has one caption (or None) per name;
    ``error`` is the one line saying why nothing was paired (then every caption is None); ``warnings`` one line each."""

    captions: list
    error: str | None = None
    warnings: list = field(default_factory=list)


def pair_captions(names: list[str], pairs: list[tuple[str | None, str]], label: str = "",
                  noun: str = "file", among: str = "the files given") -> Pairing:
    """Pair parsed captions (:func:`parse_captions`) with the files ``names`` (in the order given, refused files
    included: a file refused later takes its own caption with it). The one rule of uploads, captions attached to a
    gallery and a folder's captions file:

    * named captions (CSV/TSV file column, JSON, ``name.png, caption`` lines) go to the file they name (see
      :func:`_targets`; two files of one name both take it); a name meaning several files (``a`` for ``a.png`` and
      ``a.jpg``) is not guessed; names of no file here are one warning listing them; a file named twice keeps its
      first caption; captions without a name among named ones are ignored (one warning);
    * plain lines (no file names) go by position, and only when there are exactly as many lines as ``names``;
      else nothing is paired and ``error`` asks for named captions.

    ``label`` (the captions' source, e.g. ``captions.csv``) starts every line; ``noun`` and ``among`` word them.
    """
    pre = f"{label}: " if label else ""
    named = [(str(k).strip(), c) for k, c in pairs if k is not None and str(k).strip()]
    plain = [c for k, c in pairs if k is None or not str(k).strip()]
    if not named:
        if len(plain) != len(names):
            return Pairing([None] * len(names), f"{pre}{_plural(len(plain), 'caption')} for {_plural(len(names), noun)}"
                           ": name each caption's file (a CSV `file,caption`, JSON {file: caption} or lines "
                           "`file.png, caption`) when the counts differ")
        return Pairing(list(plain))
    uniq = list(dict.fromkeys(names))
    got: dict[str, list[str]] = {}
    unknown, ambiguous = [], []
    for key, cap in named:
        t = _targets(key, uniq)
        if not t:
            unknown.append(key)
        elif len(t) > 1:
            ambiguous.append(f"{key!r} ({' or '.join(t[:3])}{' …' if len(t) > 3 else ''})")
        else:
            got.setdefault(t[0], []).append(cap)
    warns = []
    if unknown:
        u = list(dict.fromkeys(unknown))
        warns.append(f"{pre}{_plural(len(u), 'caption')} name{'s' if len(u) == 1 else ''} "
                     f"{'a file' if len(u) == 1 else 'files'} not among {among}, ignored: {_listing(u)}")
    if ambiguous:
        a = list(dict.fromkeys(ambiguous))
        warns.append(f"{pre}{_plural(len(a), 'caption')} name{'s' if len(a) == 1 else ''} more than one file, "
                     f"ignored (give the full file name): {_listing(a, 3)}")
    several = [n for n in uniq if len(set(got.get(n, []))) > 1]
    if several:
        warns.append(f"{pre}{_plural(len(several), noun)} ha{'s' if len(several) == 1 else 've'} "
                     "more than one caption; "
                     f"the first of each is used: {_listing(several)}")
    if plain:
        warns.append(f"{pre}{_plural(len(plain), 'caption')} without a file name ignored (the others name their "
                     f"files): {_listing(repr(c[:40]) for c in plain)}")
    return Pairing([got[n][0] if n in got else None for n in names], None, warns)


def match_captions(image_names: list[str], pairs: list[tuple[str | None, str]]) -> list[str | None]:
    """One caption (or None) per image, by :func:`pair_captions`' rules (by file name; plain lines only when there
    are exactly as many as images, else none is paired)."""
    return pair_captions(image_names, pairs).captions
