"""A local Ray started by the sweep engine is safe on a shared machine: every socket of its processes listens on
loopback and none serves Prometheus /metrics, its token file is 0600, its files sit in a 0700 folder, and a
``kill -9`` of the CLI leaves no Ray process behind (robustlab/bench/ray_runner.py, issue 23).

Processes and sockets are read from /proc (Linux), so the tests need nothing beyond the standard library."""
from __future__ import annotations

import ipaddress
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robustlab.bench import ray_runner as ray_engine
from robustlab.bench.ray_watchdog import ENV as TAG_ENV
from robustlab.bench.ray_watchdog import _stat, tagged
from robustlab.bench import SweepSpec, condition_grid, run_sweep

ROOT = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads /proc (Linux)")


# ---------------------------------------------------------------------------------------------- /proc helpers
def _children() -> dict:
    kids: dict = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(name))
    return kids


def _descendants(pid: int) -> set:
    kids, out, todo = _children(), set(), [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _addr(hexaddr: str):
    raw = bytes.fromhex(hexaddr)
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    return ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))


def _loopback(ip) -> bool:
    return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)


def _short(pid: int) -> str:
    """The program of ``pid``: ``raylet``, ``gcs_server``, ``python``, ``ray::_Worker``..."""
    return os.path.basename(_name(pid).split(" ")[0])


def _listeners(pids) -> list:
    """(pid, name, ip, port) of every listening TCP socket (IPv4 and IPv6) held by one of ``pids``."""
    owner = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                owner[link[8:-1]] = pid
    out = []
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/self/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and f[9] in owner:  # 0A: TCP_LISTEN
                host, port = f[1].split(":")
                pid = owner[f[9]]
                out.append((pid, _short(pid), _addr(host), int(port, 16)))
    return out


def _host_ips() -> list:
    """This machine's non-loopback IPv4 addresses (the LOCAL /32 entries of the routing trie)."""
    ips, prev = set(), None
    try:
        for line in Path("/proc/net/fib_trie").read_text().splitlines():
            if "/32 host LOCAL" in line and prev:
                ips.add(prev)
            prev = line.strip().lstrip("|-+ ").strip() or None
    except OSError:
        pass
    try:
        ips.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return sorted(ip for ip in ips if _ip_ok(ip) and not ipaddress.ip_address(ip).is_loopback)


def _ip_ok(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def _metrics_status(ip: str, port: int) -> str:
    """The status line of ``GET /metrics`` at ip:port ('' when nothing answers HTTP there)."""
    try:
        with socket.create_connection((ip, port), timeout=2) as s:
            s.settimeout(2)
            s.sendall(f"GET /metrics HTTP/1.0\r\nHost: {ip}\r\n\r\n".encode())
            return s.recv(256).split(b"\r\n")[0].decode(errors="replace")
    except OSError:
        return ""


def _check_ray_sockets(pids) -> list:
    """Assert every listener of ``pids`` is loopback and no listener serves /metrics, on loopback or on any of this
    machine's other addresses; returns the listeners."""
    lst = _listeners(pids)
    names = {n for _, n, _, _ in lst}
    assert {"raylet", "gcs_server"} <= names, lst  # we did look at a running Ray
    bad = [x for x in lst if not _loopback(x[2])]
    assert not bad, f"Ray sockets listening beyond loopback: {bad}"
    for pid, name, ip, port in lst:
        status = _metrics_status("127.0.0.1" if ip.version == 4 or ip.ipv4_mapped else "::1", port)
        assert " 200" not in status, f"{name} (pid {pid}) serves /metrics on {ip}:{port} without a token: {status}"
        for host in _host_ips():
            status = _metrics_status(host, port)
            assert " 200" not in status, f"{name} (pid {pid}) port {port} answers /metrics on {host}: {status}"
    return lst


def _kill_all(pids: dict, tag=None) -> None:
    """SIGKILL what is left of ``pids`` ({pid: start time}) and of the processes tagged ``tag`` (test cleanup)."""
    left = [p for p, t in pids.items() if (_stat(p) or (None, None))[1] == t]
    left += tagged(tag) if tag else []
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


# ------------------------------------------------------------------------------------------------ unit: files
def test_token_file_is_created_0600_and_existing_one_tightened(tmp_path, monkeypatch):
    for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    p = ray_engine.token_file()
    assert p == tmp_path / ".ray" / "auth_token"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(p.parent.stat().st_mode) == 0o700
    token = p.read_text()
    assert len(token) == 64 and int(token, 16) >= 0
    assert [x.name for x in p.parent.iterdir()] == ["auth_token"]  # no temporary file left
    p.chmod(0o644)
    assert ray_engine.token_file() == p
    assert stat.S_IMODE(p.stat().st_mode) == 0o600 and p.read_text() == token  # same token, tightened


def test_token_file_left_alone_when_ray_uses_no_default_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.setenv("RAY_AUTH_TOKEN", "x" * 64)
    assert ray_engine.token_file() is None
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert ray_engine.token_file() is None
    assert not (tmp_path / ".ray").exists()


def test_private_temp_dir_is_0700_and_not_someone_elses(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    d = Path(ray_engine.private_temp_dir())
    assert d == tmp_path / f"robustlab-ray-{os.getuid()}" / "ray"
    assert stat.S_IMODE(d.parent.stat().st_mode) == 0o700
    d.parent.chmod(0o777)
    assert Path(ray_engine.private_temp_dir()) == d and stat.S_IMODE(d.parent.stat().st_mode) == 0o700
    d.parent.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o777)
    d.parent.symlink_to(tmp_path / "elsewhere")  # a planted link is not followed
    other = Path(ray_engine.private_temp_dir())
    assert other.parent != d.parent and other.parent.parent == tmp_path
    assert stat.S_IMODE(other.parent.stat().st_mode) == 0o700


# ---------------------------------------------------------------------------------------------- with a Ray
@pytest.mark.slow
@linux_only
def test_local_sweep_ray_listens_on_loopback_only_without_metrics(tmp_path, ray_session):
    seen: dict = {}

    def progress(st):
        if st["done"] >= 1 and not seen:  # mid-sweep: the actors are alive
            pids = {os.getpid()} | _descendants(os.getpid())
            seen["names"] = [_name(p) for p in pids]
            seen["listeners"] = _check_ray_sockets(pids)

    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "n": 8},
                     conditions=condition_grid(["gaussian_noise"], [1, 3]))
    st = run_sweep(spec, tmp_path / "run", engine="ray", progress=progress)
    assert st.done == st.total == len(spec.cells())
    assert seen, "the sweep reported no progress"
    assert any("ray::_Worker" in n for n in seen["names"]), seen["names"]
    node = ray_session._private.worker._global_node
    assert node.node_ip_address == "127.0.0.1"
    # Ray's own record of its temp dir: inside the private 0700 folder, not /tmp/ray
    temp = Path(node.get_temp_dir_path())
    if not os.environ.get("RAY_TMPDIR"):
        assert temp.parent.name == f"robustlab-ray-{os.getuid()}"
        assert stat.S_IMODE(temp.parent.stat().st_mode) == 0o700


@pytest.mark.slow
def test_local_ray_token_file_is_0600(ray_session):
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH") or \
            os.environ.get("RAY_AUTH_MODE", "token").lower() != "token":
        pytest.skip("this environment gives Ray its token another way")
    p = Path.home() / ".ray" / "auth_token"
    assert ray_session.is_initialized() and p.is_file()
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


@pytest.mark.slow
@linux_only
def test_cli_kill_9_leaves_no_ray_process(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    out = tmp_path / "run"
    log = open(tmp_path / "cli.log", "w+")
    cli = subprocess.Popen([sys.executable, "-m", "robustlab.cli", "bench", "--models", "builtin:tiny-clip",
                            "--dataset", "builtin", "--n", "64", "--perturbations",
                            "gaussian_noise,jpeg_compression,motion_blur", "--severities", "1-5", "--out", str(out),
                            "--engine", "ray", "--num-cpus", "2", "--quiet"],
                           cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    seen: dict = {}  # pid -> start time, every process the CLI started (a killed one's children are re-parented)
    tag = None
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and cli.poll() is None:
            pids = _descendants(cli.pid)
            for p in pids:
                st = _stat(p)
                if st and p not in seen:
                    seen[p] = st[1]
            names = [_name(p) for p in pids]
            if any("ray::_Worker" in n for n in names):  # mid-sweep: an actor runs cells
                break
            time.sleep(0.2)
        log.seek(0)
        assert cli.poll() is None and any("ray::_Worker" in _name(p) for p in seen), \
            "the CLI never ran a Ray actor:\n" + log.read()[-3000:]
        raylet = [p for p in seen if _short(p) == "raylet"]
        assert raylet, [_name(p) for p in seen]
        environ = Path(f"/proc/{raylet[0]}/environ").read_bytes().split(b"\0")
        tag = next(e.split(b"=", 1)[1].decode() for e in environ if e.startswith(f"{TAG_ENV}=".encode()))
        assert set(tagged(tag)) <= set(seen) | _descendants(cli.pid)

        _check_ray_sockets({cli.pid} | _descendants(cli.pid))
        token = home / ".ray" / "auth_token"
        assert token.is_file() and stat.S_IMODE(token.stat().st_mode) == 0o600

        for p in _descendants(cli.pid):
            st = _stat(p)
            if st:
                seen.setdefault(p, st[1])
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait(10)

        def left():
            alive = [p for p, t in seen.items() if _stat(p) and _stat(p)[0] != "Z" and _stat(p)[1] == t]
            return sorted(set(alive) | set(tagged(tag)))

        deadline = time.monotonic() + 15
        while left() and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not left(), f"left after kill -9 of the CLI: {[(p, _name(p)) for p in left()]}"
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait(10)
        _kill_all(seen, tag)
        log.close()
