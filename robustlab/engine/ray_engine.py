"""The sweep's Ray engine: the same cells as the local engine, run by Ray actors, gathered by the driver.

``run_on_ray(spec, cells)`` starts a local Ray (CPUs from the machine, a bounded object store, no dashboard) or
connects to an existing cluster (``address="auto"`` or ``"ray://HEAD:10001"``), and yields each cell's
:class:`~robustlab.engine.sweep.CellOutput` as it completes; :func:`robustlab.engine.sweep.run_sweep` writes them, so
the files are the same as the local engine's (a cell's Result depends only on the spec) and a remote cluster needs
no shared filesystem: thumbnails come back as bytes.

Sharding is by cell, in chunks: one actor per worker slot keeps a model and the decoded dataset loaded
(:func:`robustlab.engine.sweep.run_group` on a :class:`~robustlab.engine.sweep.DecodedOnce` dataset) and runs chunks
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
"""
from __future__ import annotations

import os
import threading
from typing import Iterator, Optional, Sequence

from robustlab.engine.sweep import Cell, CellOutput, SweepCancelled, SweepError, SweepSpec

ACTOR_CPUS = 0.5
CHUNK = 4  # cells per task: short enough to spread over actors, long enough to amortise a call


def _ray():
    try:
        import ray
    except ImportError:
        raise SweepError("the ray engine needs Ray: pip install 'robustlab[ray]'") from None
    return ray


def start(address: Optional[str] = None, num_cpus: Optional[int] = None) -> bool:
    """Connect to ``address`` or start a local Ray; True when this call started it (and so should stop it)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=False, ignore_reinit_error=True)
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            try:
                mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            except (ValueError, OSError, AttributeError):
                mem = 8 << 30
            ray.init(num_cpus=int(num_cpus or os.cpu_count() or 1),
                     object_store_memory=int(max(100 << 20, min(1 << 30, mem // 10))), **kw)
    except Exception as e:  # noqa: BLE001 - Ray raises many kinds; the user gets one line
        where = f"the Ray cluster at {address!r}" if address else "a local Ray"
        raise SweepError(f"could not start {where}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return True


class _Worker:
    """One actor: models and the decoded dataset stay loaded across the chunks it runs."""

    def __init__(self, spec_json: dict, device: Optional[str]):
        import torch

        torch.set_num_threads(1)
        from robustlab.engine.cache import EmbeddingCache
        from robustlab.engine.sweep import DecodedOnce, build_dataset

        self.spec = SweepSpec.from_json(spec_json)
        self.spec.device = device
        self.dataset = DecodedOnce(build_dataset(self.spec))
        self.models: dict = {}
        self.cache = EmbeddingCache()

    def run(self, model: str, task: str, cells: list) -> list:
        from robustlab.engine.sweep import load, run_group
        from robustlab.tasks.base import normalize

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
        from robustlab.tasks.base import conditions_json

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
            ray.shutdown()


__all__ = ["run_on_ray", "start", "ACTOR_CPUS"]
