"""The benchmark's streamlit server and its memory (RSS and PSS of process trees, from /proc)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from .common import ROOT


# ---- the server ----------------------------------------------------------------------------------------------------
class Server:
    """``streamlit run app.py`` on a free localhost port with its own cache and run folders."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.log_path = workdir / "streamlit.log"
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, timeout: float = 180) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        (self.workdir / "cache").mkdir(parents=True, exist_ok=True)
        (self.workdir / "runs").mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, ROBUSTLAB_CACHE=str(self.workdir / "cache"), ROBUSTLAB_RUNS=str(self.workdir / "runs"))
        env.pop("ROBUSTLAB_SYNC_SWEEP", None)
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                      "--server.address", "127.0.0.1", "--server.headless", "true",
                                      "--browser.gatherUsageStats", "false"],
                                     cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.time() + timeout
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if urllib.request.urlopen(self.url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                    return self.url
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError("streamlit did not start:\n" + self.log()[-3000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


# ---- memory, from /proc --------------------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _tree(pid: int, kids: dict[int, list[int]]) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _status_kb(pid: int, field_name: str = "VmRSS") -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


class Sampler(threading.Thread):
    """Every ``every`` s: RSS of the server and its children, and of the Chromium processes under this process
    (their PSS too, every 10th sample: it double-counts nothing, but costs more to read)."""

    def __init__(self, server_pid: int, every: float = 1.0):
        super().__init__(daemon=True, name="rss-sampler")
        self.server_pid, self.every = server_pid, every
        self.samples: list[tuple[float, float, float, float | None]] = []  # (t, server MB, chromium RSS MB, PSS MB)
        self.loads: list[tuple[float, float]] = []
        self._halt = threading.Event()
        self.t0 = time.time()

    def run(self) -> None:
        i = 0
        while not self._halt.is_set():
            kids = _children()
            server = set(_tree(self.server_pid, kids))
            s_kb = sum(_status_kb(p) for p in server)
            chrome = [p for p in _tree(os.getpid(), kids) if p not in server and _comm(p).startswith("chrom")]
            c_kb = sum(_status_kb(p) for p in chrome)
            pss = sum(_pss_kb(p) for p in chrome) / 1024 if i % 10 == 0 else None
            t = time.time() - self.t0
            self.samples.append((t, s_kb / 1024, c_kb / 1024, pss))
            if i % 10 == 0:
                self.loads.append((t, os.getloadavg()[0]))
            i += 1
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


def _r(x, nd: int = 1):
    return None if x is None else round(float(x), nd)


def _status_meminfo() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            return round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
