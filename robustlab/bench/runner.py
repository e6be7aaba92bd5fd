"""The sweep driver: run every cell of a spec not yet in its folder, locally or on Ray, and write what comes back
(resumable: a cell's Result is written last and atomically, with a checksum; on resume a cell file is skipped only
when it passes its schema and checksum, and recomputed with one log line otherwise).

A sweep names its dataset by a registered name and options and builds it; ``run_sweep(..., dataset=ds)`` sweeps a
:class:`~robustlab.datasets.base.Dataset` object instead (a dashboard upload, a dataset a script built), as it is:
``sweep.json`` records it as one (:func:`robustlab.bench.spec.object_dataset`: name, split, length, kind and a
fingerprint of its annotations), so a resume given the same object goes on, one given another object is refused,
and one without it says in one line that the object must be passed again. The local engine only."""
from __future__ import annotations

import errno
import json
import logging
import threading
import time
from copy import copy
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from robustlab.datasets.base import Dataset
from robustlab.engine.cache import EmbeddingCache
from robustlab.io.atomic import atomic_write

from robustlab.bench.cells import (CellOutput, build_dataset, cell_path, cell_problem, check, load, run_group,
                                   write_output)
from robustlab.bench.sources import DecodedOnce
from robustlab.bench.spec import ENGINES, RAY_OBJECT, Cell, SweepCancelled, SweepError, SweepSpec, object_dataset

log = logging.getLogger("robustlab.bench")


# ------------------------------------------------------------------------------------------------ the driver
@dataclass
class SweepStatus:
    total: int
    skipped: int
    done: int = 0
    seconds: float = 0.0
    out: Optional[Path] = None
    cancelled: bool = False
    engine: str = "local"
    written: list = field(default_factory=list)
    invalid: list = field(default_factory=list)  # keys of cell files found damaged on resume, recomputed

    def to_json(self) -> dict:
        d = asdict(self)
        d["out"] = str(self.out)
        d["written"] = len(self.written)
        d["invalid"] = len(self.invalid)
        return d


def _merge_spec(out: Path, spec: SweepSpec) -> SweepSpec:
    """Write sweep.json; a folder that already holds a sweep over another dataset is refused, one over the same
    dataset is extended (the union of models, tasks and conditions is recorded)."""
    path = Path(out) / "sweep.json"
    if path.exists():
        try:
            old = SweepSpec.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as e:
            raise SweepError(f"{path} is not a sweep file ({type(e).__name__}: {e})") from None
        if not old.same_dataset(spec):
            d = old.dataset_key()
            if d.get("object"):  # a Dataset object's run: only that object resumes it
                raise SweepError(f"{out} holds a sweep over {'another' if spec.dataset.get('object') else 'a'} "
                                 f"Dataset object ({d['name']}, n={d['n']}): pass that object "
                                 "(run_sweep(..., dataset=...)), or use another --out")
            raise SweepError(f"{out} holds a sweep over another dataset ({d['name']}, n={d['n']}); use another --out")
        merged = SweepSpec(models=list(dict.fromkeys(old.models + spec.models)), dataset=spec.dataset,
                           tasks=list(dict.fromkeys(old.tasks + spec.tasks)), directions=spec.directions,
                           conditions=old.conditions + [c for c in spec.conditions if c not in old.conditions],
                           worst=spec.worst, name=spec.name or old.name,
                           fields={k: {**o, **v} if isinstance(v, dict) and isinstance(o, dict) else v
                                   for k, v in {**old.fields, **spec.fields}.items()
                                   for o in [old.fields.get(k)]},
                           report={**old.report, **spec.report}, protocol=spec.protocol or old.protocol)
    else:
        merged = spec
    merged.name = merged.name or Path(out).name
    atomic_write(path, (json.dumps(merged.to_json(), indent=1) + "\n").encode())
    return merged


def pending(spec: SweepSpec, out) -> list[Cell]:
    """The cells of ``spec`` not finished in ``out``: no file, or a file that fails its schema or checksum."""
    return [c for c, _why in _unfinished(spec, out)]


def _unfinished(spec: SweepSpec, out) -> list[tuple[Cell, str]]:
    """(cell, why) for every cell without a file ("missing") or whose file cannot be trusted as done."""
    out = Path(out)
    rows = []
    for c in spec.cells():
        why = cell_problem(out, c.key) if cell_path(out, c.key).exists() else "missing"
        if why:
            rows.append((c, why))
    return rows


def _out_problem(out: Path) -> Optional[str]:
    """A run folder that cannot be one, found before any work: a file, a path under a file."""
    try:
        if out.exists() and not out.is_dir():
            return f"{out} is a file, not a folder"
        first = next((a for a in out.parents if a.exists()), None)
        if first is not None and not first.is_dir():
            return f"{out}: {first} is a file, not a folder"
    except (OSError, ValueError) as e:
        return f"{out!s}: not a folder robustlab can write ({e})"
    return None


def _write_error(e: OSError, status: "SweepStatus", target: Path) -> SweepError:
    """A write that failed mid-sweep (a full disk, a folder made read-only) as one line; the finished cells stay."""
    why = e.strerror or type(e).__name__
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        why += " (the disk is full)"
    done = status.done + status.skipped
    kept = f"; the {done} cells finished before it are kept" if done else "; no cell was finished"
    return SweepError(f"cannot write {target}: {why}{kept}: free some space (or fix the folder) and rerun the same "
                      f"command to resume in {status.out}")


def _with_object(spec: SweepSpec, ds) -> SweepSpec:
    """A copy of ``spec`` whose dataset is the Dataset object ``ds`` (:func:`object_dataset`); a spec that records
    another object (a resume given the wrong one), an empty one or something else than a Dataset are one line."""
    if not isinstance(ds, Dataset):
        raise SweepError(f"dataset= takes a Dataset object (robustlab.datasets.base.Dataset), not a "
                         f"{type(ds).__name__}: a registered dataset is named in the spec")
    if len(ds) == 0:
        raise SweepError(f"the Dataset object {ds.name or type(ds).__name__} is empty: nothing to sweep")
    d = object_dataset(ds)
    was = spec.dataset.get("object")
    if was and was != d["object"]:
        raise SweepError(f"this sweep ran on another Dataset object ({spec.dataset.get('name')}, "
                         f"{spec.dataset.get('n')} items, {was.get('kind')}s, fingerprint {was.get('fingerprint')}) "
                         f"than the one passed ({d['name']}, {d['n']} items, fingerprint "
                         f"{d['object']['fingerprint']}): pass the one it ran on, or use another folder")
    spec = copy(spec)
    spec.dataset = d
    return spec


def run_sweep(spec: SweepSpec, out, *, engine: str = "local", progress: Optional[Callable[[dict], None]] = None,
              cancel: Optional[threading.Event] = None, cache=None, address: Optional[str] = None,
              num_cpus: Optional[int] = None, dataset=None) -> SweepStatus:
    """Run every cell of ``spec`` whose Result is not yet in ``out``; see the module docstring.

    ``progress(state)`` gets ``{"done", "total", "skipped", "cell", "fraction", "eta_s", "elapsed_s"}`` after each
    cell and within cells; ``cancel`` (a threading.Event) stops at the next item, keeping finished cells.
    ``dataset``: a :class:`~robustlab.datasets.base.Dataset` object swept instead of the one ``spec`` names (the
    module docstring; ``sweep.json`` records it, not ``spec``'s dataset; the local engine only)."""
    if engine not in ENGINES:
        raise SweepError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    if dataset is not None and engine != "local":
        raise SweepError(RAY_OBJECT)
    out = Path(out)
    why = _out_problem(out)
    if why:
        raise SweepError(why)
    if dataset is not None:
        spec = _with_object(spec, dataset)
    else:
        dataset = build_dataset(spec)  # a spec that recorded a Dataset object: one line (pass it again)
    models: dict = {}
    for m in spec.models:
        models[m] = load(m, spec.device)
    check(spec, dataset, models)
    status = SweepStatus(total=len(spec.cells()), skipped=0, out=out, engine=engine)
    try:
        _merge_spec(out, spec)
    except OSError as e:
        raise _write_error(e, status, out / "sweep.json") from None
    unfinished = _unfinished(spec, out)
    todo = [c for c, _why in unfinished]
    status.skipped = len(spec.cells()) - len(todo)
    for c, why in unfinished:
        if why != "missing":  # a damaged file is never taken for a finished cell
            status.invalid.append(c.key)
            log.warning("robustlab bench: cells/%s.json is not a finished cell: %s; recomputing it", c.key, why)
    t0 = time.perf_counter()

    def report(cell_label: str = "", within: float = 0.0):
        if not progress:
            return
        elapsed = time.perf_counter() - t0
        frac = (status.done + within) / max(len(todo), 1)
        eta = elapsed / frac * (1 - frac) if frac > 0 else None
        progress({"done": status.done, "total": len(todo), "skipped": status.skipped, "cell": cell_label,
                  "fraction": frac, "eta_s": eta, "elapsed_s": elapsed})

    report()
    if engine == "ray":
        from robustlab.bench.ray_runner import run_on_ray  # Ray is an optional heavy dependency

        outputs = run_on_ray(spec, todo, address=address, num_cpus=num_cpus, cancel=cancel)
    else:
        outputs = _run_local(spec, todo, DecodedOnce(dataset), models, cache, cancel, report)
    try:
        for o in outputs:
            try:
                status.written.append(write_output(out, o))
            except OSError as e:  # a full disk: the cells written so far are complete, the rerun resumes
                if hasattr(outputs, "close"):
                    outputs.close()  # the workers stop now (Ray: the engine's own clean-up), not at garbage collection
                raise _write_error(e, status, cell_path(out, o.key)) from None
            status.done += 1
            report(o.key)
    except SweepCancelled:
        status.cancelled = True
    status.seconds = time.perf_counter() - t0
    return status


def _run_local(spec, todo, dataset, models, cache, cancel, report) -> Iterator[CellOutput]:
    cache = cache if cache is not None else EmbeddingCache()
    for m in spec.models:
        for t in spec.tasks:
            cells = [c for c in todo if c.model == m and c.task == t]
            if not cells:
                continue
            yield from run_group(spec, models[m], t, cells, dataset, cache=cache, cancel=cancel,
                                 progress=lambda d, tot: report("", d / tot if tot else 0.0))
