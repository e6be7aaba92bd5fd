"""The dashboard's shared caches: process-wide, bounded in bytes, and out of every viewer's reach (issue 44).

Every session of a server shares what is loaded or computed once (models, galleries, benches, perturbed inputs):
that is what makes a second viewer fast. A viewer must not be able to change it: Streamlit's own caches
(``st.cache_resource`` / ``st.cache_data``) are cleared for *every* session by one ``clear_cache`` message that any
browser may send, and they bound entries by count, not bytes. So the dashboard keeps nothing shared in them. It uses
two pools of :class:`robustlab.io.memo.ByteLRU`, least recently used entries out first:

- ``models``: models, datasets and galleries, benches (``model_cache_mb`` / ``ROBUSTLAB_MODEL_CACHE_MB``, 4096);
- ``results``: what one request computed (a perturbed input, encoded media, a diagnostic view; ``result_cache_mb`` /
  ``ROBUSTLAB_RESULT_CACHE_MB``, 512).

A result larger than a quarter of its pool is computed, shown and not kept; a model may fill its pool.
``ui.server_guard`` refuses the ``clear_cache`` message itself; :func:`clear_all` is for tests and the operator,
never reachable from a browser.

Use :func:`shared` as ``st.cache_resource`` was used: arguments whose names start with ``_`` are not part of the key.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from robustlab.io.memo import ByteLRU
from robustlab.perturb.record import hash_value

MB = 1 << 20
POOLS = {"models": ("model_cache_mb", 4096), "results": ("result_cache_mb", 512)}
ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("robustlab.ui")
_POOLS: dict[str, ByteLRU] = {}
_LOCK = threading.Lock()
_MISSING = object()
REMEASURE_S = 2.0


def _budget_mb(pool: str) -> int:
    from ui import operator

    key, default = POOLS[pool]
    return int(getattr(operator.config(), key, default))


def pool(name: str) -> ByteLRU:
    """The process's pool ``name`` ("models" or "results"), made at first use with the operator's budget."""
    p = _POOLS.get(name)
    if p is None:
        with _LOCK:
            p = _POOLS.get(name)
            if p is None:
                budget = _budget_mb(name) * MB

                def evicted(key, n, _name=name):
                    log.info("%s cache: evicted %s (%.1f MB; least recently used first)", _name, key[0], n / MB)

                # a model may take the whole model pool (a big checkpoint is what the pool is for); a result at most
                # a quarter of its pool, so one huge request never flushes everyone else's results
                p = _POOLS[name] = ByteLRU(budget, max_entry=budget if name == "models" else budget // 4, name=name,
                                           on_evict=evicted)
    return p


def usage() -> dict[str, dict]:
    """Per pool: entries, bytes held, budget and counters (the operator's view; tests and benchmarks)."""
    return {n: {"entries": len(p), "bytes": p.nbytes, "budget": p.budget, "max_entry": p.max_entry, **p.stats}
            for n, p in _POOLS.items()}


def clear_all() -> None:
    """Forget every shared entry and the pools' budgets (tests; the operator restarting the server does the
    same). Nothing a browser sends calls it."""
    with _LOCK:
        for p in _POOLS.values():
            p.clear()
        _POOLS.clear()


def _key(v: Any):
    """A hashable key for one argument value: the value itself, or a digest of an array's bytes."""
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_key(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple(sorted((str(k), _key(x)) for k, x in v.items()))
    if hasattr(v, "__array_interface__") and hasattr(v, "tobytes"):  # a NumPy array: by content
        return ("ndarray", v.shape, str(v.dtype), hash_value(v))
    try:
        hash(v)
    except TypeError as e:
        raise TypeError(f"ui.cache.shared: an argument of type {type(v).__name__} is not hashable; name it with a "
                        "leading underscore to leave it out of the key") from e
    return v


def _namespace(fn: Callable) -> str:
    """``path/of/file.py:qualname``: stable across reruns of a page script (whose module is ``__main__``)."""
    try:
        where = os.path.relpath(fn.__code__.co_filename, ROOT)
    except (AttributeError, ValueError):
        where = fn.__module__
    return f"{where}:{fn.__qualname__}"


def shared(pool_name: str = "results", *, spinner: str | bool = False, grows: bool = False, ttl: float | None = None):
    """Memoise a function in the shared pool ``pool_name`` (see the module docstring).

    ``spinner``: a text shown (``st.spinner``) while a missing value is computed. ``grows``: the value keeps
    filling itself after it is returned (a bench memoising conditions); it is measured again at each use.
    ``ttl``: seconds after which a value is computed again (a folder listing)."""
    if pool_name not in POOLS:
        raise ValueError(f"unknown cache pool {pool_name!r} (one of {', '.join(POOLS)})")

    def deco(fn: Callable) -> Callable:
        ns = _namespace(fn)
        sig = inspect.signature(fn)
        measured: dict = {}  # key -> when a growing value was last measured

        def key_of(args, kwargs) -> tuple:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            key = (ns,) + tuple((k, _key(v)) for k, v in bound.arguments.items() if not k.startswith("_"))
            if ttl:
                key += (("_ttl", int(time.monotonic() // ttl)),)  # the stale period's entry ages out of the LRU
            return key

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            key = key_of(args, kwargs)
            p = pool(pool_name)
            value = p.get(key, _MISSING)
            if value is _MISSING:
                if spinner:
                    import streamlit as st  # only the pages' callers show a spinner

                    with st.spinner(spinner if isinstance(spinner, str) else "Computing…"):
                        value = p.get_or_compute(key, lambda: fn(*args, **kwargs))
                else:
                    value = p.get_or_compute(key, lambda: fn(*args, **kwargs))
            if grows:  # measured again at most every REMEASURE_S seconds: a bench of 300 items takes ~60 ms
                now = time.monotonic()
                if now - measured.get(key, -REMEASURE_S) >= REMEASURE_S:
                    measured[key] = now
                    p.remeasure(key)
                    if len(measured) > 4096:
                        measured.clear()
            return value

        def clear() -> None:
            p = pool(pool_name)
            for k in p.keys():
                if k[0] == ns:
                    p.pop(k)

        def forget(*args, **kwargs) -> None:
            """Drop the one entry these arguments name (a value that must not be kept)."""
            pool(pool_name).pop(key_of(args, kwargs))

        wrapper.clear = clear  # type: ignore[attr-defined]
        wrapper.forget = forget  # type: ignore[attr-defined]
        wrapper.namespace = ns  # type: ignore[attr-defined]
        return wrapper

    return deco
