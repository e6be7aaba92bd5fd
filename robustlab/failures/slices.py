"""Slices that break together, discovered with no metadata (issue 47, item 2).

:func:`discover_slices` finds coherent groups of items whose failure rate under a perturbation is well above the
rest's, from the model's own embeddings and the data's own captions only -- it takes no metadata argument, so an
upload or a local folder without annotations is served the same way as the built-in world. Each group is described
in words drawn from the captions' vocabulary through the model's text tower ("on a black background").

Two generators propose candidate groups; one significance test chooses among them.

* **Concepts (the text side).** The captions' recurring n-grams (1-4 words, never across punctuation, with a
  content word: "black background", "striped", "two objects") are sorted into *contrast sets*: phrases equal but
  for one content word, their shared words holding a content word too ("on a black background" / "on a white
  background"; "a small red" / "a small blue"; "one object" / "two objects"), plus the bare alternatives of
  each such slot ("black" / "white" / "gray"). Each set is a zero-shot choice made by the text tower: every image
  goes to the set's phrase its *clean* embedding is most similar to, kept only where that similarity is also
  above the phrase's mean over the images (``concept_gate="z"``: "none of these" stays out). Each phrase's images
  are a candidate group. No failure is used to form them.
* **An error-aware mixture (Domino's).** Diagonal Gaussians over the joint space [PCA of the clean embeddings,
  PCA of the shift ``perturbed - clean``], each component also carrying a Bernoulli failure rate whose
  log-likelihood is weighted by ``error_weight`` in the E-step (Eyuboglu et al., ICLR 2022), so the failures pull
  the components towards groups that fail alike. Because such groups are shaped by the very failures they are
  tested on, the mixture is *cross-fitted*: fitted on one half of the items, it places every item by its
  embeddings alone, and each group is tested on the other half only (then the halves swap).

Every candidate is tested alike: its failure rate against the rest's, the difference ``d`` and its standard error;
the **score** is the lower bound of a Bonferroni-corrected one-sided interval over all ``m`` candidates tried,
``d - z(alpha / m) · se``, and only candidates scoring above 0 are kept (so the hundreds of phrases and components
tried do not let chance through: shuffled failures give no slice). The kept ones are taken concept groups first
(best score first), then mixture groups (``rank="concept-first"``; ``"score"``: by score alone), skipping one
whose Jaccard overlap with a slice already taken is above ``max_overlap``, up to ``k``, and returned best score
first. Concept groups go first because they are formed without the failures and come with their own words; the
mixture fills what they leave (and is all there is without captions or a text tower).

Each slice is described by the caption phrase most over-represented in it (``describe="captions"``, the default:
the largest difference between the share of the slice's captions and of the rest's that contain it);
``describe="embedding"`` takes Domino's description instead, the phrase whose text embedding best separates the
slice's mean clean image embedding from the rest's (``t · (mean_in - mean_out)``), and ``"phrase"`` keeps a
concept group's own phrase. A group whose description is already taken by a better slice is skipped
(``unique_names``). The runners-up are in ``alternatives``. On the development world the caption phrases named
more true slices than the text tower's (docs/benchmarks.md), so the text tower forms the concept groups and the
captions' own words name them; without captions the mixture's groups are "group N".

The reported ``ci`` is the 95 % percentile bootstrap interval (``n_boot`` resamples) of ``failure_rate -
rest_rate``, the slice's items and the rest's resampled separately (for a binary outcome a resampled group's
failure count is exactly Binomial(size, observed rate), which is what is drawn). It is conditional on the slice
as found: the Bonferroni filter above, not this interval, is what guards against the search.

:func:`metadata_slices` slices by given attributes (COCO categories, the built-in world's scene attributes) with
the same statistics, for the side-by-side view; :func:`kmeans_slices` is the crude baseline the benchmark compares
against (k-means on the clean image embeddings, each cluster named by its over-represented caption words).
Measured on the built-in world in ``benchmarks/bench_slice_discovery.py`` (docs/benchmarks.md).

NumPy at import; scikit-learn (PCA, k-means) is imported where it is used.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Callable, Optional, Sequence

import numpy as np

TextEncoder = Callable[[list], np.ndarray]

# words that never make a phrase on their own (a phrase needs one word outside this list)
STOPWORDS = frozenset("""a an the on of in at and with there is are to for by from its it this that as or be
has have into onto over under""".split())
# a phrase may not start or end with these (they join, they do not describe), nor end with _TAIL ("right on a")
_EDGE = frozenset("and with there is are to for by from as or".split())
_TAIL = frozenset("a an the on of in at onto into over under".split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_PUNCT = re.compile(r"[,.:;!?()\"]+")


@dataclass
class Slice:
    """A group of items that fails together. ``members``: item indices, most typical first (nearest the phrase,
    or highest responsibility); ``ci``: 95 % bootstrap CI of ``failure_rate - rest_rate``; ``examples``: the first
    few members that fail; ``score``: the significance-aware effect (see the module docstring); ``source``:
    "concept", "mixture", "metadata" or "kmeans"; ``alternatives``: the next-best descriptions."""

    members: np.ndarray
    size: int
    description: str
    failure_rate: float
    rest_rate: float
    ci: tuple
    mean_breaking_severity: Optional[float]
    examples: list
    score: float
    source: str = ""
    alternatives: list = field(default_factory=list)

    @property
    def difference(self) -> float:
        return self.failure_rate - self.rest_rate

    def to_dict(self) -> dict:
        d = asdict(self)
        d["members"] = [int(i) for i in self.members]
        d["examples"] = [int(i) for i in self.examples]
        d["ci"] = [float(self.ci[0]), float(self.ci[1])]
        d["difference"] = float(self.difference)
        for key in ("failure_rate", "rest_rate", "score"):
            d[key] = float(d[key])
        if self.mean_breaking_severity is not None:
            d["mean_breaking_severity"] = float(self.mean_breaking_severity)
        return d


# ---- statistics ------------------------------------------------------------------------------------------------
def bootstrap_difference_ci(failed: np.ndarray, mask: np.ndarray, n_boot: int = 1000, seed: int = 0,
                            level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of (failure rate in ``mask``) - (failure rate outside it), the two groups resampled
    separately (a resampled binary group's failure count is Binomial(size, observed rate): drawn directly)."""
    failed = np.asarray(failed, bool)
    mask = np.asarray(mask, bool)
    n_in, n_out = int(mask.sum()), int((~mask).sum())
    if n_in == 0 or n_out == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    p_in, p_out = failed[mask].mean(), failed[~mask].mean()
    diff = rng.binomial(n_in, p_in, n_boot) / n_in - rng.binomial(n_out, p_out, n_boot) / n_out
    lo, hi = np.quantile(diff, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def _rates(failed: np.ndarray, masks: np.ndarray):
    """Failure rate inside and outside each row of ``masks`` (c × n) and the standard error of the difference: the
    larger of the unpooled one and the pooled one of the two-proportion test (a small group that almost always
    fails has a tiny unpooled error, which would let chance through)."""
    n = failed.size
    size = masks.sum(1).astype(float)
    f_in = masks @ failed.astype(float)
    f_all = float(failed.sum())
    rest = n - size
    s_in, s_out = np.maximum(size, 1), np.maximum(rest, 1)
    p_in, p_out = f_in / s_in, (f_all - f_in) / s_out
    unpooled = p_in * (1 - p_in) / s_in + p_out * (1 - p_out) / s_out
    pooled = (f_all / n) * (1 - f_all / n) * (1 / s_in + 1 / s_out)
    return size, p_in, p_out, np.sqrt(np.maximum(unpooled, pooled))


def _z(alpha: float) -> float:
    return NormalDist().inv_cdf(1 - alpha)


def _make_slice(members: np.ndarray, failed: np.ndarray, severity: Optional[np.ndarray], description: str,
                score: float, source: str, n_boot: int, seed: int, alternatives=(), n_examples: int = 6) -> Slice:
    members = np.asarray(members, np.int64)
    mask = np.zeros(failed.size, bool)
    mask[members] = True
    sev = None
    if severity is not None:
        s = severity[members]
        s = s[np.isfinite(s)]
        sev = float(s.mean()) if s.size else None
    failing = [int(i) for i in members if failed[i]]
    return Slice(members=members, size=int(members.size), description=description,
                 failure_rate=float(failed[mask].mean()), rest_rate=float(failed[~mask].mean()) if (~mask).any()
                 else float("nan"), ci=bootstrap_difference_ci(failed, mask, n_boot, seed),
                 mean_breaking_severity=sev, examples=failing[:n_examples], score=float(score), source=source,
                 alternatives=list(alternatives))


# ---- the captions' vocabulary ----------------------------------------------------------------------------------
def tokens(text: str) -> list[str]:
    """The lower-case words of ``text``."""
    return _WORD.findall(str(text).lower())


def _segments(text: str) -> list[list[str]]:
    """The words of ``text`` in runs between punctuation (an n-gram never spans a comma or a colon)."""
    return [w for w in (tokens(part) for part in _PUNCT.split(str(text))) if w]


def _ngrams(text: str, max_n: int) -> set:
    out = set()
    for words in _segments(text):
        for n in range(1, max_n + 1):
            for i in range(len(words) - n + 1):
                g = words[i:i + n]
                if g[0] in _EDGE or g[-1] in _EDGE or g[-1] in _TAIL or all(w in STOPWORDS for w in g):
                    continue
                out.add(" ".join(g))
    return out


def candidate_phrases(captions: Sequence[str], max_n: int = 4, min_count: int = 5,
                      max_phrases: int = 400) -> list[str]:
    """The recurring n-grams (1..``max_n`` words, never across punctuation) of the captions that can describe
    something: at least one word outside :data:`STOPWORDS`, no joining word at either end nor an article or a
    preposition at the end ("right on a"), in at least ``min_count`` captions; the ``max_phrases`` most frequent
    (ties: shorter first, then alphabetical)."""
    counts: Counter = Counter()
    for cap in captions:
        counts.update(_ngrams(cap, max_n))
    ok = [(c, p) for p, c in counts.items() if c >= min_count]
    ok.sort(key=lambda cp: (-cp[0], len(cp[1].split()), cp[1]))
    return [p for _, p in ok[:max_phrases]]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def contrast_sets(phrases: Sequence[str], max_sets: int = 1000, bare_words: bool = True) -> list[list[int]]:
    """Groups of phrases that say alternatives: the same words but one, the differing word a content word, the
    shared words holding a content word too ("on a black background" / "on a white background"; "a small red" /
    "a small blue"; "one object" / "two objects": a final "s" is ignored when comparing). Each set (indices
    into ``phrases``, 2+ members) is one choice the text tower makes for every image; a phrase may sit in
    several. ``bare_words``: also each slot's fillers alone ("black" / "white"), where they are phrases too. The
    ``max_sets`` largest sets."""
    slots: dict[tuple, list[int]] = {}
    for j, p in enumerate(phrases):
        words = p.split()
        stems = [_stem(w) for w in words]
        for pos, w in enumerate(words):
            rest = words[:pos] + words[pos + 1:]
            if w in STOPWORDS or all(r in STOPWORDS for r in rest):
                continue
            slots.setdefault((len(words), pos, tuple(stems[:pos]), tuple(stems[pos + 1:])), []).append(j)
    sets = {tuple(v) for v in slots.values() if len(v) >= 2}
    if bare_words:  # the bare alternatives of a slot ("black" / "white" / "gray") are a choice of their own
        where = {p: j for j, p in enumerate(phrases)}
        for v in list(sets):
            slot = next(key for key, val in slots.items() if tuple(val) == v)
            fill = [where.get(phrases[j].split()[slot[1]]) for j in v]
            if all(f is not None for f in fill) and len(set(fill)) >= 2:
                sets.add(tuple(sorted(set(fill))))
    ranked = sorted(sets, key=lambda v: (-len(v), v))[:max_sets]
    return [list(v) for v in sorted(ranked)]


def _phrase_presence(captions: Sequence[str], phrases: Sequence[str]) -> np.ndarray:
    """n × m bool: caption i contains phrase j (as whole words, never across punctuation)."""
    padded = [" | ".join(" ".join(w) for w in _segments(c)) for c in captions]
    padded = [" " + c + " " for c in padded]
    out = np.zeros((len(captions), len(phrases)), bool)
    for j, p in enumerate(phrases):
        needle = " " + p + " "
        out[:, j] = [needle in c for c in padded]
    return out


def overrepresented_phrases(mask: np.ndarray, captions: Sequence[str], phrases: Sequence[str] | None = None,
                            top: int = 3, presence: np.ndarray | None = None) -> list[str]:
    """The phrases most over-represented in the captions of ``mask`` against the rest (difference of the share of
    captions containing them, ties to the shorter phrase): how the crude baseline names a cluster."""
    mask = np.asarray(mask, bool)
    if phrases is None:
        phrases = candidate_phrases(captions)
    if presence is None:
        presence = _phrase_presence(captions, phrases)
    if not len(phrases) or not mask.any():
        return []
    rest = ~mask
    gain = presence[mask].mean(0) - (presence[rest].mean(0) if rest.any() else 0)
    order = sorted(range(len(phrases)), key=lambda j: (-round(float(gain[j]), 6), len(phrases[j])))
    return [phrases[j] for j in order[:top] if gain[j] > 0]


def describe_by_embedding(mask: np.ndarray, clean_emb: np.ndarray, phrases: Sequence[str], phrase_emb: np.ndarray,
                          top: int = 3) -> list[str]:
    """The phrases whose text embedding best separates the group's mean clean image embedding from the rest's
    (``t · (mean_in - mean_out)``, Domino's description)."""
    mask = np.asarray(mask, bool)
    if not len(phrases) or not mask.any() or mask.all():
        return []
    direction = clean_emb[mask].mean(0) - clean_emb[~mask].mean(0)
    s = phrase_emb @ direction
    return [phrases[j] for j in np.argsort(-s, kind="stable")[:top]]


def _encode(text_encoder: TextEncoder, phrases: Sequence[str]) -> np.ndarray:
    e = np.asarray(text_encoder(list(phrases)), np.float64)
    return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)


# ---- candidate generators --------------------------------------------------------------------------------------
def concept_candidates(clean_emb: np.ndarray, phrase_emb: np.ndarray, sets: Sequence[Sequence[int]],
                       min_size: int, max_share: float = 0.6, gate: str = "z"):
    """Zero-shot choices among each contrast set: every image goes to the set's phrase its clean embedding is
    most similar to, provided (``gate="z"``; ``"none"``: always) that similarity is above the phrase's mean over
    the images; each phrase's images (between ``min_size`` and ``max_share`` of the items) are a candidate,
    ordered by their margin over the runner-up. Returns [(phrase index, members)]."""
    n = clean_emb.shape[0]
    sims_all = clean_emb @ phrase_emb.T
    z_all = (sims_all - sims_all.mean(0)) / np.maximum(sims_all.std(0), 1e-12)
    out = []
    for group in sets:
        group = list(group)
        sims = sims_all[:, group]
        win = sims.argmax(1)
        part = np.sort(sims, 1)
        margin = part[:, -1] - part[:, -2]
        for a, j in enumerate(group):
            sel = win == a
            if gate == "z":
                sel &= z_all[:, j] > 0
            idx = np.flatnonzero(sel)
            if min_size <= idx.size <= max_share * n:
                out.append((j, idx[np.argsort(-margin[idx], kind="stable")]))
    return out


def _pca(x: np.ndarray, dims: int, seed: int) -> np.ndarray:
    from sklearn.decomposition import PCA  # scikit-learn: optional heavy dependency, loaded on first use

    dims = max(1, min(dims, x.shape[0] - 1, x.shape[1]))
    return PCA(n_components=dims, random_state=seed).fit_transform(x)


def joint_features(clean_emb: np.ndarray, perturbed_emb: Optional[np.ndarray], dims: int = 16,
                   shift_weight: float = 1.0, seed: int = 0) -> np.ndarray:
    """[PCA(clean) | shift_weight · PCA(perturbed - clean)], each block scaled to unit mean variance per column."""
    blocks = [(_pca(clean_emb, dims, seed), 1.0)]
    if perturbed_emb is not None and shift_weight > 0:
        blocks.append((_pca(perturbed_emb - clean_emb, dims, seed), shift_weight))
    return np.concatenate([w * b / max(float(np.sqrt(b.var(0).mean())), 1e-12) for b, w in blocks], 1)


class ErrorAwareMixture:
    """Domino's error-aware mixture for a binary outcome: diagonal Gaussians over the features with a Bernoulli
    failure rate per component, the Bernoulli log-likelihood weighted by ``error_weight`` in the E-step (the
    failures pull components towards groups that fail alike). Initialised by k-means on the features with the
    failure as an extra column. :meth:`assign` places items by their features alone (no failure), so a component
    can be tested on items it was not fitted on."""

    def __init__(self, n_components: int, error_weight: float = 8.0, seed: int = 0, max_iter: int = 100,
                 tol: float = 1e-4, reg: float = 1e-3):
        self.k, self.error_weight, self.seed = n_components, error_weight, seed
        self.max_iter, self.tol, self.reg = max_iter, tol, reg

    def _log_gauss(self, x: np.ndarray) -> np.ndarray:
        d2 = ((x[:, None, :] - self.mu[None]) ** 2 / self.var[None]).sum(2)
        return np.log(self.w)[None] - 0.5 * (d2 + np.log(2 * np.pi * self.var).sum(1)[None])

    def fit(self, x: np.ndarray, failed: np.ndarray) -> "ErrorAwareMixture":
        from sklearn.cluster import KMeans  # scikit-learn: optional heavy dependency, loaded on first use

        n = x.shape[0]
        f = np.asarray(failed, float)
        k = max(1, min(self.k, n))
        scale = np.sqrt(x.var(0).mean())
        init = np.concatenate([x, (self.error_weight / 4) * scale * f[:, None]], 1)
        labels = KMeans(k, n_init=3, random_state=self.seed).fit_predict(init)
        resp = np.full((n, k), 1e-3)
        resp[np.arange(n), labels] = 1.0
        resp /= resp.sum(1, keepdims=True)
        floor = self.reg * x.var(0).mean()
        prev = -np.inf
        for _ in range(self.max_iter):
            nk = resp.sum(0) + 1e-10
            self.w = nk / n
            self.mu = (resp.T @ x) / nk[:, None]
            self.var = np.maximum((resp.T @ (x * x)) / nk[:, None] - self.mu ** 2, floor)
            self.p = np.clip((resp.T @ f + 0.5) / (nk + 1.0), 1e-3, 1 - 1e-3)
            log_b = f[:, None] * np.log(self.p)[None] + (1 - f[:, None]) * np.log(1 - self.p)[None]
            logp = self._log_gauss(x) + self.error_weight * log_b
            top = logp.max(1, keepdims=True)
            ll = top[:, 0] + np.log(np.exp(logp - top).sum(1))
            resp = np.exp(logp - ll[:, None])
            if abs(float(ll.mean()) - prev) < self.tol:
                break
            prev = float(ll.mean())
        return self

    def assign(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(component, responsibility of that component) of each item from its features alone."""
        logp = self._log_gauss(x)
        top = logp.max(1, keepdims=True)
        resp = np.exp(logp - top)
        resp /= resp.sum(1, keepdims=True)
        lab = resp.argmax(1)
        return lab, resp[np.arange(x.shape[0]), lab]


def mixture_candidates(x: np.ndarray, failed: np.ndarray, n_components: int, error_weight: float, seed: int,
                       min_size: int, max_share: float = 0.6):
    """Cross-fitted components: the items are split in two halves; a mixture fitted on one half (with its
    failures) assigns every item by its features, and each component's group is tested on the *other* half.
    Yields (members ordered by responsibility, held-out mask) for each group of a usable size."""
    n = x.shape[0]
    half = np.random.default_rng(seed).permutation(n) < n // 2
    out = []
    for fit_on in (half, ~half):
        mm = ErrorAwareMixture(n_components, error_weight, seed).fit(x[fit_on], failed[fit_on])
        lab, r = mm.assign(x)
        for c in range(mm.mu.shape[0]):
            idx = np.flatnonzero(lab == c)
            if min_size <= idx.size <= max_share * n and (lab[~fit_on] == c).sum() >= min_size // 2:
                out.append((idx[np.argsort(-r[idx], kind="stable")], ~fit_on))
    return out


# ---- discovery -------------------------------------------------------------------------------------------------
def _check(failed, clean_emb, perturbed_emb, captions, severity):
    failed = np.asarray(failed, bool).ravel()
    clean = np.asarray(clean_emb, np.float64)
    n = failed.size
    if clean.ndim != 2 or clean.shape[0] != n:
        raise ValueError(f"clean_emb must be n × d with n = {n} (one row per item), got shape {clean.shape}")
    pert = None if perturbed_emb is None else np.asarray(perturbed_emb, np.float64)
    if pert is not None and pert.shape != clean.shape:
        raise ValueError(f"perturbed_emb must have clean_emb's shape {clean.shape}, got {pert.shape}")
    if captions is not None and len(captions) != n:
        raise ValueError(f"captions must hold one caption per item ({n}), got {len(captions)}")
    sev = None if severity is None else np.asarray(severity, float).ravel()
    if sev is not None and sev.size != n:
        raise ValueError(f"severity must hold one value per item ({n}), got {sev.size}")
    return failed, clean, pert, sev


def discover_slices(failed, clean_emb, perturbed_emb=None, captions=None, text_encoder: TextEncoder | None = None,
                    *, severity=None, k: int = 8, min_size: int = 10, seed: int = 0, n_boot: int = 1000,
                    generators: Sequence[str] = ("concept", "mixture"), n_components: int = 8,
                    error_weight: float = 8.0, dims: int = 16, shift_weight: float = 1.0, alpha: float = 0.05,
                    max_overlap: float = 0.5, describe: str = "captions", concept_gate: str = "z",
                    bare_words: bool = True, rank: str = "concept-first", unique_names: bool = True,
                    phrases: Sequence[str] | None = None, max_phrases: int = 400) -> list[Slice]:
    """Groups of items that fail together, best first (the method: the module docstring). ``failed``: one bool
    per item (it breaks under the perturbation at any severity up to the chosen one); ``clean_emb`` /
    ``perturbed_emb``: the model's L2-normalised visual embeddings (n × d); ``captions``: the items' captions (the
    vocabulary); ``text_encoder``: list[str] -> (m × d) embeddings in the same space (``model.encode_texts``);
    ``severity``: each item's breaking severity (NaN: none), averaged over a slice's members that break. No
    metadata is read: there is no argument for it.

    ``generators``: "concept" (needs captions and the text encoder) and/or "mixture"; ``n_components``,
    ``error_weight``, ``dims`` (PCA dimensions per block) and ``shift_weight`` (weight of the ``perturbed - clean``
    block; 0 or no ``perturbed_emb``: clean only) set the mixture. ``describe``: "captions", "embedding" or
    "phrase" (the module docstring); without captions a slice is "group N". ``concept_gate``: "z" or "none";
    ``bare_words``: the single-word contrast sets too (:func:`contrast_sets`).
    ``rank``: "concept-first" or "score" (the module docstring). ``phrases``: the candidate vocabulary (default:
    :func:`candidate_phrases` of the captions)."""
    failed, clean, pert, sev = _check(failed, clean_emb, perturbed_emb, captions, severity)
    n = failed.size
    if describe not in ("embedding", "captions", "phrase"):
        raise ValueError(f"describe must be 'embedding', 'captions' or 'phrase', got {describe!r}")
    if rank not in ("concept-first", "score"):
        raise ValueError(f"rank must be 'concept-first' or 'score', got {rank!r}")
    if n < 2 * min_size or failed.all() or not failed.any():
        return []
    if phrases is None:
        phrases = candidate_phrases(captions, max_phrases=max_phrases) if captions is not None else []
    phrases = list(phrases)
    phrase_emb = _encode(text_encoder, phrases) if (phrases and text_encoder is not None) else None
    presence = _phrase_presence(captions, phrases) if (captions is not None and phrases) else None

    cands: list[tuple[np.ndarray, str, str, np.ndarray]] = []  # (members, phrase, source, the items it is tested on)
    everyone = np.ones(n, bool)
    if "concept" in generators and phrase_emb is not None:
        sets = contrast_sets(phrases, bare_words=bare_words)
        for j, members in concept_candidates(clean, phrase_emb, sets, min_size, gate=concept_gate):
            cands.append((members, phrases[j], "concept", everyone))
    if "mixture" in generators:
        x = joint_features(clean, pert, dims=dims, shift_weight=shift_weight, seed=seed)
        for members, test in mixture_candidates(x, failed, n_components, error_weight, seed, min_size):
            cands.append((members, "", "mixture", test))
    if not cands:
        return []

    masks = np.zeros((len(cands), n), bool)
    for r, (members, *_rest) in enumerate(cands):
        masks[r, members] = True
    score = np.empty(len(cands))
    z = _z(alpha / len(cands))
    for test in {id(c[3]): c[3] for c in cands}.values():
        rows = [r for r, c in enumerate(cands) if c[3] is test]
        _size, p_in, p_out, se = _rates(failed[test], masks[rows][:, test])
        score[rows] = (p_in - p_out) - z * se
    order = np.argsort(-score, kind="stable")
    if rank == "concept-first":  # coherent, failure-free groups first; the mixture fills what they leave
        order = np.array(sorted(order, key=lambda r: cands[r][2] != "concept"), dtype=np.int64)
    chosen: list[tuple[int, list[str]]] = []  # (candidate, its names: the description first)
    for r in order:
        if len(chosen) >= k:
            break
        if score[r] <= 0 or any(_jaccard(masks[r], masks[c]) > max_overlap for c, _ in chosen):
            continue
        members, own, source, _test = cands[r]
        names = [own] if (describe == "phrase" and own) else []
        names += _describe(masks[r], clean, phrases, phrase_emb, captions, presence, describe)
        names = list(dict.fromkeys(x for x in names + [own] if x))
        if unique_names and names and any(names[0] == taken[0] for _, taken in chosen if taken):
            continue  # a second group by the same words says nothing new
        chosen.append((int(r), names))
    out = []
    for i, (r, names) in enumerate(sorted(chosen, key=lambda c: -score[c[0]])):
        members, own, source, _test = cands[r]
        same = [cands[q][1] for q in order if q != r and cands[q][1] and _jaccard(masks[r], masks[q]) > 0.8]
        names = list(dict.fromkeys(names + same))
        out.append(_make_slice(members, failed, sev, names[0] if names else f"group {i + 1}", score[r], source,
                               n_boot, seed + i, alternatives=names[1:6]))
    return out


def _describe(mask, clean, phrases, phrase_emb, captions, presence, how: str) -> list[str]:
    if presence is not None and (how == "captions" or phrase_emb is None):
        return overrepresented_phrases(mask, captions, phrases, presence=presence)
    if phrase_emb is not None:
        return describe_by_embedding(mask, clean, phrases, phrase_emb)
    return []


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0


# ---- metadata and the baseline ---------------------------------------------------------------------------------
def metadata_slices(failed, attributes: dict, *, severity=None, min_size: int = 10, n_boot: int = 1000,
                    seed: int = 0, alpha: float = 0.05) -> list[Slice]:
    """One slice per attribute value (``attributes``: {name: one value per item}; a value that is a list or set
    puts the item in each of its values' slices, e.g. the COCO categories of an image), with at least
    ``min_size`` items and not all of them; described "name=value", scored like :func:`discover_slices` (Bonferroni
    over the values tested) and sorted best first. Every value is returned, significant or not."""
    failed = np.asarray(failed, bool).ravel()
    n = failed.size
    sev = None if severity is None else np.asarray(severity, float).ravel()
    groups: dict[str, list[int]] = {}
    for name, values in attributes.items():
        if len(values) != n:
            raise ValueError(f"attribute {name!r} must hold one value per item ({n}), got {len(values)}")
        for i, v in enumerate(values):
            for u in (v if isinstance(v, (list, tuple, set, frozenset)) else [v]):
                if u is None or (isinstance(u, float) and math.isnan(u)):
                    continue
                groups.setdefault(f"{name}={u}", []).append(i)
    keys = [g for g, idx in groups.items() if min_size <= len(set(idx)) < n]
    if not keys:
        return []
    masks = np.zeros((len(keys), n), bool)
    for r, g in enumerate(keys):
        masks[r, groups[g]] = True
    _size, p_in, p_out, se = _rates(failed, masks)
    score = (p_in - p_out) - _z(alpha / len(keys)) * se
    out = [_make_slice(np.flatnonzero(masks[r]), failed, sev, keys[r], score[r], "metadata", n_boot, seed + r)
           for r in range(len(keys))]
    return sorted(out, key=lambda s: -s.score)


def kmeans_slices(failed, clean_emb, captions=None, *, severity=None, k: int = 8, seed: int = 0,
                  n_boot: int = 1000, words: int = 3, alpha: float = 0.05) -> list[Slice]:
    """The crude baseline: k-means (k clusters) on the clean image embeddings, each cluster described by its
    ``words`` most over-represented caption words (unigrams), every cluster returned, worst failure rate first."""
    from sklearn.cluster import KMeans  # scikit-learn: optional heavy dependency, loaded on first use

    failed = np.asarray(failed, bool).ravel()
    clean = np.asarray(clean_emb, np.float64)
    sev = None if severity is None else np.asarray(severity, float).ravel()
    km = KMeans(k, n_init=3, random_state=seed).fit(clean)
    labels = km.labels_
    dist = np.linalg.norm(clean - km.cluster_centers_[labels], axis=1)
    unigrams = candidate_phrases(captions, max_n=1, min_count=2, max_phrases=10_000) if captions is not None else []
    presence = _phrase_presence(captions, unigrams) if unigrams else None
    masks = np.stack([labels == c for c in range(k)])
    _size, p_in, p_out, se = _rates(failed, masks)
    score = (p_in - p_out) - _z(alpha / k) * se
    out = []
    for c in range(k):
        idx = np.flatnonzero(labels == c)
        if idx.size == 0:
            continue
        members = idx[np.argsort(dist[idx], kind="stable")]
        top = overrepresented_phrases(masks[c], captions, unigrams, top=words, presence=presence) \
            if presence is not None else []
        out.append(_make_slice(members, failed, sev, " ".join(top) or f"cluster {c + 1}", score[c], "kmeans",
                               n_boot, seed + c))
    return sorted(out, key=lambda s: -s.failure_rate)
