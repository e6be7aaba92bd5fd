"""A cell file's integrity: the checksum written with it and the checks a resumed sweep (and the report) makes before
it trusts a file as a finished cell. Light (json and hashlib only): the report reads it without torch.

A cell file (``cells/<key>.json``) is a :class:`robustlab.tasks.result.Result` as JSON plus ``extra.cell`` (its key),
``extra.seconds`` and ``checksum``: ``"sha256:"`` and the hex SHA-256 of the cell's canonical JSON (sorted keys, no
spaces, UTF-8) without ``checksum`` and without ``extra.seconds`` (the one field that differs between two runs of the
same cell). :func:`problem` says what is wrong with a file's content, or None:

* not a JSON object, a missing field or a field of the wrong type (the schema below);
* ``extra.cell`` naming another cell (a file copied into the wrong place);
* a checksum that does not match (a number edited, a byte changed after it was written).

A cell without ``checksum`` but with a valid schema is accepted: robustlab wrote cells without one before, atomically,
and recomputing every cell of an older run would cost hours for nothing.
"""
from __future__ import annotations

import hashlib
import json

# field -> (the types it may have, what the message calls them); every Result field, in Result's order
SCHEMA = {
    "model": ((str,), "a string"),
    "model_fingerprint": ((str,), "a string"),
    "dataset": ((str,), "a string"),
    "split": ((str, type(None)), "a string or null"),
    "task": ((str,), "a string"),
    "conditions": ((dict,), "an object"),
    "n": ((int,), "a positive integer"),
    "metrics": ((dict,), "an object"),
    "extra": ((dict,), "an object"),
}
OPTIONAL = {"versions": dict, "dataset_params": dict}


def _payload(cell: dict) -> bytes:
    body = {k: v for k, v in cell.items() if k != "checksum"}
    if isinstance(body.get("extra"), dict):
        body["extra"] = {k: v for k, v in body["extra"].items() if k != "seconds"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def checksum(cell: dict) -> str:
    """``"sha256:<hex>"`` of the cell's canonical JSON without ``checksum`` and ``extra.seconds``. ``cell`` is the
    dict as it is written (a JSON round trip of it gives the same checksum)."""
    return "sha256:" + hashlib.sha256(_payload(cell)).hexdigest()


def problem(cell, key: str | None = None) -> str | None:
    """What is wrong with a cell file's parsed content (one line), or None when it can be trusted as the finished
    cell ``key`` (None: any cell)."""
    if not isinstance(cell, dict):
        return "not a JSON object"
    missing = [k for k in SCHEMA if k not in cell]
    if missing:
        return "lacks " + ", ".join(repr(k) for k in missing)
    for k, (types, what) in SCHEMA.items():
        v = cell[k]
        if not isinstance(v, types) or (k == "n" and (isinstance(v, bool) or v < 1)):
            return f"{k!r} must be {what}, got {type(v).__name__} {_short(v)}"
    for k, t in OPTIONAL.items():
        if k in cell and not isinstance(cell[k], t):
            return f"{k!r} must be an object, got {type(cell[k]).__name__}"
    bad = [a for a, c in cell["conditions"].items() if not isinstance(c, dict)]
    if bad:
        return f"condition {bad[0]!r} must be an object"
    if key is not None and cell["extra"].get("cell") != key:
        return f"written for another cell (extra.cell is {_short(cell['extra'].get('cell'))})"
    if "checksum" in cell:
        if not isinstance(cell["checksum"], str):
            return f"its checksum must be a string, got {type(cell['checksum']).__name__}"
        if cell["checksum"] != checksum(cell):
            return "its checksum does not match its content (changed after it was written)"
    return None


def read_problem(text: str, key: str | None = None) -> tuple[dict | None, str | None]:
    """(the cell, None) or (None, what is wrong) for a cell file's text."""
    if not text.strip():
        return None, "empty"
    try:
        cell = json.loads(text)
    except RecursionError:
        return None, "not JSON robustlab can read (nested too deep)"
    except ValueError as e:
        return None, f"not JSON (truncated or damaged: {str(e).splitlines()[0][:80]})"
    why = problem(cell, key)
    return (None, why) if why else (cell, None)


def _short(v, width: int = 40) -> str:
    s = repr(v)
    return s if len(s) <= width else s[: width - 1] + "…"


__all__ = ["checksum", "problem", "read_problem", "SCHEMA"]
