"""Shared AppTest helpers: a fresh app run with session state set first, the first table with a given column, and the
built-in scenes as PNG uploads."""
from __future__ import annotations

import io
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 300


def fresh(page: str | None = None, timeout: float = TIMEOUT, **state) -> AppTest:
    """A new AppTest of app.py with ``state`` in the session state, run once (switched to ``page`` first); fails on
    an exception shown by the app."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for k, v in state.items():
        at.session_state[k] = v
    (at.switch_page(page) if page else at).run()
    assert not at.exception, at.exception
    return at


def table(at: AppTest, column: str):
    """The first dataframe (its DataFrame) with a column ``column`` (AppTest's dataframes carry no key); fails
    naming the column when none has it."""
    got = [d.value for d in at.dataframe if column in d.value.columns]
    assert got, f"no table with a column {column!r}"
    return got[0]


def png_uploads(n: int, prefix: str = "img") -> tuple[list[tuple[str, bytes]], list[str]]:
    """The first ``n`` built-in scenes as (name, PNG bytes) uploads, and their captions."""
    from PIL import Image

    from robustlab.datasets.synthetic.datasets import builtin_gallery

    g = builtin_gallery(n)
    files = []
    for i, im in enumerate(g.images):
        b = io.BytesIO()
        Image.fromarray(im).save(b, format="PNG")
        files.append((f"{prefix}{i}.png", b.getvalue()))
    return files, list(g.captions)
