"""PEELING's candidates: the reduced expressions an extraction yields (the object alone, the object with one
property, ...) and the determiner the expression opens with. Part of :mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

import sys
import types
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from robustlab.diagnostics.peeling.extraction import Extraction


@dataclass(frozen=True)
class Candidate:
    """A reduced expression: ``text`` (the bare phrase X the VQA questions use) and the properties it keeps."""

    text: str
    properties: tuple[str, ...] = ()
    strategy: str = "object"  # "object" (strategy 1) | "object+property" | "object+properties" (strategy 2)


def _locate(expression: str, phrase: str, word: bool = False) -> int:
    low, p = expression.lower(), phrase.strip().lower()
    if not p:
        return len(expression)
    if word:
        m = re.search(r"(?<![a-z0-9])" + re.escape(p) + r"(?![a-z0-9])", low)
        if m:
            return m.start()
    k = low.find(p)
    if k < 0 and p.split():
        k = low.find(p.split()[0])
    return k if k >= 0 else len(expression)


def _positions(ex: Extraction, expression: str) -> tuple[int, list[int]]:
    if ex.object_span is not None and ex.property_spans is not None and len(ex.property_spans) == len(ex.properties):
        return ex.object_span[0], [s[0] for s in ex.property_spans]
    return _locate(expression, ex.object, word=True), [_locate(expression, p) for p in ex.properties]


def _join(parts: Iterable[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(p.strip() for p in parts if p.strip())).strip()


def candidates(extraction: Extraction, expression: str, wide: bool = False) -> list[Candidate]:
    """Reduced expressions: the object alone (strategy 1), then the object with one property (strategy 2), each
    ordered as in the original sentence ("bird stands behind two brown birds", not "stands behind ... bird");
    ``wide=True`` adds the object with any larger proper subset of the properties (the paper's wording), smallest
    first. The object with *all* its properties is never a candidate (it is not a reduction)."""
    if extraction.empty:
        return []
    props = [p.strip() for p in extraction.properties if p.strip()]
    opos, ppos = _positions(extraction, expression)
    ppos = ppos[:len(props)]
    out = [Candidate(extraction.object.strip(), (), "object")]
    top = len(props) - 1 if wide else min(1, len(props) - 1)
    for k in range(1, top + 1):
        for subset in combinations(range(len(props)), k):
            parts = sorted([(opos, -1, extraction.object)] + [(ppos[j], j, props[j]) for j in subset])
            out.append(Candidate(_join(p for _, _, p in parts), tuple(props[j] for j in subset),
                                 "object+property" if k == 1 else "object+properties"))
    seen, uniq = set(), []
    full = _join(p for _, _, p in sorted([(opos, -1, extraction.object)]
                                         + [(ppos[j], j, props[j]) for j in range(len(props))]))
    for c in out:
        key = c.text.lower()
        if key in seen or (props and key == full.lower()):
            continue
        seen.add(key)
        uniq.append(c)
    return uniq


def determiner(expression: str) -> str:
    """The determiner that opens the expression ("the", "a", "an"), or "" (for ``keep_article``)."""
    m = re.match(r"\s*(the|a|an)\s", expression, re.IGNORECASE)
    return m.group(1) if m else ""


class _CallableModule(types.ModuleType):
    """Calling this module calls :func:`candidates`: its package exposes the module under that name, so that both
    ``peeling.candidates(extraction, text)`` and ``import robustlab.diagnostics.peeling.candidates as C`` work
    (issue 46)."""

    def __call__(self, *args, **kwargs):
        return candidates(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
