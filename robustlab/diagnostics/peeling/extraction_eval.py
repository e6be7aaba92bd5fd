"""Scoring PEELING's object / property extraction against labelled expressions: precision, recall and F1 over objects,
over properties and over both (the paper's RQ4, Table V: PEELING 96.0 / 96.0 / 96.0 on objects, 95.7 / 94.0 / 94.8 on
properties, 95.9 / 95.0 / 95.4 overall). Part of :mod:`robustlab.diagnostics.peeling`.

Counting (micro-averaged over the labelled expressions):

* **objects**: one labelled object per expression; a predicted (non-empty) object is a true positive when it equals
  the label. Precision = TP / predicted objects, recall = TP / labelled objects.
* **properties**: each predicted property is matched to at most one labelled property of the same expression (in
  order, one to one). Precision = TP / predicted properties, recall = TP / labelled properties.
* **overall**: objects and properties counted together.
* F1 = 2PR / (P + R) (0 when P + R = 0); a ratio with a zero denominator is None.

Equality is after normalisation (lower case, spaces collapsed, punctuation at the ends and a leading "a" / "an" /
"the" dropped). ``match="overlap"`` also counts a property whose words are a contiguous run of the label's words (or
the reverse): "hat" for "in a hat".

Labels come from :data:`GOLD` (shipped) or a user's file (:func:`read_labels`: JSON or CSV, see its docstring); a
file may carry its own predictions (``pred_object`` / ``pred_properties``, e.g. an LLM's answers), which are then
scored instead of running an extractor."""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from robustlab.diagnostics.peeling.extraction import Extraction, SpacyExtractor
from robustlab.diagnostics.peeling.gold import GOLD, GOLD_NAME
from robustlab.io.files import MAX_CAPTION_CHARS, InputError, read_file_capped

MATCHES = ("exact", "overlap")
MAX_ROWS = 10_000
PROPERTY_SEPARATORS = ("|", ";")  # CSV: properties in one cell, separated by "|" (or ";")
_ARTICLE = re.compile(r"^(?:a|an|the)\s+")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


@dataclass(frozen=True)
class Labelled:
    """One labelled expression: its object and properties, and optionally someone's predictions for it."""

    expression: str
    object: str
    properties: tuple[str, ...] = ()
    pred_object: str | None = None
    pred_properties: tuple[str, ...] | None = None

    @property
    def has_prediction(self) -> bool:
        return self.pred_object is not None


def normalize(text: str) -> str:
    """Lower case, spaces collapsed, punctuation at the ends and a leading article dropped."""
    t = " ".join(str(text).lower().split())
    t = _EDGE.sub("", t)
    return _EDGE.sub("", _ARTICLE.sub("", t))


def _words_within(a: str, b: str) -> bool:
    wa, wb = a.split(), b.split()
    return bool(wa) and any(wb[k:k + len(wa)] == wa for k in range(len(wb) - len(wa) + 1))


def same(pred: str, gold: str, match: str = "exact") -> bool:
    p, g = normalize(pred), normalize(gold)
    if not p or not g:
        return False
    if p == g:
        return True
    return match == "overlap" and (_words_within(p, g) or _words_within(g, p))


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 6) if b else None


@dataclass
class PRF:
    """True positives, predictions and labels, and the precision, recall and F1 they give."""

    tp: int = 0
    predicted: int = 0
    gold: int = 0

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.predicted)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.gold)

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return round(2 * p * r / (p + r), 6) if p + r > 0 else 0.0

    def __add__(self, other: PRF) -> PRF:
        return PRF(self.tp + other.tp, self.predicted + other.predicted, self.gold + other.gold)

    def to_dict(self) -> dict:
        return {"tp": self.tp, "predicted": self.predicted, "gold": self.gold, "precision": self.precision,
                "recall": self.recall, "f1": self.f1}


@dataclass
class ExtractionScore:
    """Objects, properties and overall P / R / F1, and one row per expression (what was predicted, what matched)."""

    objects: PRF
    properties: PRF
    labels: str
    extractor: str
    match: str
    rows: list[dict] = field(default_factory=list)

    @property
    def overall(self) -> PRF:
        return self.objects + self.properties

    @property
    def n(self) -> int:
        return len(self.rows)

    def table(self) -> list[dict]:
        """Three rows (objects, properties, overall) with P / R / F1 in percent, as the paper's Table V."""
        out = []
        for name, s in (("object", self.objects), ("property", self.properties), ("overall", self.overall)):
            pct = {k: None if v is None else round(100 * v, 1)
                   for k, v in (("P", s.precision), ("R", s.recall), ("F1", s.f1))}
            out.append({"target": name, **pct, "tp": s.tp, "predicted": s.predicted, "gold": s.gold})
        return out

    def to_dict(self) -> dict:
        return {"labels": self.labels, "extractor": self.extractor, "match": self.match, "n": self.n,
                "objects": self.objects.to_dict(), "properties": self.properties.to_dict(),
                "overall": self.overall.to_dict(), "rows": self.rows}


def gold_labels() -> list[Labelled]:
    """The shipped labelled set (:data:`GOLD`)."""
    return [Labelled(e, o, tuple(p)) for e, o, p in GOLD]


def _match_props(pred: Sequence[str], gold: Sequence[str], match: str) -> list[tuple[int, int]]:
    """One-to-one (pred index, gold index) pairs: each prediction in order takes the first free label it equals;
    with ``overlap``, exact equalities are paired first."""
    used: set[int] = set()
    pairs: dict[int, int] = {}
    modes = ("exact",) if match == "exact" else ("exact", "overlap")
    for mode in modes:
        for i, p in enumerate(pred):
            if i in pairs:
                continue
            for j, g in enumerate(gold):
                if j not in used and same(p, g, mode):
                    pairs[i] = j
                    used.add(j)
                    break
    return sorted(pairs.items())


def score_extraction(labels: Sequence[Labelled] | None = None, extractor: Callable[[str], Extraction] | None = None,
                     *, match: str = "exact", name: str | None = None) -> ExtractionScore:
    """P / R / F1 of ``extractor`` (default :class:`SpacyExtractor`) on ``labels`` (default the shipped
    :data:`GOLD`). A label that carries its own prediction (``pred_object``) is scored as given, without the
    extractor. ``name``: what the labels are called in the result (default the set's name)."""
    if match not in MATCHES:
        raise ValueError(f"match is one of {', '.join(MATCHES)}, got {match!r}")
    shipped = labels is None
    labels = gold_labels() if shipped else list(labels)
    if not labels:
        raise ValueError("no labelled expressions to score")
    run = None
    objects, props = PRF(), PRF()
    rows = []
    sources = set()
    for lab in labels:
        if lab.has_prediction:
            p_obj, p_props, src = lab.pred_object or "", list(lab.pred_properties or ()), "given"
        else:
            run = run or extractor or SpacyExtractor()
            ex = run(lab.expression)
            p_obj, p_props, src = ex.object, list(ex.properties), getattr(run, "source", "") or "extractor"
        sources.add(src)
        o_ok = same(p_obj, lab.object)
        objects += PRF(int(o_ok), int(bool(normalize(p_obj))), 1)
        pairs = _match_props(p_props, lab.properties, match)
        props += PRF(len(pairs), len(p_props), len(lab.properties))
        got_p, got_g = {i for i, _ in pairs}, {j for _, j in pairs}
        rows.append({"expression": lab.expression, "object": lab.object, "predicted_object": p_obj,
                     "object_ok": o_ok, "properties": list(lab.properties), "predicted_properties": p_props,
                     "matched": [p_props[i] for i, _ in pairs],
                     "missed": [g for j, g in enumerate(lab.properties) if j not in got_g],
                     "extra": [p for i, p in enumerate(p_props) if i not in got_p], "source": src})
    label_name = name or (GOLD_NAME if shipped else "user labels")
    return ExtractionScore(objects, props, label_name, " + ".join(sorted(sources)), match, rows)


# ---------------------------------------------------------------------------------------------- reading labels
def _text(v, what: str, where: str, empty_ok: bool = False) -> str:
    if not isinstance(v, str):
        raise InputError(f"{where}: {what} must be text, got {type(v).__name__}")
    v = " ".join(v.split())
    if not v and not empty_ok:
        raise InputError(f"{where}: {what} is empty")
    if len(v) > MAX_CAPTION_CHARS:
        raise InputError(f"{where}: {what} is longer than {MAX_CAPTION_CHARS} characters")
    return v


def _props(v, what: str, where: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return _split_cell(v)
    if not isinstance(v, list):
        raise InputError(f"{where}: {what} must be a list of strings")
    return tuple(p for p in (_text(x, what, where, empty_ok=True) for x in v) if p)


def _split_cell(cell: str) -> tuple[str, ...]:
    sep = next((s for s in PROPERTY_SEPARATORS if s in cell), None)
    parts = cell.split(sep) if sep else [cell]
    return tuple(p for p in (" ".join(x.split()) for x in parts) if p)


def _row(d: dict, where: str) -> Labelled:
    if not isinstance(d, dict):
        raise InputError(f"{where}: each entry must be an object with expression, object and properties")
    missing = [k for k in ("expression", "object") if k not in d or d[k] is None]
    if missing:
        raise InputError(f"{where}: missing {' and '.join(missing)}")
    expr = _text(d["expression"], "expression", where)
    obj = _text(d["object"], "object", where)
    pred_o = d.get("pred_object")
    return Labelled(expr, obj, _props(d.get("properties"), "properties", where),
                    None if pred_o is None else _text(pred_o, "pred_object", where, empty_ok=True),
                    None if pred_o is None else _props(d.get("pred_properties"), "pred_properties", where))


def parse_labels(data: bytes | str, name: str = "labels.json") -> list[Labelled]:
    """Labelled expressions from a file's content; InputError (one line) on anything else.

    JSON: a list of ``{"expression", "object", "properties": [...]}`` (or ``{"items": [...]}``). CSV: a header
    with ``expression``, ``object`` and ``properties`` (one cell, properties separated by "|" or ";"). Either may add
    ``pred_object`` / ``pred_properties``: a prediction to score instead of running the extractor."""
    label = Path(name).name or "labels"
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(f"{label}: not UTF-8 text") from None
    else:
        text = str(data)
    if not text.strip():
        raise InputError(f"{label}: the file is empty")
    if label.lower().endswith(".csv") or (not text.lstrip().startswith(("[", "{")) and "," in text.split("\n")[0]):
        rows = _csv_rows(text, label)
    else:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{label}: not valid JSON (line {e.lineno}: {e.msg})") from None
        if isinstance(obj, dict) and isinstance(obj.get("items"), list):
            obj = obj["items"]
        if not isinstance(obj, list):
            raise InputError(f"{label}: expected a list of labelled expressions (or {{\"items\": [...]}})")
        rows = obj
    if not rows:
        raise InputError(f"{label}: no labelled expressions")
    if len(rows) > MAX_ROWS:
        raise InputError(f"{label}: {len(rows)} expressions, over the limit of {MAX_ROWS}")
    return [_row(r, f"{label}, entry {k + 1}") for k, r in enumerate(rows)]


def _csv_rows(text: str, label: str) -> list[dict]:
    try:
        reader = csv.DictReader(io.StringIO(text))
        fields = [f.strip().lower() for f in reader.fieldnames or []]
        if "expression" not in fields or "object" not in fields:
            raise InputError(f"{label}: the CSV header must name expression, object and properties columns")
        out = []
        for r in reader:
            d = {(k or "").strip().lower(): v for k, v in r.items()}
            if d.get("pred_object") in ("", None):
                d.pop("pred_object", None)
            out.append(d)
            if len(out) > MAX_ROWS:
                break
        return out
    except csv.Error as e:
        raise InputError(f"{label}: not a readable CSV ({e})") from None


def read_labels(path: str | Path) -> list[Labelled]:
    """:func:`parse_labels` on a file (size-checked before it is read)."""
    return parse_labels(read_file_capped(path), str(path))
