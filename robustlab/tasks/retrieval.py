"""Retrieval, the task: text↔image or text↔video R@K, median and mean rank over one dataset, per condition set.

:class:`RetrievalTask` (``rl.tasks.get("retrieval")``) turns the metrics of the one retrieval bench
(:class:`~robustlab.tasks.retrieval_bench.RetrievalBench`, which the pages use too) into
:class:`~robustlab.tasks.result.Result`\\ s; an ``adapt`` condition set runs test-time adaptation through
:mod:`robustlab.tasks.retrieval_adapt`. :func:`eval_retrieval` is the one-call shortcut for notebooks.
"""
from __future__ import annotations

from typing import Optional

from robustlab.datasets import build
from robustlab.engine.cache import EmbeddingCache
from robustlab.metrics.retrieval import median_rank, summarize_ranks
from robustlab.perturb.condition import Condition, check
from robustlab.tasks.conditions import ADAPT, as_conditions
from robustlab.tasks.result import make_result
from robustlab.tasks.retrieval_adapt import adapt_directions, run_adaptation
from robustlab.tasks.retrieval_bench import RetrievalBench, check_model
from robustlab.tasks.task import ProgressFn, Task


class RetrievalTask(Task):
    name = "retrieval"
    description = "text↔image or text↔video retrieval: R@1/5/10, median and mean rank, both directions"
    kinds = ("image", "video")
    needs = ("encode_texts",)  # and encode_images or encode_videos, by the dataset's kind
    alternative = "builtin:tiny-clip (images) or builtin:tiny-clip-video-seqtransf (videos)"
    takes_adaptation = True
    options = {"mdr": "median-rank convention: median (default) or lower, the lower of the two middle ranks as "
                      "HAT-VTR's released code (torch.median); recorded in the Result when not the default"}

    def check_model(self, model, kind: str = "image") -> None:
        check_model(model, kind)

    def check_model_for(self, model, kind: str) -> None:
        check_model(model, kind)

    def sweep_options(self, model, dataset, *, cache=None, worst: int = 0, directions=None) -> dict:
        # one bench for the group (it keeps clean and the current shift only): the adaptation cells of a shift,
        # which come right after it, reuse its perturbed inputs and embeddings
        return {"worst": int(worst), "directions": directions, "keep_ranks": True,
                "bench": RetrievalBench(model, dataset, cache=cache if cache is not None else EmbeddingCache(),
                                        lazy=True)}

    def bench(self, model, dataset, cache=None, lazy: bool = False) -> RetrievalBench:
        self.check_dataset(dataset)
        return RetrievalBench(model, dataset, cache=cache, lazy=lazy)

    def evaluate(self, model, dataset, conditions=None, *, progress: ProgressFn = None, cache=None,
                 ks=(1, 5, 10), order: bool = True, worst: int = 0, lazy: bool = True,
                 bench: Optional[RetrievalBench] = None, directions=None, keep_ranks: bool = False,
                 mdr: str = "median", **options) -> list:
        """One :class:`Result` per condition set: ``metrics = {"t2i": {R@1, R@5, R@10, MdR, MnR}, "i2t": ...}``
        (t2v / v2t for videos) and, for video datasets with time-reversed captions, the order-sensitivity numbers of
        :meth:`RetrievalBench.order_metrics` (``t2v_R@1_reversed``, ``order_acc``...). ``lazy`` (default): videos
        are perturbed only at the frames the model samples (same numbers, far less work; see RetrievalBench).

        A condition set with an ``adapt`` method (:mod:`robustlab.adapt`) runs it on the queries of its one
        perturbed side, in each direction whose queries those are (visual shift: i2t / v2t; text shift: t2i /
        t2v) and that ``directions`` (None: all) keeps: ``metrics = {"v2t": {R@1...}}`` after adaptation, and
        ``extra["adapt"]`` the method, its full parameters, the clean and shifted metrics of the same queries and
        the seconds per 1,000 queries. ``bench``: a RetrievalBench of this model and dataset to reuse across
        calls (a sweep's cells; it keeps only clean and the current condition). ``keep_ranks`` (sweeps: on):
        ``extra["ranks"] = {direction: [1-based rank of each query's ground truth]}``, from which the report's
        bootstrap intervals are computed, and ``extra["top1"]``: the target each query ranks first (a failure map's
        "thief", :meth:`RetrievalBench.top1`), in the same query order (not for adaptation cells)."""
        conds = as_conditions(conditions)
        median_rank((), mdr)  # ``mdr``: the MdR convention (robustlab.metrics.retrieval.median_rank), checked first
        self.check_dataset(dataset)
        check_model(model, dataset.kind)
        self.check_interventions(conds, model)
        for c in conds:  # refuse a wrong perturbation or adaptation before any work
            if "visual" in c:
                check(c["visual"], dataset.kind)
            if "text" in c:
                check(c["text"], "text")
            if ADAPT in c:
                adapt_directions(c, dataset.kind, directions)
        shared = bench is not None
        if bench is None:
            bench = RetrievalBench(model, dataset, cache=cache if cache is not None else EmbeddingCache(), lazy=lazy)
        elif bench.model is not model or bench.dataset is not dataset:
            raise ValueError("the bench passed to retrieval is of another model or dataset")
        out = []
        for i, c in enumerate(conds):
            vc, tc = c.get("visual", Condition()), c.get("text", Condition())
            if shared:
                bench.forget((vc, tc))
            prog = (lambda d, t, i=i: progress(i * t + d, len(conds) * t)) if progress else None
            if ADAPT in c:
                m, info = run_adaptation(bench, model, dataset, c, directions, prog, mdr)
                out.append(make_result(self.name, model, dataset, c, len(dataset), m, texts=len(bench._texts0),
                                       adapt=info, mdr=None if mdr == "median" else mdr))
                continue
            rk = bench.ranks(vc, tc, progress=prog)
            m = {d: summarize_ranks(r, ks, mdr) for d, r in rk.items()}
            if order:
                m.update(bench.order_metrics(vc, tc))
            bad = bench.worst_examples(vc, tc, int(worst)) if worst and (not vc.clean or not tc.clean) else None
            drop = bench.dropped_texts(tc)
            out.append(make_result(self.name, model, dataset, c, len(dataset), m, texts=len(bench._texts0),
                                   dropped={"n": len(drop), "of": len(bench._texts0), "queries": drop,
                                            "why": "MLVP similarity gate: no attempt passed; left out of the "
                                                   "text queries"} if drop else None,
                                   worst=bad, ranks={d: [int(x) for x in r] for d, r in rk.items()}
                                   if keep_ranks else None,
                                   top1={d: [int(x) for x in t] for d, t in bench.top1(vc, tc).items()}
                                   if keep_ranks else None, mdr=None if mdr == "median" else mdr))
        return out


TASK = RetrievalTask()  # its entry in the task table (robustlab.tasks.registry.TASKS)


def eval_retrieval(model, n: int = 1000, seed: Optional[int] = None, image_perturb: Optional[str] = None,
                   image_severity: int = 0, text_perturb: Optional[str] = None, text_severity: int = 0,
                   perturb_seed: int = 0, dataset: str = "builtin", cache=None, progress: ProgressFn = None) -> dict:
    """One-call retrieval on the first ``n`` items of a built-in held-out split: flat metrics
    (``t2i_R@1`` ... ``i2t_MnR``) with the settings. The task layer does the work
    (``rl.tasks.get("retrieval").evaluate``); this is its shortcut for notebooks."""
    ds = build(dataset, split="test", n=int(n), **({"seed": int(seed)} if seed is not None else {}))
    conds = {k: Condition(name, sev, perturb_seed) for k, name, sev in
             (("visual", image_perturb, image_severity), ("text", text_perturb, text_severity)) if name and sev}
    r = TASK.evaluate(model, ds, conds, cache=cache if cache is not None else EmbeddingCache(enabled=False),
                      progress=progress)[0]
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in r.flat().items()}
    out.update(n=r.n, seed=ds.params.get("seed"), model=r.model)
    if "visual" in conds:
        out.update(image_perturb=image_perturb, image_severity=int(image_severity))
    if "text" in conds:
        out.update(text_perturb=text_perturb, text_severity=int(text_severity))
    return out


__all__ = ["RetrievalTask", "eval_retrieval", "TASK"]
