"""One group of cells: check a sweep before it runs, run a (model, task)'s cells on a dataset (:func:`run_group`,
the one code path of the local and the Ray runner), write each cell's Result and thumbnails, read them back."""
from __future__ import annotations

import io
import json
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import numpy as np
from PIL import Image

from robustlab import adapt
from robustlab.datasets import registry as dataset_registry  # looked up at call time (tests patch build)
from robustlab.engine.cache import EmbeddingCache
from robustlab.io.atomic import atomic_write
from robustlab import models  # load_model looked up at call time (tests patch and count it)
from robustlab.models import ModelUnavailable
from robustlab.models.protocols import sample_frame_indices, sample_frames
from robustlab.perturb import regenerate
from robustlab.tasks.conditions import ADAPT, adapt_side, check_conditions, label
from robustlab.tasks.registry import get as get_task
from robustlab.tasks.retrieval_adapt import adapt_directions
from robustlab.tasks.retrieval_bench import DIRECTIONS

from robustlab.bench.cellfile import checksum, read_problem
from robustlab.bench.spec import Cell, SweepCancelled, SweepError, SweepSpec, object_missing


def build_dataset(spec: SweepSpec):
    """The sweep's dataset; ``n`` past what it holds (a folder's loader stops at what it has; the built-in world
    refuses more than its maximum before generating anything) is a one-line SweepError before any work, and so is
    a sweep over a Dataset object, which no name rebuilds (:func:`robustlab.bench.spec.object_dataset`)."""
    d = spec.dataset
    if d.get("object"):
        raise SweepError(object_missing(d))
    kw = {k: d[k] for k in ("n", "seed") if d.get(k) is not None}
    kw.update(d.get("options") or {})
    try:
        ds = dataset_registry.build(d["name"], root=d.get("root"), split=d.get("split"), **kw)
    except OSError as e:
        raise SweepError(str(e)) from None
    n = d.get("n")
    if isinstance(n, int) and len(ds) < n:
        where = ds.name + (f" ({ds.split} split)" if getattr(ds, "split", None) else "")
        raise SweepError(f"n {n}: {where} holds {len(ds)} items; ask for {len(ds)} or fewer")
    return ds


def load(model_spec: str, device=None):
    try:
        return models.load_model(model_spec, device=device)
    except (ModelUnavailable, ValueError, OSError) as e:
        raise SweepError(str(e)) from None


def check(spec: SweepSpec, dataset=None, models: Optional[dict] = None) -> None:
    """Everything a sweep needs before any cell runs: the tasks exist and run on the dataset, every model loads
    and can do every task, every condition applies. One line (SweepError) on the first problem."""
    if not spec.models:
        raise SweepError("no model to sweep: pass --models")
    if not spec.tasks:
        raise SweepError("no task to sweep: pass --tasks")
    dataset = dataset if dataset is not None else build_dataset(spec)
    for t in spec.tasks:
        try:
            task = get_task(t)
            task.check_dataset(dataset)
            check_conditions(spec.conditions, task.visual_kind(dataset))
        except (KeyError, ValueError) as e:
            raise SweepError(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)) from None
    if spec.directions:
        ok = DIRECTIONS.get(dataset.kind, ())
        bad = [d for d in spec.directions if d not in ok]
        if bad:
            raise SweepError(f"direction {bad[0]!r} is not one of {dataset.name}'s ({', '.join(ok)})")
    sides = _adapt_sides(spec, dataset)
    for m in spec.models:
        model = (models or {}).get(m) or load(m, spec.device)
        for t in spec.tasks:
            try:
                get_task(t).check_model_for(model, dataset.kind)
            except ValueError as e:
                raise SweepError(str(e)) from None
        for side in sides:  # a model that cannot adapt a side's queries: one line now, not a failed cell later
            try:
                adapt.check(model, side, video=dataset.kind == "video")
            except adapt.AdaptError as e:
                raise SweepError(str(e)) from None


def _adapt_sides(spec: SweepSpec, dataset) -> list[str]:
    """The query sides the sweep's ``adapt`` condition sets adapt, after checking that every task takes adaptation
    and that each such set runs in at least one of the sweep's directions (one-line SweepError otherwise)."""
    adapting = [c for c in spec.conditions if ADAPT in c]
    if not adapting:
        return []
    for t in spec.tasks:
        if not get_task(t).takes_adaptation:
            raise SweepError(f"{t} takes no test-time adaptation (--adapt): it adapts a retrieval model's query "
                             "encoder; sweep adaptation with --tasks retrieval")
    sides = []
    for c in adapting:
        try:
            adapt_directions(c, dataset.kind, spec.directions)
            sides.append(adapt_side(c))
        except ValueError as e:
            raise SweepError(f"{label(c)}: {e}") from None
    return list(dict.fromkeys(sides))


# ------------------------------------------------------------------------------------------- one group of cells
@dataclass
class CellOutput:
    """What a worker gives back for one cell: the Result JSON and the files to write (relative path -> bytes)."""

    key: str
    result: dict
    files: dict = field(default_factory=dict)
    seconds: float = 0.0


def _thumb(arr: np.ndarray, height: int = 96) -> bytes:
    """A JPEG thumbnail (quality 85; a video: four of its frames side by side), ``height`` px high."""
    a = np.asarray(arr)
    if a.ndim == 4:  # a video: four frames side by side
        a = np.concatenate(list(sample_frames(a, min(4, a.shape[0]))), axis=1)
    im = Image.fromarray(np.ascontiguousarray(a, dtype=np.uint8))
    if im.height != height:
        im = im.resize((max(1, round(im.width * height / im.height)), height), Image.BILINEAR)
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def _thumbs(cell: Cell, dataset, worst: list[dict]) -> dict:
    """Thumbnails of the worst examples: the clean item and the perturbed one, regenerated from its record."""
    files = {}
    from_files = bool(getattr(dataset, "has_frame_source", False))  # video files: decode only what is shown
    for w in worst:
        i = int(w["item"])
        rec = w.get("visual_record")
        lazy = bool(rec and isinstance(rec.get("sampled"), dict))
        if from_files:
            src = dataset.frame_source(i)
            clean = src.read(sample_frame_indices(src.n_frames, min(4, src.n_frames)))
        else:
            src = clean = dataset.visual(i)
        w["clean_thumb"] = f"thumbs/clean/{i}.jpg"
        files[w["clean_thumb"]] = _thumb(clean)
        if rec:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = regenerate(rec, src if lazy or not from_files else dataset.visual(i))
            w["thumb"] = f"thumbs/{cell.key}/{i}.jpg"
            files[w["thumb"]] = _thumb(out)
        else:
            w["thumb"] = w["clean_thumb"]
    return files


def run_group(spec: SweepSpec, model, task_name: str, cells: Sequence[Cell], dataset, *, cache=None,
              progress: Optional[Callable[[int, int], None]] = None,
              cancel: Optional[threading.Event] = None) -> Iterator[CellOutput]:
    """Run cells of one (model, task) on one dataset and yield each one's output as soon as it is done (the bench
    inside the task is shared across the cells: clean embeddings are computed once)."""
    task = get_task(task_name)
    # what the task shares across a group of cells (retrieval: one bench holding the clean embeddings and the
    # current shift, the worst examples to keep, the directions) is the task's to build, not the sweep's
    opts = task.sweep_options(model, dataset, cache=cache if cache is not None else EmbeddingCache(),
                              worst=int(spec.worst), directions=spec.directions)
    if task.takes_adaptation:  # the adaptation cells of a shift come right after it and reuse its inputs
        cells = _by_shift(cells)

    def prog(done, total):
        if cancel is not None and cancel.is_set():
            raise SweepCancelled("cancelled")
        if progress:
            progress(done, total)

    for cell in cells:
        if cancel is not None and cancel.is_set():
            raise SweepCancelled("cancelled")
        t1 = time.perf_counter()
        r = task.evaluate(model, dataset, [cell.conditions], progress=prog, **opts)[0]
        res = r.to_json()
        res["extra"]["cell"] = cell.key
        if getattr(model, "random_init", False):
            res["extra"]["random_init"] = True
        files = _thumbs(cell, dataset, res["extra"]["worst"]) if res["extra"].get("worst") else {}
        yield CellOutput(cell.key, res, files, time.perf_counter() - t1)


def _by_shift(cells: Sequence[Cell]) -> list[Cell]:
    """The cells in their order, except that the cells of one shift (with and without an adaptation method) are
    next to each other, at the first one's place."""
    first: dict = {}

    def shift(c: Cell):
        return tuple(sorted((a, x.key()) for a, x in c.conditions.items() if a != ADAPT))
    for i, c in enumerate(cells):
        first.setdefault(shift(c), i)
    return [c for _, c in sorted(enumerate(cells), key=lambda ic: (first[shift(ic[1])], ic[0]))]


def cell_path(out: Path, key: str) -> Path:
    return Path(out) / "cells" / f"{key}.json"


def write_output(out: Path, o: CellOutput) -> Path:
    """Write a cell's files, then its Result last (a Result on disk means the cell is complete)."""
    for rel, data in o.files.items():
        p = (Path(out) / rel).resolve()
        if Path(out).resolve() not in p.parents:  # never outside the run folder
            raise SweepError(f"refusing to write {rel!r} outside {out}")
        if not p.exists():
            atomic_write(p, data)
    o.result["extra"]["seconds"] = round(float(o.seconds), 3)
    o.result.pop("checksum", None)
    o.result["checksum"] = checksum(json.loads(json.dumps(o.result)))  # of the cell as it reads back
    path = cell_path(out, o.key)
    atomic_write(path, (_dumps(o.result) + "\n").encode())
    return path


def cell_problem(out, key: str) -> Optional[str]:
    """None when ``cells/<key>.json`` is a finished cell a resumed sweep can skip; else why it is not (one line):
    missing, unreadable, empty, truncated, malformed, another cell's file, or a checksum that does not match
    (:mod:`robustlab.bench.cellfile`)."""
    path = cell_path(out, key)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "missing"
    except (OSError, UnicodeDecodeError) as e:
        return f"unreadable ({type(e).__name__})"
    return read_problem(text, key)[1]


_RANKS = "\u0000ranks\u0000"  # a placeholder no result holds


def _dumps(result: dict) -> str:
    """A Result as indented JSON, except the per-query ranks (``extra["ranks"]``), written on one line each: a
    thousand queries are a few KB, not a line per rank."""
    ranks = result.get("extra", {}).get("ranks")
    if not isinstance(ranks, dict):
        return json.dumps(result, indent=1)
    text = json.dumps({**result, "extra": {**result["extra"], "ranks": _RANKS}}, indent=1)
    return text.replace(json.dumps(_RANKS), json.dumps(ranks, separators=(",", ":")), 1)


def load_results(out) -> list[dict]:
    """Every cell Result JSON in a run folder (unreadable files, and cells that fail their schema or checksum, are
    skipped)."""
    rows = []
    for p in sorted((Path(out) / "cells").glob("*.json")):
        try:
            cell = read_problem(p.read_text(encoding="utf-8"))[0]
        except (OSError, ValueError):
            continue
        if cell is not None:
            rows.append(cell)
    return rows
