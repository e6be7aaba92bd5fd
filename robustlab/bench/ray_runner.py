"""The sweep's Ray engine: the same cells as the local engine, run by Ray actors, gathered by the driver.

``run_on_ray(spec, cells)`` starts a local Ray (CPUs from the machine, a bounded object store, no dashboard) or
connects to an existing cluster (``address="auto"`` or ``"ray://HEAD:10001"``), and yields each cell's
:class:`~robustlab.bench.CellOutput` as it completes; :func:`robustlab.bench.run_sweep` writes them, so
the files are the same as the local engine's (a cell's Result depends only on the spec) and a remote cluster needs
no shared filesystem: thumbnails come back as bytes.

Sharding is by cell, in chunks: one actor per worker slot keeps a model and the decoded dataset loaded
(:func:`robustlab.bench.run_group` on a :class:`~robustlab.bench.DecodedOnce` dataset) and runs chunks
of cells of one (model, task) — loading a model and decoding a dataset per cell would cost more than most cells.
Cells are not split by item: a retrieval cell's metrics need every item's embedding, and a split would have to
gather embeddings between two rounds of tasks for little gain at the cell sizes a sweep has.

Pitfalls measured with Ray 2.60 on a 2-core machine, and what this module does about them:

* an actor pool as large as ``num_cpus`` of whole-CPU actors starved Ray's own workers and hung: actors here ask
  for a fraction of a CPU (``ACTOR_CPUS``), so a pool of ``num_cpus`` actors leaves CPUs free for Ray's tasks;
* each actor runs torch with one thread (``torch.set_num_threads(1)``) so actors do not oversubscribe the cores;
* Ray ≥ 2.59 turns on token authentication for the local clusters it starts: ``ray.init`` in the same process
  handles the token itself; connecting to a cluster someone else started needs that cluster's token in the
  environment (``RAY_AUTH_TOKEN``), as Ray's own error says;
* ``local_mode`` is gone: tests share one session-scoped Ray and shut it down at the end.

A local Ray on a shared machine (what :func:`start` does when no address is given; Ray 2.60, Linux):

* **Loopback only.** ``ray.init(_node_ip_address="127.0.0.1")`` alone is not enough: Ray replaces a loopback node
  address by the machine's routable IP (``services.resolve_ip_for_localhost``) unless
  ``ray_constants.ENABLE_RAY_CLUSTER`` is false (its single-machine mode on macOS and Windows, env
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``). :func:`start` turns it off around ``ray.init`` (env and constant) and
  gets node address 127.0.0.1; GCS, raylet, core workers and both agents then bind 127.0.0.1 instead of 0.0.0.0/::
  (they test ``is_localhost(node_ip)``). It refuses to go on when the node address is not loopback.
* **No metrics export, no dashboard.** ``_system_config={"enable_metrics_collection": False}`` makes the raylet start
  the dashboard agent with ``--disable-metrics-collection``: no Prometheus export port. ``include_dashboard=False``
  still starts the dashboard head (API server with only its usage-stats module and no HTTP front end) and the
  autoscaler monitor, each with an unauthenticated Prometheus ``/metrics`` (127.0.0.1:44227 and 127.0.0.1:44217);
  ``ray.init`` has no option to skip either, so :func:`start` stops both as soon as ``ray.init`` returns (a local
  sweep needs neither). What stays: GCS, raylet, core-worker gRPC (token checked), the dashboard agent's gRPC and
  HTTP (127.0.0.1:52365) and the runtime-env agent's HTTP (both answer 401 without the token), all on 127.0.0.1.
* **Token file 0600.** With token authentication on (``RAY_AUTH_MODE`` unset or ``token``) and neither
  ``RAY_AUTH_TOKEN`` nor ``RAY_AUTH_TOKEN_PATH`` set, Ray 2.60 writes ``~/.ray/auth_token`` with a plain ``open(p,
  "w")`` (mode 0644 under the usual umask). :func:`token_file` creates it first, 0600 (written to a 0600 temporary
  file and linked into place, so a concurrent start never sees a partial token), in a 0700 ``~/.ray`` when it makes
  the folder, and tightens an existing file of this user to 0600.
* **Private files.** Ray makes ``/tmp/ray`` and its session folders (logs, spilled objects, the raylet and plasma
  sockets) mode 0777 / world-readable; :func:`start` gives it ``_temp_dir=$TMPDIR/robustlab-ray-UID/ray``, inside a
  0700 folder (:func:`private_temp_dir`), unless ``RAY_TMPDIR`` is set.
* **Nothing outlives the driver.** Before ``ray.init`` :func:`start` runs :mod:`robustlab.bench.ray_watchdog` (a
  stdlib-only script in its own session) and starts Ray with ``ROBUSTLAB_RAY_SESSION=<random tag>`` in its
  environment; the watchdog keeps track of the processes with the tag and of their children, and when the driver
  exits for any reason, ``kill -9`` included, SIGTERMs then SIGKILLs them: all gone within about two seconds
  (without it Ray's two agents stayed about a minute after a ``kill -9``, listening). :func:`stop` (what
  :func:`run_on_ray` calls) shuts Ray down and waits for the watchdog's final check.

With an address (``--address auto``, ``HEAD:6379``, ``ray://HEAD:10001``, or ``$RAY_ADDRESS``) none of this applies:
the cluster is someone else's, started with its own options (bind address, dashboard, metrics), and ``ray.init``
needs its token in the environment, e.g. ``RAY_AUTH_TOKEN=$(cat TOKENFILE) robustlab bench ... --engine ray
--address HEAD:6379`` or ``RAY_AUTH_TOKEN_PATH=TOKENFILE``; :func:`stop` only disconnects.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator, Optional, Sequence

import torch

from robustlab.bench.ray_watchdog import ENV as TAG_ENV  # marks the processes of the local Ray started here
from robustlab.bench.ray_watchdog import _stat
from robustlab.bench.cells import CellOutput, build_dataset, load, run_group
from robustlab.bench.sources import DecodedOnce
from robustlab.bench.spec import Cell, SweepCancelled, SweepError, SweepSpec
from robustlab.engine.cache import EmbeddingCache
from robustlab.tasks.conditions import conditions_json, normalize

ACTOR_CPUS = 0.5
CHUNK = 4  # cells per task: short enough to spread over actors, long enough to amortise a call
LOOPBACK = "127.0.0.1"

_LOCK = threading.RLock()
_watchdog: Optional[subprocess.Popen] = None


def _ray():
    try:
        import ray
    except ImportError:
        raise SweepError("the ray engine needs Ray: pip install 'robustlab[ray]'") from None
    return ray


def token_file() -> Optional[Path]:
    """Make sure the token file a new local Ray uses is readable by this user only; its path, or None when Ray will
    not use ``~/.ray/auth_token`` (token auth disabled, ``RAY_AUTH_TOKEN`` or an existing ``RAY_AUTH_TOKEN_PATH``)
    or the folder cannot be written (then Ray cannot write it either)."""
    if os.environ.get("RAY_AUTH_MODE", "token").lower() != "token" or os.environ.get("RAY_AUTH_TOKEN") or \
            os.name != "posix":
        return None
    if os.environ.get("RAY_AUTH_TOKEN_PATH") and os.path.isfile(os.environ["RAY_AUTH_TOKEN_PATH"]):
        return None
    path = Path.home() / ".ray" / "auth_token"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            tmp = path.with_name(f".auth_token.{os.getpid()}.{secrets.token_hex(4)}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(secrets.token_hex(32))  # what Ray's generate_new_authentication_token makes
                    f.flush()
                    os.fsync(f.fileno())
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    pass  # another start made it first: that one is used (and tightened below)
            finally:
                os.unlink(tmp)
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, 0o600)
    except OSError:
        return None
    return path


def private_temp_dir() -> str:
    """Ray's temp dir for a local Ray: ``ray`` in ``$TMPDIR/robustlab-ray-UID``, a folder of mode 0700 (a fresh
    ``mkdtemp`` one when that path is someone else's, a link, or not a folder). Ray makes its temp dir and session
    folders 0777 (``try_make_directory_shared``) with logs readable by all; under a 0700 parent no other user reaches
    them, nor the raylet and plasma sockets."""
    d = Path(tempfile.gettempdir()) / f"robustlab-ray-{os.getuid()}"
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            d = Path(tempfile.mkdtemp(prefix="robustlab-ray-"))
        elif st.st_mode & 0o077:
            os.chmod(d, 0o700)
    except OSError:
        d = Path(tempfile.mkdtemp(prefix="robustlab-ray-"))
    return str(d / "ray")


def _is_loopback(ip) -> bool:
    try:
        return ipaddress.ip_address(str(ip)).is_loopback
    except ValueError:
        return False


def _start_watchdog(tag: str) -> subprocess.Popen:
    """The watchdog of the local Ray tagged TAG (see :mod:`robustlab.bench.ray_watchdog`): it holds the read end of a
    pipe only this process writes to, and runs in its own session so Ctrl-C and hang-ups reach only the driver."""
    st = _stat(os.getpid())
    script = Path(__file__).with_name("ray_watchdog.py")
    return subprocess.Popen([sys.executable, "-I", str(script), str(os.getpid()), tag, str(st[1] if st else "")],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=True, start_new_session=True)


def _stop_watchdog(wait_s: float = 10.0) -> None:
    """Close the watchdog's pipe: it kills what is left of its Ray and exits (waited for up to ``wait_s``)."""
    global _watchdog
    wd, _watchdog = _watchdog, None
    if wd is None:
        return
    try:
        wd.stdin.close()
        wd.wait(wait_s)
    except (OSError, subprocess.TimeoutExpired):
        pass  # it goes on by itself


def _start_local(ray, num_cpus: Optional[int], kw: dict) -> None:
    """``ray.init`` of a local Ray that listens on 127.0.0.1 only, exports no metrics, runs no dashboard head or
    monitor, and dies with this process (module docstring)."""
    global _watchdog
    from ray._private import ray_constants  # the optional heavy dependency, imported only here (like _ray)

    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        mem = 8 << 30
    _stop_watchdog()  # a previous local Ray of this process, shut down by someone else's ray.shutdown()
    token_file()
    tag = secrets.token_hex(12)
    linux = os.path.isdir("/proc/self")  # the watchdog reads /proc; the private folder needs POSIX owners
    _watchdog = _start_watchdog(tag) if linux else None
    env = {TAG_ENV: tag, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    saved_env = {k: os.environ.get(k) for k in env}
    saved_flag = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    os.environ.update(env)
    try:
        if saved_flag is not None:
            ray_constants.ENABLE_RAY_CLUSTER = False  # read when ray.init resolves the node address
        ray.init(num_cpus=int(num_cpus or os.cpu_count() or 1),
                 object_store_memory=int(max(100 << 20, min(1 << 30, mem // 10))),
                 _node_ip_address=LOOPBACK, _system_config={"enable_metrics_collection": False},
                 _temp_dir=os.environ.get("RAY_TMPDIR") or (private_temp_dir() if linux else None), **kw)
    finally:
        if saved_flag is not None:
            ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    node = getattr(ray._private.worker, "_global_node", None)
    ip = getattr(node, "node_ip_address", None)
    if not _is_loopback(ip):
        stop()
        raise SweepError(f"the local Ray listens on {ip!r}, not {LOOPBACK}: refusing to run on it")
    for kill in ("kill_monitor", "kill_dashboard"):  # no ray.init option skips them; a local sweep needs neither
        with contextlib.suppress(Exception):  # Ray-internal API; both listen on 127.0.0.1 only anyway
            getattr(node, kill)(check_alive=False)


def start(address: Optional[str] = None, num_cpus: Optional[int] = None) -> bool:
    """Connect to ``address`` (or ``$RAY_ADDRESS``) or start a local Ray (module docstring); True when this call
    started or connected it (and so should :func:`stop` it)."""
    ray = _ray()
    with _LOCK:
        if ray.is_initialized():
            return False
        address = address or os.environ.get("RAY_ADDRESS") or None
        kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=False, ignore_reinit_error=True)
        try:
            if address:
                ray.init(address=address, **kw)
            else:
                _start_local(ray, num_cpus, kw)
        except SweepError:
            raise
        except Exception as e:  # noqa: BLE001 - Ray raises many kinds; the user gets one line
            if not address:
                with contextlib.suppress(Exception):  # best effort; the watchdog kills what is left
                    ray.shutdown()
                _stop_watchdog()  # kills whatever part of the local Ray had started
            where = f"the Ray cluster at {address!r}" if address else "a local Ray"
            msg = str(e).splitlines()[0] if str(e) else ""
            raise SweepError(f"could not start {where}: {type(e).__name__}: {msg}") from None
    return True


def stop() -> None:
    """Shut down (or disconnect from) the Ray :func:`start` started; for a local one, wait until its watchdog has
    checked that none of its processes is left."""
    ray = _ray()
    with _LOCK:
        ray.shutdown()
        _stop_watchdog()


class _Worker:
    """One actor: models and the decoded dataset stay loaded across the chunks it runs."""

    def __init__(self, spec_json: dict, device: Optional[str]):
        torch.set_num_threads(1)
        self.spec = SweepSpec.from_json(spec_json)
        self.spec.device = device
        self.dataset = DecodedOnce(build_dataset(self.spec))
        self.models: dict = {}
        self.cache = EmbeddingCache()

    def run(self, model: str, task: str, cells: list) -> list:
        if model not in self.models:
            self.models[model] = load(model, self.spec.device)
        cs = [Cell(model, task, normalize(c)) for c in cells]
        return [(o.key, o.result, o.files, o.seconds)
                for o in run_group(self.spec, self.models[model], task, cs, self.dataset, cache=self.cache)]


def chunks_of(spec: SweepSpec, cells: Sequence[Cell]) -> list:
    """Chunks of at most ``CHUNK`` cells of one (model, task), in the spec's order."""
    chunks = []
    for m in spec.models:
        for t in spec.tasks:
            group = [c for c in cells if c.model == m and c.task == t]
            chunks += [(m, t, group[i:i + CHUNK]) for i in range(0, len(group), CHUNK)]
    return chunks


def run_on_ray(spec: SweepSpec, cells: Sequence[Cell], address: Optional[str] = None,
               num_cpus: Optional[int] = None, cancel: Optional[threading.Event] = None) -> Iterator[CellOutput]:
    """Yield the :class:`CellOutput` of every cell (in completion order) computed on Ray."""
    if not cells:
        return
    ray = _ray()
    started = start(address, num_cpus)
    try:
        cpus = float(ray.cluster_resources().get("CPU", 1))
        n_actors = max(1, min(int(cpus), len(chunks_of(spec, cells))))
        Actor = ray.remote(num_cpus=ACTOR_CPUS)(_Worker)
        spec_json = spec.to_json()
        actors = [Actor.remote(spec_json, spec.device) for _ in range(n_actors)]
        chunks = chunks_of(spec, cells)
        pending = {}
        for k, (m, t, group) in enumerate(chunks):
            ref = actors[k % n_actors].run.remote(m, t, [conditions_json(c.conditions) for c in group])
            pending[ref] = group
        while pending:
            if cancel is not None and cancel.is_set():
                for ref in pending:
                    ray.cancel(ref, force=True)
                raise SweepCancelled("cancelled")
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in done:
                pending.pop(ref)
                try:
                    outs = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    cause = e.as_instanceof_cause() if hasattr(e, "as_instanceof_cause") else e
                    raise SweepError(f"a Ray worker failed: {str(cause).splitlines()[-1]}") from None
                for key, result, files, secs in outs:
                    yield CellOutput(key, result, files, secs)
        for a in actors:
            ray.kill(a)
    finally:
        if started:
            stop()


__all__ = ["ACTOR_CPUS", "private_temp_dir", "run_on_ray", "start", "stop", "token_file"]
