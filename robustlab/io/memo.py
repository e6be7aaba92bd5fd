"""A memo bounded in bytes: least recently used entries go first (the dashboard's shared caches, issue 44).

:func:`nbytes_of` estimates what an object holds: NumPy arrays and PyTorch tensors by their buffers, a
``torch.nn.Module`` by its parameters and buffers, containers and plain objects by what they reach (each buffer
counted once per object). :class:`ByteLRU` keeps ``key -> value`` under a byte budget; an entry larger than its
``max_entry`` share is computed and returned but never kept, so one huge request cannot flush everyone else's
entries. An entry that grows after it was stored (a bench that memoises what it computes) is measured again by
:meth:`ByteLRU.remeasure`.
"""
from __future__ import annotations

import logging
import sys
import threading
import types
from collections import OrderedDict
from typing import Any, Callable, Hashable

_ATOMS = (int, float, complex, bool, type(None))
# what an entry refers to but does not hold: shared by the whole process, never counted nor walked into
_SHARED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, logging.Logger,
           type(threading.Lock()), type(threading.RLock()), threading.Thread, threading.Event, threading.Condition)
_MAX_NODES = 200_000  # objects walked for one estimate at most (a big gallery of small objects stays cheap)


def nbytes_of(obj: Any, _seen: set | None = None, _depth: int = 0) -> int:
    """Bytes ``obj`` holds, counted once per underlying buffer (an estimate: exact for arrays and tensors,
    ``sys.getsizeof`` for the rest)."""
    seen = set() if _seen is None else _seen
    if isinstance(obj, _ATOMS):
        return sys.getsizeof(obj)
    if id(obj) in seen or _depth > 12 or len(seen) > _MAX_NODES or isinstance(obj, _SHARED):
        return 0
    seen.add(id(obj))
    if isinstance(obj, (str, bytes, bytearray, memoryview)):
        return sys.getsizeof(obj)
    nbytes = getattr(obj, "nbytes", None)
    if hasattr(obj, "__array_interface__") and isinstance(nbytes, int):  # a NumPy array: its buffer, once
        base = getattr(obj, "base", None)
        while getattr(base, "base", None) is not None:
            base = base.base
        if base is not None and hasattr(base, "nbytes"):
            if id(base) in seen:
                return 0
            seen.add(id(base))
            return int(base.nbytes) + 112
        return int(nbytes) + 112
    if hasattr(obj, "untyped_storage") and hasattr(obj, "element_size"):  # a PyTorch tensor: its storage, once
        try:
            storage = obj.untyped_storage()
            key = ("storage", storage.data_ptr())
            if key in seen:
                return 0
            seen.add(key)
            return int(storage.nbytes()) + 80
        except (RuntimeError, TypeError):  # a meta tensor or a tensor subclass without storage
            return int(obj.element_size() * obj.nelement())
    if callable(getattr(obj, "named_parameters", None)) and callable(getattr(obj, "buffers", None)):
        # a torch.nn.Module: its parameters and buffers (the Python objects around them are small)
        return sum(nbytes_of(t, seen, _depth + 1) for t in list(obj.parameters()) + list(obj.buffers())) + 1024
    if hasattr(obj, "memory_usage") and hasattr(obj, "columns"):  # a pandas DataFrame
        try:
            return int(obj.memory_usage(deep=True).sum())
        except (TypeError, ValueError):
            pass
    if hasattr(obj, "tobytes") and hasattr(obj, "size") and hasattr(obj, "mode"):  # a PIL image
        w, h = obj.size
        return int(w * h * max(len(obj.getbands()), 1)) + 200
    total = sys.getsizeof(obj)
    if isinstance(obj, dict):
        return total + sum(nbytes_of(k, seen, _depth + 1) + nbytes_of(v, seen, _depth + 1) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return total + sum(nbytes_of(v, seen, _depth + 1) for v in obj)
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        total += nbytes_of(d, seen, _depth + 1)
    for slot in getattr(type(obj), "__slots__", ()):
        if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
            total += nbytes_of(getattr(obj, slot, None), seen, _depth + 1)
    return total


class ByteLRU:
    """``key -> value`` under ``budget`` bytes, least recently used evicted first; thread-safe.

    :meth:`get_or_compute` computes a missing value once even when several threads ask for it together (the
    others wait for it), as Streamlit's ``st.cache_resource`` does. ``max_entry``: the largest entry kept
    (default: a quarter of the budget); a larger one is returned to its caller and not kept."""

    def __init__(self, budget: int, max_entry: int | None = None, name: str = "cache",
                 on_evict: Callable[[Hashable, int], None] | None = None):
        self.name = name
        self.budget = max(int(budget), 0)
        self.max_entry = self.budget // 4 if max_entry is None else int(max_entry)
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.RLock()
        self._computing: dict[Hashable, threading.Lock] = {}
        self.on_evict = on_evict
        self.stats = {"hits": 0, "misses": 0, "evicted": 0, "refused": 0}

    # ---- reading ----
    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(n for _, n in self._entries.values())

    def keys(self) -> list:
        with self._lock:
            return list(self._entries)

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key not in self._entries:
                return default
            self._entries.move_to_end(key)
            return self._entries[key][0]

    # ---- writing ----
    def put(self, key: Hashable, value: Any, nbytes: int | None = None) -> bool:
        """Keep ``value`` (measured unless ``nbytes`` is given); False when it is larger than ``max_entry``."""
        n = nbytes_of(value) if nbytes is None else int(nbytes)
        with self._lock:
            self._entries.pop(key, None)
            if n > self.max_entry:
                self.stats["refused"] += 1
                return False
            self._entries[key] = (value, n)
            self._evict()
            return key in self._entries

    def remeasure(self, key: Hashable) -> int:
        """Measure the entry ``key`` again (it grew since it was stored), then evict down to the budget."""
        with self._lock:
            if key not in self._entries:
                return 0
            value = self._entries[key][0]
        n = nbytes_of(value)
        with self._lock:
            if key in self._entries and self._entries[key][0] is value:
                if n > self.max_entry:
                    self._drop(key)
                else:
                    self._entries[key] = (value, n)
                    self._evict(keep=key)
        return n

    def pop(self, key: Hashable) -> Any:
        with self._lock:
            entry = self._entries.pop(key, None)
            return None if entry is None else entry[0]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _drop(self, key: Hashable) -> None:
        _, n = self._entries.pop(key)
        self.stats["evicted"] += 1
        if self.on_evict is not None:
            self.on_evict(key, n)

    def _evict(self, keep: Hashable | None = None) -> None:
        total = sum(n for _, n in self._entries.values())
        for key in list(self._entries):
            if total <= self.budget:
                break
            if key == keep:
                continue
            total -= self._entries[key][1]
            self._drop(key)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value of ``key``, computing it (once across threads) when it is missing."""
        with self._lock:
            if key in self._entries:
                self.stats["hits"] += 1
                self._entries.move_to_end(key)
                return self._entries[key][0]
            gate = self._computing.setdefault(key, threading.Lock())
        with gate:
            with self._lock:  # another thread may have computed it while this one waited
                if key in self._entries:
                    self.stats["hits"] += 1
                    self._entries.move_to_end(key)
                    return self._entries[key][0]
            try:
                value = compute()
                self.stats["misses"] += 1
                self.put(key, value)
                return value
            finally:
                with self._lock:
                    if self._computing.get(key) is gate:
                        del self._computing[key]
