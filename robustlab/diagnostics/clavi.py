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

# the pair and the questions are dataset material (robustlab.datasets.clavi), the scoring is the CLAVI task's
# (robustlab.tasks.clavi_scoring); both layers sit below this one, and this module names them as one diagnostic
from robustlab.tasks.clavi_scoring import (  # noqa: F401
    CODE_NAMES, COMPLEMENT, CONTROL, N_QUESTIONS, PAPER_TEMPLATES, TYPE_CODES, Action, ClaviError, Extension, Pair,
    PairAnswers, Question, Templates, _norm, answer_pair, balanced_accuracy, check_intervals, complement, extensions,
    fine_rows, frames_from_seconds, metrics, questions)

__all__ = ["ClaviError", "Extension", "Pair", "Action", "Templates", "PAPER_TEMPLATES", "Question", "PairAnswers",
           "TYPE_CODES", "CODE_NAMES", "CONTROL", "COMPLEMENT", "N_QUESTIONS", "check_intervals",
           "frames_from_seconds", "extensions", "complement", "questions", "balanced_accuracy", "metrics",
           "fine_rows", "answer_pair"]
