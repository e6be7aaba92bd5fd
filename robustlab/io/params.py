"""``KEY=VALUE`` parameters: the one parser behind the CLI's ``--param``, ``--adapt-param`` and ``--option``, and the
number checks that go with it.

:func:`parse_kv` turns ``KEY=VALUE`` strings into a dict, a value read as JSON where it parses (``true``, ``3``,
``0.5``, ``"x"``, ``null``) and as text otherwise; it refuses, with one line, a pair without ``=``, an empty or odd
key, a key given twice, an absurdly long key or value, and any number that is not finite (``inf``, ``nan``,
``Infinity``, ``-Infinity``, ``1e999``, an integer beyond the float range), so that nothing downstream ever sees one.
:func:`check_number` checks one value against a type (int or float) and a range and gives the number back.
Every refusal is a :class:`ParamError` (a ValueError) whose message is one line.

This module imports nothing from the rest of robustlab (a low layer: everything may use it).
"""
from __future__ import annotations

import json
import math
import numbers
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

MAX_KEY = 100  # characters of a key
MAX_VALUE = 4096  # characters of a value (a path fits: PATH_MAX on Linux)

_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_FLOAT_MAX = sys.float_info.max


class ParamError(ValueError):
    """A bad ``KEY=VALUE`` parameter or value; the message is one line."""


def show(value, limit: int = 40) -> str:
    """``value`` as it may appear in a one-line message: shortened, and quoted (escapes) if it is not printable."""
    s = value if isinstance(value, str) else repr(value)
    if len(s) > limit:
        s = s[:limit - 3] + "..."
    return s if s.isprintable() else repr(s)


def _q(text: str, limit: int = 40) -> str:
    """``text`` quoted for a one-line message (repr: escapes), shortened."""
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _finite(value) -> str | None:
    """Why ``value`` (a JSON-like value, containers searched) is not a set of finite numbers, or None."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "not a finite number"
    if isinstance(value, int):
        return None if -_FLOAT_MAX <= value <= _FLOAT_MAX else "not a finite number (beyond the float range)"
    if isinstance(value, numbers.Real):  # numpy scalars and the like
        try:
            return None if math.isfinite(float(value)) else "not a finite number"
        except (OverflowError, ValueError):
            return "not a finite number"
    if isinstance(value, dict):
        for v in value.values():
            why = _finite(v)
            if why:
                return why
    elif isinstance(value, (list, tuple)):
        for v in value:
            why = _finite(v)
            if why:
                return why
    return None


def _text_number(text: str) -> float | None:
    """``text`` as a float when it reads as one ("inf", "NaN", "1e999", " 3 "), else None."""
    try:
        return float(text.strip())
    except ValueError:
        return None


def parse_value(text: str):
    """A value as JSON where it parses (``true``, ``3``, ``0.5``, ``"x"``, ``null``, ``[1, 2]``), else the text."""
    try:
        return json.loads(text)
    except ValueError:  # also JSONDecodeError, and an integer of more digits than Python converts
        return text


def check_finite(name: str, value):
    """``value`` itself, or ParamError ``"{name}={value}: not a finite number"`` when it is or holds a number that
    is not finite (a float inf / nan, an integer beyond the float range; text such as "inf" or "1e999" too)."""
    why = _finite(value)
    if why is None and isinstance(value, str):
        f = _text_number(value)
        why = "not a finite number" if f is not None and not math.isfinite(f) else None
    if why:
        raise ParamError(f"{name}={show(value)}: {why}")
    return value


def parse_kv(pairs: Iterable, flag: str = "--param", *, example: str = "steps=1", form: str = "KEY=VALUE") -> dict:
    """``KEY=VALUE`` strings (``flag``'s, e.g. ``--param``) -> a dict, keys stripped, a value read as JSON where
    it parses (true, 3, 0.5, "x") and kept as text otherwise. ParamError (one line) for a pair without ``=`` or
    with an empty key, a key of other characters than letters, digits, ``_ . -``, a key given twice, a key longer
    than :data:`MAX_KEY` or a value longer than :data:`MAX_VALUE` characters, and a value that is or holds a
    number that is not finite: ``inf``, ``nan``, ``Infinity``, ``-Infinity``, ``1e999`` (JSON or text alike)."""
    out: dict = {}
    raw: dict = {}
    for p in pairs or ():
        p = str(p)
        key, eq, value = p.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ParamError(f"{flag} {_q(p)}: use {form} (e.g. {flag} {example})")
        if len(key) > MAX_KEY:
            raise ParamError(f"{flag} {show(key)}=...: the key is {len(key)} characters long (at most {MAX_KEY})")
        if not _KEY.fullmatch(key):
            raise ParamError(f"{flag} {_q(p)}: a key is letters, digits, _ . and - (e.g. {flag} {example})")
        if len(value) > MAX_VALUE:
            raise ParamError(f"{flag} {key}={show(value, 20)}: the value is {len(value)} characters long "
                             f"(at most {MAX_VALUE})")
        if key in out:
            raise ParamError(f"{flag} {key} is given twice ({key}={show(raw[key], 20)} and {key}={show(value, 20)});"
                             f" give each key once")
        v = parse_value(value)
        why = _finite(v)
        if why is None and isinstance(v, str):
            f = _text_number(v)
            if f is not None and not math.isfinite(f):
                why = "not a finite number"
        if why:
            raise ParamError(f"{flag} {key}={show(value)}: {why}")
        out[key] = v
        raw[key] = value
    return out


def _bound(x, kind) -> str:
    return str(int(x)) if kind is int else f"{float(x):g}"


def describe_range(kind=float, lo=None, hi=None, *, lo_open: bool = False, hi_open: bool = False) -> str:
    """``"an integer in [1, 100]"``, ``"a number in (0, 1]"``, ``"a number > 0"``, ``"an integer"``..."""
    what = "an integer" if kind is int else "a number"
    if lo is not None and hi is not None:
        return f"{what} in {'(' if lo_open else '['}{_bound(lo, kind)}, {_bound(hi, kind)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{what} {'>' if lo_open else '>='} {_bound(lo, kind)}"
    if hi is not None:
        return f"{what} {'<' if hi_open else '<='} {_bound(hi, kind)}"
    return what


def check_number(name: str, value, *, kind=float, lo=None, hi=None, lo_open: bool = False,
                 hi_open: bool = False):
    """``value`` (a number, or text that reads as one: "3", "3e-4") as ``kind`` (int or float) within
    [``lo``, ``hi``] (``lo_open`` / ``hi_open``: the bound itself excluded; None: no bound). ParamError, one line,
    ``"{name} must be an integer in [1, 100], got 0"`` otherwise; a value that is not finite (inf, nan, 1e999, an
    integer beyond the float range) adds ``(not a finite number)``. A bool is not a number here."""
    if kind not in (int, float):
        raise TypeError("kind must be int or float")
    want = describe_range(kind, lo, hi, lo_open=lo_open, hi_open=hi_open)

    def bad(note: str = ""):
        return ParamError(f"{name} must be {want}, got {show(value)}" + (f" ({note})" if note else ""))

    v = value
    if isinstance(v, str):
        t = v.strip()
        try:
            v = int(t) if kind is int else float(t)
        except ValueError:
            try:
                v = float(t)
            except ValueError:
                raise bad() from None
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise bad()
    if isinstance(v, numbers.Integral):
        v = int(v)
        if not -_FLOAT_MAX <= v <= _FLOAT_MAX:
            raise bad("beyond the float range")
        if kind is float:
            v = float(v)
    else:
        try:
            f = float(v)
        except (OverflowError, ValueError):
            raise bad("not a finite number") from None
        if not math.isfinite(f):
            raise bad("not a finite number")
        if kind is int:
            if f != int(f):
                raise bad()
            v = int(f)
        else:
            v = f
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise bad()
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise bad()
    return v


# ---- parameters and methods: one declaration for the method registries (adaptation, hubness reduction) ----------
_BOOL = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False, "on": True, "off": False}


@dataclass(frozen=True)
class Param:
    """One parameter of a method: ``kind`` "float", "int", "bool", "choice" (``choices``) or "array"; a number's
    range is [min, max] (None: open on that side)."""
    name: str
    default: object  # None: chosen by the method (e.g. by direction)
    kind: str
    help: str
    min: Optional[float] = None
    max: Optional[float] = None
    choices: tuple = ()

    def __post_init__(self):
        if self.min is not None and self.max is not None and not self.min < self.max:
            raise ValueError(f"parameter {self.name}: min must be below max")

    def to_dict(self) -> dict:
        return {"name": self.name, "default": self.default, "type": self.kind, "help": self.help, "min": self.min,
                "max": self.max, "choices": list(self.choices)}

    def check(self, value, name: str | None = None):
        """``value`` as this parameter's type within its range; ParamError (a ValueError, one line:
        ``"{name} must be an integer in [1, 100], got 0"``) otherwise, non-finite numbers included."""
        name = name or self.name
        if self.kind in ("int", "float"):
            return check_number(name, value, kind=int if self.kind == "int" else float, lo=self.min, hi=self.max)
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            t = str(value).strip().lower()
            if isinstance(value, str) and t in _BOOL:
                return _BOOL[t]
            raise ParamError(f"{name} must be true or false, got {show(value)}")
        if self.kind == "choice":
            if value not in self.choices:
                raise ParamError(f"{name} must be {' or '.join(self.choices)}, got {show(value)}")
            return value
        return value


@dataclass(frozen=True)
class BoundedParam(Param):
    """A :class:`Param` whose numbers must declare a finite range (what a browser user may type is held to it)."""

    def __post_init__(self):
        if self.kind in ("int", "float") and (self.min is None or self.max is None or not self.min < self.max
                                              or not math.isfinite(self.min) or not math.isfinite(self.max)):
            raise ValueError(f"parameter {self.name}: an {self.kind} parameter declares a finite range")


@dataclass(frozen=True)
class Method:
    """An entry of a method registry: name, label, where it comes from, what it does, its parameters. Registries
    add their own flags in a subclass (:class:`robustlab.adapt.methods.Method`,
    :class:`robustlab.diagnostics.reduction.Method`) and list them in :meth:`flags`."""
    name: str
    label: str
    source: str
    description: str
    params: tuple = ()

    def all_params(self) -> tuple:
        return tuple(self.params)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.all_params()}

    def flags(self) -> dict:
        return {}

    def to_dict(self) -> dict:
        return {"name": self.name, "label": self.label, "source": self.source, "description": self.description,
                **self.flags(), "params": [p.to_dict() for p in self.all_params()]}


__all__ = ["MAX_KEY", "MAX_VALUE", "ParamError", "check_finite", "check_number", "describe_range", "parse_kv",
           "parse_value", "show", "Param", "BoundedParam", "Method"]
