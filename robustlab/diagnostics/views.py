"""UI-free glue behind the dashboard's Hubness and Embeddings pages.

Everything here takes a :class:`robustlab.tasks.retrieval_bench.RetrievalBench` (a model and an image or video dataset,
with memoised perturbed visuals, captions and embeddings) and returns plain data (numpy arrays, dicts, dataclasses
that pickle), so the pages only draw widgets and figures and Streamlit can cache the results.

Directions: ``"t2i"``/``"t2v"`` — every caption queries every image/video (hubs are visuals); ``"i2t"``/``"v2t"`` —
every captioned visual queries every caption (hubs are captions). A perturbation applies to one modality, the other
stays clean; "clean" below always means both modalities clean.

    >>> view = hubness_view(bench, "t2i", Condition("gaussian_noise", 3), Condition(), k=15)
    >>> view.nk_clean, view.nk_perturbed, view.measures_perturbed["k_skewness"]
    >>> pts = embedding_points(bench, Condition("gaussian_noise", 3), Condition(), n_items=200, method="pca")
    >>> examples = robustlab.export.selection.selection_examples(bench, pts, rows=[0, 5, 7], ...)
    >>> vpts = embedding_points(video_bench, Condition("motion_blur", 3), Condition(), n_items=100)  # videos
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robustlab.diagnostics import embedding, hubness, reduction
from robustlab.metrics.retrieval import retrieval
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import RetrievalBench

DIRECTIONS = {"t2i": "text→image", "i2t": "image→text"}
VIDEO_DIRECTIONS = {"t2v": "text→video", "v2t": "video→text"}


# ---- scores -------------------------------------------------------------------------------------------------
def score_matrix(bench: RetrievalBench, direction: str, visual_cond: Condition, text_cond: Condition,
                 progress=None):
    """Queries × targets in ``direction`` with the ground truth (:class:`robustlab.tasks.retrieval_bench.Scores`)."""
    return bench.score_matrix(direction, visual_cond, text_cond, progress)


def _recall(scores: np.ndarray, gt) -> dict:

    return {k: float(v) for k, v in retrieval(scores, gt).items()}


def _check_k(k: int, n_targets: int) -> int:
    k = int(k)
    if not 1 <= k < max(n_targets, 2):
        raise ValueError(f"k must be between 1 and {max(n_targets - 1, 1)} for a gallery of {n_targets} targets, "
                         f"got {k}")
    return k


# ---- hubness ------------------------------------------------------------------------------------------------
@dataclass
class HubnessView:
    """Everything the Hubness page shows for one dataset, direction, perturbation and k."""
    direction: str
    k: int
    label: str  # the perturbation, e.g. "gaussian_noise s3 (image)" or "clean"
    targets: np.ndarray  # item index (t2*) or text index (*2t) of each target column
    gt: np.ndarray  # each query's own target (the heatmap's diagonal)
    scores_clean: np.ndarray  # queries × targets
    scores_perturbed: np.ndarray
    nk_clean: np.ndarray  # k-occurrence of every target
    nk_perturbed: np.ndarray
    measures_clean: dict
    measures_perturbed: dict
    recall_clean: dict
    recall_perturbed: dict
    # every positive target per query when there can be several (identical captions, several captions per
    # image); R@K and ranks use these. None: ``gt`` is the only positive.
    positives: list | None = None

    @property
    def n_queries(self) -> int:
        return int(self.scores_clean.shape[0])

    @property
    def n_targets(self) -> int:
        return int(self.scores_clean.shape[1])


def condition_label(visual_cond: Condition, text_cond: Condition, visual: str = "image") -> str:
    parts = [f"{c.label()} ({m})" for c, m in ((visual_cond, visual), (text_cond, "text")) if not c.clean]
    return " + ".join(parts) or "clean"


def hubness_view(bench: RetrievalBench, direction: str, visual_cond: Condition, text_cond: Condition, k: int = 15,
                 progress=None) -> HubnessView:
    """Clean vs perturbed k-occurrence, hubness measures and recall of every target in ``direction`` (t2i / i2t
    for image datasets, t2v / v2t for video datasets)."""
    sc = bench.score_matrix(direction, Condition(), Condition(), progress)
    sp = bench.score_matrix(direction, visual_cond, text_cond, progress)
    k = _check_k(k, sc.scores.shape[1])
    nkc = np.asarray(hubness.k_occurrence(sc.scores, k=k))
    nkp = np.asarray(hubness.k_occurrence(sp.scores, k=k))
    positives = None if isinstance(sc.positives, np.ndarray) else [list(p) for p in sc.positives]
    return HubnessView(direction=direction, k=k, label=condition_label(visual_cond, text_cond, bench.kind),
                       targets=sc.targets, gt=sc.gt, scores_clean=sc.scores, scores_perturbed=sp.scores,
                       nk_clean=nkc, nk_perturbed=nkp, measures_clean=_floats(hubness.measures(n_k=nkc, k=k)),
                       measures_perturbed=_floats(hubness.measures(n_k=nkp, k=k)),
                       recall_clean=_recall(sc.scores, sc.positives), recall_perturbed=_recall(sp.scores, sp.positives),
                       positives=positives)


def _floats(d: dict) -> dict:
    return {k: float(v) for k, v in d.items()}


def occurrence_counts(*nks: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Integer bins 0..max N_k shared by every array, and how many targets fall in each bin, per array."""
    top = int(max((int(np.max(a)) for a in nks if len(a)), default=0))
    bins = np.arange(top + 1)
    return bins, [np.bincount(np.asarray(a, dtype=np.int64), minlength=top + 1) for a in nks]


def compare_table(before: dict, after: dict, names=("clean", "perturbed")) -> list[dict]:
    """Rows ``{"measure", <before>, <after>, "change"}`` for the keys both dicts share (in ``before``'s order)."""
    a, b = names
    return [{"measure": m, a: before[m], b: after[m], "change": after[m] - before[m]}
            for m in before if m in after]


def top_hubs(nk: np.ndarray, m: int) -> list[int]:
    """Indices (into the targets) of the ``m`` targets with the largest k-occurrence, largest first."""
    return [int(i) for i in hubness.top_hubs(np.asarray(nk), int(m))]


def heatmap_indices(n_queries: int, max_n: int = 150) -> np.ndarray:
    """Evenly spaced query rows to show (all of them when there are at most ``max_n``)."""
    if n_queries <= max_n:
        return np.arange(n_queries)
    return np.unique(np.linspace(0, n_queries - 1, max_n).round().astype(np.int64))


def heatmap(view: HubnessView, which: str, max_n: int = 150) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A square (sub)matrix: sampled queries × their ground-truth targets (so the diagonal is the ground truth).
    Returns (matrix, query indices, target indices)."""
    s = view.scores_clean if which == "clean" else view.scores_perturbed
    rows = heatmap_indices(view.n_queries, max_n)
    cols = view.gt[rows]
    return s[np.ix_(rows, cols)], rows, cols


# ---- hubness reduction --------------------------------------------------------------------------------------
@dataclass
class ReductionView:
    method: str
    params: dict
    recall: dict = field(default_factory=dict)  # condition -> {"before": {...}, "after": {...}}
    nk: dict = field(default_factory=dict)  # condition -> {"before": array, "after": array}
    measures: dict = field(default_factory=dict)  # condition -> {"before": {...}, "after": {...}}


def reduction_methods() -> dict:
    """The hubness-reduction registry (``robustlab.diagnostics.reduction.METHODS``): name -> Method (label,
    description, params with defaults)."""
    return dict(reduction.METHODS)


def reduce_view(view: HubnessView, method: str, **params) -> ReductionView:
    """Before/after R@K, k-occurrence and hubness measures of a reduction applied to the clean and the perturbed
    score matrices."""
    out = ReductionView(method=method, params=dict(params))
    for cond, s, nk, meas, rec in (("clean", view.scores_clean, view.nk_clean, view.measures_clean,
                                    view.recall_clean),
                                   ("perturbed", view.scores_perturbed, view.nk_perturbed, view.measures_perturbed,
                                    view.recall_perturbed)):
        r = np.asarray(reduction.reduce(s, method, **params), dtype=np.float32)
        out.recall[cond] = {"before": rec,
                            "after": _recall(r, view.gt if view.positives is None else view.positives)}
        nk_after = np.asarray(hubness.k_occurrence(r, k=view.k))
        out.nk[cond] = {"before": nk, "after": nk_after}
        out.measures[cond] = {"before": meas, "after": _floats(hubness.measures(n_k=nk_after, k=view.k))}
    return out


# ---- embeddings ---------------------------------------------------------------------------------------------
@dataclass
class EmbeddingPoints:
    """2-D positions of visual (image or video) and text embeddings, clean and perturbed; row r is one point.
    Rows come in blocks of ``n_items`` (the same items in the same order): visual clean, captions clean, then
    visual perturbed and captions perturbed when that modality is perturbed."""
    xy: np.ndarray  # (n, 2)
    item: np.ndarray  # gallery item of each point
    modality: np.ndarray  # "image" | "video" | "text"
    condition: np.ndarray  # "clean" | "perturbed"
    k_occurrence: np.ndarray  # N_k of the point as a retrieval target in its own condition
    text: list[str]  # the caption (text points) or the item's caption (visual points), for hovers
    pairs: list[tuple[int, int]]  # (clean row, perturbed row) of the same item and modality
    method: str
    k: int
    n_items: int

    def __len__(self) -> int:
        return len(self.item)


def is_video_bench(bench) -> bool:
    return bench.kind == "video"


def visual_modality(bench) -> str:
    return bench.kind


def caption_columns(bench) -> dict[int, int]:
    """Dataset item -> the index of its first caption in ``bench.texts(...)`` (uncaptioned items are absent)."""
    return dict(bench.caption_of)


def sample_items(bench, n_items: int, seed: int = 0) -> np.ndarray:
    """Up to ``n_items`` captioned items (a seeded subsample when there are more), sorted."""
    cap = np.asarray(sorted(caption_columns(bench)), dtype=np.int64)
    n = int(n_items)
    if n < 1:
        raise ValueError(f"choose at least one item, got {n}")
    if n >= len(cap):
        return cap
    return np.sort(np.random.default_rng(seed).choice(cap, size=n, replace=False))


def _both_directions(bench, visual_cond: Condition, text_cond: Condition, progress=None):
    """(visual embeddings of every item, scores caption→visual, scores visual→caption) from one captions × visual
    product (every visual is a target, only captioned ones query)."""
    s = bench.scores(visual_cond, text_cond, progress)
    return bench.visuals(visual_cond)[2], s, s[:, np.asarray(bench.captioned, dtype=np.int64)].T


def embedding_points(bench, visual_cond: Condition, text_cond: Condition, n_items: int = 200,
                     method: str = "tsne", perplexity: float = 30.0, seed: int = 0, k: int = 15,
                     progress=None) -> EmbeddingPoints:
    """Project the visual and text embeddings of up to ``n_items`` captioned items (clean, and perturbed for the
    perturbed modality) to 2-D with t-SNE or PCA (``bench``: image or video dataset). k-occurrence is computed on
    the whole gallery: images/videos as text→visual targets, captions as visual→text targets, each under its own
    condition."""
    vis = visual_modality(bench)
    items = sample_items(bench, n_items, seed)
    col = caption_columns(bench)
    tj = np.asarray([col[int(i)] for i in items], dtype=np.int64)
    groups = []  # (modality, condition, embeddings of the items, N_k of the items)
    conds = {"clean": (Condition(), Condition()), "perturbed": (visual_cond, text_cond)}
    for cname, (vc, tc) in conds.items():
        if cname == "perturbed" and vc.clean and tc.clean:
            continue
        vemb, st2v, sv2t = _both_directions(bench, vc, tc, progress)
        nk_vis = np.asarray(hubness.k_occurrence(st2v, k=max(min(int(k), st2v.shape[1] - 1), 1)))
        nk_txt = np.asarray(hubness.k_occurrence(sv2t, k=max(min(int(k), sv2t.shape[1] - 1), 1)))
        if cname == "clean" or not vc.clean:
            groups.append((vis, cname, np.asarray(vemb)[items], nk_vis[items]))
        if cname == "clean" or not tc.clean:
            groups.append(("text", cname, np.asarray(bench.texts(tc)[2])[tj], nk_txt[tj]))
    X = np.concatenate([np.asarray(g[2], np.float32) for g in groups])
    n = len(X)
    if method == "tsne":
        perp = float(min(perplexity, 0.99 * (n - 1) / 3.0))  # t-SNE needs n > 3·perplexity
        # one thread: openTSNE's 2-thread default was 15-25× slower on 2 busy shared cores (thread contention)
        xy = embedding.project(X, method="tsne", perplexity=perp, seed=int(seed), n_jobs=1)
    elif method == "pca":
        xy = embedding.project(X, method="pca")
    else:
        raise ValueError(f"method must be 'tsne' or 'pca', got {method!r}")
    texts_c = bench.texts(Condition())[0]
    item = np.concatenate([items] * len(groups))
    modality = np.concatenate([[g[0]] * len(items) for g in groups])
    condition = np.concatenate([[g[1]] * len(items) for g in groups])
    nk = np.concatenate([g[3] for g in groups]).astype(np.int64)
    texts_p = bench.texts(text_cond)[0]
    text = []
    for g in groups:
        if g[0] == "text" and g[1] == "perturbed":
            text += [texts_p[j] for j in tj]
        else:
            text += [texts_c[j] for j in tj]
    base = {(g[0], g[1]): b * len(items) for b, g in enumerate(groups)}
    pairs = []
    for m in (vis, "text"):
        if (m, "perturbed") in base:
            c0, p0 = base[(m, "clean")], base[(m, "perturbed")]
            pairs += [(c0 + r, p0 + r) for r in range(len(items))]
    return EmbeddingPoints(xy=np.asarray(xy, np.float32), item=item, modality=modality, condition=condition,
                           k_occurrence=nk, text=text, pairs=pairs, method=method, k=int(k), n_items=len(items))


def pair_lines(points: EmbeddingPoints) -> tuple[list, list]:
    """x and y lists (with None breaks) drawing a segment from each clean point to its perturbed version."""
    xs, ys = [], []
    for a, b in points.pairs:
        xs += [float(points.xy[a, 0]), float(points.xy[b, 0]), None]
        ys += [float(points.xy[a, 1]), float(points.xy[b, 1]), None]
    return xs, ys


def selected_rows(selection, n_points: int, trace_rows: list | None = None) -> list[int]:
    """Point rows from a Plotly selection (``st.plotly_chart(..., on_select=...)``'s ``selection``).

    Each point's ``customdata`` holds its row (the first element when a list or a ``{"0": row}`` dict); without
    it, ``trace_rows`` (rows of each trace, by curve number) maps ``curve_number``/``point_index``. Points of
    traces without rows (the clean→perturbed lines) and stale rows (a selection made on an earlier figure) are
    dropped."""
    pts = (selection or {}).get("points", []) if isinstance(selection, dict) else getattr(selection, "points", [])
    rows = []
    for p in pts or []:
        cd = p.get("customdata")
        r = None
        if isinstance(cd, dict):  # a 2-D typed customdata array can arrive as {"0": row}
            cd = cd.get("0", next(iter(cd.values()), None))
        if cd is not None:
            r = cd[0] if isinstance(cd, (list, tuple)) else cd
        elif trace_rows is not None:
            c, i = p.get("curve_number"), p.get("point_index", p.get("point_number"))
            if c is not None and i is not None and 0 <= c < len(trace_rows) and trace_rows[c] is not None \
                    and 0 <= i < len(trace_rows[c]):
                r = trace_rows[c][i]
        try:
            r = int(r)
        except (TypeError, ValueError):
            continue
        if 0 <= r < n_points and r not in rows:
            rows.append(r)
    return rows


def selected_items(points: EmbeddingPoints, rows) -> list[tuple[int, str]]:
    """Distinct (gallery item, modality) pairs of the selected rows, in selection order."""
    out = []
    for r in rows:
        key = (int(points.item[r]), str(points.modality[r]))
        if key not in out:
            out.append(key)
    return out
