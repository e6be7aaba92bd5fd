"""CLAVI's data for any video: the complement pair (V, V′) and the 19 questions with their answers on each
(Rawal et al., "Dissecting multimodality in VideoQA transformer models by impairing modality fusion", §5.1 and
App. B.1; implemented from the paper, its released GPL-3.0 scripts are not used).

:func:`extensions` and :func:`complement` build the pair from two action intervals (frames; an upload's seconds
through :func:`frames_from_seconds`), :func:`questions` the 19 questions from three :class:`Action` phrased by
:class:`Templates` (:data:`PAPER_TEMPLATES`, or a world's own). :mod:`robustlab.datasets.synthetic.clavi` makes the
pairs of the built-in event videos; :mod:`robustlab.diagnostics.clavi` describes the method in full and scores a
model's answers (balanced accuracy, CAcc_V, CAcc_T), and re-exports everything here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Optional

import numpy as np

TYPE_CODES = {"E": 0, "E-NC": 1, "BE": 4, "BE'": 5, "BA": 8, "BA'": 9, "BA-NC": 10}
CODE_NAMES = {**{v: k for k, v in TYPE_CODES.items()}, **{v + 16: k + " (V')" for k, v in TYPE_CODES.items()}}
CONTROL = ("E", "E-NC", "BA-NC")
COMPLEMENT = ("BE", "BA")
N_QUESTIONS = 19


class ClaviError(ValueError):
    """Intervals or a video a CLAVI pair cannot be built from (one line, for the UI and CLI)."""


# ---- the complement builder -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Extension:
    """Boundaries in frames of the original video: V = [out_a, out_b); A extended = [out_a, in_a),
    middle = [in_a, in_b), B extended = [in_b, out_b)."""
    out_a: int
    in_a: int
    in_b: int
    out_b: int

    def to_dict(self) -> dict:
        return asdict(self)


def check_intervals(a, b, n_frames: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two non-empty, non-overlapping [start, end) frame intervals inside the video, A first (swapped if given
    the other way). Raises :class:`ClaviError` with one line otherwise."""
    (a0, a1), (b0, b1) = (int(a[0]), int(a[1])), (int(b[0]), int(b[1]))
    if b0 < a0:
        (a0, a1), (b0, b1) = (b0, b1), (a0, a1)
    for name, (s, e) in (("A", (a0, a1)), ("B", (b0, b1))):
        if not 0 <= s < e <= n_frames:
            raise ClaviError(f"action {name} [{s}, {e}) must be a non-empty interval inside the video's "
                             f"{n_frames} frames")
    if a1 > b0:
        raise ClaviError(f"the two actions overlap ([{a0}, {a1}) and [{b0}, {b1})): CLAVI needs exclusive actions")
    return (a0, a1), (b0, b1)


def frames_from_seconds(a_sec, b_sec, fps: float, n_frames: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Intervals typed in seconds -> frame intervals (start rounded down, end rounded up), checked."""
    if not fps or fps <= 0:
        raise ClaviError("the video has no frame rate: give the intervals in frames")
    conv = [(int(np.floor(float(s) * fps)), int(np.ceil(float(e) * fps))) for s, e in (a_sec, b_sec)]
    conv = [(max(s, 0), min(e, n_frames)) for s, e in conv]
    return check_intervals(conv[0], conv[1], n_frames)


def extensions(a, b, n_frames: int, rng: np.random.Generator) -> Extension:
    """Random extensions with equal out- and in-extension totals (§5.1): a total E is drawn uniformly from what
    both sides allow, then split at random between the two ends (out) and between the two actions (in)."""
    (a0, a1), (b0, b1) = check_intervals(a, b, n_frames)
    out_room = (a0, n_frames - b1)  # outward room before A and after B
    gap = b0 - a1  # the in-extensions share the region between the actions
    e_max = min(sum(out_room), gap)
    e = int(rng.integers(0, e_max + 1))

    def split(total, room_l, room_r):
        lo, hi = max(0, total - room_r), min(total, room_l)
        left = int(rng.integers(lo, hi + 1))
        return left, total - left

    out_l, out_r = split(e, *out_room)
    in_l, in_r = split(e, gap, gap)
    return Extension(out_a=a0 - out_l, in_a=a1 + in_l, in_b=b0 - in_r, out_b=b1 + out_r)


@dataclass
class Pair:
    """A CLAVI pair: V and V′ (frames), the extension, where the actions lie in each (frame intervals of V and of
    V′) and the seams of V′."""
    video: np.ndarray
    complement: np.ndarray
    extension: Extension
    a: tuple[int, int]
    b: tuple[int, int]
    a_in_v: tuple[int, int] = (0, 0)
    b_in_v: tuple[int, int] = (0, 0)
    a_in_c: tuple[int, int] = (0, 0)
    b_in_c: tuple[int, int] = (0, 0)
    seams: tuple[int, int] = (0, 0)
    method: str = "swap"

    def record(self) -> dict:
        return {"method": self.method, "a": list(self.a), "b": list(self.b), "extension": self.extension.to_dict(),
                "a_in_v": list(self.a_in_v), "b_in_v": list(self.b_in_v), "a_in_complement": list(self.a_in_c),
                "b_in_complement": list(self.b_in_c), "seams": list(self.seams), "frames": int(len(self.video))}


def complement(frames: np.ndarray, a, b, ext: Optional[Extension] = None, *, seed: int = 0) -> Pair:
    """V and V′ for ``frames`` (T×H×W×3) with actions ``a`` and ``b`` (frame intervals); ``ext`` drawn with
    ``seed`` when not given."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or len(frames) < 3:
        raise ClaviError("CLAVI needs a video (frames × height × width × 3) of at least 3 frames")
    a, b = check_intervals(a, b, len(frames))
    ext = ext or extensions(a, b, len(frames), np.random.default_rng(int(seed)))
    o_a, i_a, i_b, o_b = ext.out_a, ext.in_a, ext.in_b, ext.out_b
    if not (0 <= o_a <= a[0] and a[1] <= i_a <= i_b <= b[0] and b[1] <= o_b <= len(frames)):
        raise ClaviError(f"extension {ext.to_dict()} does not fit actions {a}, {b}")
    v = frames[o_a:o_b]
    c = np.concatenate([frames[i_b:o_b], frames[i_a:i_b], frames[o_a:i_a]])
    lb, lm = o_b - i_b, i_b - i_a
    return Pair(video=v, complement=c, extension=ext, a=a, b=b,
                a_in_v=(a[0] - o_a, a[1] - o_a), b_in_v=(b[0] - o_a, b[1] - o_a),
                b_in_c=(b[0] - i_b, b[1] - i_b), a_in_c=(lb + lm + a[0] - o_a, lb + lm + a[1] - o_a),
                seams=(lb, lb + lm))


# ---- questions ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Action:
    """An action as the templates need it: ``text`` (for E/BE: "move left" / "opening a door"), ``clause`` (the
    BA form, e.g. "the red circle moves left" or "opening a door") and, for world templates, its subject."""
    text: str
    clause: str = ""
    subject: str = ""


@dataclass(frozen=True)
class Templates:
    exist: Callable[[Action], str]
    be: Callable[[Action, str], str]  # (action, "beginning" | "end")
    ba: Callable[[Action, str, Action], str]  # (first-named action, "before" | "after", second-named action)
    name: str = ""


PAPER_TEMPLATES = Templates(
    exist=lambda x: f"Was someone {x.text}?",
    be=lambda x, w: f"Was the person {x.text} at the {w}?",
    ba=lambda x, rel, y: f"Did {x.clause or x.text} happen {rel} {y.clause or y.text}?",
    name="paper")


@dataclass
class Question:
    question: str
    answer_v: str  # on V
    answer_c: str  # on V′
    qtype: str  # E, E-NC, BE, BA, BA-NC
    prime: bool  # Q′ (the swapped-word variant) for BE and BA
    partner: int  # index (in the 19) of its Q′ / Q (itself for E and E-NC)

    def code(self, complement: bool) -> int:
        key = self.qtype + ("'" if self.prime and self.qtype in COMPLEMENT else "")
        return TYPE_CODES[key] + (16 if complement else 0)

    def to_dict(self) -> dict:
        return asdict(self)


def _flip(ans: str) -> str:
    return "no" if ans == "yes" else "yes"


def questions(a: Action, b: Action, c: Action, templates: Templates = PAPER_TEMPLATES) -> list[Question]:
    """The 19 questions for a video whose action ``a`` comes before ``b``, with ``c`` the negative control (an
    action that never occurs). Answers are given for V and for V′ (where ``b`` comes first)."""
    qs: list[Question] = []

    def add(text, ans_v, qtype, prime, flips):
        qs.append(Question(text, ans_v, _flip(ans_v) if flips else ans_v, qtype, prime, len(qs)))

    for x in (a, b):  # E
        add(templates.exist(x), "yes", "E", False, False)
    add(templates.exist(c), "no", "E-NC", False, False)
    for x, true_where in ((a, "beginning"), (b, "end")):  # BE: Q then Q′
        other = "end" if true_where == "beginning" else "beginning"
        add(templates.be(x, true_where), "yes", "BE", False, True)
        add(templates.be(x, other), "no", "BE", True, True)
        qs[-1].partner, qs[-2].partner = len(qs) - 2, len(qs) - 1
    for x, y, true_rel in ((a, b, "before"), (b, a, "after")):  # BA over both orders: Q then Q′
        other = "after" if true_rel == "before" else "before"
        add(templates.ba(x, true_rel, y), "yes", "BA", False, True)
        add(templates.ba(x, other, y), "no", "BA", True, True)
        qs[-1].partner, qs[-2].partner = len(qs) - 2, len(qs) - 1
    for real in (a, b):  # BA-NC: C replaces one action; both positions, both relations (pairs are Q / Q′)
        for c_first in (True, False):
            x, y = (c, real) if c_first else (real, c)
            add(templates.ba(x, "before", y), "no", "BA-NC", False, False)
            add(templates.ba(x, "after", y), "no", "BA-NC", True, False)
            qs[-1].partner, qs[-2].partner = len(qs) - 2, len(qs) - 1
    assert len(qs) == N_QUESTIONS
    return qs


__all__ = ["ClaviError", "Extension", "Pair", "Action", "Templates", "PAPER_TEMPLATES", "Question", "TYPE_CODES",
           "CODE_NAMES", "CONTROL", "COMPLEMENT", "N_QUESTIONS", "check_intervals", "frames_from_seconds", "extensions",
           "complement", "questions"]
