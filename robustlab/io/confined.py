"""Reading under the dashboard's data roots (:func:`robustlab.io.access.set_read_roots`): what is read is what was
checked, and what a message says gives nothing away.

* :func:`open_fd` opens a file so that a symlink swapped between the check and the open can't let an outside file
  through: the resolved path is opened with ``O_NOFOLLOW`` and the *opened descriptor's* real path, as the kernel has
  it (``/proc/self/fd``), must lie inside a root -- a symlinked folder on the way is caught too.
* :func:`shown_path` is how a message names a file: relative to the data root it lies under, never absolutely.
* :func:`visible`, :func:`is_file`, :func:`is_dir` never raise: a name the file system refuses to look up (a
  component over 255 bytes: ENAMETOOLONG; a symlink loop) is a missing file, never an OSError naming the full path.

The library and the CLI (no roots in force) are unaffected: names are shown and opened as given. Light: standard
library only, so the dataset registry imports it at module level.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from robustlab.io import access
from robustlab.io.access import inside, read_roots

NO_SUCH = "No such file or directory"  # the one reason a confined read gives: outside, missing, unreadable alike


def visible(path: str | os.PathLike) -> bool:
    """:func:`robustlab.io.access.visible` (always True without roots; with them: inside a root, there and readable),
    and False for a name the file system refuses to look up."""
    try:
        return access.visible(path)
    except (OSError, ValueError):
        return False


def is_file(path: str | os.PathLike) -> bool:
    """``Path(path).is_file()``, False (never an OSError naming the full path) when the name can't be looked up."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: str | os.PathLike) -> bool:
    """``Path(path).is_dir()``, False when the name can't be looked up (see :func:`is_file`)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def shown_path(path: str | os.PathLike) -> str:
    """How a message names ``path``. The library and the CLI: as given. Under the dashboard's data roots: relative to
    the root it lies under (by name, symlinks not followed; the root itself by its folder name), else its bare name
    -- never a server's absolute path, and nothing about where a symlink points."""
    roots = read_roots()
    if roots is None:
        return str(path)
    p = Path(os.path.abspath(os.fspath(path)))
    for r in roots:
        if p == r or r in p.parents:
            rel = p.relative_to(r)
            return rel.as_posix() if rel.parts else (r.name or "the data root")
    return p.name or "file"


def reason(e: BaseException | None) -> str:
    """Why a file can't be had, for a message: under the data roots always :data:`NO_SUCH` (a viewer can't tell
    outside from missing from unreadable); otherwise the system's reason, without the file name an OSError carries."""
    if read_roots() is not None or e is None:
        return NO_SUCH
    return getattr(e, "strerror", None) or " ".join(str(e).split())


def _kernel_path(fd: int) -> str | None:
    """Where the kernel says the opened ``fd`` is (Linux ``/proc/self/fd``, macOS ``F_GETPATH``), or None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    try:  # pragma: no cover - no /proc (macOS)
        import fcntl  # standard library, Unix only: imported where it is used

        get = getattr(fcntl, "F_GETPATH", None)
        return os.fsdecode(fcntl.fcntl(fd, get, bytes(1024)).split(b"\0", 1)[0]) if get is not None else None
    except (OSError, ImportError, ValueError):  # pragma: no cover
        return None


def _opened_inside(fd: int, real: str, roots) -> bool:
    where = _kernel_path(fd)
    if where is not None:
        return where.startswith("/") and inside(Path(where), roots)  # "… (deleted)" lies nowhere: refused
    try:  # pragma: no cover - the kernel won't say: the descriptor must be the file the resolved name is now
        a, b = os.fstat(fd), os.stat(real, follow_symlinks=False)
        return inside(Path(real), roots) and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    except OSError:  # pragma: no cover
        return False


def open_fd(path: str | os.PathLike) -> int:
    """A read-only, non-blocking (a FIFO never hangs the open), close-on-exec descriptor of ``path``; OSError when it
    can't be had. Under the data roots the resolved path is opened with ``O_NOFOLLOW`` (its last component may not
    have become a symlink since it was resolved) and the descriptor's real path must lie inside a root, else
    ``FileNotFoundError`` -- the same as a missing file. A symlink that stays inside the roots still opens."""
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    roots = read_roots()
    if roots is None:
        return os.open(path, flags)
    real = os.path.realpath(path)
    fd = os.open(real, flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        ok = _opened_inside(fd, real, roots)
    except BaseException:
        os.close(fd)
        raise
    if not ok:
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, NO_SUCH)
    return fd


__all__ = ["NO_SUCH", "visible", "is_file", "is_dir", "shown_path", "reason", "open_fd"]
