"""Robustness sweeps: every (model, task, condition set) cell of a grid over one dataset, one Result JSON per cell.

A sweep is a :class:`SweepSpec` (models, one dataset, tasks, a list of condition sets) run into a folder::

    runs/NAME/
      sweep.json            the spec (what the report reads back), the union of every run into this folder
      cells/<cellkey>.json  one robustlab.tasks.base.Result per cell; extra: cell, seconds, worst examples
      thumbs/<cellkey>/...  thumbnails of the worst examples (regenerated from their records), thumbs/clean/...

Conditions are a general grid of axes (``visual``, ``text``, model interventions and test-time adaptation
methods), never a perturbation-only loop: :func:`condition_grid` builds the usual one, anything else can be passed.
An adaptation cell is ``{<one single-axis shift>, "adapt": <method>}``: the retrieval task runs the method
(:mod:`robustlab.adapt`) on that side's queries, in the directions those queries go (visual: i2t / v2t, text: t2i /
t2v); "no adaptation" is the shifted cell itself.

Resumable: a cell whose JSON exists is skipped, and a cell's file is written atomically when the cell is done, so a
run killed at any moment loses at most the cells in flight; the rerun computes the rest and the final files are the
same as an uninterrupted run's (every number is a function of the spec: seeds are ``condition.seed + item``).

Each visual is decoded once per sweep process (:class:`DecodedOnce`), each perturbed input is encoded once (the
embedding cache, keyed by the model's weights fingerprint, the content and the perturbation record). The engines
(``local`` here, ``ray`` in :mod:`robustlab.engine.ray_engine`) run the same :func:`run_group` on groups of cells
and the driver writes what comes back, so their outputs are identical.
"""
from __future__ import annotations

import hashlib
import io
import json
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from robustlab.perturb.condition import Condition

SCHEMA = 1
ENGINES = ("local", "ray")


class SweepError(ValueError):
    """A sweep that cannot run as asked (one line)."""


class SweepCancelled(RuntimeError):
    """Raised inside a sweep when its cancel event is set; finished cells stay on disk."""


# ------------------------------------------------------------------------------------------ parsing the grid
def parse_severities(text) -> list[int]:
    """``"1-5"``, ``"1,3,5"``, ``"3"`` or a list -> sorted severities in 1..5."""
    if isinstance(text, (list, tuple)):
        vals = [int(v) for v in text]
    else:
        vals = []
        for part in str(text).replace(" ", "").split(","):
            if not part:
                continue
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise SweepError(f"severities must look like 1-5 or 1,3,5, got {text!r}")
            a, b = int(m.group(1)), int(m.group(2) or m.group(1))
            if a > b:
                raise SweepError(f"severity range {part!r} runs backwards")
            vals += list(range(a, b + 1))
    bad = [v for v in vals if not 1 <= v <= 5]
    if bad or not vals:
        raise SweepError(f"severities must be in 1..5, got {text!r}")
    return sorted(set(vals))


def parse_perturbations(text, kind: str) -> list[str]:
    """``all``, ``category:NAME[,category:NAME]``, ``tag:NAME`` or ``NAME,NAME`` -> available perturbation names that
    apply to ``kind`` ("image", "video" or "text"), in registry order. An unknown or unavailable name, a category with
    nothing in it, or a perturbation of the wrong kind is one line."""
    from robustlab.perturb import get_perturbation, list_perturbations

    if text is None or str(text).strip() in ("", "none"):
        return []
    specs = [s for s in list_perturbations(kind)]
    names: list[str] = []
    for part in [p.strip() for p in (text if isinstance(text, (list, tuple)) else str(text).split(",")) if p.strip()]:
        if part == "all":
            names += [s.name for s in specs if s.available]
        elif part.startswith(("category:", "tag:")):
            how, _, val = part.partition(":")
            hit = [s for s in specs if (s.category == val if how == "category" else val in s.tags)]
            if not hit:
                known = sorted({s.category for s in specs} if how == "category" else {t for s in specs for t in s.tags})
                raise SweepError(f"no {kind} perturbation has {how} {val!r}; {how}s: {', '.join(known)}")
            names += [s.name for s in hit if s.available]
        else:
            try:
                spec = get_perturbation(part)
            except ValueError as e:
                raise SweepError(str(e)) from None
            if kind not in spec.applies_to:
                raise SweepError(f"{part!r} is a {spec.modality} perturbation, not one of {kind}s")
            if not spec.available:
                raise SweepError(f"perturbation {part!r} is unavailable here: {spec.reason}")
            names.append(part)
    if not names:
        raise SweepError(f"{text!r} selects no available {kind} perturbation")
    return list(dict.fromkeys(names))


def condition_grid(visual: Sequence[str] = (), visual_severities: Sequence[int] = (1, 2, 3, 4, 5),
                   text: Sequence[str] = (), text_severities: Sequence[int] = (1, 2, 3, 4, 5), seed: int = 0,
                   combine="auto", interventions: Sequence[str] = (), adapt: Sequence = (),
                   directions: Optional[Sequence[str]] = None) -> list[dict]:
    """Clean, every visual (perturbation, severity), every text one, and — when both axes are swept — their
    combinations (Schiappa et al.'s paired perturbations): ``combine="auto"`` pairs them at severity 3 (the paper's
    choice; on each axis the middle swept severity when 3 is not swept), an int at that severity, ``"all"`` at every pair of
    swept severities, ``None``/``"none"`` not at all. ``interventions`` (``quag:unimodal``, ``input:language-only``...;
    :mod:`robustlab.models.interventions`) add one condition set each, on clean inputs (Rawal et al.'s Table 1).
    ``adapt`` (method names, ``"tent/steps=1"`` or conditions from :func:`parse_adapt`; ``"none"`` is the shifted
    cell itself) add, right after every single-axis shift, one condition set per method with that shift (HAT-VTR
    Tables 1–5) — for the shifts whose queries one of ``directions`` (None: all) uses.
    Each condition set is ``{axis: Condition}`` (clean = ``{}``)."""
    from robustlab.tasks.base import ADAPT, as_adapt

    out: list[dict] = [{}]
    vis = [Condition(p, s, seed) for p in visual for s in visual_severities]
    txt = [Condition(p, s, seed) for p in text for s in text_severities]
    methods = [a for a in dict.fromkeys(as_adapt(m) for m in adapt) if not a.clean]

    def with_adapt(axis: str, c: Condition) -> list[dict]:
        if not methods or not _side_in(axis, directions):
            return [{axis: c}]
        return [{axis: c}] + [{axis: c, ADAPT: a} for a in methods]
    out += [d for c in vis for d in with_adapt("visual", c)] + [d for c in txt for d in with_adapt("text", c)]
    if vis and txt and combine not in (None, "none", False):
        if combine == "all":
            pairs = [(v, t) for v in vis for t in txt]
        else:
            def pick(sevs):
                return int(combine) if combine != "auto" else (3 if 3 in sevs else sorted(sevs)[len(sevs) // 2])
            sv, st = pick(list(visual_severities)), pick(list(text_severities))
            pairs = [(v, t) for v in vis for t in txt if v.severity == sv and t.severity == st]
        out += [{"visual": v, "text": t} for v, t in pairs]
    if interventions:
        from robustlab.models.interventions import as_condition

        out += [{"intervention": as_condition(i)} for i in dict.fromkeys(interventions)]
    return out


def _side_in(side: str, directions: Optional[Sequence[str]]) -> bool:
    """Whether one of ``directions`` (None: every one) queries with ``side`` ("visual" or "text")."""
    from robustlab.adapt import QUERY_SIDE

    return directions is None or any(QUERY_SIDE.get(d) == side for d in directions)


def parse_adapt(text, params: Sequence[str] = ()) -> list[Condition]:
    """``--adapt``: comma-separated methods of :mod:`robustlab.adapt` (``none,tent,tcr,hat-vtr``), ``all`` (every
    adaptation method but the diagnostic ones) or ``none``; ``params``: ``KEY=VALUE`` strings (``--adapt-param``),
    each for every chosen method that has that parameter, or ``METHOD.KEY=VALUE`` for one method. The ``adapt``
    conditions of the methods other than none (none is the shifted cell itself); one-line SweepError for an unknown
    method, a parameter no chosen method has, or a bad value."""
    from robustlab.adapt import METHODS, AdaptError, get_method
    from robustlab.io.params import ParamError, parse_kv
    from robustlab.tasks.base import adapt_condition

    t = str(text or "").strip()
    if t.lower() in ("", "none"):
        if params:
            raise SweepError("--adapt-param needs --adapt METHOD[,METHOD...]")
        return []
    if t.lower() == "all":
        names = [m.name for m in METHODS.values() if m.adapts and not m.diagnostic]
    else:
        names = [p.strip() for p in t.split(",") if p.strip()]
    try:
        for n in names:
            get_method(n)
    except AdaptError as e:
        raise SweepError(str(e)) from None
    names = [n for n in dict.fromkeys(names) if get_method(n).adapts]
    per: dict = {n: {} for n in names}
    try:  # the one KEY=VALUE parser: finite numbers, no repeated key, one line otherwise
        pairs = parse_kv(params, "--adapt-param", example="steps=1", form="KEY=VALUE or METHOD.KEY=VALUE")
    except ParamError as e:
        raise SweepError(str(e)) from None
    for key, v in pairs.items():
        p = f"{key}=..."
        method, dot, k = key.rpartition(".")
        if dot:
            if method not in per:
                raise SweepError(f"--adapt-param {p!r}: {method!r} is not among the --adapt methods "
                                 f"({', '.join(names) or 'none'})")
            per[method][k] = v
            continue
        has = [n for n in names if k in {q.name for q in get_method(n).all_params()}]
        if not has:
            raise SweepError(f"--adapt-param {p!r}: no --adapt method ({', '.join(names) or 'none'}) has a "
                             f"parameter {k!r}")
        for n in has:
            per[n].setdefault(k, v)
    try:
        return [adapt_condition(n, per[n]) for n in names]
    except (AdaptError, ValueError) as e:
        raise SweepError(str(e)) from None


def parse_interventions(text) -> list[str]:
    """``--interventions``: comma-separated names (``quag:unimodal,input:language-only,...``), ``all`` (every named
    one) or ``none``; each checked (one-line SweepError for an unknown one)."""
    from robustlab.models.interventions import InterventionError, names, parse

    t = str(text or "").strip()
    if t.lower() in ("", "none"):
        return []
    parts = names() if t.lower() == "all" else [p.strip() for p in t.split(",") if p.strip()]
    out = []
    for p in parts:
        try:
            out.append(parse(p).spec)
        except InterventionError as e:
            raise SweepError(str(e)) from None
    return list(dict.fromkeys(out))


# ------------------------------------------------------------------------------------------------ the spec
@dataclass
class SweepSpec:
    """What a sweep runs. ``dataset``: ``{"name", "root", "split", "n", "seed", "options"}`` as
    :func:`robustlab.datasets.build` takes them; ``conditions``: condition sets ``{axis: Condition}``."""

    models: list
    dataset: dict
    tasks: list = field(default_factory=lambda: ["retrieval"])
    conditions: list = field(default_factory=lambda: [{}])
    directions: Optional[list] = None
    worst: int = 3
    name: str = ""
    device: Optional[str] = None

    def __post_init__(self):
        from robustlab.tasks.base import normalize

        self.models = [str(m) for m in self.models]
        self.tasks = [str(t) for t in self.tasks]
        self.conditions = [normalize(c) for c in self.conditions]
        d = {"name": None, "root": None, "split": None, "n": None, "seed": None, "options": {}}
        d.update(self.dataset or {})
        if d.get("root") is not None:
            d["root"] = str(d["root"])
        self.dataset = d

    def dataset_key(self) -> dict:
        return {k: self.dataset.get(k) for k in ("name", "root", "split", "n", "seed", "options")}

    def to_json(self) -> dict:
        from robustlab.tasks.base import conditions_json, versions

        return {"schema": SCHEMA, "name": self.name, "models": list(self.models), "dataset": self.dataset_key(),
                "tasks": list(self.tasks), "conditions": [conditions_json(c) for c in self.conditions],
                "directions": self.directions, "worst": int(self.worst), "versions": versions()}

    @classmethod
    def from_json(cls, d: dict) -> "SweepSpec":
        return cls(models=d["models"], dataset=d["dataset"], tasks=d.get("tasks", ["retrieval"]),
                   conditions=d.get("conditions", [{}]), directions=d.get("directions"), worst=d.get("worst", 3),
                   name=d.get("name", ""))

    def cells(self) -> list["Cell"]:
        return [Cell(m, t, c) for m in self.models for t in self.tasks for c in self.conditions]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-")[:60] or "x"


@dataclass(frozen=True)
class Cell:
    model: str
    task: str
    conditions: dict  # axis -> Condition

    def conditions_json(self) -> dict:
        from robustlab.tasks.base import conditions_json

        return conditions_json(self.conditions)

    @property
    def key(self) -> str:
        """A file-name-safe key: readable parts plus a hash of the exact (model, task, conditions)."""
        ident = json.dumps([self.model, self.task, self.conditions_json()], sort_keys=True)
        h = hashlib.blake2b(ident.encode(), digest_size=5).hexdigest()
        from robustlab.tasks.base import ADAPT

        # axes in name order, the adaptation method (no severity) last; keys without it are what they were
        cond = "_".join(f"{a}-{c.name}{'-' + c.variant if c.variant else ''}"
                        + ("" if a == ADAPT else f"-s{c.severity}")
                        for a, c in sorted(self.conditions.items(), key=lambda ac: (ac[0] == ADAPT, ac[0]))
                        if not c.clean) or "clean"
        return f"{self.task}__{_slug(self.model)}__{_slug(cond)}__{h}"

    def label(self) -> str:
        from robustlab.tasks.base import label

        return f"{self.model} · {self.task} · {label(self.conditions)}"


# --------------------------------------------------------------------------------------- decode once, build
class DecodedOnce:
    """A dataset whose visuals are read (decoded, rendered) once and then served from memory; everything else is
    the wrapped dataset's."""

    def __init__(self, dataset):
        self._ds = dataset
        self._visuals: Optional[list] = None
        self._frames: Optional[FrameCache] = None
        self.decodes = 0

    def __getattr__(self, name):
        return getattr(self._ds, name)

    def __len__(self) -> int:
        return len(self._ds)

    def visuals(self, indices=None, progress=None):
        if self._visuals is None:
            self._visuals = list(self._ds.visuals(progress=progress))
            self.decodes += 1
        return self._visuals if indices is None else [self._visuals[int(i)] for i in indices]

    def visual(self, i: int):
        return self.visuals()[int(i)]

    def __getstate__(self):  # a Ray worker gets the dataset, not what one process decoded
        return {"_ds": self._ds, "_visuals": None, "decodes": 0, "_frames": None}

    # ---- lazy sources: the frames a model samples, each decoded once per sweep -------------------------
    @property
    def has_frame_source(self) -> bool:
        return callable(getattr(self._ds, "frame_source", None))

    def frame_source(self, i: int):
        """Item i's frames on demand: a :class:`CachedSource` for datasets that give ``frame_source`` (video files:
        each frame decoded once per sweep), else an ArraySource over the visual decoded (rendered) once."""
        if not self.has_frame_source:
            from robustlab.perturb.lazy import ArraySource

            return ArraySource(self.visual(i))
        if self._frames is None:
            self._frames = FrameCache()
        return CachedSource(self._ds.frame_source(int(i)), self._frames, int(i))


class FrameCache:
    """Decoded frames by (item, frame index), least recently used first out past ``max_bytes``
    (``ROBUSTLAB_FRAME_CACHE_MB``, default 2048): a sweep decodes each frame it needs once."""

    def __init__(self, max_bytes: Optional[int] = None):
        import collections
        import os

        mb = float(os.environ.get("ROBUSTLAB_FRAME_CACHE_MB", "2048") or 2048)
        self.max_bytes = int(max_bytes if max_bytes is not None else mb * 2**20)
        self._d: "collections.OrderedDict" = collections.OrderedDict()
        self.bytes = self.peak = 0
        self.decoded = self.evicted = 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            a = self._d.get(key)
            if a is not None:
                self._d.move_to_end(key)
            return a

    def put(self, key, frame: np.ndarray) -> None:
        with self._lock:
            if key in self._d:
                return
            self._d[key] = frame
            self.bytes += frame.nbytes
            while self.bytes > self.max_bytes and len(self._d) > 1:
                _, old = self._d.popitem(last=False)
                self.bytes -= old.nbytes
                self.evicted += 1
            self.peak = max(self.peak, self.bytes)


class CachedSource:
    """A frame source (``n_frames``, ``read(indices)``) that decodes only the frames not yet in the sweep's
    :class:`FrameCache`. Reads of more than ``KEEP_MAX`` distinct frames (whole clips) bypass the cache."""

    KEEP_MAX = 64

    def __init__(self, source, cache: FrameCache, item: int):
        self.source, self.cache, self.item = source, cache, item
        self.n_frames = int(source.n_frames)

    def __len__(self) -> int:
        return self.n_frames

    def read(self, indices) -> np.ndarray:
        idx = [int(t) for t in np.asarray(indices, dtype=np.int64).reshape(-1)]
        have = {t: self.cache.get((self.item, t)) for t in set(idx)}
        need = sorted(t for t, a in have.items() if a is None)
        if need:
            frames = self.source.read(need)
            self.cache.decoded += len(need)
            # a whole-clip read (codecs, event insertion) would push every other clip's sampled frames out of the
            # cache and be evicted before the next cell asks for it again: it is decoded, not kept
            keep = len(set(idx)) <= self.KEEP_MAX
            for t, f in zip(need, frames):
                f = np.ascontiguousarray(f)
                have[t] = f
                if keep:
                    self.cache.put((self.item, t), f)
        return np.stack([have[t] for t in idx])


def build_dataset(spec: SweepSpec):
    from robustlab.datasets.registry import build

    d = spec.dataset
    kw = {k: d[k] for k in ("n", "seed") if d.get(k) is not None}
    kw.update(d.get("options") or {})
    try:
        return build(d["name"], root=d.get("root"), split=d.get("split"), **kw)
    except OSError as e:
        raise SweepError(str(e)) from None


def load(model_spec: str, device=None):
    from robustlab.models import ModelUnavailable, load_model

    try:
        return load_model(model_spec, device=device)
    except (ModelUnavailable, ValueError, OSError) as e:
        raise SweepError(str(e)) from None


def check(spec: SweepSpec, dataset=None, models: Optional[dict] = None) -> None:
    """Everything a sweep needs before any cell runs: the tasks exist and run on the dataset, every model loads
    and can do every task, every condition applies. One line (SweepError) on the first problem."""
    from robustlab.tasks.base import check_conditions
    from robustlab.tasks.registry import get

    if not spec.models:
        raise SweepError("no model to sweep: pass --models")
    if not spec.tasks:
        raise SweepError("no task to sweep: pass --tasks")
    dataset = dataset if dataset is not None else build_dataset(spec)
    for t in spec.tasks:
        try:
            task = get(t)
            task.check_dataset(dataset)
            check_conditions(spec.conditions, task.visual_kind(dataset))
        except (KeyError, ValueError) as e:
            raise SweepError(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)) from None
    if spec.directions:
        from robustlab.tasks.retrieval import DIRECTIONS

        ok = DIRECTIONS.get(dataset.kind, ())
        bad = [d for d in spec.directions if d not in ok]
        if bad:
            raise SweepError(f"direction {bad[0]!r} is not one of {dataset.name}'s ({', '.join(ok)})")
    sides = _adapt_sides(spec, dataset)
    for m in spec.models:
        model = (models or {}).get(m) or load(m, spec.device)
        for t in spec.tasks:
            task = get(t)
            try:
                if t == "retrieval":
                    task.check_model(model, dataset.kind)
                else:
                    task.check_model(model)
            except ValueError as e:
                raise SweepError(str(e)) from None
        for side in sides:  # a model that cannot adapt a side's queries: one line now, not a failed cell later
            from robustlab.adapt import AdaptError, check

            try:
                check(model, side, video=dataset.kind == "video")
            except AdaptError as e:
                raise SweepError(str(e)) from None


def _adapt_sides(spec: SweepSpec, dataset) -> list[str]:
    """The query sides the sweep's ``adapt`` condition sets adapt, after checking that every task takes adaptation
    and that each such set runs in at least one of the sweep's directions (one-line SweepError otherwise)."""
    from robustlab.tasks.base import ADAPT, adapt_side, label
    from robustlab.tasks.registry import get
    from robustlab.tasks.retrieval import RetrievalTask

    adapting = [c for c in spec.conditions if ADAPT in c]
    if not adapting:
        return []
    for t in spec.tasks:
        if not get(t).takes_adaptation:
            raise SweepError(f"{t} takes no test-time adaptation (--adapt): it adapts a retrieval model's query "
                             "encoder; sweep adaptation with --tasks retrieval")
    sides = []
    for c in adapting:
        try:
            RetrievalTask._adapt_directions(c, dataset.kind, spec.directions)
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
    from PIL import Image

    a = np.asarray(arr)
    if a.ndim == 4:  # a video: four frames side by side
        from robustlab.models.protocols import sample_frames

        a = np.concatenate(list(sample_frames(a, min(4, a.shape[0]))), axis=1)
    im = Image.fromarray(np.ascontiguousarray(a, dtype=np.uint8))
    if im.height != height:
        im = im.resize((max(1, round(im.width * height / im.height)), height), Image.BILINEAR)
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def _thumbs(cell: Cell, dataset, worst: list[dict]) -> dict:
    """Thumbnails of the worst examples: the clean item and the perturbed one, regenerated from its record."""
    from robustlab.perturb import regenerate

    files = {}
    from_files = bool(getattr(dataset, "has_frame_source", False))  # video files: decode only what is shown
    for w in worst:
        i = int(w["item"])
        rec = w.get("visual_record")
        lazy = bool(rec and isinstance(rec.get("sampled"), dict))
        if from_files:
            from robustlab.models.protocols import sample_frame_indices

            src = dataset.frame_source(i)
            clean = src.read(sample_frame_indices(src.n_frames, min(4, src.n_frames)))
        else:
            src = clean = dataset.visual(i)
        w["clean_thumb"] = f"thumbs/clean/{i}.jpg"
        files[w["clean_thumb"]] = _thumb(clean)
        if rec:
            import warnings

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
    from robustlab.tasks.registry import get

    task = get(task_name)
    opts = {}
    if task_name == "retrieval":  # the one task with an embedding cache, worst examples and adaptation
        from robustlab.engine.cache import EmbeddingCache
        from robustlab.tasks.retrieval import RetrievalBench

        opts["worst"] = int(spec.worst)
        # one bench for the group (it keeps clean and the current shift only): the adaptation cells of a shift,
        # which come right after it, reuse its perturbed inputs and embeddings
        opts["bench"] = RetrievalBench(model, dataset, cache=cache if cache is not None else EmbeddingCache(),
                                       lazy=True)
        opts["directions"] = spec.directions
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
    from robustlab.tasks.base import ADAPT

    first: dict = {}

    def shift(c: Cell):
        return tuple(sorted((a, x.key()) for a, x in c.conditions.items() if a != ADAPT))
    for i, c in enumerate(cells):
        first.setdefault(shift(c), i)
    return [c for _, c in sorted(enumerate(cells), key=lambda ic: (first[shift(ic[1])], ic[0]))]


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

    def to_json(self) -> dict:
        d = asdict(self)
        d["out"] = str(self.out)
        d["written"] = len(self.written)
        return d


def cell_path(out: Path, key: str) -> Path:
    return Path(out) / "cells" / f"{key}.json"


def _atomic_write(path: Path, data: bytes) -> None:
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_output(out: Path, o: CellOutput) -> Path:
    """Write a cell's files, then its Result last (a Result on disk means the cell is complete)."""
    for rel, data in o.files.items():
        p = (Path(out) / rel).resolve()
        if Path(out).resolve() not in p.parents:  # never outside the run folder
            raise SweepError(f"refusing to write {rel!r} outside {out}")
        if not p.exists():
            _atomic_write(p, data)
    o.result["extra"]["seconds"] = round(float(o.seconds), 3)
    path = cell_path(out, o.key)
    _atomic_write(path, (json.dumps(o.result, indent=1) + "\n").encode())
    return path


def _merge_spec(out: Path, spec: SweepSpec) -> SweepSpec:
    """Write sweep.json; a folder that already holds a sweep over another dataset is refused, one over the same
    dataset is extended (the union of models, tasks and conditions is recorded)."""
    path = Path(out) / "sweep.json"
    if path.exists():
        try:
            old = SweepSpec.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as e:
            raise SweepError(f"{path} is not a sweep file ({type(e).__name__}: {e})") from None
        if old.dataset_key() != spec.dataset_key():
            raise SweepError(f"{out} holds a sweep over another dataset ({old.dataset_key()['name']}, "
                             f"n={old.dataset_key()['n']}); use another --out")
        merged = SweepSpec(models=list(dict.fromkeys(old.models + spec.models)), dataset=spec.dataset,
                           tasks=list(dict.fromkeys(old.tasks + spec.tasks)), directions=spec.directions,
                           conditions=old.conditions + [c for c in spec.conditions if c not in old.conditions],
                           worst=spec.worst, name=spec.name or old.name)
    else:
        merged = spec
    merged.name = merged.name or Path(out).name
    _atomic_write(path, (json.dumps(merged.to_json(), indent=1) + "\n").encode())
    return merged


def pending(spec: SweepSpec, out) -> list[Cell]:
    return [c for c in spec.cells() if not cell_path(Path(out), c.key).exists()]


def run_sweep(spec: SweepSpec, out, *, engine: str = "local", progress: Optional[Callable[[dict], None]] = None,
              cancel: Optional[threading.Event] = None, cache=None, address: Optional[str] = None,
              num_cpus: Optional[int] = None) -> SweepStatus:
    """Run every cell of ``spec`` whose Result is not yet in ``out``; see the module docstring.

    ``progress(state)`` gets ``{"done", "total", "skipped", "cell", "fraction", "eta_s", "elapsed_s"}`` after each
    cell and within cells; ``cancel`` (a threading.Event) stops at the next item, keeping finished cells."""
    if engine not in ENGINES:
        raise SweepError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    out = Path(out)
    dataset = build_dataset(spec)
    models: dict = {}
    for m in spec.models:
        models[m] = load(m, spec.device)
    check(spec, dataset, models)
    _merge_spec(out, spec)
    todo = pending(spec, out)
    status = SweepStatus(total=len(spec.cells()), skipped=len(spec.cells()) - len(todo), out=out, engine=engine)
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
        from robustlab.engine.ray_engine import run_on_ray

        outputs = run_on_ray(spec, todo, address=address, num_cpus=num_cpus, cancel=cancel)
    else:
        outputs = _run_local(spec, todo, DecodedOnce(dataset), models, cache, cancel, report)
    try:
        for o in outputs:
            status.written.append(write_output(out, o))
            status.done += 1
            report(o.key)
    except SweepCancelled:
        status.cancelled = True
    status.seconds = time.perf_counter() - t0
    return status


def _run_local(spec, todo, dataset, models, cache, cancel, report) -> Iterator[CellOutput]:
    from robustlab.engine.cache import EmbeddingCache

    cache = cache if cache is not None else EmbeddingCache()
    for m in spec.models:
        for t in spec.tasks:
            cells = [c for c in todo if c.model == m and c.task == t]
            if not cells:
                continue
            yield from run_group(spec, models[m], t, cells, dataset, cache=cache, cancel=cancel,
                                 progress=lambda d, tot: report("", d / tot if tot else 0.0))


def load_results(out) -> list[dict]:
    """Every cell Result JSON in a run folder (unreadable files are skipped)."""
    rows = []
    for p in sorted((Path(out) / "cells").glob("*.json")):
        try:
            rows.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    return rows


__all__ = ["SweepSpec", "Cell", "CellOutput", "SweepStatus", "SweepError", "SweepCancelled", "DecodedOnce",
           "condition_grid", "parse_perturbations", "parse_severities", "parse_adapt", "run_sweep", "run_group",
           "pending", "check", "load_results", "write_output", "cell_path", "ENGINES"]
