"""The sweep grid's mixed conditions (MLVP, Zhang et al. App. D.2): ``robustlab bench --mix-severities`` (Table 17)
and ``--corrupt-fraction`` (Table 18), built on :class:`robustlab.perturb.condition.Mix`.

* ``--mix-severities``: for every swept perturbation (visual and text), one more condition whose items each draw
  their severity from the swept severities (``--severities`` / ``--text-severities``): one type per batch, severities
  mixed within it;
* ``--corrupt-fraction 0.2,0.4,0.6,0.8``: per fraction and per swept axis, exactly round(p·N) items corrupted, each
  by a type drawn from that axis's swept perturbations (``--perturbations tag:mlvp``: MLVP's types) -- at every
  swept severity, or, with ``--mix-severities`` too, at a severity drawn per item.

Each is a single-axis shift like the others: ``--adapt`` adds its adaptation cells (HAT-VTR Tables 17-18).
"""
from __future__ import annotations

import re
from typing import Sequence

from robustlab.perturb.condition import Condition, mixed_severities, random_types

MIX_TAG = "mlvp"  # the protocol the mixed settings come from, in their labels (mlvp:random-types 40% s3)


class MixError(ValueError):
    """A mix option that cannot be used as given (one line)."""


def parse_fractions(text) -> list[float]:
    """``"0.2,0.4,0.6,0.8"``, ``"20%,40%"`` or a list -> sorted distinct fractions in (0, 1]."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return []
    parts = list(text) if isinstance(text, (list, tuple)) else str(text).replace(" ", "").split(",")
    out = []
    for p in parts:
        s = str(p).strip()
        if not s:
            continue
        m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)(%?)", s)
        if not m:
            raise MixError(f"a corrupted fraction must look like 0.4 or 40%, got {s!r}")
        v = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
        if not 0.0 < v <= 1.0:
            raise MixError(f"a corrupted fraction must be in (0, 1] (or 1%..100%), got {s!r}")
        out.append(round(v, 6))
    if not out:
        raise MixError(f"no fraction in {text!r}")
    return sorted(set(out))


def _name_variant(p: str) -> tuple[str, str | None]:
    name, _, variant = str(p).partition("/")
    return name, variant or None


def mixed_conditions(visual: Sequence[str], visual_severities: Sequence[int], text: Sequence[str],
                     text_severities: Sequence[int], *, mix_severities: bool = False,
                     fractions: Sequence[float] = (), seed: int = 0, tag: str = MIX_TAG) -> list[tuple[str, Condition]]:
    """``(axis, Condition)`` of every mixed setting asked for (see the module docstring), visual first."""
    if not (mix_severities or fractions):
        return []
    if not visual and not text:
        raise MixError("mixed severities and corrupted fractions mix the swept perturbations: choose visual or "
                       "text perturbations (--perturbations, --text-perturbations)")
    out: list[tuple[str, Condition]] = []
    for axis, names, sevs in (("visual", list(visual), list(visual_severities)),
                              ("text", list(text), list(text_severities))):
        if not names:
            continue
        if mix_severities:
            out += [(axis, mixed_severities(n, sevs, seed, v, tag)) for n, v in map(_name_variant, names)]
        for f in fractions:
            if mix_severities:
                out.append((axis, random_types(f, names, seed=seed, severities=sevs, tag=tag)))
            else:
                out += [(axis, random_types(f, names, severity=s, seed=seed, tag=tag)) for s in sevs]
    return out
