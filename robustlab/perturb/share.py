"""Whole-clip work shared between severities: byte-identical severities computed once, a clip decoded once.

A deterministic perturbation may declare ``effective=`` when it is registered: ``params -> the parameters its
function really uses`` (a codec's quantiser after the encoder clamps ``-q:v`` to [2, 31]). Severities whose
effective parameters are equal give byte-identical outputs on every input (measured: ``bench_codec_sharing.py``),
so :func:`share_groups` derives them from the tables, and one output serves them all. Two per-process memos,
bounded in bytes (``ROBUSTLAB_SHARE_MB``, default 1536: a group's sampled outputs for 1,000 clips of 8 frames at
224²; 0 turns sharing off):

* :data:`MEMO`, outputs by (input identity, name, variant, effective parameters[, sampled indices]). Only outputs
  that another severity will ask for are kept (a severity alone in its group is never stored), each until every
  other severity of its group has had it. A full memo makes room only from entries idle for ``IDLE_S`` seconds
  and otherwise refuses the new one: a sweep that asks clip after clip for one severity, then again for the next,
  keeps sharing the clips it could store instead of evicting each entry just before it is asked for.
* :data:`CLIPS`, the last ``CLIPS_KEPT`` whole clips a lazy whole-clip op decoded, by the source's identity (its
  ``identity`` attribute: a file's path, size, modification time and segment): the severities of one clip asked
  in turn decode it once.

Each severity's record stays its own (its severity, its parameters, the same input and output hashes), and
regenerating it recomputes (or finds) the same bytes. NumPy only; the registry calls it.
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import threading
import time
from typing import Any, Optional

import numpy as np

from robustlab.perturb import record as _rec
from robustlab.perturb.specs import PerturbationSpec, get_perturbation

IDLE_S = 300.0  # a full memo evicts only entries nobody asked for in this long
CLIPS_KEPT = 2


def _mb(default: float) -> int:
    return int(float(os.environ.get("ROBUSTLAB_SHARE_MB", str(default)) or default) * 2**20)


def effective(spec: PerturbationSpec, params: dict) -> Optional[dict]:
    """The parameters ``spec``'s function really uses (its ``effective`` declaration), or None if undeclared."""
    fn = getattr(spec, "effective", None)
    return None if fn is None else dict(fn(dict(params)))


def share_groups(name: str, variant: Optional[str] = None) -> list[tuple[int, ...]]:
    """Severities 1–5 of ``name`` (``variant``) grouped by equal effective parameters: ``[(1,), (2, 3, 4, 5)]``
    for codec1. Every severity alone where the spec declares nothing."""
    spec = get_perturbation(name)
    table = spec.variants[variant or spec.default_variant]
    groups: dict = {}
    for s in sorted(table):
        eff = effective(spec, table[s])
        k = ("s", s) if eff is None else json.dumps(_rec.jsonable(eff), sort_keys=True)
        groups.setdefault(k, []).append(s)
    return [tuple(g) for g in groups.values()]


def same_as(name: str, variant: Optional[str], severity: int) -> Optional[tuple[int, dict]]:
    """``(lowest severity, effective parameters)`` when ``name`` (``variant``) at ``severity`` gives byte-identical
    output to that lower severity (codec1 s2–s5 are s2), else None: what a report and ``--dry-run`` mark, so two
    cells of one output are not read as two measurements."""
    spec = get_perturbation(name)
    v = variant or spec.default_variant
    for g in share_groups(name, v):
        if int(severity) in g and len(g) > 1 and int(severity) != min(g):
            return min(g), effective(spec, spec.variants[v][min(g)]) or {}
    return None


def output_key(spec: PerturbationSpec, variant: str, severity: int, seed: int, ident, extra=()) -> Optional[tuple]:
    """The memo key of ``spec`` at ``severity`` on the input ``ident`` (None: nothing to share), with the other
    severities that share it."""
    if ident is None or not enabled():
        return None
    table = spec.variants[variant]
    eff = effective(spec, table[severity])
    if eff is None:
        return None
    group = next(g for g in share_groups(spec.name, variant) if severity in g)
    if len(group) < 2:
        return None
    rand = () if "deterministic" in spec.tags else (int(seed),)  # a seeded op shares only within one seed
    return (ident, spec.name, variant, json.dumps(_rec.jsonable(eff), sort_keys=True), rand, tuple(extra)), group


class OutputMemo:
    """Outputs by key, bounded in bytes; see the module docstring. ``computed`` counts the shareable outputs
    computed (misses), ``hits`` those served."""

    def __init__(self, max_bytes: Optional[int] = None):
        self.max_bytes = _mb(1536) if max_bytes is None else int(max_bytes)
        self._d: "collections.OrderedDict[Any, list]" = collections.OrderedDict()  # key -> [value, nbytes, left, t]
        self.bytes = 0
        self.hits = self.computed = self.refused = 0
        self._lock = threading.Lock()

    def get(self, keyed, severity: int):
        """The stored value for ``keyed`` (from :func:`output_key`) asked by ``severity``, or None."""
        if keyed is None:
            return None
        key, _ = keyed
        with self._lock:
            e = self._d.get(key)
            if e is None:
                return None
            self.hits += 1
            e[2].discard(int(severity))
            e[3] = time.monotonic()
            if not e[2]:  # every severity of the group has had it
                del self._d[key]
                self.bytes -= e[1]
            else:
                self._d.move_to_end(key)
            return e[0]

    def put(self, keyed, severity: int, value, nbytes: int) -> None:
        if keyed is None:
            return
        key, group = keyed
        with self._lock:
            self.computed += 1
            if key in self._d or nbytes > self.max_bytes:
                return
            now = time.monotonic()
            while self.bytes + nbytes > self.max_bytes and self._d:
                old_key, old = next(iter(self._d.items()))
                if now - old[3] < IDLE_S:
                    self.refused += 1
                    return
                del self._d[old_key]
                self.bytes -= old[1]
            self._d[key] = [value, int(nbytes), set(group) - {int(severity)}, now]
            self.bytes += int(nbytes)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._d)


class ClipMemo:
    """The last ``CLIPS_KEPT`` whole clips read by identity: ``(frames, input_hash)``."""

    def __init__(self):
        self._d: "collections.OrderedDict[Any, tuple]" = collections.OrderedDict()
        self.decoded = 0
        self._lock = threading.Lock()

    def read_whole(self, src, ident) -> tuple[np.ndarray, str]:
        n = int(src.n_frames)
        with self._lock:
            got = self._d.get(ident) if ident is not None else None
            if got is not None:
                self._d.move_to_end(ident)
                return got
        clip = np.ascontiguousarray(src.read(np.arange(n)))
        self.decoded += 1
        got = (clip, _rec.hash_value(clip))
        if ident is not None and enabled() and clip.nbytes <= MEMO.max_bytes:
            with self._lock:
                self._d[ident] = got
                while len(self._d) > CLIPS_KEPT:
                    self._d.popitem(last=False)
        return got

    def clear(self) -> None:
        with self._lock:
            self._d.clear()


MEMO = OutputMemo()
CLIPS = ClipMemo()
_OFF = threading.local()


def enabled() -> bool:
    return MEMO.max_bytes > 0 and not getattr(_OFF, "off", False)


@contextlib.contextmanager
def disabled():
    """Sharing off in this thread (benchmarks compare with and without it)."""
    before = getattr(_OFF, "off", False)
    _OFF.off = True
    try:
        yield
    finally:
        _OFF.off = before


def clear() -> None:
    """Empty both memos."""
    MEMO.clear()
    CLIPS.clear()


def source_identity(src) -> Optional[tuple]:
    """What a frame source's frames depend on, without decoding: its ``identity`` attribute (video files), or
    the content hash of an in-memory clip (``ArraySource``); None when unknown (nothing is shared)."""
    ident = getattr(src, "identity", None)
    if ident is not None:
        return ("source", ident)
    frames = getattr(src, "frames", None)
    if isinstance(frames, np.ndarray):
        return ("array", _rec.hash_value(frames))
    return None


__all__ = ["share_groups", "effective", "output_key", "OutputMemo", "ClipMemo", "MEMO", "CLIPS", "enabled",
           "disabled", "clear", "source_identity"]
