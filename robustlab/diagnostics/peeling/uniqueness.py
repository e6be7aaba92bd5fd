"""PEELING's uniqueness: which objects an expression picks out -- the three VQA questions about a phrase X and
their AND verdict, and the built-in world's truth (:func:`world_matches`). Part of
:mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

import sys
import types
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from robustlab.datasets.synthetic.qa import plural_phrase
from robustlab.datasets.synthetic.world import COLORS, SHAPES, SIZES, TEXTURES

# The paper's three questions, in agreement ({xs}: X with its head noun in the plural; issue 45): the paper's own
# "How many X in the image?" reads "How many ring in the image?". The released strings keep the paper's wording.
TEMPLATES = ("How many {xs} are in the image?", "Are there many {xs} in the image?",
             "Is there a reflected {x} in the image?")
RELEASED_TEMPLATES = ("How many {x} in the image?", "Are there many {x} in the image?",
                      "Is there a reflected {x}in the image?")  # sic: the released code's missing space
QUERIES = ("how_many", "whether", "reflection")
CHUNK = 100  # items per model call (numbers do not depend on it)


def questions_for(x: str, compat: bool = False) -> tuple[str, str, str]:
    """PEELING's three questions about a phrase X ("How many rings are in the image?"; ``compat=True``: the
    released strings, the paper's wording and the missing space kept: "How many ring in the image?")."""
    return tuple(t.format(x=x, xs=plural_phrase(x))  # type: ignore[return-value]
                 for t in (RELEASED_TEMPLATES if compat else TEMPLATES))


def _tokens(answer: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", str(answer).lower())


def count_is_one(answer: str, compat: bool = False) -> bool:
    """The "how many" check: a whole token "one" or "1" (``compat``: the substring anywhere, so "someone" and
    "10" pass)."""
    a = str(answer).lower()
    if compat:
        return "one" in a or "1" in a
    t = _tokens(a)
    return "one" in t or "1" in t


def says_no(answer: str, compat: bool = False) -> bool:
    """The "are there many" / "reflected" check: a whole token "no" (``compat``: the substring, so "none",
    "snow" and "notebook" pass)."""
    a = str(answer).lower()
    return "no" in a if compat else "no" in _tokens(a)


@dataclass
class Uniqueness:
    """The three questions about X, the answers, each check, and the AND verdict."""

    x: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    checks: tuple[bool, ...]
    unique: bool
    compat: bool = False

    def to_dict(self) -> dict:
        return {"x": self.x, "unique": self.unique, "compat": self.compat,
                **{q: {"question": s, "answer": a, "ok": ok}
                   for q, s, a, ok in zip(QUERIES, self.questions, self.answers, self.checks)}}


def judge(x: str, answers: Sequence[str], compat: bool = False) -> Uniqueness:
    """A :class:`Uniqueness` from the three answers (count one, not many, not reflected; AND)."""
    answers = tuple(str(a) for a in answers)
    checks = (count_is_one(answers[0], compat), says_no(answers[1], compat), says_no(answers[2], compat))
    return Uniqueness(x, questions_for(x, compat), answers, checks, all(checks), compat)


def _answers(vqa_batch_fn: Callable, images: list, questions: list[str]) -> list[str]:
    out = vqa_batch_fn(images, questions)
    res = [a[0] if isinstance(a, (tuple, list)) else a for a in out]
    if len(res) != len(questions):
        raise ValueError(f"the VQA function returned {len(res)} answers for {len(questions)} questions")
    return [str(a) for a in res]


def uniqueness(vqa_batch_fn: Callable, image, x: str, compat: bool = False) -> Uniqueness:
    """Ask the three questions about X on ``image`` (one batched call) and judge them.

    ``vqa_batch_fn(images, questions)`` returns one answer per question: a string or an ``(answer, extra)`` pair
    (``model.vqa_batch``; :func:`vqa_function` makes one from any model)."""
    return uniqueness_many(vqa_batch_fn, [image], [x], compat)[0]


def uniqueness_many(vqa_batch_fn: Callable, images: Sequence, xs: Sequence[str], compat: bool = False,
                    chunk: int = 3 * CHUNK) -> list[Uniqueness]:
    """:func:`uniqueness` for many (image, X) pairs, one VQA call per ``chunk`` questions."""
    qs, ims = [], []
    for im, x in zip(images, xs):
        for q in questions_for(x, compat):
            qs.append(q)
            ims.append(im)
    ans: list[str] = []
    for s in range(0, len(qs), max(3, int(chunk))):
        ans += _answers(vqa_batch_fn, ims[s:s + chunk], qs[s:s + chunk])
    return [judge(x, ans[3 * k:3 * k + 3], compat) for k, x in enumerate(xs)]


def vqa_function(model) -> Callable:
    """``(images, questions) -> answers`` of a model (its ``vqa_batch``, else one ``vqa`` call per question)."""
    if callable(getattr(model, "vqa_batch", None)):
        return lambda ims, qs: [a for a, _ in model.vqa_batch(list(ims), list(qs))]
    if callable(getattr(model, "vqa", None)):
        return lambda ims, qs: [model.vqa(i, q)[0] for i, q in zip(ims, qs)]
    if callable(model):
        return model
    raise ValueError(f"{getattr(model, 'model_id', type(model).__name__)} cannot answer questions (no vqa())")


# ============================================================================================ world truth
_POS_RE = re.compile(r"\b(?:at|in) the (top left|top right|bottom left|bottom right|top|bottom|left|right|center)\b")
_FILLER = {"the", "a", "an", "at", "in", "object"}


def world_matches(x: str, objects: Sequence) -> list[int] | None:
    """Indices of the built-in world's objects that a phrase fits (every attribute it names), or None when the
    phrase uses a word outside the world's vocabulary (truth unknown)."""
    s = x.lower().strip()
    want: dict[str, str] = {}
    m = _POS_RE.search(s)
    if m:
        want["position"] = m.group(1)
        s = s[:m.start()] + " " + s[m.end():]
    for w in re.findall(r"[a-z]+", s):
        if w in SHAPES:
            key = "shape"
        elif w in COLORS:
            key = "color"
        elif w in SIZES:
            key = "size"
        elif w in TEXTURES:
            key = "texture"
        elif w in _FILLER:
            continue
        else:
            return None
        if want.get(key, w) != w:
            return []
        want[key] = w
    if not want:
        return None
    return [k for k, o in enumerate(objects) if all(getattr(o, a) == v for a, v in want.items())]


def world_valid(x: str, objects: Sequence, target: int) -> bool | None:
    """True when the phrase fits exactly one object of the scene, the target; None when unknown."""
    m = world_matches(x, objects)
    return None if m is None else (m == [int(target)])


class _CallableModule(types.ModuleType):
    """Calling this module calls :func:`uniqueness`: its package exposes the module under that name, so that both
    ``peeling.uniqueness(ask, image, x)`` and ``import robustlab.diagnostics.peeling.uniqueness as U`` work
    (issue 46)."""

    def __call__(self, *args, **kwargs):
        return uniqueness(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
