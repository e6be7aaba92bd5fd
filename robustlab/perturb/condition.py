"""A perturbation setting (:class:`Condition`) and the one loop that applies it to many items (:func:`perturb_many`).

Every task, bench, diagnostic and sweep perturbs through :func:`perturb_many`: item ``i`` of a list gets seed
``condition.seed + i`` (so any single example can be regenerated from its record alone), and a perturbation that
does not apply to the items' kind is refused with one line naming what it applies to.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Optional, Sequence

from robustlab.perturb.registry import get_perturbation, perturb, split_variant

ProgressFn = Optional[Callable[[int, int], None]]


@dataclass(frozen=True)
class Condition:
    """A perturbation of one modality: ``name`` at ``severity`` (1–5) with base ``seed`` and an optional named
    ``variant``. ``name=None`` or ``severity=0`` is clean."""

    name: Optional[str] = None
    severity: int = 0
    seed: int = 0
    variant: Optional[str] = None

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
        return (self.name, int(self.severity), int(self.seed)) + ((self.variant,) if self.variant else ())

    def label(self) -> str:
        if self.clean:
            return "clean"
        return f"{self.name}{'/' + self.variant if self.variant else ''} s{self.severity}"

    def to_dict(self) -> dict:
        """Plain JSON (``{"name": None}`` when clean)."""
        if self.clean:
            return {"name": None}
        d = asdict(self)
        if d["variant"] is None:
            d.pop("variant")
        return d

    @classmethod
    def from_dict(cls, d: dict | None) -> "Condition":
        d = dict(d or {})
        if not d.get("name"):
            return cls()
        return cls(d["name"], int(d.get("severity", 0)), int(d.get("seed", 0)), d.get("variant"))

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


def check(cond: Condition, kind: str) -> None:
    """ValueError (one line) unless ``cond`` is clean or names an available perturbation of 1..5 that applies to
    ``kind`` ("image", "video" or "text")."""
    if cond.clean:
        return
    try:
        spec = get_perturbation(cond.name)
    except KeyError as e:
        raise ValueError(str(e).strip("'\"")) from e
    if not 0 <= int(cond.severity) <= 5:
        raise ValueError(f"severity must be 0..5, got {cond.severity}")
    if not spec.available:
        raise ValueError(f"perturbation {cond.name!r} is unavailable here: {spec.reason}")
    if kind not in spec.applies_to:
        what = " or ".join(spec.applies_to) or spec.modality
        raise ValueError(f"{cond.name!r} is a {spec.modality} perturbation (applies to {what}), not to {kind}s")


def perturb_many(items: Sequence, cond: Condition, kind: str, progress: ProgressFn = None,
                 offset: int = 0) -> tuple[list, Optional[list[dict]]]:
    """(outputs, records) of every item under ``cond``; item ``i`` gets seed ``cond.seed + offset + i``.

    Clean: the items themselves and ``None`` records. ``kind`` ("image", "video", "text") is checked against what
    the perturbation applies to. ``progress(done, total)`` after each item."""
    items = list(items)
    if cond.clean:
        return items, None
    check(cond, kind)
    outs, recs = [], []
    for i, x in enumerate(items):
        r = perturb(x, cond.name, int(cond.severity), seed=int(cond.seed) + offset + i, variant=cond.variant)
        outs.append(r.output)
        recs.append(r.record)
        if progress:
            progress(i + 1, len(items))
    return outs, recs


__all__ = ["Condition", "check", "perturb_many"]
