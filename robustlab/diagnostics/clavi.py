"""CLAVI (Complements in LAnguage and VIdeo; Rawal et al., "Dissecting multimodality in VideoQA transformer models
by impairing modality fusion", §5 and App. B): does a video-QA model answer by the order of events, or by the
question's words and the events' presence alone?

Implemented from the paper (its released scripts are GPL-3.0 and are not used).

**Complement videos** (§5.1, App. B.1; :func:`extensions`, :func:`complement`). A video with two action intervals
A = [a0, a1) and B = [b0, b1) (no overlap, A first) gives

* the *positive* video V: the original trimmed to [out_a, out_b);
* the *complement* V′: the two boundary-extended action segments swapped, the region between them kept:
  ``V′ = frames[in_b:out_b] ⊕ frames[in_a:in_b] ⊕ frames[out_a:in_a]`` (the released ffmpeg recipe's order).

The extensions are random (against position bias; seeded here): *out-extensions* reach outward into the video
(``a0 − out_a`` and ``out_b − b1``), *in-extensions* inward into the region between the actions (``in_a − a1`` and
``b0 − in_b``), and the two sums are equal, so the separation between the actions is the same in V and V′. Times
are frame indices (an upload's intervals in seconds are turned into frames with its rate:
:func:`frames_from_seconds`). V′ has two discontinuities (at the seams), as in the paper; on the built-in world
:func:`robustlab.datasets.synthetic.clavi.rendered_complement` offers a seamless alternative (labelled "not in
the paper").

**Questions** (§5.1, Table 2, App. B.1; :func:`questions`): 19 per video, the same 19 texts for V and V′ with the
answers of each — 2 existence (E, "yes"), 1 negative-control existence about an action C that does not occur
(E-NC, "no"), 4 beginning/end (BE: for each action, Q is the statement true on V and Q′ swaps beginning ↔ end), 4
before/after (BA: both orders of the two actions; Q true on V, Q′ swaps before ↔ after) and 8 negative-control
before/after with one action replaced by C (BA-NC, "no"). yes:no = 6:13 on both videos. Type codes are the released
data's: 0 E, 1 E-NC, 4 BE (Q), 5 BE (Q′), 8 BA (Q), 9 BA (Q′), 10 BA-NC, +16 on V′.

Templates (:class:`Templates`) turn an action into words. :data:`PAPER_TEMPLATES` are the paper's ("Was someone
⟨A⟩?", "Was the person ⟨A⟩ at the beginning?", "Did ⟨A1⟩ happen before ⟨A2⟩?") for actions typed as gerund
phrases ("opening a door"); the built-in world has its own (the questions tiny-vilt is trained on:
"does the red circle move left at the beginning?").

**Metrics** (§5.1–5.2; :func:`metrics`):

* balanced accuracy over every question of V and V′: ½(recall_yes + recall_no) — the paper names it without a
  formula; this is the standard definition;
* video-consistent accuracy CAcc_V per (V, Q): right on (V, Q) and on (V′, Q);
* text-consistent accuracy CAcc_T per (V, Q): right on (V, Q) and on (V, Q′), over the questions of V and of V′;
  the paper leaves Q′ undefined for E and E-NC: each is paired with itself (CAcc_T = its accuracy), and BA-NC uses
  its before ↔ after swap (the digest's recommendation, §2.3);
* both split into the *control* subset (E, E-NC, BA-NC: answerable without time) and the *complement* subset (BE,
  BA), and the fine-grained accuracy per type code (the paper's Table 15 layout: V/V′ × type × Q/Q′).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Optional, Sequence

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


# ---- metrics ----------------------------------------------------------------------------------------------
def _norm(a) -> str:
    return str(a).strip().lower()


def balanced_accuracy(truth: Sequence[str], pred: Sequence[str]) -> float:
    """½(recall of "yes" + recall of "no"); an answer that is neither counts as wrong."""
    t, p = np.array([_norm(x) for x in truth]), np.array([_norm(x) for x in pred])
    recalls = [float((p[t == k] == k).mean()) for k in ("yes", "no") if (t == k).any()]
    return float(np.mean(recalls)) if recalls else float("nan")


@dataclass
class PairAnswers:
    """The model's answers for one pair: ``on_v[k]`` and ``on_c[k]`` answer question k of ``questions``."""
    questions: list[Question]
    on_v: list[str]
    on_c: list[str]
    id: str = ""
    record: dict = field(default_factory=dict)

    def right(self) -> tuple[np.ndarray, np.ndarray]:
        rv = np.array([_norm(p) == q.answer_v for p, q in zip(self.on_v, self.questions)])
        rc = np.array([_norm(p) == q.answer_c for p, q in zip(self.on_c, self.questions)])
        return rv, rc

    def consistency(self) -> list[dict]:
        """Per question: right on V, right on V′, video-consistent, text-consistent on V and on V′."""
        rv, rc = self.right()
        out = []
        for k, q in enumerate(self.questions):
            out.append({"question": q.question, "qtype": q.qtype, "prime": q.prime, "answer_v": q.answer_v,
                        "answer_c": q.answer_c, "pred_v": self.on_v[k], "pred_c": self.on_c[k],
                        "right_v": bool(rv[k]), "right_c": bool(rc[k]), "cacc_v": bool(rv[k] and rc[k]),
                        "cacc_t_v": bool(rv[k] and rv[q.partner]), "cacc_t_c": bool(rc[k] and rc[q.partner]),
                        "code_v": q.code(False), "code_c": q.code(True)})
        return out


def metrics(pairs: Sequence[PairAnswers]) -> dict:
    """Balanced accuracy, accuracy, CAcc_V and CAcc_T (overall, control, complement), the yes rate and the
    fine-grained accuracy per type code (``fine``: code -> {"name", "acc", "n"})."""
    if not pairs:
        raise ClaviError("no CLAVI pairs were answered")
    truth, pred, cv, ct, ctrl, fine = [], [], [], [], [], {}
    for p in pairs:
        rv, rc = p.right()
        for k, q in enumerate(p.questions):
            truth += [q.answer_v, q.answer_c]
            pred += [p.on_v[k], p.on_c[k]]
            is_ctrl = q.qtype in CONTROL
            cv.append((bool(rv[k] and rc[k]), is_ctrl))
            ct += [(bool(rv[k] and rv[q.partner]), is_ctrl), (bool(rc[k] and rc[q.partner]), is_ctrl)]
            ctrl.append(is_ctrl)
            for code, ok in ((q.code(False), rv[k]), (q.code(True), rc[k])):
                fine.setdefault(code, []).append(bool(ok))

    def mean(rows, subset=None):
        vals = [ok for ok, c in rows if subset is None or c == subset]
        return float(np.mean(vals)) if vals else float("nan")

    right = np.array([_norm(x) == _norm(y) for x, y in zip(pred, truth)])
    return {"balanced_acc": balanced_accuracy(truth, pred), "acc": float(right.mean()),
            "cacc_v": mean(cv), "cacc_t": mean(ct),
            "cacc_v_control": mean(cv, True), "cacc_t_control": mean(ct, True),
            "cacc_v_complement": mean(cv, False), "cacc_t_complement": mean(ct, False),
            "yes_rate": float(np.mean([_norm(x) == "yes" for x in pred])), "pairs": len(pairs),
            "questions": len(truth),
            "fine": {str(code): {"name": CODE_NAMES[code], "acc": float(np.mean(v)), "n": len(v)}
                     for code, v in sorted(fine.items())}}


def fine_rows(m: dict) -> list[dict]:
    """The fine-grained accuracies of :func:`metrics` in the paper's Table 15 layout: one row per question type,
    columns (V, Q), (V, Q′), (V′, Q), (V′, Q′) (Q′ only for BE, BA and BA-NC; BA-NC's Q′ shares code 10)."""
    fine = m.get("fine", {})
    rows = []
    for t in ("E", "E-NC", "BE", "BA", "BA-NC"):
        row = {"type": t, "subset": "control" if t in CONTROL else "complement"}
        for side, off in (("V", 0), ("V'", 16)):
            for prime in ("Q", "Q'"):
                key = t + ("'" if prime == "Q'" and t in COMPLEMENT else "")
                if prime == "Q'" and t in ("E", "E-NC"):
                    continue
                cell = fine.get(str(TYPE_CODES[key] + off))
                col = f"{side}, {prime}" if t not in ("E", "E-NC", "BA-NC") else f"{side}, Q"
                if t == "BA-NC" and prime == "Q'":
                    continue  # one code for both relations
                row[col] = None if cell is None else round(cell["acc"], 4)
        rows.append(row)
    return rows


def answer_pair(vqa_batch: Callable[[list, list], list], pair: Pair, qs: list[Question], *, id: str = "",
                record: Optional[dict] = None) -> PairAnswers:
    """Ask the 19 questions on V and on V′ in one batch (``vqa_batch(visuals, questions) -> answers``)."""
    texts = [q.question for q in qs]
    ans = vqa_batch([pair.video] * len(qs) + [pair.complement] * len(qs), texts + texts)
    return PairAnswers(qs, [str(x) for x in ans[:len(qs)]], [str(x) for x in ans[len(qs):]], id=id,
                       record={**pair.record(), **(record or {})})


__all__ = ["ClaviError", "Extension", "Pair", "Action", "Templates", "PAPER_TEMPLATES", "Question", "PairAnswers",
           "TYPE_CODES", "CODE_NAMES", "CONTROL", "COMPLEMENT", "N_QUESTIONS", "check_intervals",
           "frames_from_seconds", "extensions", "complement", "questions", "balanced_accuracy", "metrics",
           "fine_rows", "answer_pair"]
