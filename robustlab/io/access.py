"""Which folders a process may read datasets from: the dashboard's data roots.

The library and the CLI read whatever their user can (no policy is set). The dashboard sets one at start-up
(:func:`set_read_roots`, from the operator's configuration): from then on every dataset file robustlab's readers
open in that process (:func:`check_read`, called by ``robustlab.io.files`` and the dataset loaders) must resolve,
symlinks included, to a path inside one of the roots. A path that is outside them, missing or unreadable gets one
and the same message (:data:`NOT_OPENABLE`), so a viewer can't tell what exists on the server.

:func:`resolve_inside` is the same check for a folder a viewer picks (a root and a relative path under it).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterable, Sequence

NOT_OPENABLE = "is not a folder or file this dashboard may open"


class AccessDenied(PermissionError):
    """A path outside the data roots, missing or unreadable: the same one line for all three."""

    def __init__(self, shown: str):
        super().__init__(f"{shown!r} {NOT_OPENABLE} (the operator's data roots)")
        self.shown = shown

    def __str__(self) -> str:  # PermissionError's str adds errno text; keep the one line
        return self.args[0]


_lock = threading.Lock()
_roots: tuple[Path, ...] | None = None  # None: no policy (library, CLI); (): nothing may be read


def _real(p: str | os.PathLike) -> Path:
    return Path(os.path.realpath(Path(p).expanduser()))


def set_read_roots(roots: Iterable[str | os.PathLike] | None) -> tuple[Path, ...] | None:
    """Confine this process's dataset reads to ``roots`` (resolved now), or lift the confinement with None.
    Roots that don't exist are dropped. Returns what is in force."""
    global _roots
    with _lock:
        _roots = None if roots is None else tuple(dict.fromkeys(r for r in (_real(x) for x in roots) if r.is_dir()))
        return _roots


def read_roots() -> tuple[Path, ...] | None:
    """The roots in force (None: no confinement)."""
    return _roots


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether the resolved ``path`` is one of ``roots`` or under one."""
    return any(path == r or r in path.parents for r in roots)


def check_read(path: str | os.PathLike, shown: str | None = None) -> Path:
    """``path`` when this process may read it (no confinement, or it resolves inside a root and is readable);
    else :class:`AccessDenied` naming ``shown`` (default: the file's name, never where it points)."""
    roots = _roots
    if roots is None:
        return Path(path)
    try:  # a name the file system refuses to look up (ENAMETOOLONG, ELOOP) reads as a missing one
        real = _real(path)
        ok = inside(real, roots) and os.access(real, os.R_OK) and real.exists()
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise AccessDenied(shown if shown is not None else Path(path).name)
    return Path(path)


def visible(path: str | os.PathLike) -> bool:
    """Whether this process may see ``path`` at all: always without confinement; with it, only when it resolves
    inside a root and is readable. A reader treats an invisible file exactly as a missing one (the same message),
    so a symlink out of a root neither shows what it points at nor whether that exists."""
    roots = _roots
    if roots is None:
        return True
    try:  # a name the file system refuses to look up (ENAMETOOLONG, ELOOP) is not visible
        real = _real(path)
        return inside(real, roots) and real.exists() and os.access(real, os.R_OK)
    except (OSError, ValueError):
        return False


def resolve_inside(root: str | os.PathLike, rel: str = "", roots: Sequence[Path] | None = None) -> Path:
    """The folder ``root/rel`` resolved (symlinks included) when it is a readable folder inside ``roots`` (default:
    the roots in force; with no confinement, any readable folder); else :class:`AccessDenied` naming ``rel`` (or
    the root's name) — the same message whether it is outside, missing or unreadable."""
    rel = str(rel or "").strip()
    shown = rel or Path(root).name
    if "\x00" in rel or len(rel) > 1024:
        raise AccessDenied(shown[:80])
    roots = _roots if roots is None else tuple(_real(r) for r in roots)
    try:  # a name the file system refuses (ENAMETOOLONG, ELOOP, EACCES) reads as any other folder it may not open
        real = _real(Path(root) / rel) if rel else _real(root)
        ok = real.is_dir() and os.access(real, os.R_OK | os.X_OK)
    except (OSError, ValueError):
        raise AccessDenied(shown) from None
    if not ok or (roots is not None and not inside(real, roots)):
        raise AccessDenied(shown)
    return real


__all__ = ["AccessDenied", "NOT_OPENABLE", "set_read_roots", "read_roots", "check_read", "visible", "resolve_inside",
           "inside"]
