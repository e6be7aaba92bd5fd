"""glibc malloc settings for NumPy-heavy perturbation work (Linux only; opt-out ``ROBUSTLAB_MALLOC_TUNING=0``).

Per-frame perturbations create float temporaries of 0.2–2 MB per call (a 224×224×3 frame in float32/float64).
With glibc's defaults (mmap threshold 128 KiB rising dynamically, trim threshold twice that) such blocks are
given back to the kernel when freed — through ``munmap`` or by trimming the top of the heap — and faulted in
again, page by page, on the next call. In a loop over frames that is paid on every frame: measured on the
project's 2-core machine (300 frames at 224², one thread), zoom_blur 6.9 s -> 2.1 s and brightness through the
video map 1.0 s -> 0.31 s once freed memory is kept (``benchmarks/README.md``).

``tune_allocator()`` sets ``M_MMAP_THRESHOLD`` to 32 MiB (the ceiling of glibc's own dynamic threshold on
64-bit) and ``M_TRIM_THRESHOLD`` to 64 MiB: blocks below 32 MiB come from the heap and up to 64 MiB of freed
memory per arena is kept for reuse. That is process-wide state, so the library never sets it on import: the CLI
and the dashboard call it at start-up, notebooks and scripts may call it themselves. Returns whether it was applied
(False off glibc, when disabled by the environment, or when ``mallopt`` refuses).
"""
from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1  # glibc malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20

_STATE = {"applied": False, "mmap_threshold": None, "trim_threshold": None}
_tried = False


def tune_allocator(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Keep freed NumPy temporaries for reuse instead of returning them to the kernel (see module docstring).
    The first call decides; later calls return its result."""
    global _tried
    if _tried:
        return _STATE["applied"]
    _tried = True
    if os.environ.get("ROBUSTLAB_MALLOC_TUNING", "1").strip().lower() in ("0", "false", "no", "off") \
            or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: musl's mallopt is a no-op  # noqa: B018
        mallopt = libc.mallopt
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        mallopt.restype = ctypes.c_int
        ok = mallopt(M_MMAP_THRESHOLD, int(mmap_threshold)) == 1 and mallopt(M_TRIM_THRESHOLD, int(trim_threshold)) == 1
    except (OSError, AttributeError):
        return False
    if ok:
        _STATE.update(applied=True, mmap_threshold=int(mmap_threshold), trim_threshold=int(trim_threshold))
    return ok


def allocator_state() -> dict:
    """What ``tune_allocator`` did in this process: {"applied": bool, "mmap_threshold", "trim_threshold"}."""
    return dict(_STATE)
