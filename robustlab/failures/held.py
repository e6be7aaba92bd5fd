"""A :class:`~robustlab.datasets.base.Dataset` object as the dataset of a failure map's sweep.

The sweep engine (:mod:`robustlab.bench`) names its dataset by a registered name and options (its cells, keys and
``sweep.json`` are built from them, and it rebuilds the dataset itself). A Dataset object -- a dashboard upload, a
dataset a script built -- has no such name, so :func:`held` lends it one for the length of one call: the object is
kept in this process under a fresh token, the sweep's dataset is ``{"name": "in-memory", "options": {"token": ...}}``
(:data:`HELD`, registered at the first use, built by looking the token up), and the object is let go when the call
ends. Nothing outlives the call: a later sweep that names the token gets a one-line DatasetError. The local engine
only: Ray's workers rebuild the dataset in other processes, where the object is not held.
"""
from __future__ import annotations

import threading
import uuid
from contextlib import contextmanager
from typing import Iterator, Optional

from robustlab.datasets.base import Dataset, DatasetError
from robustlab.datasets.registry import get_entry, register_dataset

HELD = "in-memory"
_OBJECTS: dict[str, Dataset] = {}
_LOCK = threading.Lock()


def _held_dataset(split: str = "all", token: str = "", n: Optional[int] = None) -> Dataset:
    with _LOCK:
        ds = _OBJECTS.get(str(token))
    if ds is None:
        raise DatasetError("that Dataset object is no longer held: pass the object again")
    if n is not None and int(n) != len(ds):
        raise DatasetError(f"the Dataset object holds {len(ds)} items; a failure map runs on all of them")
    return ds


def _register() -> None:
    """Register :data:`HELD` at the first use (a listing before any object was passed does not show it)."""
    try:
        get_entry(HELD)
    except DatasetError:  # not registered yet
        register_dataset(HELD, kind="any", tasks=("retrieval", "grounding", "vqa"), splits=("all",),
                         needs_root=False, description="a Dataset object passed to robustlab.failures (held for the "
                                                       "length of that call)",
                         needs="a Dataset object passed in this process")(_held_dataset)


@contextmanager
def held(ds: Dataset) -> Iterator[dict]:
    """The sweep's dataset dict naming ``ds`` for the length of the ``with`` block."""
    if len(ds) == 0:
        raise DatasetError(f"the dataset {ds.name or ''} is empty".replace("  ", " "))
    _register()
    token = uuid.uuid4().hex
    with _LOCK:
        _OBJECTS[token] = ds
    try:
        yield {"name": HELD, "split": "all", "n": len(ds), "options": {"token": token}}
    finally:
        with _LOCK:
            _OBJECTS.pop(token, None)


__all__ = ["held", "HELD"]
