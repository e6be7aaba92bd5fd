"""Breaking points: for every example and perturbation, the lowest severity at which the example fails.

A failure map is a sweep (:mod:`robustlab.bench`) of the clean cell and every (perturbation, severity) cell of one
task, read back per example. The cells are the sweep's own, keyed, checksummed and resumable: the embedding cache
encodes each clean gallery once, videos are perturbed lazily (only the frames the model samples), a run killed at
any moment resumes where it stopped, ``engine="ray"`` runs the cells on Ray, and a folder a failure map wrote is a
sweep folder (``robustlab bench report DIR`` reports it). What "fails" means per task:

* **retrieval** — the ground truth leaves the top-``k`` in ``direction``: its 1-based rank (the best-ranked positive)
  is above ``k``. A retrieval cell keeps every query's rank (``extra["ranks"]``) and the target it ranked first
  (``extra["top1"]``), per direction. The *thief* of a broken example is that first target at the breaking
  severity (a visual item for t2i / t2v, a caption for i2t / v2t, whose item is reported); its *k-occurrence* is how
  many queries of the same cell ranked it first (N_1, the Hubness page's N_k at k = 1), and it is a *hub* when that
  is at least :data:`HUB_SIZE` times the mean (|queries| / |gallery|; with as many queries as gallery items, the
  Hubness page's N_k ≥ 2k).
* **grounding** — the predicted box is no hit: IoU ≤ 0.5 (``acc@0.5`` counts IoU > 0.5). A grounding cell keeps
  every expression's IoU (``extra["ious"]``). No thief.
* **vqa** — the answer is wrong (compared as the VQA task scores it: exactly, lower-cased and stripped; a
  multiple-choice question (NeXT-QA) by the option the answer picks: :func:`robustlab.tasks.vqa.judge`). A VQA
  cell keeps every question's 1/0 (``extra["correct"]``) and the answer given, as scored (``extra["answers"]``);
  an item's ``scores`` are 1 / 0 per severity and ``answers`` the answers given. No thief.

``breaks_at`` is the lowest swept severity at which the example fails, ``0`` when it fails on the clean input
already, ``None`` when it holds at every severity; ``monotone`` says whether it stays failed at every higher swept
severity. ``seed`` is the seed its own perturbed input got (visual ``perturb_seed + item``, caption ``perturb_seed +
caption index``, a grounding expression ``perturb_seed + item``), so ``rl.perturb(x, perturbation, breaks_at,
seed=seed)`` regenerates it bit for bit.

The result is a :class:`FailureMap` (``.items``, ``.slices``, ``.to_json()``, ``.save(dir)``), whose JSON is
documented with a JSON Schema (``robustlab/failures/schema.json``, docs/failures.md). The slices are computed by
default (:func:`robustlab.failures.slicing.failure_slices`; ``slices=False``: none; a function ``(FailureMap,
dataset, model) -> list[dict]`` replaces the finder); ``refine=True`` adds each broken example's breaking parameter
value (:mod:`robustlab.failures.refine`). The cell reading is :mod:`robustlab.failures.items`.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from robustlab.bench.cells import build_dataset, cell_path, check, load
from robustlab.bench.cellfile import read_problem
from robustlab.bench.protocol import load_protocol
from robustlab.bench.runner import SweepStatus, run_sweep
from robustlab.bench.spec import (ENGINES, RAY_OBJECT, SweepCancelled, SweepError, SweepSpec, build_spec,
                                  object_dataset, parse_perturbations, parse_severities, visual_kind)
from robustlab.datasets import registry as dataset_registry  # looked up at call time (tests patch build)
from robustlab.datasets.base import Dataset, DatasetError
from robustlab.engine.cache import default_cache_dir
from robustlab.io.atomic import atomic_write
from robustlab.perturb import get_perturbation
from robustlab.tasks.conditions import AXES
from robustlab.tasks.registry import get as get_task
from robustlab.tasks.retrieval_bench import DIRECTIONS
from robustlab.failures.common import HUB_SIZE, IOU_HIT, TASKS, FailureError
from robustlab.failures.items import (_breaks, _expand, _items, _retrieval_arrays, _summary,  # noqa: F401
                                      _thieves, _with_baseline)  # (_breaks, _expand, _retrieval_arrays: tests)
from robustlab.failures.refine import refine_items
from robustlab.failures.slicing import failure_slices

SCHEMA = 1
SCHEMA_PATH = Path(__file__).with_name("schema.json")
FILE = "failures.json"


# ------------------------------------------------------------------------------------------------ the result
@dataclass
class FailureMap:
    """A failure map: per example and perturbation, its breaking severity (:mod:`robustlab.failures.breaking`).

    ``items``: one dict per (example, perturbation), JSON-ready (severity keys are strings, ``"0"`` the clean
    input); ``slices``: the slices (``[]`` with ``slices=False``; ``slices_note`` says why when computing them
    failed); ``status``: the sweep's run (cells run and reused; not part of the JSON, which depends on the inputs
    only)."""

    model: str  # the model spec
    dataset: dict  # {"name", "split", "n", "root", "seed"} as swept ("object": a Dataset object)
    task: str  # retrieval, grounding or vqa
    metric: str  # what fails: "rank", "iou" or "answer" (TASKS)
    direction: Optional[str]  # retrieval's t2i / i2t / t2v / v2t; None otherwise
    k: Optional[int]  # retrieval's top-k; None otherwise
    severities: list  # the swept severities
    perturbations: list  # [{"perturbation", "axis"}]
    n: int  # items in the dataset
    examples: int  # examples per perturbation (queries, expressions or questions)
    items: list = field(default_factory=list)
    slices: list = field(default_factory=list)
    summary: list = field(default_factory=list)
    thieves: list = field(default_factory=list)
    baseline: Optional[str] = None
    protocol: Optional[str] = None
    perturb_seed: int = 0
    out: Optional[str] = None
    refine_steps: Optional[int] = None
    slices_note: Optional[str] = None
    status: Optional[SweepStatus] = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        """The documented object (``robustlab/failures/schema.json``)."""
        return {"schema": SCHEMA, "model": self.model, "baseline": self.baseline, "dataset": dict(self.dataset),
                "task": self.task, "metric": self.metric, "direction": self.direction, "k": self.k,
                "threshold": IOU_HIT if self.metric == "iou" else None, "severities": list(self.severities),
                "perturbations": list(self.perturbations), "protocol": self.protocol,
                "perturb_seed": self.perturb_seed, "n": self.n, "examples": self.examples, "items": list(self.items),
                "slices": list(self.slices), "summary": list(self.summary), "thieves": list(self.thieves),
                "out": self.out, "refine_steps": self.refine_steps,
                "slices_note": self.slices_note}

    def save(self, out) -> Path:
        """Write ``failures.json`` into the folder ``out`` (atomically) and return its path."""
        return atomic_write(Path(out) / FILE, (json.dumps(self.to_json(), indent=1) + "\n").encode())

    @classmethod
    def from_json(cls, d: dict) -> "FailureMap":
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name != "status" and f.name in d})

    @classmethod
    def load(cls, path) -> "FailureMap":
        """A failure map from ``failures.json`` or the folder holding it."""
        p = Path(path)
        return cls.from_json(json.loads((p / FILE if p.is_dir() else p).read_text(encoding="utf-8")))

    def broken(self, perturbation: Optional[str] = None) -> list[dict]:
        """The items that break (clean failures included), of one perturbation or all."""
        return [it for it in self.items if it["breaks_at"] is not None
                and (perturbation is None or it["perturbation"] == perturbation)]


def schema() -> dict:
    """The JSON Schema of :meth:`FailureMap.to_json`."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------------ the inputs
def resolve_perturbations(text, kind: str) -> list[tuple[str, str]]:
    """``(axis, "name[/variant]")`` of every perturbation a list names: ``NAME``, ``NAME/VARIANT``,
    ``category:NAME``, ``tag:NAME`` or ``all``; a name goes to the visual axis when it applies to ``kind`` ("image" /
    "video"), else to the text axis; a category, tag or ``all`` selects from both. One-line FailureError for an
    unknown or unavailable name, a perturbation of neither kind, or a category with nothing in it."""
    parts = [p.strip() for p in (text if isinstance(text, (list, tuple)) else str(text or "").split(",")) if p.strip()]
    if not parts:
        raise FailureError("no perturbation: pass --perturbations LIST (names, name/variant, category:NAME, all) or "
                           "--protocol NAME")
    out: list[tuple[str, str]] = []
    for part in parts:
        if part == "all" or part.startswith(("category:", "tag:")):
            got, errors = [], []
            for axis, k in (("visual", kind), ("text", "text")):
                try:
                    got += [(axis, n) for n in parse_perturbations(part, k)]
                except SweepError as e:
                    errors.append(str(e))
            if not got:
                raise FailureError(errors[0])
            out += got
            continue
        try:
            spec = get_perturbation(part)
        except ValueError as e:
            raise FailureError(str(e)) from None
        axis = "visual" if kind in spec.applies_to else "text" if "text" in spec.applies_to else None
        if axis is None:
            raise FailureError(f"{part!r} is a {spec.modality} perturbation, not one of {kind}s or texts")
        try:
            out += [(axis, n) for n in parse_perturbations(part, kind if axis == "visual" else "text")]
        except SweepError as e:
            raise FailureError(str(e)) from None
    return list(dict.fromkeys(out))


def _dataset_dict(dataset, root, split, n, seed, options, protocol=None) -> dict:
    """The sweep's dataset dict; no name: the protocol's dataset, else the built-in world."""
    if isinstance(dataset, dict):
        d = dict(dataset)
    else:
        d = {"name": str(dataset) if dataset else None}
    if not d.get("name") and not protocol:
        d["name"] = "builtin"
    for k, v in (("root", root), ("split", split), ("n", n), ("seed", seed)):
        if v is not None:
            d[k] = str(v) if k == "root" else v
    d["options"] = dict(d.get("options") or {}) | dict(options or {})
    if d.get("n") is not None and (not isinstance(d["n"], int) or isinstance(d["n"], bool) or d["n"] < 1):
        raise FailureError(f"n must be a positive integer, got {d['n']!r}")
    return d


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
        raise FailureError(f"k must be a positive integer (the ground truth fails when it leaves the top k), got {k!r}")
    return int(k)


def failure_spec(models: Sequence[str], dataset: dict, task: str, perturbations=None, severities=None,
                 protocol: Optional[str] = None, direction: Optional[str] = None, perturb_seed: int = 0,
                 device: Optional[str] = None, worst: int = 3) -> tuple[SweepSpec, list[tuple[str, str]], list[int]]:
    """(the sweep of a failure map, its ``(axis, perturbation)`` list, its severities): the clean cell and every
    single-axis (perturbation, severity) cell, the same cells (and cell keys) ``robustlab bench`` runs for them.
    A protocol (``protocol``) gives its perturbations with variants and its severities (``perturbations`` /
    ``severities`` given as well narrow or override them); its combinations, mixed settings, interventions and
    adaptation cells are no breaking points and are left out."""
    dirs = [direction] if direction else None
    if protocol:
        proto = load_protocol(protocol)
        given = {k: v for k, v in dataset.items() if v not in (None, {})}
        ds = proto.dataset  # what the protocol's build_spec sweeps: its dataset, the given keys replacing its own
        ds.pop("paper", None)
        if given.get("name") and given["name"] != ds.get("name"):
            ds = {"name": given["name"]}
        ds.update(given)
        kind = visual_kind(ds, [task])
        vis = txt = None
        if perturbations is not None:
            chosen = resolve_perturbations(perturbations, kind)
            vis = ",".join(n for a, n in chosen if a == "visual") or "none"
            txt = ",".join(n for a, n in chosen if a == "text") or "none"
        spec = proto.build_spec(models=list(models), dataset=given or None, tasks=[task], directions=dirs,
                                perturbations=vis, text_perturbations=txt, severities=severities,
                                text_severities=severities, combine="none", adapt="none",
                                perturb_seed=perturb_seed, worst=worst, device=device)
        keep = [c for c in spec.conditions if _single(c)]
        spec.conditions = [{}] + [c for c in keep if c]
        if dataset.get("object"):  # a Dataset object: the protocol's split, root and options are not its own
            spec.dataset = dict(dataset)
        pert = list(dict.fromkeys((a, _spec_name(c[a])) for c in keep for a in c))
        sevs = sorted({c[a].severity for c in keep for a in c})
        if not pert:
            raise FailureError(f"protocol {proto.name!r} leaves no perturbation to run here"
                               + (f" among {perturbations!r}" if perturbations else ""))
        return spec, pert, sevs
    d = dict(dataset)
    if not d.get("object"):  # a Dataset object's dict (object_dataset) is complete as it is
        try:
            entry = dataset_registry.get_entry(d.get("name") or "builtin")
        except KeyError as e:
            raise FailureError(str(e.args[0]) if e.args else str(e)) from None
        if d.get("split") is None:
            d["split"] = entry["default_split"]
    kind = visual_kind(d, [task])
    pert = resolve_perturbations(perturbations, kind)
    sevs = parse_severities(severities if severities is not None else "1-5")
    spec = build_spec(models=list(models), dataset=d, tasks=[task],
                      perturbations=[n for a, n in pert if a == "visual"] or None,
                      text_perturbations=[n for a, n in pert if a == "text"] or None, severities=sevs,
                      combine="none", directions=dirs, perturb_seed=perturb_seed, worst=worst, device=device,
                      kind=kind)
    return spec, pert, sevs


def _single(c: dict) -> bool:
    """A condition set that perturbs exactly one of visual / text, plainly (no mix, intervention or adaptation)."""
    return len(c) == 1 and next(iter(c)) in AXES and next(iter(c.values())).mix is None


def _spec_name(c) -> str:
    return c.name + (f"/{c.variant}" if c.variant else "")


def _cache_folder(spec: SweepSpec) -> Path:
    """Where a failure map without ``out`` keeps its cells: one sweep folder per dataset in the cache (a later map
    over the same dataset reuses every cell it shares)."""
    h = hashlib.blake2b(json.dumps(spec.dataset_key(), sort_keys=True, default=str).encode(), digest_size=8)
    return default_cache_dir() / "failures" / h.hexdigest()


# ------------------------------------------------------------------------------------------------ the driver
def failures(model: str, dataset=None, *, task: str = "retrieval", perturbations=None, severities=None,
             protocol: Optional[str] = None, direction: Optional[str] = None, k: int = 1,
             baseline: Optional[str] = None, refine: bool = False, root=None, split: Optional[str] = None,
             n: Optional[int] = None, seed: Optional[int] = None, options: Optional[dict] = None,
             out=None, engine: str = "local", perturb_seed: int = 0, device: Optional[str] = None,
             worst: int = 3, progress: Optional[Callable[[dict], None]] = None,
             cancel: Optional[threading.Event] = None, cache=None, address: Optional[str] = None,
             num_cpus: Optional[int] = None,
             slices=True, refine_steps: int = 6) -> FailureMap:
    """The breaking point of every example of ``dataset`` under every perturbation (module docstring).

    ``model`` / ``baseline``: model specs (``builtin:tiny-clip``...); with a baseline, each item also says whether
    it breaks for one model and not the other. ``dataset``: a registered name (``builtin``, ``builtin-videos``,
    ``builtin-refs``, ``msrvtt``, ``refcoco``, ``upload``...) or a ``{"name", "root", "split", "n", "seed",
    "options"}`` dict; ``root`` / ``split`` / ``n`` / ``seed`` / ``options`` as ``robustlab bench`` takes them.
    ``perturbations``: names, ``name/variant``, ``category:NAME``, ``tag:NAME``, ``all`` (visual and text), or
    ``protocol=NAME`` for a paper's; ``severities``: ``"1-5"``, ``"1,3,5"`` or a list. ``direction`` (retrieval):
    t2i / i2t / t2v / v2t (default t2i, t2v for videos); ``k``: the top-k the ground truth must stay in.
    ``out``: the sweep folder (cells, ``sweep.json``) and ``failures.json``; default a folder per dataset in the
    cache (resumable too). ``engine``: "local" or "ray" (``address``, ``num_cpus`` as the sweep's).
    ``slices``: True (default) computes the slices (:func:`robustlab.failures.slicing.failure_slices`: discovered
    from the model's embeddings and captions, and by the dataset's attributes where it has them); False / None
    none (``[]``); a function ``(fmap, dataset, model) -> list[dict]`` is the hook where slices are computed: the
    failure map, the dataset as swept and the loaded model (whose clean and perturbed embeddings the embedding
    cache holds). ``refine``: bisect each broken example's breaking parameter value between its last passing and
    first failing severity, ``refine_steps`` steps (:mod:`robustlab.failures.refine`; the item's ``"refined"``).
    ``dataset`` may also be a :class:`~robustlab.datasets.base.Dataset` object (a dashboard upload, a dataset a
    script built): the sweep runs on it as it is (``run_sweep(..., dataset=)``, which records it in ``sweep.json``
    as an object; no ``root`` / ``split`` / ``seed`` / ``options``, ``n`` all of it, the local engine), its cells
    kept in ``out`` (a rerun with the same object resumes) or, without ``out``, in a temporary folder removed once
    the map is read (``out`` is then None); the map's ``dataset`` says ``"object": true``.
    Every bad input is a one-line :class:`FailureError` (a SweepError) before anything is written."""
    obj = dataset if isinstance(dataset, Dataset) else None
    if obj is not None:
        _check_object(obj, root, split, n, seed, options, engine)
    k = _check_k(k)
    if isinstance(refine_steps, bool) or not isinstance(refine_steps, int) or not 1 <= refine_steps <= 20:
        raise FailureError(f"refine_steps must be an integer in 1..20, got {refine_steps!r}")
    try:
        get_task(task)
    except KeyError as e:
        raise FailureError(str(e.args[0]) if e.args else str(e)) from None
    if task not in TASKS:
        raise FailureError(f"failures run on {', '.join(TASKS)}; {task!r} has no per-example failure yet")
    if engine not in ENGINES:
        raise FailureError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    if direction is not None and task != "retrieval":
        raise FailureError(f"--direction is a retrieval option; {task} has none")
    try:
        models, spec, pert, sevs, ds, direction, k, loaded = _prepare(
            model, baseline, object_dataset(obj) if obj is not None else
            _dataset_dict(dataset, root, split, n, seed, options, protocol), task, perturbations, severities,
            protocol, direction, k, perturb_seed, device, worst, obj)
    except FailureError:
        raise
    except (SweepError, KeyError, ValueError) as e:  # the sweep's checks, a dataset's DatasetError: one line
        raise FailureError(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)) from None
    tmp = Path(tempfile.mkdtemp(prefix="robustlab-failures-")) if obj is not None and out is None else None
    where = Path(out) if out is not None else tmp or _cache_folder(spec)
    try:
        try:
            status = run_sweep(spec, where, engine=engine, progress=progress, cancel=cancel, cache=cache,
                               address=address, num_cpus=num_cpus, dataset=obj)
        except FailureError:
            raise
        except (SweepError, DatasetError) as e:  # a folder that cannot be written, a full disk (the finished
            raise FailureError(str(e)) from None  # cells are kept), Ray, an object's item that does not read
        if status.cancelled:
            raise SweepCancelled(f"cancelled; the {status.done + status.skipped} finished cells are kept"
                                 + ("" if tmp else f" in {where}"))
        per_model = {m: _items(_read_cells(where, spec, m), ds, task, direction, k, pert, sevs, perturb_seed)
                     for m in spec.models}
    finally:
        if tmp is not None:  # an object's map without out: its cells go once the map is read
            shutil.rmtree(tmp, ignore_errors=True)
    items = per_model[models[0]]
    if len(models) > 1:
        items = _with_baseline(items, per_model[models[1]], TASKS[task])
    fmap = FailureMap(model=models[0], baseline=models[1] if len(models) > 1 else None,
                      dataset={"name": ds.name, "split": getattr(ds, "split", None), "n": len(ds),
                               "root": spec.dataset.get("root"), "seed": spec.dataset.get("seed")}
                      | ({"object": True} if obj is not None else {}),
                      task=task, metric=TASKS[task], direction=direction, k=k, severities=list(sevs),
                      perturbations=[{"perturbation": p, "axis": a} for a, p in pert],
                      protocol=(spec.protocol or {}).get("name"), perturb_seed=int(perturb_seed), n=len(ds),
                      examples=sum(1 for it in items if it["perturbation"] == pert[0][1]
                                   and it["axis"] == pert[0][0]),
                      items=items, summary=_summary(items, pert, sevs), thieves=_thieves(items, ds),
                      out=None if tmp else str(where), status=status)
    if refine:
        fmap.items = refine_items(fmap, ds, loaded[models[0]], steps=refine_steps, cache=cache)
        fmap.refine_steps = int(refine_steps)
    if slices is True:
        slices = failure_slices
    if slices:  # the slice finder (robustlab.failures.slicing) plugs in here
        try:
            fmap.slices = list(slices(fmap, ds, loaded[models[0]]) or [])
        except (ValueError, RuntimeError, KeyError, OSError) as e:  # the map stands; the note says why no slices
            fmap.slices, fmap.slices_note = [], f"no slices: {str(e.args[0]) if e.args else e}"
    if out is not None:
        fmap.save(where)
    return fmap


def _check_object(ds: Dataset, root, split, n, seed, options, engine: str) -> None:
    """What a Dataset object cannot take, in one line: the options that choose a registered dataset, Ray, nothing
    in it."""
    if any(v is not None for v in (root, split, seed)) or options or (n is not None and n != len(ds)):
        raise FailureError("root, split, seed, n and options choose a registered dataset; a Dataset object is swept "
                           f"as it is ({len(ds)} items)")
    if engine != "local":
        raise FailureError(RAY_OBJECT)
    if len(ds) == 0:
        raise FailureError(f"the dataset {ds.name or type(ds).__name__} is empty")


def _prepare(model, baseline, ds_opts: dict, task: str, perturbations, severities, protocol, direction, k: int,
             perturb_seed: int, device, worst: int, obj: Optional[Dataset] = None):
    """Everything the sweep checks, and what a failure map needs beyond it, before anything is written: (models,
    spec, perturbations, severities, dataset, direction, k, the loaded models). ``obj``: a Dataset object swept
    as it is (``ds_opts`` its :func:`~robustlab.bench.spec.object_dataset`)."""
    models = [str(model)] + ([str(baseline)] if baseline and str(baseline) != str(model) else [])
    spec, pert, sevs = failure_spec(models, ds_opts, task, perturbations, severities, protocol, direction,
                                    perturb_seed=perturb_seed, device=device, worst=worst)
    ds = obj if obj is not None else build_dataset(spec)
    loaded = {m: load(m, spec.device) for m in spec.models}
    check(spec, ds, loaded)
    if task == "retrieval":
        direction = direction or DIRECTIONS[ds.kind][0]
        if direction not in DIRECTIONS[ds.kind]:
            raise FailureError(f"direction {direction!r} is not one of {ds.name}'s ({', '.join(DIRECTIONS[ds.kind])})")
        texts = ds.texts()
        if not texts:
            raise FailureError(f"{ds.name} has no ground truth for retrieval: none of its {ds.kind}s has a caption "
                               "(a folder: add captions.txt / captions.csv / captions.json)")
        gallery = len(ds) if direction[0] == "t" else len(texts)
        if k > gallery:
            raise FailureError(f"k {k} is larger than the gallery: {direction} ranks {gallery} "
                               f"{'items' if direction[0] == 't' else 'captions'} of {ds.name}")
    elif task == "vqa":
        if not any(ds.item(i).questions for i in range(len(ds))):
            raise FailureError(f"{ds.name} has no ground truth for vqa: no item has a question with its answer")
        k = None
    else:
        if not any(ds.item(i).refs for i in range(len(ds))):
            raise FailureError(f"{ds.name} has no ground truth for grounding: no item has a referring expression "
                               "with a box")
        k = None
    return models, spec, pert, sevs, ds, direction, k, loaded


# ------------------------------------------------------------------------------------------------ the cells
def _read_cells(out: Path, spec: SweepSpec, model: str) -> dict:
    """``{condition set as (axis, name, severity) or (): cell JSON}`` of one model's cells (each checked)."""
    cells = {}
    for c in spec.cells():
        if c.model != model:
            continue
        path = cell_path(out, c.key)
        try:
            cell, why = read_problem(path.read_text(encoding="utf-8"), c.key)
        except OSError as e:
            cell, why = None, e.strerror or type(e).__name__
        if cell is None:
            raise FailureError(f"{path}: {why}; rerun to recompute it")
        key = () if not c.conditions else next((a, _spec_name(x), x.severity) for a, x in c.conditions.items())
        cells[key] = cell
    return cells


__all__ = ["FailureMap", "FailureError", "failures", "failure_spec", "resolve_perturbations", "schema", "SCHEMA",
           "SCHEMA_PATH", "TASKS", "IOU_HIT", "HUB_SIZE", "FILE"]
