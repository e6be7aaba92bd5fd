"""What the commands share: the one-line error, an exception's message, comma lists and the progress bar."""
from __future__ import annotations

import sys


def msg(e: Exception) -> str:
    """An exception's message (a KeyError's str() would add quotes around it)."""
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)


def err(message: str, code: int = 2) -> int:
    """Print ``robustlab: MESSAGE`` on stderr and return the exit code."""
    print(f"robustlab: {message}", file=sys.stderr)
    return code


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
