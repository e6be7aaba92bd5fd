"""PEELING's P2, the semantically-equivalent perturbation chain: back-translation EN→DE→EN, one WordNet synonym,
one keyboard typo, each stage recorded (or its skip reason). Part of :mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from robustlab.perturb.registry import get_perturbation, perturb
from robustlab.perturb.text import resources as R
from robustlab.perturb.text.char import KEYBOARD_DEFAULTS, run_nlpaug
from robustlab.perturb.text.wordnet import get_wordnet

P2_STAGES = ("back_translation", "synonym", "keyboard")  # the paper's order (sentence, word, character level)
_STAGE_KEY = {"back_translation": 0, "synonym": 1, "keyboard": 2}
KEYBOARD_PARAMS = {"aug_char_max": 1, "aug_word_max": 1}  # released: KeyboardAug(aug_char_max=1, aug_word_max=1)
SYNONYM_TAGS = {"NN": "n", "JJ": "a", "JJR": "a", "JJS": "a", "VB": "v", "VBD": "v", "VBG": "v", "VBN": "v",
                "VBP": "v", "VBZ": "v", "RB": "r", "RBR": "r", "RBS": "r"}  # the released code's POS filter
SYNONYM_THRESHOLD = 0.6  # released: phrase-bert cosine > 0.6
PHRASE_BERT = "whaleloops/phrase-bert"
MINILM_SCORER = "all-MiniLM-L6-v2 sentence-embedding cosine (substitute for phrase-bert, not available offline)"
SHORT_LEN = 5
SYNONYM_SENSES = 1  # WordNet's most frequent sense only (0: every sense, the released code)


@dataclass
class StageRecord:
    """One P2 stage: what went in and out, or why it was skipped (``skipped`` + ``reason``)."""

    stage: str
    input: str
    output: str
    skipped: bool = False
    reason: str = ""
    details: dict = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return not self.skipped and self.output != self.input

    def to_dict(self) -> dict:
        return {**asdict(self), "changed": self.changed}


@dataclass
class P2Result:
    text: str
    input: str
    seed: int
    stages: list[StageRecord]

    def to_dict(self) -> dict:
        return {"input": self.input, "text": self.text, "seed": self.seed, "stages": [s.to_dict() for s in self.stages]}


def _stage_rng(seed: int, stage: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), _STAGE_KEY[stage]])


def seed_for(seed: int, item: int, k: int) -> int:
    """The seed of test ``k`` of item ``item`` (a 32-bit int from ``SeedSequence([seed, item, k])``)."""
    return int(np.random.SeedSequence([int(seed), int(item), int(k)]).generate_state(1)[0])


def back_translation_reason() -> str:
    """'' when the registry's ``back_translation`` can run here, else its reason."""
    spec = get_perturbation("back_translation")
    return "" if spec.available else spec.reason


def _back_translate(text: str, seed: int, fn: Callable[[str], str] | None) -> tuple[str, str, dict]:
    if fn is not None:
        return str(fn(text)), "", {"by": getattr(fn, "__name__", "callable")}
    reason = back_translation_reason()
    if reason:
        return text, f"back_translation unavailable: {reason}", {}
    res = perturb(text, "back_translation", 1, seed=int(seed))
    return str(res.output), "", {"record": res.record}


@functools.lru_cache(maxsize=1)
def _minilm_ok() -> str:
    return R.minilm_reason()


def minilm_similarity(word: str, options: Sequence[str]) -> list[float]:
    """Cosine of all-MiniLM-L6-v2 sentence embeddings between ``word`` and each option (phrase-bert's stand-in)."""
    v = R.encode_sentences([word] + list(options))
    return [float(x) for x in v[1:] @ v[0]]


def is_derivation(candidate: str, word: str, bases: Sequence[str] = ()) -> bool:
    """True when ``candidate`` is a morphological relative of ``word`` (or of one of its base forms ``bases``)
    rather than another word for it: one contains the other ("ringing"/"ring", "superstar"/"star",
    "pinkish"/"pink", "anchor ring"/"ring"), or they share a stem -- a common prefix of at least three letters that
    leaves at most two letters of the shorter one ("stripy"/"striped", "bluish"/"blue")."""
    c = candidate.lower().replace("_", " ")
    for w in {word.lower(), *(b.lower() for b in bases)}:
        if not w:
            continue
        if w in c or c in w:
            return True
        n = 0
        for x, y in zip(c, w):
            if x != y:
                break
            n += 1
        if n >= 3 and n >= min(len(c), len(w)) - 2:
            return True
    return False


@functools.lru_cache(maxsize=16384)
def _lemmas(word: str, pos: str, senses: int = SYNONYM_SENSES, derived: bool = False) -> tuple[str, ...]:
    """The replacement candidates of ``word`` as part of speech ``pos``, in WordNet's order: the other lemma names
    of its synsets of that part of speech -- only the first ``senses`` synsets (WordNet lists a word's senses most
    frequent first; 0 = every sense, the released code), and no morphological relative of the word
    (:func:`is_derivation`) unless ``derived``."""
    wn = get_wordnet()
    w = word.lower()
    base = set(wn.morphy(w, pos))
    own = {w} | base
    out, seen = [], set()
    groups = wn.synonyms(w, pos)
    for names in (groups[:int(senses)] if senses and int(senses) > 0 else groups):
        for n in names:
            s = n.replace("_", " ")
            if s.lower() in own or s.lower() in seen:
                continue
            if not derived and is_derivation(s, w, tuple(base)):
                continue
            seen.add(s.lower())
            out.append(s)
    return tuple(out)


def synonym_candidates(word: str, pos: str, senses: int = SYNONYM_SENSES, derived: bool = False) -> tuple[str, ...]:
    """The lemmas :func:`synonym_for` chooses from (see :func:`_lemmas`), in WordNet's order."""
    return _lemmas(str(word), str(pos), int(senses or 0), bool(derived))


_SCORE_CACHE: dict = {}


def synonym_for(word: str, pos: str, scorer: Any = "minilm", threshold: float = SYNONYM_THRESHOLD,
                senses: int = SYNONYM_SENSES, derived: bool = False) -> tuple[str | None, float | None]:
    """The replacement for ``word`` (WordNet part of speech ``pos``): the sole candidate when there is exactly one,
    else the first candidate (synset order) whose similarity to the word exceeds ``threshold`` (``scorer``:
    "minilm", None = the first candidate unfiltered, or ``f(word, options) -> sims``). The candidates
    (:func:`_lemmas`) keep the part of speech and the sense: the word's first ``senses`` synsets of that part of
    speech, no morphological relatives unless ``derived``; ``senses=0, derived=True`` is the released code (every
    sense: "ring" -> "ringing", "star" -> "superstar"). (None, None) when nothing qualifies."""
    lemmas = _lemmas(word, pos, int(senses or 0), bool(derived))
    if not lemmas:
        return None, None
    if len(lemmas) == 1 or scorer is None:
        return lemmas[0], None
    key = (word.lower(), pos, scorer, lemmas)
    sims = _SCORE_CACHE.get(key)
    if sims is None:
        f = minilm_similarity if scorer == "minilm" else scorer
        sims = _SCORE_CACHE[key] = list(f(word.lower(), list(lemmas)))
    for lem, s in zip(lemmas, sims):
        if s > threshold:
            return lem, round(float(s), 4)
    return None, None


def _synonym_stage(text: str, rng: np.random.Generator, mode: str, scorer: Any, threshold: float,
                   senses: int = SYNONYM_SENSES, derived: bool = False) -> tuple[str, str, dict]:
    for why in (R.spacy_reason(), R.wordnet_reason()):
        if why:
            return text, why, {}
    if scorer == "minilm" and _minilm_ok():
        return text, f"synonym similarity unavailable: {_minilm_ok()} (pass synonym_scorer=None for unfiltered)", {}
    toks = R.tag(text)
    picks = {}
    for k, t in enumerate(toks):
        pos = SYNONYM_TAGS.get(t.tag)
        if pos is None or not t.text.isalpha():
            continue
        rep, sim = synonym_for(t.text, pos, scorer, threshold, senses, derived)
        if rep is not None:
            picks[k] = (rep, sim)
    scorer_name = MINILM_SCORER if scorer == "minilm" else ("none (first WordNet lemma)" if scorer is None
                                                            else getattr(scorer, "__name__", "custom"))
    details = {"mode": mode, "scorer": scorer_name, "threshold": threshold, "eligible": len(picks),
               "senses": int(senses or 0), "derived": bool(derived)}
    if not picks:
        return text, "no word with an acceptable WordNet synonym", details
    chosen = sorted(picks) if mode == "code" else [sorted(picks)[int(rng.integers(len(picks)))]]
    parts, repl = [], []
    for k, t in enumerate(toks):
        w = t.text
        if k in chosen:
            r = picks[k][0]
            r = r[:1].upper() + r[1:] if w[:1].isupper() and not w.isupper() else r
            repl.append({"word": w, "replacement": r, "index": k, "similarity": picks[k][1]})
            w = r
        parts.append(w + t.ws)
    details["replaced"] = repl
    return "".join(parts), "", details


def _keyboard_stage(text: str, rng: np.random.Generator) -> tuple[str, str, dict]:
    if importlib.util.find_spec("nlpaug") is None:
        return text, "missing dependency: nlpaug (pip install nlpaug==1.1.11)", {}
    params = {**KEYBOARD_DEFAULTS, **KEYBOARD_PARAMS}
    out = run_nlpaug("KeyboardAug", text, params, rng)
    d = {"params": params, "augmenter": "nlpaug 1.1.11 KeyboardAug"}
    if out == text:
        d["note"] = "no word of >= min_char (4) characters to change"
    return out, "", d


def p2_chain(text: str, seed: int = 0, stages: Sequence[str] = P2_STAGES, *, synonym_mode: str = "paper",
             synonym_scorer: Any = "minilm", synonym_threshold: float = SYNONYM_THRESHOLD,
             short_len: int | None = SHORT_LEN, back_translate: Callable[[str], str] | None = None,
             synonym_senses: int = SYNONYM_SENSES, synonym_derived: bool = False) -> P2Result:
    """PEELING's P2 on one (reduced) expression: back-translation → synonym → keyboard typo, in that order.

    ``stages`` switches stages on (any order given; they run in the paper's order). Every stage is recorded:
    switched off, unavailable (no WMT19 weights: the registry's reason) or short-expression skips carry a
    ``reason``. ``synonym_mode``: "paper" (one random word) or "code" (every eligible word). Deterministic in
    ``seed``. ``synonym_senses`` / ``synonym_derived``: the synonym's sense and derivation rules
    (:func:`synonym_for`; ``0`` / ``True`` is the released code's drift-prone choice)."""
    unknown = [s for s in stages if s not in P2_STAGES]
    if unknown:
        raise ValueError(f"unknown P2 stage(s) {', '.join(map(repr, unknown))}; stages: {', '.join(P2_STAGES)}")
    if synonym_mode not in ("paper", "code"):
        raise ValueError("synonym_mode is 'paper' (one random word) or 'code' (every eligible word)")
    if int(seed) < 0:
        raise ValueError("seed must be >= 0")
    if int(synonym_senses or 0) < 0:
        raise ValueError("synonym_senses must be >= 0 (0: every sense)")
    short = short_len is not None and len(text.strip()) <= int(short_len)
    cur, recs = text, []
    for st in P2_STAGES:
        if st not in stages:
            recs.append(StageRecord(st, cur, cur, True, "switched off"))
            continue
        if short and st != "synonym":
            recs.append(StageRecord(st, cur, cur, True, f"expression of <= {short_len} characters: synonym stage "
                                                        "only (released code)"))
            continue
        rng = _stage_rng(seed, st)
        if st == "back_translation":
            out, reason, det = _back_translate(cur, int(rng.integers(0, 2 ** 31)), back_translate)
        elif st == "synonym":
            out, reason, det = _synonym_stage(cur, rng, synonym_mode, synonym_scorer, synonym_threshold,
                                              synonym_senses, synonym_derived)
        else:
            out, reason, det = _keyboard_stage(cur, rng)
        skipped = bool(reason) and out == cur
        recs.append(StageRecord(st, cur, out, skipped, reason, det))
        cur = out
    if not cur.strip():
        cur = "?"
    return P2Result(cur, text, int(seed), recs)
