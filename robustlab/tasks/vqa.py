"""Visual question answering (images or videos): accuracy, overall and per question type.

Every question of every item is asked (the built-in world has one per item, :mod:`robustlab.datasets.synthetic.qa`).
A visual condition perturbs the visuals, a text condition the questions (a question that loses every word becomes
"?"); item ``i`` gets seed ``condition.seed + i``. Answers are compared exactly (the built-in world's vocabulary;
hub VQA models' answers are lower-cased and stripped).

On a video dataset that knows its videos' main-object boxes (the built-in event videos), mlvp_occlusion occludes
the main object (:func:`robustlab.tasks.conditions.mlvp_context`, boxes only); mlvp_event_insertion inserts from
the 32 synthetic clips, and the record says so (corpus 'synthetic (no donor pool given)'): a donor from the
dataset's own videos is matched by the evaluated model's clean video embeddings, and a question-answering model need
not have a video encoder (the retrieval bench, which has them, does insert the dataset's own videos).

**Multiple choice.** A question whose ``meta`` holds ``choices`` (its options) and ``answer_index`` (the right
one's index) — NeXT-QA's five-way questions (:mod:`robustlab.datasets.video_qa`) — is scored as its paper scores
it: the model picks one option, right when it is option ``answer_index``. robustlab's VQA models answer open
questions (``vqa(visual, question) -> (answer, scores)``, ``scores`` over the model's answer vocabulary: all of it
for ``builtin:tiny-vilt``, the top five for ``hf-vilt:``), so the option picked is, in this order (:func:`pick`):

1. ``scores`` — the highest-scoring option among those the model scored (an option and a scored answer compared
   normalised: lower-cased, punctuation and the articles a / an / the dropped);
2. ``match`` — else the option equal to the model's answer, normalised;
3. ``overlap`` — else the option sharing the most words with the answer (word F1, as SQuAD scores answers), when one
   option has the unique best positive overlap;
4. ``none`` — else no option: the question counts as wrong (never a guess; chance, 1 / the number of options, is
   the metric ``chance_acc``).

The options are never perturbed (a text condition perturbs the question). ``choices="open"`` scores such questions
as open ones instead (the right option's text against the model's answer, exactly). The result says which scoring
was used: ``extra["scoring"]`` is ``"multiple-choice"``, ``"open"`` or ``"mixed"`` (a dataset with both kinds of
question), and ``extra["picks"]`` counts how each option was picked.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Optional, Sequence

import numpy as np

from robustlab.datasets.base import QA
from robustlab.tasks.conditions import mlvp_context, perturb_one, perturb_text
from robustlab.tasks.task import Task, chunks

CHUNK = 100  # items per model call (the numbers do not depend on it; memory does)
MODES = ("auto", "open")  # the ``choices`` option: multiple choice where a question has options, or never
PICKS = ("scores", "match", "overlap", "none")  # how an option was picked, in the order tried
_NOT_WORD = re.compile(r"[^\w\s]")
_ARTICLES = frozenset({"a", "an", "the"})


def answer_many(model, visuals, questions) -> list[str]:
    return [a for a, _ in answers_with_scores(model, visuals, questions)]


def answers_with_scores(model, visuals, questions) -> list[tuple[str, dict]]:
    """``(answer, {answer: score})`` per question (``vqa_batch`` when the model has it, else ``vqa`` one by one)."""
    if hasattr(model, "vqa_batch"):
        return [(a, s) for a, s in model.vqa_batch(visuals, questions)]
    return [tuple(model.vqa(v, q)) for v, q in zip(visuals, questions)]


def _norm(a: str) -> str:
    return str(a).strip().lower()


def _words(text) -> list[str]:
    """The words of an answer or option as the multiple-choice pick compares them: lower-cased, punctuation and
    the articles a / an / the dropped."""
    return [w for w in _NOT_WORD.sub(" ", str(text).lower()).split() if w not in _ARTICLES]


def choices_of(qa: QA) -> Optional[list[str]]:
    """A multiple-choice question's options (``meta["choices"]``), None for an open question. ValueError (one line)
    when ``meta`` has options but no ``answer_index`` naming one of them."""
    meta = qa.meta if isinstance(qa.meta, dict) else {}
    if "choices" not in meta:
        return None
    ch, k = meta["choices"], meta.get("answer_index")
    if not isinstance(ch, (list, tuple)) or len(ch) < 2 or not all(isinstance(c, str) for c in ch):
        raise ValueError(f"question {qa.question[:60]!r}: meta['choices'] is not a list of two or more option texts")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= int(k) < len(ch):
        raise ValueError(f"question {qa.question[:60]!r}: meta['answer_index'] is {k!r}, not an index into its "
                         f"{len(ch)} choices (0..{len(ch) - 1})")
    return list(ch)


def _f1(a: list[str], b: list[str]) -> float:
    common = sum((Counter(a) & Counter(b)).values())
    return 0.0 if not common else 2 * common / (len(a) + len(b))


def pick(answer: str, scores: Optional[dict], choices: Sequence[str]) -> tuple[int, str]:
    """``(index of the option picked or -1, how: one of PICKS)`` for a model's ``answer`` and ``scores`` (see the
    module's docstring). Ties go to the first option."""
    words = [" ".join(_words(c)) for c in choices]
    scored: dict[str, float] = {}
    for a, s in (scores or {}).items():
        key = " ".join(_words(a))
        if isinstance(s, (int, float, np.floating)) and np.isfinite(s):
            scored[key] = max(float(s), scored.get(key, -np.inf))
    covered = [(scored[w], -j) for j, w in enumerate(words) if w in scored]
    if covered:
        return -max(covered)[1], "scores"
    given = _words(answer)
    if " ".join(given) in words:
        return words.index(" ".join(given)), "match"
    f1 = [_f1(given, w.split()) for w in words]
    best = max(f1)
    if best > 0 and f1.count(best) == 1:
        return f1.index(best), "overlap"
    return -1, "none"


def judge(qa: QA, answer: str, scores: Optional[dict] = None, choices: str = "auto") -> tuple[int, str, str]:
    """``(1 right / 0 wrong, the answer as scored, how)`` of one model answer to ``qa``: for a multiple-choice
    question (``choices="auto"``) the option picked (its text; the model's own answer when none was) and how
    (:data:`PICKS`); otherwise the exact comparison, lower-cased and stripped, and how ``"open"``."""
    options = choices_of(qa) if choices == "auto" else None
    if options is None:
        return int(_norm(answer) == _norm(qa.answer)), str(answer), "open"
    j, how = pick(answer, scores, options)
    return int(j == int(qa.meta["answer_index"])), (options[j] if j >= 0 else str(answer)), how


class VQATask(Task):
    name = "vqa"
    takes_interventions = True
    description = "visual question answering on images or videos: accuracy overall and per question type"
    needs = ("vqa",)
    alternative = "builtin:tiny-vilt (or hf-vilt:dandelin/vilt-b32-finetuned-vqa)"
    options = {"choices": "auto (multiple choice where a question has options: NeXT-QA) or open (exact answers)"}

    def run(self, model, dataset, vc, tc, m, progress, choices: str = "auto", **options):
        """``metrics = {"acc", "per_type": {qtype: {"acc", "n"}}}`` (plus ``"chance_acc"`` when every question is
        multiple-choice); ``extra["correct"]`` / ``extra["answers"]``: each question's 1/0 and the answer given, as
        scored (items in order, each item's questions in order; a failure map's per-example outcome);
        ``extra["scoring"]``: ``"open"``, ``"multiple-choice"`` or ``"mixed"``; ``extra["picks"]``: how many options
        were picked each way (multiple-choice questions only)."""
        if choices not in MODES:
            raise ValueError(f"task vqa option choices={choices!r}: {' or '.join(MODES)}")
        right, per_type, given, hows, chance = [], defaultdict(list), [], [], []
        ctx = None if vc.clean else mlvp_context(dataset)  # the main-object boxes, where the dataset knows them
        for idx in chunks(m, CHUNK):
            visuals, questions, qas = [], [], []
            for i in idx:
                item = dataset.item(i)
                if not item.questions:
                    continue
                v = perturb_one(dataset.visual(i), vc, i, dataset.kind, context=ctx)
                for q in item.questions:
                    options_ = choices_of(q) if choices == "auto" else None  # checked before the model runs
                    chance.append(1 / len(options_) if options_ else None)
                    visuals.append(v)
                    questions.append(perturb_text(q.question, tc, i))
                    qas.append(q)
            for (a, s), q in zip(answers_with_scores(model, visuals, questions), qas):
                ok, shown, how = judge(q, a, s, choices)
                given.append(shown)
                right.append(ok)
                hows.append(how)
                per_type[q.qtype or "all"].append(ok)
            if progress:
                progress(idx[-1] + 1, m)
        if not right:
            raise ValueError(f"dataset {dataset.name} has no questions in its first {m} items")
        mc = [h for h in hows if h != "open"]
        scoring = "open" if not mc else "multiple-choice" if len(mc) == len(hows) else "mixed"
        metrics = {"acc": float(np.mean(right)), "per_type": {k: {"acc": float(np.mean(v)), "n": len(v)}
                                                              for k, v in sorted(per_type.items())}}
        if scoring == "multiple-choice":
            metrics["chance_acc"] = float(np.mean(chance))
        extra = {"questions": len(right), "correct": right, "answers": given, "scoring": scoring}
        if mc:
            extra["picks"] = {p: mc.count(p) for p in PICKS}
        return m, metrics, extra

    def forward_probe(self, dataset, m: int, size: int = 8):
        """One batch of the first ``size`` items that have questions (their first question each)."""
        idx = [i for i in range(min(m, 4 * size)) if dataset.item(i).questions][:size]
        if not idx:
            return None
        visuals = [dataset.visual(i) for i in idx]
        questions = [dataset.item(i).questions[0].question for i in idx]
        return lambda model: answer_many(model, visuals, questions)


TASK = VQATask()  # its entry in the task table (robustlab.tasks.registry.TASKS)

__all__ = ["VQATask", "answer_many", "answers_with_scores", "choices_of", "pick", "judge", "MODES", "PICKS", "TASK"]
