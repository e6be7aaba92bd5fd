"""The sweep's spec: what a sweep runs (:class:`SweepSpec`, its :class:`Cell` s) and the one builder from options
(:func:`build_spec`) that ``robustlab bench`` and the dashboard's Benchmark page share."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

from robustlab.adapt import QUERY_SIDE, AdaptError, get_method, sweep_methods
from robustlab.bench.mixes import mixed_conditions, parse_fractions
from robustlab.datasets import registry as dataset_registry  # looked up at call time (tests patch build)
from robustlab.io.params import ParamError, parse_kv
from robustlab.models import interventions as iv
from robustlab.perturb import get_perturbation, list_perturbations
from robustlab.perturb.condition import Condition
from robustlab.tasks.conditions import ADAPT, adapt_condition, as_adapt, conditions_json, label, normalize
from robustlab.tasks.result import versions
from robustlab.tasks.registry import get as get_task

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
                   directions: Optional[Sequence[str]] = None, mixes: Sequence = ()) -> list[dict]:
    """Clean, every visual (perturbation, severity), every text one, and — when both axes are swept — their
    combinations (Schiappa et al.'s paired perturbations): ``combine="auto"`` pairs them at severity 3 (the paper's
    choice; on each axis the middle swept severity when 3 is not swept), an int at that severity, ``"all"`` at every
    pair of swept severities, ``None``/``"none"`` not at all. ``interventions`` (``quag:unimodal``,
    ``input:language-only``...; :mod:`robustlab.models.interventions`) add one condition set each, on clean inputs
    (Rawal et al.'s Table 1).
    ``adapt`` (method names, ``"tent/steps=1"`` or conditions from :func:`parse_adapt`; ``"none"`` is the shifted
    cell itself) add, right after every single-axis shift, one condition set per method with that shift (HAT-VTR
    Tables 1–3) — for the shifts whose queries one of ``directions`` (None: all) uses.
    ``mixes``: ``(axis, Condition)`` of mixed settings (:func:`robustlab.bench.mixes.mixed_conditions`), single-axis
    shifts after the others (with their adaptation cells).
    Each condition set is ``{axis: Condition}`` (clean = ``{}``)."""
    out: list[dict] = [{}]
    vis = [Condition(p, s, seed) for p in visual for s in visual_severities]
    txt = [Condition(p, s, seed) for p in text for s in text_severities]
    methods = [a for a in dict.fromkeys(as_adapt(m) for m in adapt) if not a.clean]

    def with_adapt(axis: str, c: Condition) -> list[dict]:
        if not methods or not _side_in(axis, directions):
            return [{axis: c}]
        return [{axis: c}] + [{axis: c, ADAPT: a} for a in methods]
    out += [d for c in vis for d in with_adapt("visual", c)] + [d for c in txt for d in with_adapt("text", c)]
    out += [d for axis, c in mixes for d in with_adapt(axis, c)]
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
        out += [{"intervention": iv.as_condition(i)} for i in dict.fromkeys(interventions)]
    return out


def _side_in(side: str, directions: Optional[Sequence[str]]) -> bool:
    """Whether one of ``directions`` (None: every one) queries with ``side`` ("visual" or "text")."""
    return directions is None or any(QUERY_SIDE.get(d) == side for d in directions)


def parse_adapt(text, params: Sequence[str] = ()) -> list[Condition]:
    """``--adapt``: comma-separated methods of :mod:`robustlab.adapt` (``none,tent,tcr,hat-vtr``), ``all`` (every
    adaptation method but the diagnostic ones) or ``none``; ``params``: ``KEY=VALUE`` strings (``--adapt-param``),
    each for every chosen method that has that parameter, or ``METHOD.KEY=VALUE`` for one method. The ``adapt``
    conditions of the methods other than none (none is the shifted cell itself); one-line SweepError for an unknown
    method, a parameter no chosen method has, or a bad value."""
    t = str(text or "").strip()
    if t.lower() in ("", "none"):
        if params:
            raise SweepError("--adapt-param needs --adapt METHOD[,METHOD...]")
        return []
    if t.lower() == "all":
        names = [m.name for m in sweep_methods()]
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
    t = str(text or "").strip()
    if t.lower() in ("", "none"):
        return []
    parts = iv.names() if t.lower() == "all" else [p.strip() for p in t.split(",") if p.strip()]
    out = []
    for p in parts:
        try:
            out.append(iv.parse(p).spec)
        except iv.InterventionError as e:
            raise SweepError(str(e)) from None
    return list(dict.fromkeys(out))


# ------------------------------------------------------------------------------------------------ the spec
@dataclass
class SweepSpec:
    """What a sweep runs. ``dataset``: ``{"name", "root", "split", "n", "seed", "options"}`` as
    :func:`robustlab.datasets.build` takes them, plus ``"object"`` for a Dataset object swept as it is
    (:func:`object_dataset`); ``conditions``: condition sets ``{axis: Condition}``."""

    models: list
    dataset: dict
    tasks: list = field(default_factory=lambda: ["retrieval"])
    conditions: list = field(default_factory=lambda: [{}])
    directions: Optional[list] = None
    worst: int = 3
    name: str = ""
    device: Optional[str] = None
    protocol: Optional[dict] = None  # the protocol a sweep runs (robustlab.bench.protocol): name, source, data
    fields: dict = field(default_factory=dict)  # per-model report fields, e.g. {"regime": {model: "zero-shot"}}
    report: dict = field(default_factory=dict)  # report options, e.g. {"headline": "R@5"} (bench.report)

    def __post_init__(self):
        self.models = [str(m) for m in self.models]
        self.tasks = [str(t) for t in self.tasks]
        self.conditions = [normalize(c) for c in self.conditions]
        d = {"name": None, "root": None, "split": None, "n": None, "seed": None, "options": {}}
        d.update(self.dataset or {})
        if d.get("root") is not None:
            d["root"] = str(d["root"])
        self.dataset = d

    def dataset_key(self) -> dict:
        """The dataset as ``sweep.json`` records it (with ``"object"`` when it was a Dataset object:
        :func:`object_dataset`)."""
        return {k: self.dataset.get(k) for k in ("name", "root", "split", "n", "seed", "options")} \
            | ({"object": self.dataset["object"]} if self.dataset.get("object") else {})

    def same_dataset(self, other: "SweepSpec") -> bool:
        """Whether two specs sweep the same dataset (a split left unset is the dataset's default split)."""
        def key(spec):
            k = spec.dataset_key()
            if k["split"] is None and not k.get("object"):
                try:
                    k["split"] = dataset_registry.get_entry(k["name"])["default_split"]
                except KeyError:
                    pass
            return k
        return key(self) == key(other)

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "name": self.name, "models": list(self.models), "dataset": self.dataset_key(),
                "tasks": list(self.tasks), "conditions": [conditions_json(c) for c in self.conditions],
                "directions": self.directions, "worst": int(self.worst), "versions": versions()} \
            | ({"protocol": self.protocol} if self.protocol else {}) \
            | ({"fields": self.fields} if self.fields else {}) | ({"report": self.report} if self.report else {})

    @classmethod
    def from_json(cls, d: dict) -> "SweepSpec":
        return cls(models=d["models"], dataset=d["dataset"], tasks=d.get("tasks", ["retrieval"]),
                   conditions=d.get("conditions", [{}]), directions=d.get("directions"), worst=d.get("worst", 3),
                   name=d.get("name", ""), protocol=d.get("protocol"), fields=dict(d.get("fields") or {}),
                   report=dict(d.get("report") or {}))

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
        return conditions_json(self.conditions)

    @property
    def key(self) -> str:
        """A file-name-safe key: readable parts plus a hash of the exact (model, task, conditions)."""
        ident = json.dumps([self.model, self.task, self.conditions_json()], sort_keys=True)
        h = hashlib.blake2b(ident.encode(), digest_size=5).hexdigest()
        # axes in name order, the adaptation method (no severity) last; keys without it are what they were
        cond = "_".join(f"{a}-{c.name}{'-' + c.variant if c.variant else ''}"
                        + ("" if a == ADAPT else f"-s{c.severity}") + (f"-{c.mix.slug()}" if c.mix else "")
                        for a, c in sorted(self.conditions.items(), key=lambda ac: (ac[0] == ADAPT, ac[0]))
                        if not c.clean) or "clean"
        return f"{self.task}__{_slug(self.model)}__{_slug(cond)}__{h}"

    def label(self) -> str:
        return f"{self.model} · {self.task} · {label(self.conditions)}"


# ------------------------------------------------------------------------------------------- a Dataset object
RAY_OBJECT = ("a Dataset object runs on the local engine: Ray's workers rebuild the dataset by its registered name "
              "(pass a registered name, and a root, for Ray)")


def fingerprint(ds) -> str:
    """A hash of a Dataset's annotations: its name, kind and length, and per item its id, captions, referring
    expressions with their boxes, questions with their answers and meta, and meta (read with ``item(i)``, which
    parses annotations only; the pixels are not read, so two objects that differ only in their pixels match)."""
    h = hashlib.blake2b(digest_size=10)
    h.update(json.dumps([ds.name, ds.kind, len(ds)]).encode())
    for i in range(len(ds)):
        it = ds.item(i)
        row = [it.id, list(it.texts), [[r.expression, [float(v) for v in r.box], r.meta] for r in it.refs],
               [[q.question, q.answer, q.qtype, q.meta] for q in it.questions], it.meta]
        h.update(json.dumps(row, sort_keys=True, default=str).encode() + b"\n")
    return h.hexdigest()


def object_dataset(ds) -> dict:
    """The spec's dataset dict of a :class:`~robustlab.datasets.base.Dataset` object swept as it is (a dashboard
    upload, a dataset a script built; :func:`robustlab.bench.run_sweep` with ``dataset=ds``), which no registered
    name rebuilds: its name, split and length, and ``"object"``: its kind, class and :func:`fingerprint`, so that a
    resume knows whether it was given the same object (and one without it says that it must be)."""
    return {"name": ds.name or type(ds).__name__, "root": None, "split": getattr(ds, "split", None), "n": len(ds),
            "seed": None, "options": {},
            "object": {"kind": ds.kind, "type": type(ds).__name__, "fingerprint": fingerprint(ds)}}


def object_missing(dataset: dict) -> str:
    """The one line of a sweep over a Dataset object run again without the object."""
    return (f"this sweep ran on a Dataset object ({dataset.get('name')}, {dataset.get('n')} items), which no "
            "registered name rebuilds: pass the object again (run_sweep(spec, out, dataset=...))")


# ------------------------------------------------------------------------------------------------ the builder
def visual_kind(dataset: dict, tasks: Sequence[str], kind: Optional[str] = None) -> str:
    """The kind ("image" / "video") a sweep's visual perturbations apply to: "image" when a task takes images only,
    else the dataset's (``kind`` when the caller knows it; a dataset registered for any kind, a local folder, is
    opened to find out; a Dataset object's, :func:`object_dataset`, is the one it recorded). Unknown datasets and
    tasks, and a folder that does not open, are one-line SweepErrors."""
    if dataset.get("object"):
        kind = kind or dataset["object"]["kind"]
    else:
        try:
            entry = dataset_registry.get_entry(dataset["name"])
        except KeyError as e:
            raise SweepError(str(e.args[0]) if e.args else str(e)) from None
        kind = kind or entry["kind"]
    if kind not in ("image", "video"):  # a folder of either: open it (its errors are one line too)
        try:
            kind = dataset_registry.build(dataset["name"], root=dataset.get("root"),
                                          split=dataset.get("split") or entry["default_split"],
                                          **{k: dataset[k] for k in ("n", "seed") if dataset.get(k) is not None},
                                          **(dataset.get("options") or {})).kind
        except (KeyError, ValueError, OSError) as e:
            raise SweepError(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)) from None
    for t in tasks:
        try:
            get_task(t)
        except KeyError as e:
            raise SweepError(str(e.args[0]) if e.args else str(e)) from None
    return "image" if any(get_task(t).kinds == ("image",) for t in tasks) else kind


def build_spec(*, models: Sequence[str], dataset: dict, tasks: Sequence[str] = ("retrieval",),
               perturbations=None, text_perturbations=None, severities="1-5", text_severities=None,
               combine="auto", interventions=None, adapt=None, adapt_params: Sequence[str] = (),
               directions: Optional[Sequence[str]] = None, perturb_seed: int = 0, worst: int = 3,
               device: Optional[str] = None, name: str = "", kind: Optional[str] = None,
               mix_severities: bool = False, corrupt_fractions=None) -> SweepSpec:
    """A :class:`SweepSpec` from the options a user gives (``robustlab bench``'s flags, the Benchmark page's
    widgets), checked: unknown tasks, perturbations, methods and parameters are one-line :class:`SweepError` s.

    ``dataset``: ``{"name", "root", "split", "n", "seed", "options"}`` (split None: the dataset's default split,
    recorded in the spec), or a Dataset object's :func:`object_dataset` (run it with ``run_sweep(..., dataset=)``).
    Perturbation forms: see :func:`parse_perturbations`; the visual ones apply to the
    dataset's kind (images for a task that takes images only). ``combine``: ``"auto"``, ``"all"``, ``"none"`` or a
    severity (:func:`condition_grid`). ``kind``: the dataset's ("image" / "video") when the caller knows it; else
    the registry's, and a dataset registered for any kind (a local folder) is opened to find out.
    ``mix_severities`` / ``corrupt_fractions`` (``"0.2,0.4"``): MLVP's mixed settings (:mod:`robustlab.bench.mixes`)."""
    # the --adapt methods and their parameters first: a bad value (steps=inf) is one line before any other work
    methods = parse_adapt(adapt, adapt_params or [])
    if dataset.get("object"):  # a Dataset object (object_dataset): swept as it is, no registry entry
        d = {k: dataset.get(k) for k in ("name", "root", "split", "n", "seed")} | {
            "options": dict(dataset.get("options") or {}), "object": dict(dataset["object"])}
    else:
        try:
            entry = dataset_registry.get_entry(dataset["name"])
        except KeyError as e:
            raise SweepError(str(e.args[0]) if e.args else str(e)) from None
        d = {"name": dataset["name"], "root": dataset.get("root"),
             "split": dataset.get("split") or entry["default_split"], "n": dataset.get("n"),
             "seed": dataset.get("seed"), "options": dict(dataset.get("options") or {})}
        if d["split"] not in entry["splits"]:
            raise SweepError(f"{d['name']} has no split {d['split']!r}; splits: {', '.join(entry['splits'])}")
    tasks = [str(t) for t in tasks]
    kind = visual_kind(d, tasks, kind)
    vis = parse_perturbations(perturbations, kind)
    txt = parse_perturbations(text_perturbations, "text")
    sev = parse_severities(severities) if vis or txt else []
    tsev = parse_severities(text_severities) if (text_severities and (vis or txt)) else sev
    if isinstance(combine, str) and combine not in ("auto", "all", "none"):
        try:
            combine = int(combine)
        except ValueError:
            raise SweepError(f"combine {combine!r}: auto, all, none or a severity") from None
    directions = list(directions) if directions else None
    try:
        mixes = mixed_conditions(vis, sev, txt, tsev, mix_severities=bool(mix_severities),
                                 fractions=parse_fractions(corrupt_fractions), seed=perturb_seed)
    except ValueError as e:
        raise SweepError(str(e)) from None
    conds = condition_grid(vis, sev, txt, tsev, seed=perturb_seed, combine=combine,
                           interventions=parse_interventions(interventions), adapt=methods, directions=directions,
                           mixes=mixes)
    if methods and not any(ADAPT in c for c in conds):
        raise SweepError("test-time adaptation adapts the queries of a perturbed side: choose visual or text "
                         "perturbations (--perturbations, --text-perturbations)"
                         + (f" whose queries the directions {','.join(directions)} use" if directions else ""))
    return SweepSpec(models=list(models), dataset=d, tasks=tasks, conditions=conds, directions=directions,
                     worst=worst, device=device, name=name)
