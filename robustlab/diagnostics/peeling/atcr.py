"""PEELING's ATCR (Adversarial Tests Correct Rate, the paper's §IV-F): the share of generated tests a person judges
*valid* -- the final expression still names the same object, and only it, so the original box is still the right
answer. The paper labels 100 random tests per dataset (three annotators, disagreements settled by discussion,
repeated three times and averaged): PEELING's ATCR is 90.0 / 93.3 / 96.0 % on RefCOCO / RefCOCO+ / RefCOCOg.

UI-free: :func:`sample_tests` draws the tests to label, :func:`compute_atcr` turns labels into the rate (with a 95 %
Wilson interval, which the paper does not report), :func:`atcr_rounds` averages repeated rounds as the paper does,
:func:`labels_document` / :func:`parse_atcr_labels` write and read the labels as JSON (each label carries the
test's expressions, so a label only applies to the test it was given for: :func:`apply_labels`).
Part of :mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robustlab.io.files import InputError, read_file_capped

LABELS = ("valid", "invalid")
FORMAT = "robustlab-peeling-atcr"
VERSION = 1
SAMPLE = 100  # the paper labels 100 random tests per dataset
MAX_LABELS = 100_000
_TEXT_KEYS = ("rawtext", "Reducetext", "MRtext")
PAPER_ATCR = {"RefCOCO": 0.900, "RefCOCO+": 0.933, "RefCOCOg": 0.960}  # Table II, PEELING


def _get(t, k):
    return t.get(k) if isinstance(t, Mapping) else getattr(t, k, None)


def sample_tests(tests: Sequence, n: int = SAMPLE, seed: int = 0) -> list:
    """``n`` tests drawn at random without replacement (all of them when there are fewer), in their run order."""
    if int(n) < 1:
        raise ValueError("n must be at least 1")
    m = len(tests)
    if m <= n:
        return list(tests)
    pick = np.random.default_rng(int(seed)).choice(m, size=int(n), replace=False)
    return [tests[int(k)] for k in sorted(pick)]


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of k successes in n trials (None when n = 0)."""
    if n <= 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return round(max(0.0, c - h), 6), round(min(1.0, c + h), 6)


@dataclass(frozen=True)
class ATCR:
    """Counts of valid, invalid and unlabelled tests and the rate valid / labelled."""

    valid: int
    invalid: int
    unlabelled: int = 0

    @property
    def labelled(self) -> int:
        return self.valid + self.invalid

    @property
    def atcr(self) -> float | None:
        return round(self.valid / self.labelled, 6) if self.labelled else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.valid, self.labelled)

    @property
    def complete(self) -> bool:
        return self.unlabelled == 0 and self.labelled > 0

    def to_dict(self) -> dict:
        return {"atcr": self.atcr, "valid": self.valid, "invalid": self.invalid, "labelled": self.labelled,
                "unlabelled": self.unlabelled, "interval95": list(self.interval) if self.interval else None}


def compute_atcr(labels: Mapping[str, str | None] | Sequence[str | None], total: int | None = None) -> ATCR:
    """ATCR from labels ("valid" / "invalid"; None = not labelled yet): a mapping test id -> label, or a list.
    ``total``: how many tests were to be labelled (the ones without a label count as unlabelled)."""
    vals = list(labels.values()) if isinstance(labels, Mapping) else list(labels)
    bad = sorted({str(v) for v in vals if v is not None and v not in LABELS})
    if bad:
        raise ValueError(f"a label is one of {', '.join(LABELS)} (or none), got {', '.join(bad)}")
    v, i = sum(x == "valid" for x in vals), sum(x == "invalid" for x in vals)
    n = len(vals) if total is None else int(total)
    if n < v + i:
        raise ValueError(f"total {n} is less than the {v + i} labelled tests")
    return ATCR(v, i, n - v - i)


def atcr_rounds(rounds: Sequence[ATCR]) -> dict:
    """The paper's repeat-and-average: the mean ATCR over rounds that have a label, with each round's rate."""
    rates = [r.atcr for r in rounds if r.atcr is not None]
    return {"rounds": [r.atcr for r in rounds], "mean": round(float(np.mean(rates)), 6) if rates else None}


def _texts(t) -> dict:
    return {k: str(_get(t, k) or "") for k in _TEXT_KEYS}


def labels_document(tests: Sequence, labels: Mapping[str, str | None], meta: Mapping | None = None) -> dict:
    """The labels of ``tests`` as a JSON-ready document (what :func:`parse_atcr_labels` reads back): each test's id
    and expressions with its label (None when not labelled), the ATCR they give and ``meta`` (model, dataset...)."""
    rows = [{"uniq_id": str(_get(t, "uniq_id")), **_texts(t), "label": labels.get(str(_get(t, "uniq_id")))}
            for t in tests]
    res = compute_atcr([r["label"] for r in rows])
    return {"format": FORMAT, "version": VERSION, "meta": dict(meta or {}), "atcr": res.to_dict(), "labels": rows}


def labels_json(tests: Sequence, labels: Mapping[str, str | None], meta: Mapping | None = None) -> str:
    return json.dumps(labels_document(tests, labels, meta), indent=1, ensure_ascii=False)


def parse_atcr_labels(data: bytes | str, name: str = "atcr_labels.json") -> dict[str, dict]:
    """Labels read back from :func:`labels_document`'s JSON: ``{uniq_id: {"label", "rawtext", "Reducetext",
    "MRtext"}}``; InputError (one line) for anything else."""
    label = Path(name).name or "labels"
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(f"{label}: not UTF-8 text") from None
    if not str(data).strip():
        raise InputError(f"{label}: the file is empty")
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as e:
        raise InputError(f"{label}: not valid JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{label}: not a PEELING ATCR labels file (\"format\": \"{FORMAT}\" expected)")
    if doc.get("version") != VERSION:
        raise InputError(f"{label}: labels file version {doc.get('version')!r} is not supported (expected {VERSION})")
    rows = doc.get("labels")
    if not isinstance(rows, list):
        raise InputError(f"{label}: \"labels\" must be a list")
    if len(rows) > MAX_LABELS:
        raise InputError(f"{label}: {len(rows)} labels, over the limit of {MAX_LABELS}")
    out: dict[str, dict] = {}
    for k, r in enumerate(rows, start=1):
        where = f"{label}, label {k}"
        if not isinstance(r, dict) or not isinstance(r.get("uniq_id"), str) or not r["uniq_id"]:
            raise InputError(f"{where}: each label needs a text \"uniq_id\"")
        if r.get("label") not in LABELS + (None,):
            raise InputError(f"{where}: \"label\" must be one of {', '.join(LABELS)} or null, got {r.get('label')!r}")
        if any(k2 in r and not isinstance(r[k2], str) for k2 in _TEXT_KEYS):
            raise InputError(f"{where}: the expressions must be text")
        if r["uniq_id"] in out:
            raise InputError(f"{where}: test {r['uniq_id']!r} is labelled twice")
        out[r["uniq_id"]] = {"label": r.get("label"), **{k2: r[k2] for k2 in _TEXT_KEYS if k2 in r}}
    return out


def read_atcr_labels(path: str | Path) -> dict[str, dict]:
    """:func:`parse_atcr_labels` on a file (size-checked before it is read)."""
    return parse_atcr_labels(read_file_capped(path), str(path))


@dataclass(frozen=True)
class Applied:
    """Labels matched to tests: ``labels`` (id -> label) for the tests they fit, and what did not fit."""

    labels: dict
    matched: int
    unknown: int  # labels of tests not in this set
    stale: int  # labels whose expressions differ from this set's test with the same id (another run or seed)


def apply_labels(tests: Sequence, loaded: Mapping[str, Mapping]) -> Applied:
    """The loaded labels that belong to ``tests``: same id and, where the file gives them, the same expressions."""
    by_id = {str(_get(t, "uniq_id")): t for t in tests}
    got, stale = {}, 0
    for uid, rec in loaded.items():
        t = by_id.get(uid)
        if t is None:
            continue
        own = _texts(t)
        if any(k in rec and rec[k] != own[k] for k in _TEXT_KEYS):
            stale += 1
            continue
        if rec.get("label") is not None:
            got[uid] = rec["label"]
    unknown = sum(uid not in by_id for uid in loaded)
    return Applied(got, len(got), unknown, stale)
