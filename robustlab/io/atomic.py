"""The one atomic write: a temporary file in the target's folder, then ``os.replace`` — a reader (or a crash
mid-write, or a full disk) never sees half a file, and the temporary file never outlives a failed write."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Union

Data = Union[bytes, bytearray, memoryview, str, Callable[[BinaryIO], None]]


def atomic_write(path, data: Data, *, encoding: str = "utf-8", suffix: str = ".tmp") -> Path:
    """Write ``data`` to ``path`` atomically, creating its folder; returns the path.

    ``data``: bytes, text (in ``encoding``) or a function that writes into the open binary file (``np.savez``,
    ``json.dump`` through a wrapper...). The temporary file is ``.<name>.<random><suffix>`` next to ``path`` (a
    folder scanned for leftovers can match ``suffix``); it is removed when the write fails, and the error is
    raised (an OSError for a full disk or a read-only folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode(encoding) if isinstance(data, str) else bytes(data))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


__all__ = ["atomic_write"]
