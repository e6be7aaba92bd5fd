"""Kill the processes of a local Ray that a robustlab driver started, once that driver is gone for any reason.

:func:`robustlab.bench.ray_runner.start` runs this file as a script (``python -I ray_watchdog.py PID TAG START``,
standard library only, so it starts in a fraction of a second without importing robustlab or torch) *before* it
starts a local Ray, and starts that Ray with ``ROBUSTLAB_RAY_SESSION=TAG`` in its environment, which GCS, raylet,
dashboard agent, runtime-env agent, log monitor and workers inherit.

While the driver runs, the watchdog scans /proc every ``POLL_S`` and keeps the Ray processes it finds, as (pid,
start time) pairs: a process is one when it has the tag in ``/proc/PID/environ`` at first sight, or when its parent
is one. The parent rule is needed: Ray's agents rename themselves with ``setproctitle``, which sometimes wipes
their ``/proc/PID/environ`` (measured with Ray 2.60), so the tag alone misses them; they are the raylet's children.

The driver is gone when its stdin (a pipe whose other end only the driver holds) reaches EOF, which also happens when
the driver closes it after ``ray.shutdown()``, or when the driver's pid no longer names the process with the start
time it had (checked at every scan, in case a forked child of the driver keeps the pipe open). Then the watchdog
sends SIGTERM to every Ray process it knows (start time checked, so a reused pid is never hit) or finds with the
tag, SIGKILL to those still there a second later, and scans again until two scans in a row find none (at most
``LIMIT_S``). Processes of other users are invisible to it (their environ cannot be read) and never signalled.

Why: Ray's head processes die with the driver (Ray sets PR_SET_PDEATHSIG on Linux) and its workers follow the
raylet, but after a ``kill -9`` of the driver Ray 2.60's two agents notice the dead raylet and then wait about a
minute on the dead GCS before they exit, still listening.
"""
from __future__ import annotations

import os
import select
import signal
import sys
import time

ENV = "ROBUSTLAB_RAY_SESSION"
POLL_S = 0.5
GRACE_S = 1.0
LIMIT_S = 20.0


def _stat(pid: int):
    """(state, start time in clock ticks, parent pid) of ``pid``, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
        return rest[0].decode(), int(rest[19]), int(rest[1])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid: int, start: int | None) -> bool:
    """``pid`` is still the process that had start time ``start`` and is not a zombie."""
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X") and (start is None or st[1] == start)


def _has_tag(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:
        return False


def tagged(tag: str) -> list[int]:
    """The live processes (of this user) whose ``/proc/PID/environ`` shows TAG; may miss a process whose environ a
    ``setproctitle`` wiped (see the module docstring)."""
    needle, me = f"{ENV}={tag}".encode(), os.getpid()
    return [int(n) for n in os.listdir("/proc")
            if n.isdigit() and int(n) != me and _has_tag(int(n), needle) and alive(int(n), None)]


class Tracker:
    """The processes of the Ray tagged ``tag``: tagged at first sight, or children of one (module docstring)."""

    def __init__(self, tag: str, exclude=()):
        self.needle = f"{ENV}={tag}".encode()
        self.exclude = {os.getpid(), *exclude}
        self.known: dict = {}  # pid -> start time
        self.checked: set = set()  # (pid, start time) whose environ was read

    def scan(self) -> None:
        procs = {}
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in self.exclude:
                st = _stat(int(name))
                if st is not None and st[0] not in ("Z", "X"):
                    procs[int(name)] = st
        self.known = {p: s for p, s in self.known.items() if p in procs and procs[p][1] == s}
        changed = True
        while changed:  # a child can be listed before its parent
            changed = False
            for pid, (_, start, ppid) in procs.items():
                if self.known.get(pid) == start:
                    continue
                mine = ppid in self.known
                if not mine and (pid, start) not in self.checked:
                    self.checked.add((pid, start))
                    mine = _has_tag(pid, self.needle)
                if mine:
                    self.known[pid] = start
                    changed = True

    def live(self) -> list[int]:
        return [p for p, s in self.known.items() if alive(p, s)]


def _signal(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def reap(tracker: Tracker, grace_s: float = GRACE_S, limit_s: float = LIMIT_S) -> int:
    """SIGTERM every process of the tracker's Ray, SIGKILL what is left after ``grace_s``; repeat until two empty
    scans in a row or ``limit_s``. Returns how many processes it signalled."""
    t0, empty, hit = time.monotonic(), 0, set()
    while empty < 2 and time.monotonic() - t0 < limit_s:
        tracker.scan()
        pids = tracker.live()
        if not pids:
            empty += 1
            time.sleep(0.1)
            continue
        empty = 0
        hit.update(pids)
        _signal(pids, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and tracker.live():
            time.sleep(0.05)
        _signal(tracker.live(), signal.SIGKILL)
    return len(hit)


def watch(pid: int, start: int | None, tracker: Tracker, stdin_fd: int = 0) -> None:
    """Scan every ``POLL_S`` until ``stdin_fd`` reaches EOF or ``pid`` is no longer the process started at ``start``."""
    while alive(pid, start):
        tracker.scan()
        try:
            ready, _, _ = select.select([stdin_fd], [], [], POLL_S)
        except InterruptedError:
            continue
        if ready:
            try:
                if not os.read(stdin_fd, 4096):
                    return
            except OSError:
                return


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pid, tag = int(argv[0]), argv[1]
    start = int(argv[2]) if len(argv) > 2 and argv[2] else None
    # Ctrl-C or a closed terminal reach the driver; this process stays to clean up after it.
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    tracker = Tracker(tag, exclude=(pid,))
    watch(pid, start, tracker)
    reap(tracker)
    return 0


if __name__ == "__main__":
    sys.exit(main())
