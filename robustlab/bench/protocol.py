"""A paper's benchmark as data: protocol files (TOML or JSON, validated by ``protocols/schema.json``) and the one
function that turns one into a :class:`~robustlab.bench.spec.SweepSpec`.

A protocol names its datasets and splits (and its loader's options: ``[dataset.options]``), its perturbations
*with variants* and severities grouped into the paper's categories and types, its visual × text combinations,
interventions or adaptation methods, the fields the report needs (training regime per model) and the report's
headline metric and layout. The shipped ones are in
``robustlab/bench/protocols/`` (``robustlab protocols`` lists them); a user's own file is loaded by path.

    >>> p = load_protocol("msrvtt-p")
    >>> spec = p.build_spec(dataset={"name": "builtin-videos", "n": 50})   # the paper's cells on the built-ins

Perturbations a protocol names that cannot run here (hub weights, a missing dependency) are never dropped silently:
:meth:`Protocol.entries` lists them with the reason, the spec records them (``protocol.not_run``) and the CLI,
the page and the report say so.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from robustlab.datasets import registry as dataset_registry  # looked up at call time (tests patch it)
from robustlab.io.params import check_finite
from robustlab.perturb import get_perturbation
from robustlab.perturb.condition import Condition, mixed_severities, random_types
from robustlab.perturb.share import same_as
from robustlab.perturb.specs import split_variant
from robustlab.tasks.retrieval_bench import DIRECTIONS

from robustlab.bench.spec import (SweepError, SweepSpec, build_spec, condition_grid, parse_adapt, parse_perturbations,
                                  parse_severities, visual_kind)

PROTOCOL_DIR = Path(__file__).with_name("protocols")
SCHEMA_PATH = PROTOCOL_DIR / "schema.json"
AXES = ("visual", "text")


class ProtocolError(SweepError):
    """A protocol that does not load, validate or apply (one line)."""


@dataclass(frozen=True)
class Entry:
    """One perturbation of a protocol: ``name`` (with ``variant``), its group's category / type / level, the
    severities it runs at and whether it can run here."""
    axis: str
    name: str
    variant: Optional[str]
    category: str
    type: Optional[str]
    level: Optional[str]
    severities: tuple
    available: bool
    reason: str = ""

    @property
    def spec(self) -> str:
        return self.name + (f"/{self.variant}" if self.variant else "")

    def params(self, severity: int) -> dict:
        return get_perturbation(self.name).params(severity, self.variant)


@dataclass
class Protocol:
    name: str
    data: dict  # the resolved protocol (after ``extends``), as validated
    source: str = ""
    entries_cache: list = field(default_factory=list, repr=False)

    # ------------------------------------------------------------------ plain fields
    @property
    def title(self) -> str:
        return self.data["title"]

    @property
    def paper(self) -> str:
        return self.data["paper"]

    @property
    def layout(self) -> str:
        return self.data.get("layout", "generic")

    @property
    def report(self) -> dict:
        return dict(self.data.get("report") or {})

    @property
    def fields(self) -> dict:
        return json.loads(json.dumps(self.data.get("fields") or {}))

    @property
    def dataset(self) -> dict:
        return dict(self.data["dataset"])

    # ------------------------------------------------------------------ perturbations
    def entries(self, axis: Optional[str] = None) -> list[Entry]:
        """Every perturbation the protocol names (after ``exclude_tags``), in the file's order, available or not."""
        if not self.entries_cache:
            self.entries_cache.extend(_entries(self.data))
        return [e for e in self.entries_cache if axis is None or e.axis == axis]

    def categories(self, axis: str) -> dict[str, list[str]]:
        """category -> the ``name/variant`` of its members, in the file's order."""
        out: dict[str, list[str]] = {}
        for e in self.entries(axis):
            out.setdefault(e.category, []).append(e.spec)
        return out

    def types(self, axis: str = "text") -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for e in self.entries(axis):
            if e.type:
                out.setdefault(e.type, []).append(e.spec)
        return out

    def pairs(self) -> list[tuple[Entry, Entry]]:
        """The visual × text combinations (both members present after the exclusions)."""
        comb = self.data.get("combine")
        if not comb:
            return []
        vis = {e.spec: e for e in self.entries("visual")}
        txt = {e.spec: e for e in self.entries("text")}
        excluded = _excluded(self.data)
        out = []
        for v in comb["visual"]:
            for t in comb["text"]:
                if v in excluded or t in excluded:
                    continue
                out.append((vis.get(v) or _entry("visual", v, {"category": "combined"}),
                            txt.get(t) or _entry("text", t, {"category": "combined"})))
        return out

    def not_run(self) -> list[dict]:
        """The protocol's perturbations that cannot run here, with why."""
        seen, out = set(), []
        for e in self.entries() + [x for p in self.pairs() for x in p]:
            if not e.available and e.spec not in seen:
                seen.add(e.spec)
                out.append({"axis": e.axis, "perturbation": e.spec, "category": e.category, "reason": e.reason})
        for x in self.data.get("not_run") or []:  # what the file itself says it does not express, and why
            out.append({"axis": x.get("axis", "setting"), "perturbation": x["perturbation"],
                        "category": x.get("category", ""), "reason": x["reason"]})
        return out

    # ------------------------------------------------------------------ the sweep
    def conditions(self, seed: int = 0, *, perturbations: Optional[set] = None,
                   severities: Optional[Sequence[int]] = None, text_severities: Optional[Sequence[int]] = None,
                   combine: bool = True, adapt=None, directions: Optional[Sequence[str]] = None) -> list[dict]:
        """Clean, then every available visual (perturbation, severity), every text one, the combinations, the
        interventions — each single-axis shift followed by its adaptation cells when the protocol adapts.
        ``perturbations`` (``name/variant`` strings) keeps only those; ``severities`` / ``text_severities`` replace
        the protocol's; ``combine=False`` drops the pairs; ``adapt``: conditions replacing the protocol's methods."""
        methods = adapt if adapt is not None else self.adapt_conditions()
        directions = list(directions) if directions else self.data.get("directions")
        out: list[dict] = [{}]
        for axis in AXES:
            for e in self.entries(axis):
                if not e.available or (perturbations is not None and not _wanted(e, perturbations)):
                    continue
                sev = (severities if axis == "visual" else text_severities) or e.severities
                kw = ({"visual": [e.spec], "visual_severities": sev} if axis == "visual"
                      else {"text": [e.spec], "text_severities": sev})
                out += condition_grid(**kw, seed=seed, combine="none", adapt=methods, directions=directions)[1:]
        if combine:
            comb = self.data.get("combine") or {}
            for v, t in self.pairs():
                if not (v.available and t.available):
                    continue
                if perturbations is not None and not (_wanted(v, perturbations) and _wanted(t, perturbations)):
                    continue
                out.append({"visual": Condition(v.spec, int(comb.get("visual_severity", 3)), seed),
                            "text": Condition(t.spec, int(comb.get("text_severity", 3)), seed)})
        for axis, c in self.mix_conditions(seed, perturbations):
            out += condition_grid(mixes=[(axis, c)], seed=seed, adapt=methods, directions=directions)[1:]
        ivs = self.data.get("interventions") or []
        if ivs:
            out += condition_grid(interventions=ivs)[1:]
        return out

    def mix_conditions(self, seed: int = 0, perturbations: Optional[set] = None) -> list[tuple]:
        """``(axis, Condition)`` of the protocol's mixed settings (MLVP App. D.2): ``kind = "severities"`` — per
        perturbation, each item's severity drawn from ``severities`` (Table 17); ``kind = "fraction"`` — per
        fraction, exactly round(p·N) items corrupted by a type drawn from ``perturbations`` at a severity drawn from
        ``severities`` (Table 18). ``perturbations`` default to the axis's runnable ones."""
        out = []
        for m in self.data.get("mix") or []:
            axis = m["axis"]
            avail = {e.spec for e in self.entries(axis) if e.available}
            names = [n for n in (m.get("perturbations") or [e.spec for e in self.entries(axis)]) if n in avail
                     and (perturbations is None or n in perturbations)]
            sevs = list(m.get("severities") or [1, 2, 3, 4, 5])
            if not names:
                continue
            if m["kind"] == "severities":
                for n in names:
                    name, variant = split_variant(n)
                    out.append((axis, mixed_severities(name, sevs, seed, variant, "mlvp")))
            else:
                out += [(axis, random_types(f, names, seed=seed, severities=sevs, tag="mlvp"))
                        for f in m.get("fractions") or []]
        return out

    def adapt_conditions(self) -> list:
        a = self.data.get("adapt")
        if not a:
            return []
        return parse_adapt(",".join(a["methods"]), a.get("params") or [])

    def build_spec(self, *, models: Optional[Sequence[str]] = None, dataset: Optional[dict] = None,
                   tasks: Optional[Sequence[str]] = None, directions: Optional[Sequence[str]] = None,
                   perturbations=None, text_perturbations=None, severities=None, text_severities=None,
                   combine=None, adapt=None, adapt_params: Sequence[str] = (), perturb_seed: int = 0,
                   worst: int = 3, device: Optional[str] = None) -> SweepSpec:
        """The protocol's :class:`SweepSpec`; every argument given overrides the protocol's (``dataset``: keys
        replace the protocol's, so ``{"name": "builtin-videos", "n": 50}`` runs the paper's cells on the
        built-ins, and its ``options`` are added to the protocol's ``[dataset.options]``, replacing those of the
        same name; another dataset's name drops the protocol's split and options; ``perturbations`` /
        ``text_perturbations``: the grid's forms, keeping only those of the protocol's perturbations, or adding
        others under their registry category)."""
        ds = self.dataset
        ds.pop("paper", None)
        if dataset:
            if dataset.get("name") and dataset["name"] != ds["name"]:
                ds = {"name": dataset["name"]}  # another dataset: the protocol's split and options do not apply
            options = {**(ds.get("options") or {}), **(dataset.get("options") or {})}
            ds.update({k: v for k, v in dataset.items() if v is not None})
            ds["options"] = options
        models = list(models or self.data.get("models") or [])
        if not models:
            raise ProtocolError(f"protocol {self.name!r} names no default model: pass --models")
        tasks = list(tasks or self.data["tasks"])
        dirs = list(directions or self.data.get("directions") or []) or None
        kind = visual_kind(ds, tasks)  # opened once (a folder), then given to the plain builder
        # the plain builder checks the dataset, tasks and models exactly as a grid sweep does (no perturbations)
        base = build_spec(models=models, dataset=ds, tasks=tasks, perturbations=None, directions=dirs,
                          perturb_seed=perturb_seed, worst=worst, device=device, name=self.name, kind=kind)
        self._check_kind(base, dirs, kind)
        chosen = _chosen(perturbations, text_perturbations, kind)
        sev, tsev = _sev(severities), _sev(text_severities)
        methods = parse_adapt(adapt, adapt_params) if adapt is not None else None
        pairs = combine is None or str(combine).lower() not in ("none", "false", "0")
        conds = self.conditions(seed=perturb_seed, perturbations=self._keep(chosen), severities=sev,
                                text_severities=tsev, combine=pairs, adapt=methods, directions=dirs)
        conds += self._extra_conditions(chosen, sev, tsev, perturb_seed)
        base.conditions = [dict(c) for c in dict.fromkeys(_freeze(c) for c in conds)]
        base.protocol = self.record(not_run=self.not_run())
        base.fields = self.fields
        base.report = {k: v for k, v in self.report.items() if k == "headline"}
        return base

    def _keep(self, chosen: Optional[dict]) -> Optional[set]:
        """The ``name/variant`` of the protocol's perturbations the grid options keep (None: all of them)."""
        if chosen is None:
            return None
        return {s for axis in AXES for s in (chosen[axis] if chosen[axis] is not None
                                             else [e.spec for e in self.entries(axis)])}

    def _extra_conditions(self, chosen: Optional[dict], sev, tsev, seed) -> list[dict]:
        """Perturbations chosen on the command line that the protocol does not list: run under their registry
        category at the given (or all) severities."""
        out = []
        for axis in AXES if chosen else ():
            known = {e.spec for e in self.entries(axis)} | {e.name for e in self.entries(axis) if e.variant is None}
            extra = [s for s in chosen[axis] or [] if s not in known]
            if extra:
                kw = ({"visual": extra, "visual_severities": sev or [1, 2, 3, 4, 5]} if axis == "visual"
                      else {"text": extra, "text_severities": tsev or [1, 2, 3, 4, 5]})
                out += condition_grid(**kw, seed=seed, combine="none")[1:]
        return out

    def _check_kind(self, base: SweepSpec, directions, kind: str) -> None:
        """A video protocol on an image dataset (or the reverse) is one line, before any work."""
        bad = [e.spec for e in self.entries("visual") if e.available
               and kind not in get_perturbation(e.name).applies_to]
        wrong_dirs = [d for d in directions or [] if "retrieval" in base.tasks and d not in DIRECTIONS.get(kind, ())]
        if bad or wrong_dirs:
            what = f"perturbation {bad[0]!r}" if bad else f"direction {wrong_dirs[0]!r}"
            raise ProtocolError(f"protocol {self.name!r} is for {native_kind(self)} data ({what}); the dataset "
                                f"{base.dataset['name']} holds {kind}s")

    def record(self, **extra) -> dict:
        """What a sweep's spec.json keeps of the protocol: its name, source and resolved data."""
        return {"name": self.name, "source": self.source, "data": json.loads(json.dumps(self.data)), **extra}


# ---------------------------------------------------------------------------------------------- loading
@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def shipped() -> list[str]:
    """The names of the protocols that ship with robustlab."""
    return sorted(p.stem for p in PROTOCOL_DIR.glob("*.toml"))


def list_protocols() -> list[Protocol]:
    return [load_protocol(n) for n in shipped()]


MAX_DEPTH = 32  # tables and lists in tables: the shipped protocols nest 4 deep


def _depth(data) -> int:
    """How deep lists and tables nest in ``data`` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        x, d = stack.pop()
        kids = list(x.values()) if isinstance(x, dict) else x if isinstance(x, list) else None
        if kids is None:
            continue
        deepest = max(deepest, d)
        if d <= MAX_DEPTH:  # past the limit the answer is known: stop walking
            stack.extend((k, d + 1) for k in kids)
    return deepest


def _read(path: Path) -> dict:
    kind = path.suffix.lstrip(".").upper() or "TOML"
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            try:
                import tomllib  # Python 3.11+ (in-function: the 3.10 fallback below)
            except ModuleNotFoundError:  # pragma: no cover - Python 3.10
                import tomli as tomllib  # Python 3.10: the tomli backport (a dependency there)
            data = tomllib.loads(text)
    except RecursionError:  # json and tomllib parse nesting by recursion: [[[[... 100,000 deep
        raise ProtocolError(f"protocol file {path.name}: not a {kind} protocol robustlab can read (nested too "
                            f"deep; a protocol nests at most {MAX_DEPTH} levels)") from None
    except UnicodeDecodeError as e:
        raise ProtocolError(f"protocol file {path.name}: not UTF-8 text (byte {e.start})") from None
    except ValueError as e:  # json.JSONDecodeError and tomllib.TOMLDecodeError are both ValueErrors
        raise ProtocolError(f"protocol file {path.name}: not valid {kind}: {str(e).splitlines()[0]}") from None
    except OSError as e:
        raise ProtocolError(f"protocol file {path.name}: cannot read it ({e.strerror or type(e).__name__})") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"protocol file {path.name}: not a table of keys")
    depth = _depth(data)
    if depth > MAX_DEPTH:  # the schema check, the spec and the report walk it by recursion too
        raise ProtocolError(f"protocol file {path.name}: nested more than {MAX_DEPTH} levels deep (a protocol "
                            f"nests at most {MAX_DEPTH})")
    return data


def _validate(data: dict, where: str, partial: bool = False) -> None:
    """Against the schema; ``partial``: a file that ``extends`` another need not repeat the required keys."""
    import jsonschema  # a dependency; imported here to keep `robustlab --help` light

    sch = schema() if not partial else {**schema(), "required": ["schema", "name", "extends"]}
    v = jsonschema.Draft202012Validator(sch)
    errors = sorted(v.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        e = errors[0]
        at = ".".join(str(p) for p in e.absolute_path) or "top level"
        raise ProtocolError(f"protocol {where}: {at}: {e.message}"
                            + (f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
                               if len(errors) > 1 else ""))


def load_protocol(name_or_path, *, allow_files: bool = True) -> Protocol:
    """A shipped protocol by name (``msrvtt-p``) or, when ``allow_files``, a protocol file (``.toml``/``.json``).
    ``extends`` names a shipped protocol whose keys the file starts from. Validated against the schema, and every
    perturbation checked against the registry; a ProtocolError (one line) otherwise. The dashboard passes
    ``allow_files=False``: a viewer picks among the shipped protocols only."""
    text = str(name_or_path).strip()
    if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", text) and (PROTOCOL_DIR / f"{text}.toml").is_file():
        path = PROTOCOL_DIR / f"{text}.toml"
    elif allow_files and text.lower().endswith((".toml", ".json")):
        path = Path(text).expanduser()
        if not path.is_file():
            raise ProtocolError(f"no protocol file {text!r}")
    else:
        raise ProtocolError(f"unknown protocol {text!r}; shipped: {', '.join(shipped())}"
                            + (" (or a .toml / .json protocol file)" if allow_files else ""))
    data = _read(path)
    where = repr(data.get("name") or path.stem)
    _validate(data, where, partial="extends" in data)
    seen = {data["name"]}
    while "extends" in data:
        parent_name = data.pop("extends")
        if parent_name in seen or not (PROTOCOL_DIR / f"{parent_name}.toml").is_file():
            why = "a cycle" if parent_name in seen else f"not a shipped protocol ({', '.join(shipped())})"
            raise ProtocolError(f"protocol {where}: extends {parent_name!r}, {why}")
        seen.add(parent_name)
        parent = _read(PROTOCOL_DIR / f"{parent_name}.toml")
        data = {**parent, **data, **({"extends": parent["extends"]} if "extends" in parent else {})}
    _validate(data, where)
    p = Protocol(name=data["name"], data=data, source=str(path) if path.parent != PROTOCOL_DIR else path.name)
    _check_entries(p, where)
    _check_dataset_options(data["dataset"], where)
    return p


DATASET_KEYS = ("name", "root", "split", "n", "seed")  # [dataset]'s own keys (and the command line's), not options


def _check_dataset_options(ds: dict, where: str) -> None:
    """``[dataset.options]`` names only keyword options the dataset's loader takes (what
    :func:`robustlab.datasets.registry.build` passes it), none of ``[dataset]``'s own keys, and no number that is
    not finite; the loader checks the values themselves when the sweep builds the dataset."""
    options = ds.get("options") or {}
    if not options:
        return
    own = [k for k in options if k in DATASET_KEYS]
    if own:
        raise ProtocolError(f"protocol {where}: dataset.options.{own[0]}: {own[0]} is a key of [dataset] itself, "
                            "not a loader option")
    try:
        takes = dataset_registry.options(ds["name"])  # None: the loader passes any keyword on
    except ValueError as e:  # DatasetError: an unknown dataset, one line naming the known ones
        raise ProtocolError(f"protocol {where}: dataset: {e}") from None
    unknown = sorted(k for k in options if takes is not None and k not in takes)
    if unknown:
        raise ProtocolError(f"protocol {where}: dataset.options: {ds['name']} takes no option "
                            f"{', '.join(unknown)} (its options: {', '.join(sorted(takes)) or 'none'})")
    for k, v in options.items():  # TOML reads inf and nan: one line here, not a loader's surprise
        try:
            check_finite(f"dataset.options.{k}", v)
        except ValueError as e:
            raise ProtocolError(f"protocol {where}: {e}") from None


def _check_entries(p: Protocol, where: str) -> None:
    """Every named perturbation exists (with its variant), is of its axis and runs at severities it has."""
    comb = p.data.get("combine") or {}
    named = [(a, g, s) for a in AXES for g in p.data.get(a) or [] for s in g["perturbations"]]
    named += [("visual", {}, s) for s in comb.get("visual", [])] + [("text", {}, s) for s in comb.get("text", [])]
    for axis, _, s in named:
        try:
            spec = get_perturbation(s)
        except ValueError as e:
            raise ProtocolError(f"protocol {where}: {axis} perturbation {s!r}: {e}") from None
        if (axis == "text") != (spec.modality == "text"):
            raise ProtocolError(f"protocol {where}: {s!r} is a {spec.modality} perturbation, listed under {axis}")
    for axis in AXES:
        specs = [s for g in p.data.get(axis) or [] for s in g["perturbations"]]
        dup = sorted({s for s in specs if specs.count(s) > 1})
        if dup:
            raise ProtocolError(f"protocol {where}: {axis} perturbation {dup[0]!r} is listed twice")


def _excluded(data: dict) -> set:
    tags = set(data.get("exclude_tags") or [])
    if not tags:
        return set()
    names = [s for a in AXES for g in data.get(a) or [] for s in g["perturbations"]]
    comb = data.get("combine") or {}
    names += list(comb.get("visual", [])) + list(comb.get("text", []))
    return {s for s in names if tags & set(get_perturbation(s).tags)}


def _entry(axis: str, s: str, group: dict) -> Entry:
    name, variant = split_variant(s)
    spec = get_perturbation(name)
    sev = tuple(int(v) for v in group.get("severities") or (1, 2, 3, 4, 5))
    return Entry(axis=axis, name=name, variant=variant, category=group.get("category", spec.category),
                 type=group.get("type"), level=group.get("level"), severities=sev, available=spec.available,
                 reason=spec.reason)


def _entries(data: dict) -> list[Entry]:
    excluded = _excluded(data)
    return [_entry(axis, s, g) for axis in AXES for g in data.get(axis) or [] for s in g["perturbations"]
            if s not in excluded]


def _wanted(e: Entry, keep: set) -> bool:
    return e.spec in keep or (e.variant is None and e.name in keep)


def _sev(text) -> Optional[list[int]]:
    if text is None or str(text).strip() == "":
        return None
    return parse_severities(text)


def _chosen(perturbations, text_perturbations, kind: str) -> Optional[dict]:
    """``--perturbations`` / ``--text-perturbations`` given with a protocol, parsed once: ``{axis: [name/variant]
    or None (that axis as the protocol has it)}``; None when neither is given."""
    if perturbations is None and text_perturbations is None:
        return None
    return {axis: None if text is None else parse_perturbations(text, kind if axis == "visual" else "text")
            for axis, text in (("visual", perturbations), ("text", text_perturbations))}


def native_kind(p: Protocol) -> str:
    """The kind of data ("image" / "video") the protocol's own dataset holds."""
    try:
        return dataset_registry.get_entry(p.dataset["name"])["kind"]
    except KeyError:
        return "other"


def _freeze(c: dict):
    return tuple(sorted(c.items(), key=lambda kv: kv[0]))


# ---------------------------------------------------------------------------------------------- describing
def _short(v, width: int = 40):
    if isinstance(v, str) and len(v) > width:
        return v[:width - 1] + "…"
    if isinstance(v, dict):
        return {k: _short(x, width) for k, x in v.items()}
    return v


def condition_rows(spec: SweepSpec, protocol: Optional[Protocol] = None) -> list[dict]:
    """One row per condition set of ``spec``: each axis's perturbation (``name/variant``), severity, the protocol's
    category and type for it, and the resolved parameters — what ``bench --dry-run`` prints and the Benchmark page
    shows before a run."""
    by_spec = {(e.axis, e.spec): e for e in (protocol.entries() if protocol else [])}
    rows = []
    for i, conds in enumerate(spec.conditions, 1):
        parts = []
        for axis, c in sorted(conds.items(), key=lambda ac: (AXES.index(ac[0]) if ac[0] in AXES else 9, ac[0])):
            if c.clean:
                continue
            if axis in AXES and c.mix is not None:  # a mixed setting: its mix, drawn per item at run time
                parts.append({"axis": axis, "perturbation": c.label(), "category": "mixed",
                              "params": c.mix.to_dict()})
            elif axis in AXES:
                e = by_spec.get((axis, c.name + (f"/{c.variant}" if c.variant else ""))) or by_spec.get((axis, c.name))
                sp = get_perturbation(c.name)
                same = same_as(c.name, c.variant, int(c.severity))
                parts.append({"axis": axis, "perturbation": c.name + (f"/{c.variant}" if c.variant else ""),
                              "variant": c.variant or sp.default_variant, "severity": int(c.severity),
                              "category": e.category if e else sp.category, "type": e.type if e else None,
                              "params": sp.params(int(c.severity), c.variant),
                              "same_as": same[0] if same else None})
            else:
                parts.append({"axis": axis, "perturbation": c.label(), "params": dict(c.to_dict())})
        rows.append({"index": i, "parts": parts})
    return rows


def dry_run_lines(spec: SweepSpec, protocol: Optional[Protocol] = None) -> list[str]:
    """The text of ``robustlab bench --dry-run``: the sweep, what cannot run here, then every condition set with its
    resolved parameters (each runs for every model × task)."""
    n_cells = len(spec.conditions) * len(spec.models) * len(spec.tasks)
    out = []
    if protocol is not None:
        out.append(f"protocol {protocol.name}: {protocol.title}")
        out.append(f"  paper: {protocol.paper}")
        if protocol.dataset.get("paper"):
            out.append(f"  the paper's data: {protocol.dataset['paper']}")
        rep = protocol.report
        if rep.get("headline"):
            out.append(f"  headline metric: {rep['headline']}; layout: {protocol.layout}")
    d = spec.dataset
    out.append(f"dataset {d['name']} split {d['split']}" + (f" root {d['root']}" if d.get("root") else "")
               + (f" n={d['n']}" if d.get("n") else "")
               + (" options " + ", ".join(f"{k}={json.dumps(v)}" for k, v in d["options"].items())
                  if d.get("options") else ""))
    out.append(f"models: {', '.join(spec.models)}; tasks: {', '.join(spec.tasks)}"
               + (f"; directions: {', '.join(spec.directions)}" if spec.directions else ""))
    out.append(f"{len(spec.conditions)} condition sets × {len(spec.models)} model(s) × {len(spec.tasks)} task(s) "
               f"= {n_cells} cells")
    nr = (spec.protocol or {}).get("not_run") or []
    if nr:
        out.append(f"not run here ({len(nr)}; the report lists them):")
        out += [f"  {x['perturbation']} ({x['axis']}, {x['category']}): {x['reason']}" for x in nr]
    out.append("condition sets (each for every model and task):")
    for r in condition_rows(spec, protocol):
        if not r["parts"]:
            out.append(f"  [{r['index']}] clean")
            continue
        txt = " + ".join(
            f"{p['axis']} {p['perturbation']}"
            + (f" s{p['severity']} [{p['category']}{'/' + p['type'] if p.get('type') else ''}]" if "severity" in p
               else "")
            + f" {json.dumps(_short(p['params']), ensure_ascii=False, separators=(',', ':'))}"
            + (f" (identical output to s{p['same_as']})" if p.get("same_as") else "")
            for p in r["parts"])
        out.append(f"  [{r['index']}] {txt}")
    return out
