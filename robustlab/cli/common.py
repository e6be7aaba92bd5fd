"""What the commands share: the one-line error, an exception's message, an --out path checked before any work, comma
lists and the progress bar."""
from __future__ import annotations

import errno
import os
import sys
from pathlib import Path


def msg(e: Exception) -> str:
    """An exception's message (a KeyError's str() would add quotes around it)."""
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)


def err(message: str, code: int = 2) -> int:
    """Print ``robustlab: MESSAGE`` on stderr and return the exit code."""
    print(f"robustlab: {message}", file=sys.stderr)
    return code


def os_message(e: OSError, path=None) -> str:
    """An OSError as one line: the path (``path``, else the error's) and why, in words (a full disk says so)."""
    why = e.strerror or str(e) or type(e).__name__
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        why += " (the disk is full)"
    where = path if path is not None else e.filename
    return f"{where}: {why}" if where is not None else why


def out_problem(path, kind: str) -> str | None:
    """Why ``--out PATH`` cannot be written as a ``kind`` ("folder" or "file"), or None when it can; checked before
    any work, so that an hour's run never ends in a traceback at the write. A path at a file (a folder is wanted)
    or at a folder (a file is wanted), a path under a file, a folder that cannot be written, a malformed path."""
    p = Path(os.path.expanduser(str(path)))
    try:
        if kind == "folder" and p.exists() and not p.is_dir():
            return f"--out {path}: {p} is a file, not a folder"
        if kind == "file" and p.is_dir():
            return f"--out {path}: {p} is a folder, not a file"
        first = p if kind == "folder" and p.is_dir() else next((a for a in p.parents if a.exists()), None)
        if first is None:
            return None
        if not first.is_dir():
            return f"--out {path}: {first} is a file, not a folder"
        if not os.access(first, os.W_OK | os.X_OK):
            return f"--out {path}: cannot write in {first} (permission denied)"
    except (OSError, ValueError) as e:  # a name too long, a NUL byte, a loop of links
        return f"--out {path!r}: not a path robustlab can write ({e})"
    return None


def split(text) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [p.strip() for p in str(text or "").split(",") if p.strip()]


def counting_bar(args, desc: str | None = None, unit: str = "item"):
    """A progress bar on stderr (off with --json or when stderr is no terminal) and its ``progress(done, total)``."""
    from tqdm.auto import tqdm  # start-up: only the commands that show a bar pay for tqdm

    bar = tqdm(desc=desc, unit=unit, disable=args.json or not sys.stderr.isatty(), file=sys.stderr)

    def progress(done, total):
        bar.total = total
        bar.n = done
        bar.refresh()
    return bar, progress
