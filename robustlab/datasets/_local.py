"""What the loaders of local dataset copies share: finding annotation files, reading JSON / JSON lines / CSV with
one-line errors, checking fields, picking the media folder, and reading an image file.

Every failure is a :class:`~robustlab.datasets.base.DatasetError` whose message starts with the dataset's name and
names the file (and, for a missing annotation file, where to get it): by its path for the library and the CLI,
relative to its data root under the dashboard (``robustlab.io.files.shown_path``), where a file outside the roots,
missing, unreadable or whose name can't be looked up reads the same. Nothing here unpickles anything.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from robustlab.datasets.base import DatasetError
from robustlab.io import files as io_files  # by module: the size limits are read (and patched) at call time
from robustlab.io.confined import is_dir, is_file, shown_path, visible


def rel(path: Path, root: Path | None) -> str:
    """``path`` relative to ``root`` when it is under it (for records), else the full path."""
    try:
        return str(Path(path).relative_to(root)) if root is not None else str(path)
    except ValueError:
        return str(path)


def find_file(root: Path, names: Sequence[str], subdirs: Sequence[str] = ("",), override: str | Path | None = None,
              *, who: str, get: str) -> Path:
    """The first of ``subdir/name`` under ``root`` that exists; ``override`` (absolute, or relative to ``root``)
    replaces the search. DatasetError naming the first expected path and where to get the file when none does."""
    if override is not None:
        p = Path(override).expanduser()
        p = p if p.is_absolute() else root / p
        if not is_file(p) or not visible(p):  # outside the dashboard's data roots: as missing
            raise DatasetError(f"{who}: annotation file {shown_path(p)!r} does not exist ({get})")
        return p
    for d in subdirs:
        for n in names:
            p = root / d / n if d else root / n
            if is_file(p) and visible(p):  # outside the dashboard's data roots: as missing
                return p
    first = root / subdirs[0] / names[0] if subdirs[0] else root / names[0]
    also = [n for n in names[1:]]
    hint = f" (or {', '.join(also)})" if also else ""
    raise DatasetError(f"{who}: missing {shown_path(first)!r}{hint}; {get}")


def _short(path: Path, root: Path | None) -> str:
    """How a size message names a file: relative to ``root`` when under it, else its bare name (a size refusal
    may reach a dashboard viewer; it never shows a full server path)."""
    if root is not None:
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            pass
    return Path(path).name


def _annotation_limit() -> tuple[int, str]:
    return io_files.MAX_ANNOTATION_BYTES, io_files.ANNOTATION_SETTING


def read_json(path: Path, who: str, *, root: Path | None = None) -> Any:
    """A JSON file, stat-ed against ``ROBUSTLAB_MAX_ANNOTATION_MB`` (default 2048 MB) before it is read."""
    limit, setting = _annotation_limit()
    try:
        return json.loads(io_files.read_file_capped(path, limit, _short(path, root), setting))
    except io_files.InputError as e:
        raise DatasetError(f"{who}: {e}") from e
    except json.JSONDecodeError as e:
        raise DatasetError(f"{who}: {shown_path(path)!r} is not valid JSON (line {e.lineno}: {e.msg})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{who}: cannot read {shown_path(path)!r} ({_err(e)})") from e
    except (ValueError, RecursionError) as e:  # a number over Python's 4300-digit limit, nesting too deep
        raise DatasetError(f"{who}: {shown_path(path)!r} is not JSON robustlab can read ({_why(e)})") from e


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"


def _err(e: BaseException) -> str:
    """An error's reason for a message: an OSError's without the file name it carries (the message names the file,
    as a viewer may see it)."""
    if isinstance(e, OSError):
        return e.strerror or type(e).__name__
    return " ".join(str(e).split())[:200]


def read_jsonl(path: Path, who: str, *, root: Path | None = None) -> list[dict]:
    """A JSON-lines file (one object per line; blank lines skipped), stat-ed against
    ``ROBUSTLAB_MAX_ANNOTATION_MB`` before it is read (and never read past it)."""
    limit, setting = _annotation_limit()
    out = []
    try:
        with io_files.open_capped(path, limit, _short(path, root), setting, encoding="utf-8") as f:
            for ln, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DatasetError(f"{who}: {shown_path(path)!r} line {ln} is not a JSON object ({e.msg}); "
                                       "expected JSON lines (one object per line)") from e
                except (ValueError, RecursionError) as e:  # a number over the 4300-digit limit, nesting too deep
                    raise DatasetError(f"{who}: {shown_path(path)!r} line {ln} is not JSON robustlab can read "
                                       f"({_why(e)})") from e
                if not isinstance(obj, dict):
                    raise DatasetError(f"{who}: {shown_path(path)!r} line {ln} is a {type(obj).__name__}, "
                                       "not an object")
                out.append(obj)
    except io_files.InputError as e:
        raise DatasetError(f"{who}: {e}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{who}: cannot read {shown_path(path)!r} ({_err(e)})") from e
    return out


def read_csv(path: Path, columns: Iterable[str], who: str, *, root: Path | None = None) -> list[dict]:
    """A CSV file with a header row that must hold ``columns``, stat-ed against ``ROBUSTLAB_MAX_ANNOTATION_MB``
    before it is read (and never read past it)."""
    limit, setting = _annotation_limit()
    try:
        with io_files.open_capped(path, limit, _short(path, root), setting, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            have = [c.strip() for c in (reader.fieldnames or [])]
            missing = [c for c in columns if c not in have]
            if missing:
                raise DatasetError(f"{who}: {shown_path(path)!r} has no column {', '.join(map(repr, missing))} "
                                   f"(columns: {', '.join(have) or 'none'}; expected {', '.join(columns)})")
            return [{(k or "").strip(): v for k, v in row.items()} for row in reader]
    except io_files.InputError as e:
        raise DatasetError(f"{who}: {e}") from e
    except csv.Error as e:
        raise DatasetError(f"{who}: {shown_path(path)!r} is not a readable CSV ({e})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{who}: cannot read {shown_path(path)!r} ({_err(e)})") from e


def need(rec: Any, key: str | tuple[str, ...], where: str, who: str, fmt: str) -> Any:
    """``rec[key]`` (the first present of several keys), or DatasetError saying which field is missing where and
    what the format is."""
    keys = (key,) if isinstance(key, str) else key
    if isinstance(rec, dict):
        for k in keys:
            if k in rec and rec[k] is not None:
                return rec[k]
    what = " / ".join(map(repr, keys))
    got = f"; it has {', '.join(map(str, list(rec)[:8]))}" if isinstance(rec, dict) else \
        f"; it is a {type(rec).__name__}"
    raise DatasetError(f"{who}: {where} has no field {what}{got} (expected {fmt})")


def need_int(rec: Any, key: str, where: str, who: str, fmt: str) -> int:
    """``rec[key]`` as an int (ids: 42 or "42"), or DatasetError."""
    v = need(rec, key, where, who, fmt)
    try:
        if isinstance(v, bool) or float(v) != int(float(v)):
            raise ValueError
        return int(float(v))
    except (TypeError, ValueError, OverflowError):  # OverflowError: inf
        raise DatasetError(f"{who}: {where}[{key!r}] is {v!r}, not an integer id (expected {fmt})") from None


def need_list(obj: Any, key: str, where: str, who: str, fmt: str) -> list:
    v = need(obj, key, where, who, fmt)
    if not isinstance(v, list):
        raise DatasetError(f"{who}: {where}[{key!r}] is a {type(v).__name__}, not a list (expected {fmt})")
    return v


def check_n(n: int | None, who: str) -> int | None:
    if n is None:
        return None
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise DatasetError(f"{who}: n must be a positive integer, got {n!r}")
    return int(n)


def pick_dir(root: Path, candidates: Sequence[str], probe: str | None) -> Path:
    """The first ``root/candidate`` folder that holds ``probe`` (a relative file name); else the first candidate
    folder that exists; else the first candidate (a missing file is then named when it is read)."""
    dirs = [root / c if c else root for c in candidates]
    if probe:
        for d in dirs:
            if is_file(d / probe):
                return d
    for d in dirs:
        if is_dir(d) and d != root:
            return d
    return dirs[0]


def read_image(path: Path, who: str, get: str = "", *, root: Path | None = None) -> np.ndarray:
    """An image file as H×W×3 uint8 (through ``robustlab.io.files.load_image``: stat-ed against the upload limit
    ``ROBUSTLAB_MAX_UPLOAD_MB`` before it is read, its header's pixel count checked before it is decoded); a
    missing or unreadable file is a DatasetError naming it (and, when missing, ``get``: where the images come
    from). Under the dashboard's data roots a file outside them, missing or whose name can't be looked up is the
    same "is missing" line."""
    if not is_file(path) or not visible(path):
        raise DatasetError(f"{who}: image {shown_path(path)!r} is missing" + (f" ({get})" if get else ""))
    try:
        # one line naming the file, not its full path
        io_files.check_file_size(path, io_files.MAX_UPLOAD_BYTES, _short(path, root))
        return io_files.load_image(path)
    except io_files.InputError as e:
        raise DatasetError(f"{who}: {e}") from e


__all__ = ["rel", "find_file", "read_json", "read_jsonl", "read_csv", "need", "need_int", "need_list", "check_n",
           "pick_dir", "read_image"]
