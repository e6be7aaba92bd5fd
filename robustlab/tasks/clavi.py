"""CLAVI: 19 questions on each video and on its complement (the two actions swapped), balanced accuracy and
consistent accuracies split into control and complement questions (:mod:`robustlab.diagnostics.clavi`).

Runs on a dataset that builds CLAVI pairs (``dataset.clavi(i, seed=, method=)`` -> (Pair, questions) or None for
a video without two distinct actions): the built-in event videos (:mod:`robustlab.datasets.synthetic.clavi`).
An uploaded video with its two intervals typed in goes through :func:`clavi_one` (the CLAVI page).

Options: ``n`` caps the number of pairs, ``method`` = ``"swap"`` (the paper's complement, default) or
``"render"`` (the built-in world re-rendered with the events exchanged: no seams; not in the paper), ``seed``
(the extensions). A visual condition perturbs V and V′ with the same seed (``condition.seed + i``); a text
condition perturbs each question (the same words on V and V′). V and V′ are cut from the video's frames
(``swap``), so their main-object boxes are the video's at those frames; ``render`` draws V′ anew, so neither
member gets boxes (both take mlvp_occlusion's centred box, and the records say so) and the two stay comparable.

On a video dataset that knows its videos' main-object boxes (the built-in event videos), mlvp_occlusion occludes
the main object (:func:`robustlab.tasks.conditions.mlvp_context`, boxes only); mlvp_event_insertion inserts from
the 32 synthetic clips, and the record says so (corpus 'synthetic (no donor pool given)'): a donor from the
dataset's own videos is matched by the evaluated model's clean video embeddings, and a question-answering model
need not have a video encoder (the retrieval bench, which has them, does insert the dataset's own videos).
"""
from __future__ import annotations

from robustlab.tasks import clavi_scoring as cl
from robustlab.tasks.conditions import mlvp_context, perturb_one, perturb_text
from robustlab.tasks.task import Task
from robustlab.tasks.vqa import answer_many

CHUNK = 8  # pairs per model call (8 × 38 questions)


class ClaviTask(Task):
    name = "clavi"
    takes_interventions = True
    description = "CLAVI (Rawal et al.): 19 questions on a video and its action-swapped complement; balanced " \
                  "accuracy, video- and text-consistent accuracy on control and complement questions"
    needs = ("vqa",)
    kinds = ("video",)
    alternative = "builtin:tiny-vilt"
    options = {"method": "swap (the paper's complement: the two extended action segments swapped) or render (the "
                         "world re-rendered with the events' times swapped: seamless; not in the paper)",
               "seed": "the seed of the random extensions (default 0)"}

    def evaluate(self, model, dataset, conditions=None, *, progress=None, n=None, method: str = "swap",
                 seed: int = 0, **options) -> list:
        """``metrics``: balanced_acc, acc, cacc_v / cacc_t (overall, _control, _complement), yes_rate, pairs,
        questions and ``fine`` (accuracy per released type code). ``n`` caps the number of pairs."""
        if method not in ("swap", "render"):
            raise ValueError(f"CLAVI method {method!r}: use swap (the paper) or render (seamless, built-in world)")
        if not callable(getattr(dataset, "clavi", None)):
            self.check_model(model)
            self.check_dataset(dataset)
            raise ValueError(f"dataset {dataset.name} builds no CLAVI pairs (use builtin-videos, or the CLAVI page "
                             "for an uploaded video with its two actions' intervals)")
        return super().evaluate(model, dataset, conditions, progress=progress, max_pairs=n, method=method,
                                pair_seed=seed, **options)

    def run(self, model, dataset, vc, tc, m, progress, max_pairs=None, method="swap", pair_seed=0, **options):
        cap = int(max_pairs) if max_pairs is not None else None
        answered, pending, considered = [], [], 0
        ctx = None if vc.clean else mlvp_context(dataset)  # the main-object boxes, where the dataset knows them

        def flush():
            visuals, texts = [], []
            for i, pair, qs in pending:
                on_v, on_c = _pair_contexts(ctx, pair)
                v, c = perturb_one(pair.video, vc, i, "video", context=on_v), \
                    perturb_one(pair.complement, vc, i, "video", context=on_c)
                words = [perturb_text(q.question, tc, i) for q in qs]
                visuals += [v] * len(qs) + [c] * len(qs)
                texts += words + words
            preds = answer_many(model, visuals, texts)
            k = 0
            for i, pair, qs in pending:
                nq = len(qs)
                answered.append(cl.PairAnswers(qs, preds[k:k + nq], preds[k + nq:k + 2 * nq],
                                               id=dataset.item(i).id, record=pair.record()))
                k += 2 * nq
            pending.clear()

        for i in range(m):
            considered += 1
            got = dataset.clavi(i, seed=pair_seed, method=method)
            if got is not None:
                pending.append((i, *got))
            if len(pending) >= CHUNK:
                flush()
            if progress:
                progress(len(answered) + len(pending), cap) if cap else progress(i + 1, m)
            if cap is not None and len(answered) + len(pending) >= cap:
                break
        if pending:
            flush()
        if not answered:
            raise ValueError(f"dataset {dataset.name} has no video with two distinct actions in its first {m} items")
        out = cl.metrics(answered)
        return len(answered), out, {"method": method, "pair_seed": int(pair_seed), "videos_considered": considered,
                                    "chance_balanced_acc": 0.5}


def _pair_contexts(ctx, pair):
    """(context of V, context of V′): the video's main-object boxes at the frames each is cut from (``swap``:
    V = frames[out_a:out_b], V′ = frames[in_b:out_b] + frames[in_a:in_b] + frames[out_a:in_a]); none for a
    re-rendered V′ (``render``), nor then for V."""
    if ctx is None:
        return None, None
    e = pair.extension
    if pair.method != "swap":
        return ctx.on_frames(None), ctx.on_frames(None)
    return ctx.on_frames(range(e.out_a, e.out_b)), \
        ctx.on_frames([*range(e.in_b, e.out_b), *range(e.in_a, e.in_b), *range(e.out_a, e.in_a)])


def clavi_one(model, frames, a, b, actions, *, seed: int = 0, templates=cl.PAPER_TEMPLATES,
              fps: float | None = None, seconds: bool = False, ext=None) -> dict:
    """One video with two actions typed in (an upload): its pair, the 19 questions, the model's answers on V and
    V′, the per-question consistency table and the metrics. ``actions`` = (A, B, C) as text (the paper's
    templates: gerund phrases, "opening a door") or :class:`robustlab.diagnostics.clavi.Action`; with
    ``seconds=True`` the intervals are seconds (``fps`` needed)."""
    TASK.check_model(model)
    frames_n = len(frames)
    if seconds:
        a, b = cl.frames_from_seconds(a, b, fps, frames_n)
    acts = [x if isinstance(x, cl.Action) else cl.Action(str(x).strip()) for x in actions]
    if len(acts) != 3 or not all(x.text for x in acts):
        raise cl.ClaviError("CLAVI needs three action phrases: A, B and a negative control C that never happens")
    pair = cl.complement(frames, a, b, ext, seed=seed)
    qs = cl.questions(*acts, templates=templates)
    ans = cl.answer_pair(lambda v, q: answer_many(model, v, q), pair, qs)
    return {"pair": pair, "questions": qs, "answers": ans, "table": ans.consistency(), "metrics": cl.metrics([ans])}


def clavi_item(model, dataset, i: int, *, seed: int = 0, method: str = "swap") -> dict:
    """One built-in video's pair with the model's answers (the same dict as :func:`clavi_one`); a ValueError
    when the video has no two distinct actions."""
    TASK.check_model(model)
    got = dataset.clavi(int(i), seed=seed, method=method)
    if got is None:
        raise cl.ClaviError(f"video {i} has no two events on different objects: CLAVI needs two distinct actions")
    pair, qs = got
    ans = cl.answer_pair(lambda v, q: answer_many(model, v, q), pair, qs, id=dataset.item(int(i)).id)
    return {"pair": pair, "questions": qs, "answers": ans, "table": ans.consistency(), "metrics": cl.metrics([ans])}


TASK = ClaviTask()  # its entry in the task table (robustlab.tasks.registry.TASKS)

__all__ = ["ClaviTask", "clavi_one", "clavi_item", "TASK"]
