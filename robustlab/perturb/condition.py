"""A perturbation setting (:class:`Condition`) and the one loop that applies it to many items (:func:`perturb_many`).

Every task, bench, diagnostic and sweep perturbs through :func:`perturb_many`: item ``i`` of a list gets seed
``condition.seed + i`` (so any single example can be regenerated from its record alone), and a perturbation that
does not apply to the items' kind is refused with one line naming what it applies to.

Mixed conditions (MLVP, Zhang et al. App. D.2). A condition may carry a :class:`Mix`:

* ``Mix(severities=(1, 2, 3, 4, 5))`` -- Table 17: one perturbation for the whole list, each item's severity drawn
  uniformly from ``severities``;
* ``Mix(fraction=0.4, types=(...), tag="mlvp")`` -- Table 18: exactly ``round(fraction * N)`` (half up) of the N
  items are corrupted, each by a type drawn uniformly from ``types`` (``name`` or ``name/variant``), at the
  condition's severity or, with ``severities`` as well, a drawn one; the others stay clean.

Item ``j`` (its index in the whole list) draws from ``np.random.default_rng([MIX_SALT, seed + j])``, in this order:
a selection key ``u`` (uniform), the type (when ``types``), the severity (when ``severities``). The corrupted items
are the ``round(fraction * N)`` with the smallest ``(u, j)``. The item is then perturbed exactly as a plain
condition would perturb it -- ``perturb(x, type, severity, seed + j, variant)`` -- so item j of ``shot_noise`` with
mixed severities, drawn severity 4, equals item j of ``shot_noise`` at severity 4. Its record is that perturbation's
record (a clean item: the drawn type's severity-0 pass-through record) plus ``record["mix"]`` (the mix's label, the
index, N, whether the item was corrupted), so each item regenerates bit for bit from its record alone, and
:func:`mix_plan` re-derives every item's draw from the condition and N.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from robustlab.perturb.registry import get_perturbation, list_perturbations, perturb, split_variant

ProgressFn = Optional[Callable[[int, int], None]]
MIX_SALT = 0x6D6978  # "mix": the per-item mix draws never share a stream with the perturbation's own seed
RANDOM_TYPES = "random-types"  # the name of a condition whose items draw their perturbation from a pool


def _severity_label(sevs: Sequence[int]) -> str:
    s = sorted(set(int(v) for v in sevs))
    return f"s{s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else "s" + ",".join(map(str, s))


@dataclass(frozen=True)
class Mix:
    """How a :class:`Condition` varies over the items of a list (see the module docstring). ``severities``: drawn
    per item (empty: the condition's severity); ``fraction``: the share of items corrupted (None: all);
    ``types``: the pool a corrupted item's perturbation is drawn from (empty: the condition's own); ``tag``: the
    protocol the mix belongs to, for labels (``"mlvp"``)."""

    severities: tuple = ()
    fraction: Optional[float] = None
    types: tuple = ()
    tag: str = ""

    def __post_init__(self):
        object.__setattr__(self, "severities", tuple(int(s) for s in self.severities))
        object.__setattr__(self, "types", tuple(str(t) for t in self.types))
        if self.fraction is not None:
            object.__setattr__(self, "fraction", float(self.fraction))
        bad = [s for s in self.severities if not 1 <= s <= 5]
        if bad:
            raise ValueError(f"mixed severities must be in 1..5, got {bad[0]}")
        if self.fraction is not None and not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"the fraction of items corrupted must be in 0..1, got {self.fraction}")
        if not self.severities and self.fraction is None and not self.types:
            raise ValueError("a mix needs severities, a fraction or types")

    def n_corrupted(self, n: int) -> int:
        """``round(fraction * n)``, half up (``n`` when every item is corrupted)."""
        return int(n) if self.fraction is None else int(np.floor(self.fraction * int(n) + 0.5))

    def key(self) -> tuple:
        return (self.severities, self.fraction, self.types, self.tag)

    def slug(self) -> str:
        """A short file-name-safe name of the mix (sweep cell keys): ``mixed-s1-5``, ``p40``, ``p40-mixed-s1-5``."""
        parts = [] if self.fraction is None else [f"p{round(100 * self.fraction, 2):g}"]
        return "-".join(parts + ([f"mixed-{_severity_label(self.severities)}"] if self.severities else [])) or "mix"

    def to_dict(self) -> dict:
        d: dict = {}
        if self.severities:
            d["severities"] = list(self.severities)
        if self.fraction is not None:
            d["fraction"] = self.fraction
        if self.types:
            d["types"] = list(self.types)
        if self.tag:
            d["tag"] = self.tag
        return d

    @classmethod
    def from_dict(cls, d) -> Optional["Mix"]:
        if not d:
            return None
        if isinstance(d, Mix):
            return d
        return cls(tuple(d.get("severities") or ()), d.get("fraction"), tuple(d.get("types") or ()),
                   str(d.get("tag") or ""))


@dataclass(frozen=True)
class Condition:
    """A perturbation of one modality: ``name`` at ``severity`` (1–5) with base ``seed`` and an optional named
    ``variant``. ``name=None`` or ``severity=0`` is clean. ``mix`` (optional): a :class:`Mix` -- severities,
    the share of items corrupted and the types drawn per item; ``severity`` then holds the highest one drawn."""

    name: Optional[str] = None
    severity: int = 0
    seed: int = 0
    variant: Optional[str] = None
    mix: Optional[Mix] = None

    def __post_init__(self):  # "shot_noise/schiappa_video" is name + variant, as everywhere else
        if isinstance(self.name, str) and "/" in self.name:
            name, variant = split_variant(self.name, self.variant)
            object.__setattr__(self, "name", name)
            object.__setattr__(self, "variant", variant)

    @property
    def clean(self) -> bool:
        return not self.name or int(self.severity) == 0

    def key(self):
        """Hashable identity (None when clean): memo keys of benches and caches."""
        if self.clean:
            return None
        k = (self.name, int(self.severity), int(self.seed)) + ((self.variant,) if self.variant else ())
        return k + (("mix",) + self.mix.key() if self.mix else ())

    def label(self) -> str:
        if self.clean:
            return "clean"
        if self.mix is None:
            return f"{self.name}{'/' + self.variant if self.variant else ''} s{self.severity}"
        m = self.mix
        tag = f"{m.tag}:" if m.tag else ""
        sev = _severity_label(m.severities) if m.severities else f"s{self.severity}"
        if m.types:
            pct = "" if m.fraction is None else f" {round(100 * m.fraction, 2):g}%"
            return f"{tag}random-types{pct} {sev}"
        what = f"{self.name}{'/' + self.variant if self.variant else ''}"
        if m.fraction is not None:
            return f"{tag}{what} {sev} on {round(100 * m.fraction, 2):g}%" + (" (mixed)" if m.severities else "")
        return f"{tag}mixed-severity {what} {sev}"

    def to_dict(self) -> dict:
        """Plain JSON (``{"name": None}`` when clean); ``mix`` only when there is one (older JSON reads back)."""
        if self.clean:
            return {"name": None}
        d = {"name": self.name, "severity": int(self.severity), "seed": int(self.seed)}
        if self.variant is not None:
            d["variant"] = self.variant
        if self.mix is not None:
            d["mix"] = self.mix.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict | None) -> "Condition":
        d = dict(d or {})
        if not d.get("name"):
            return cls()
        return cls(d["name"], int(d.get("severity", 0)), int(d.get("seed", 0)), d.get("variant"),
                   Mix.from_dict(d.get("mix")))

    @classmethod
    def parse(cls, text: str | None, seed: int = 0) -> "Condition":
        """``"gaussian_noise:3"`` / ``"gaussian_noise/variant:3"`` / ``"clean"`` / None -> Condition."""
        if not text or text == "clean":
            return cls()
        name, _, sev = str(text).partition(":")
        name, _, variant = name.partition("/")
        try:
            severity = int(sev) if sev else 3
        except ValueError:
            raise ValueError(f"severity in {text!r} must be a number 1..5") from None
        return cls(name.strip(), severity, int(seed), variant.strip() or None)


def mixed_severities(name: str, severities: Sequence[int] = (1, 2, 3, 4, 5), seed: int = 0,
                     variant: Optional[str] = None, tag: str = "mlvp") -> Condition:
    """MLVP Table 17: ``name`` with each item's severity drawn from ``severities``."""
    sevs = tuple(sorted(set(int(s) for s in severities)))
    return Condition(name, max(sevs) if sevs else 0, int(seed), variant, Mix(severities=sevs, tag=tag))


def random_types(fraction: float, types: Sequence[str], severity: int = 3, seed: int = 0,
                 severities: Sequence[int] = (), tag: str = "mlvp") -> Condition:
    """MLVP Table 18: ``round(fraction * N)`` items corrupted, each by a type drawn from ``types`` at ``severity``
    (or a severity drawn from ``severities``)."""
    if not types:
        raise ValueError("random types need at least one perturbation to draw from")
    sevs = tuple(sorted(set(int(s) for s in severities)))
    return Condition(RANDOM_TYPES, max(sevs) if sevs else int(severity), int(seed), None,
                     Mix(severities=sevs, fraction=float(fraction), types=tuple(types), tag=tag))


def mix_pool(tag: str, kind: str) -> list[str]:
    """The available perturbations tagged ``tag`` that apply to ``kind``, as ``name`` or ``name/tag`` where the
    perturbation has a variant named after the tag (``ocr/mlvp``), in registry order: the pool of random types."""
    out = []
    for s in list_perturbations(kind):
        if tag in s.tags and s.available and kind in s.applies_to:
            out.append(f"{s.name}/{tag}" if tag in s.variants and s.default_variant != tag else s.name)
    if not out:
        raise ValueError(f"no available {kind} perturbation is tagged {tag!r}")
    return out


def _split_type(t: str) -> tuple[str, Optional[str]]:
    name, _, variant = str(t).partition("/")
    return name.strip(), (variant.strip() or None)


def _check_one(name: str, variant: Optional[str], severity: int, kind: str) -> None:
    try:
        spec = get_perturbation(name)
    except KeyError as e:
        raise ValueError(str(e).strip("'\"")) from e
    if not 0 <= int(severity) <= 5:
        raise ValueError(f"severity must be 0..5, got {severity}")
    if not spec.available:
        raise ValueError(f"perturbation {name!r} is unavailable here: {spec.reason}")
    if kind not in spec.applies_to:
        what = " or ".join(spec.applies_to) or spec.modality
        raise ValueError(f"{name!r} is a {spec.modality} perturbation (applies to {what}), not to {kind}s")
    if variant is not None and variant not in spec.variants:
        raise ValueError(f"unknown variant {variant!r} for {name!r}; valid: {', '.join(spec.variants)}")


def check(cond: Condition, kind: str) -> None:
    """ValueError (one line) unless ``cond`` is clean or names an available perturbation of 1..5 that applies to
    ``kind`` ("image", "video" or "text"); a mix's every type is checked."""
    if cond.clean:
        return
    if cond.mix is not None and cond.mix.types:
        for t in cond.mix.types:
            _check_one(*_split_type(t), int(cond.severity), kind)
        return
    _check_one(cond.name, cond.variant if cond.mix is not None else None, int(cond.severity), kind)


def mix_plan(cond: Condition, total: int) -> list[dict]:
    """Every item's draw under a mixed condition: ``{"name", "variant", "severity" (0 = left clean), "seed"}`` for
    items ``0..total-1`` (see the module docstring)."""
    m = cond.mix
    if m is None:
        raise ValueError(f"condition {cond.label()!r} has no mix")
    total = int(total)
    draws = []
    for j in range(total):
        g = np.random.default_rng([MIX_SALT, int(cond.seed) + j])
        u = float(g.random())
        name, variant = (_split_type(m.types[int(g.integers(len(m.types)))]) if m.types
                         else (cond.name, cond.variant))
        sev = int(m.severities[int(g.integers(len(m.severities)))]) if m.severities else int(cond.severity)
        draws.append({"u": u, "name": name, "variant": variant, "severity": sev, "seed": int(cond.seed) + j})
    k = m.n_corrupted(total)
    chosen = set(sorted(range(total), key=lambda j: (draws[j]["u"], j))[:k])
    return [{"name": d["name"], "variant": d["variant"], "severity": d["severity"] if j in chosen else 0,
             "seed": d["seed"]} for j, d in enumerate(draws)]


def dropped_reason(record: Optional[dict]) -> Optional[str]:
    """Why a perturbed item was dropped from the perturbed set (the MLVP similarity gate found no attempt that
    passes, ``gate_on_failure`` "drop"), or None when it was kept."""
    gate = ((record or {}).get("details") or {}).get("gate") or {}
    return str(gate.get("reason") or "dropped") if gate.get("dropped") else None


# a caller's per-item side information: ``context(index, name, params) -> params or None`` gives item ``index``'s
# parameters for perturbation ``name`` whose table's are ``params`` (None: the table's as they are); e.g.
# :class:`robustlab.perturb.video.mlvp.ItemContext` (MLVP's main-object boxes and event donors)
ItemParams = Optional[Callable[[int, str, dict], Optional[dict]]]


def item_params(context: ItemParams, index: int, p: dict) -> Optional[dict]:
    """Item ``index``'s parameters under ``context`` for its draw ``p`` (:func:`item_plan`), or None: the table's."""
    if context is None or not p["name"] or int(p["severity"]) == 0:
        return None
    applies = getattr(context, "applies", None)
    if applies is not None and not applies(p["name"]):
        return None
    return context(int(index), p["name"], get_perturbation(p["name"]).params(int(p["severity"]), p["variant"]))


def perturb_many(items: Sequence, cond: Condition, kind: str, progress: ProgressFn = None,
                 offset: int = 0, total: Optional[int] = None,
                 context: ItemParams = None) -> tuple[list, Optional[list[dict]]]:
    """(outputs, records) of every item under ``cond``; item ``i`` gets seed ``cond.seed + offset + i``.

    Clean: the items themselves and ``None`` records. ``kind`` ("image", "video", "text") is checked against what
    the perturbation applies to. ``progress(done, total)`` after each item. ``total`` (a mixed condition with a
    fraction: how many items the whole list has, when ``items`` is a slice of it starting at ``offset``; default
    ``offset + len(items)``) decides which items are corrupted."""
    items = list(items)
    if cond.clean:
        return items, None
    check(cond, kind)
    if total is None and offset and cond.mix is not None and cond.mix.fraction is not None:
        raise ValueError(f"{cond.label()!r} corrupts a fraction of the whole list: perturbing items from index "
                         f"{offset} on needs the list's size (total=N)")
    plan = item_plan(cond, total if total is not None else offset + len(items))
    outs, recs = [], []
    for i, x in enumerate(items):
        p = plan[offset + i]
        r = perturb(x, p["name"], p["severity"], seed=p["seed"], variant=p["variant"],
                    params=item_params(context, offset + i, p))
        outs.append(r.output)
        recs.append(mix_record(r.record, cond, offset + i, len(plan)))
        if progress:
            progress(i + 1, len(items))
    return outs, recs


def item_plan(cond: Condition, total: int) -> list[dict]:
    """What item ``j`` of ``total`` runs under a perturbed condition: ``{"name", "variant", "severity", "seed"}``
    (plain: the condition itself with seed ``seed + j``; mixed: :func:`mix_plan`)."""
    if cond.mix is not None:
        return mix_plan(cond, total)
    return [{"name": cond.name, "variant": cond.variant, "severity": int(cond.severity), "seed": int(cond.seed) + j}
            for j in range(int(total))]


def mix_record(record: dict, cond: Condition, index: int, total: int) -> dict:
    """``record`` with ``mix`` (the mix's label, the item's index, N, whether it was corrupted) under a mixed
    condition; unchanged otherwise."""
    if cond.mix is None:
        return record
    return dict(record, mix={"label": cond.label(), "index": int(index), "of": int(total),
                             "corrupted": int(record.get("severity", 0)) > 0})


__all__ = ["Condition", "Mix", "ItemParams", "check", "dropped_reason", "item_params", "item_plan", "mix_plan",
           "mix_pool", "mix_record", "mixed_severities", "perturb_many", "random_types", "RANDOM_TYPES"]
