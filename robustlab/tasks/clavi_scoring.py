"""CLAVI's scoring (Rawal et al.): balanced accuracy and the consistent accuracies of a VQA model's answers on a
video and its complement, and the batched asking of one pair's questions. The pair and the questions are dataset
material (:mod:`robustlab.datasets.clavi`), re-exported here so the task reads one module; the method is described in
full in :mod:`robustlab.diagnostics.clavi`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from robustlab.datasets.clavi import (  # noqa: F401  (re-exported)
    CODE_NAMES, COMPLEMENT, CONTROL, N_QUESTIONS, PAPER_TEMPLATES, TYPE_CODES, Action, ClaviError, Extension, Pair,
    Question, Templates, check_intervals, complement, extensions, frames_from_seconds, questions)


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
