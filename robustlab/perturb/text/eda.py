"""[P2] Qiu et al. word-level perturbations (EDA SR/WI/WS/WD, AEDA IP) and their MLVP versions.

EDA (Wei & Zou 2019, ``eda.py`` as bundled in [C2] and MLVP) reimplemented with a seeded ``random.Random`` and
WordNet 3.0 through :mod:`robustlab.perturb.text.wordnet` (NLTK-compatible ``synsets``/morphy):

* SR ``synonym_replacement(words, n)``: the distinct non-stop-words are shuffled and, in that order, up to ``n`` of
  those that have a WordNet synonym are replaced (every occurrence) by a random synonym;
* WI ``random_insertion(words, n)``: ``n`` times, a synonym of a random word (10 tries to find one that has a
  synonym) is inserted at a random position;
* WS ``random_swap(words, n)``: ``n`` swaps of two random positions;
* WD ``random_deletion(words, p)``: each word is deleted with probability p; a one-word text is kept and, if
  everything was deleted, one random word is returned;
* n = max(1, int(l * #words)) for SR/WI/WS; WD uses p = l.
* IP (AEDA ``insert_punctuation_marks``): Qiu ([C2]) inserts q ~ U{1 .. int(l * #words + 1)} marks, MLVP
  q = max(1, int(ratio * #words)); each mark from ``. , ! ? ; :`` goes before a distinct random word.

Determinism changes (nothing else): EDA builds synonym lists and the SR word list from Python sets, whose order
depends on ``PYTHONHASHSEED``; robustlab sorts them first. WI inserts EDA's ``synonyms[0]`` -- the first element of
an unordered set, i.e. an arbitrary synonym -- which robustlab draws with the seeded RNG instead.

Variants (the ⚠ of digest §2.2: [C2]'s ``eda()`` lower-cases and strips every non-letter before and after
augmenting, an extra normalisation on top of the nominal perturbation):

* ``qiu`` (default): the paper's operation on the caption's own words -- case and punctuation are kept, and SR/WI
  look words up without them (so "The" is the stop word "the" and "apples." has the synonyms of "apples";
  a capitalised word's replacement is capitalised) -- l = .15/.20/.25/.30/.35, no similarity gate;
* ``qiu_gated``: the same with the semantic-similarity gate (cosine >= 0.9, <= 100 tries, see ``gate.py``); a
  sample no attempt passes is dropped, as the paper says (App. 5.3);
* ``qiu_gated_code``: the same gate keeping the last attempt after 100 failures, as [C2] does;
* ``qiu_eda_code``: [C2] exactly -- EDA's ``get_only_chars`` normalisation (lower-case, letters only) -- plus the
  gate, as [C2] ran it (SR/WI/WS/WD only);
* ``mlvp``: MLVP's t2v benchmark setting -- EDA's functions on ``sentence.split()`` exactly as
  ``do_text_perturbation.py`` calls them (no normalisation: "The" is not a stop word there, "apples." has no
  synonym) at its word-level severity 2, ratio 0.10, at *every* severity 1-5 (the paper fixes one level per
  family), gated, keeping the last attempt when none of the 100 passes (the code; the paper does not say);
* ``mlvp_code``: the released code's own scale -- ratio = 0.05 x severity (its severities 1-5 of 1-7), gated,
  keeping the last attempt after 100 failures as the code does.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from robustlab.perturb.registry import _REGISTRY, register
from robustlab.perturb.text import resources as R
from robustlab.perturb.text._common import (
    C2, MLVP, MLVP_CODE, MLVP_LEVELS, P2, QIU_LEVELS, STOP_WORDS, py_rng,
)
from robustlab.perturb.text.gate import GATE_PARAMS, MLVP_GATE_PARAMS, QIU_GATE_PARAMS, gated

PUNCTUATIONS = [".", ",", "!", "?", ";", ":"]
_LETTERS = set("qwertyuiopasdfghjklzxcvbnm ")


def get_only_chars(line: str) -> str:
    """EDA's normaliser (safe on text without letters: returns '')."""
    line = line.replace("’", "").replace("'", "").replace("-", " ").replace("\t", " ").replace("\n", " ").lower()
    clean = "".join(c if c in _LETTERS else " " for c in line)
    clean = re.sub(" +", " ", clean)
    return clean[1:] if clean.startswith(" ") else clean


@functools.lru_cache(maxsize=16384)
def get_synonyms(word: str) -> tuple[str, ...]:
    """EDA ``get_synonyms`` (all parts of speech), sorted; the word itself (any case) removed."""
    wn = R.wordnet()
    syn = set()
    for names in wn.synonyms(word):
        for n in names:
            s = n.replace("_", " ").replace("-", " ").lower()
            syn.add("".join(c for c in s if c in _LETTERS))
    syn.discard(word)
    syn.discard(word.lower())
    return tuple(sorted(syn))


def synonym_replacement(words, n, r, paper: bool = False):
    """EDA SR. ``paper=True``: words are matched by their core (no case, no attached punctuation), which is kept."""
    if paper:
        return _sr_paper(words, n, r)
    new_words = list(words)
    pool = sorted({w for w in words if w not in STOP_WORDS})
    r.shuffle(pool)
    replaced = 0
    for w in pool:
        syns = get_synonyms(w)
        if syns:
            s = r.choice(syns)
            new_words = [s if x == w else x for x in new_words]
            replaced += 1
        if replaced >= n:
            break
    return " ".join(new_words).split(" ")


_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)


def _split(tok: str):
    m = _CORE.match(tok)
    return m.group(1), m.group(2), m.group(3)


def _sr_paper(words, n, r):
    parts = [_split(w) for w in words]
    pool = sorted({c.lower() for _, c, _ in parts if c and c.lower() not in STOP_WORDS})
    r.shuffle(pool)
    replaced = 0
    for w in pool:
        syns = get_synonyms(w)
        if syns:
            s = r.choice(syns)
            parts = [(a, (s.capitalize() if c[:1].isupper() and not c.isupper() else s) if c.lower() == w else c, b)
                     for a, c, b in parts]
            replaced += 1
        if replaced >= n:
            break
    return " ".join(a + c + b for a, c, b in parts).split(" ")


def random_insertion(words, n, r, paper: bool = False):
    """EDA WI. ``paper=True``: synonyms are looked up for the word's core (no case, no attached punctuation)."""
    new_words = list(words)
    for _ in range(n):
        syns: tuple = ()
        counter = 0
        while not syns:  # EDA add_word: gives up (inserting nothing) on the 10th draw, even if it found one
            w = new_words[r.randint(0, len(new_words) - 1)]
            syns = get_synonyms(_split(w)[1].lower() if paper else w)
            counter += 1
            if counter >= 10:
                syns = ()
                break
        if not syns:
            continue
        new_words.insert(r.randint(0, len(new_words) - 1), r.choice(syns))
    return new_words


def random_swap(words, n, r):
    new_words = list(words)
    for _ in range(n):
        i = r.randint(0, len(new_words) - 1)
        j, counter = i, 0
        while j == i:
            j = r.randint(0, len(new_words) - 1)
            counter += 1
            if counter > 3:
                break
        if j != i:
            new_words[i], new_words[j] = new_words[j], new_words[i]
    return new_words


def random_deletion(words, p, r):
    if len(words) == 1:
        return list(words)
    new_words = [w for w in words if r.uniform(0, 1) > p]
    if not new_words:
        return [words[r.randint(0, len(words) - 1)]]
    return new_words


def insert_punctuation_marks(sentence: str, ratio: float, r, mode: str) -> str:
    words = sentence.split(" ")
    if mode == "mlvp":
        q = max(1, int(ratio * len(words)))
    else:  # [C2] AEDA
        q = r.randint(1, int(ratio * len(words) + 1))
    qs = set(r.sample(range(0, len(words)), min(q, len(words))))
    out = []
    for j, w in enumerate(words):
        if j in qs:
            out.append(PUNCTUATIONS[r.randint(0, len(PUNCTUATIONS) - 1)])
        out.append(w)
    return " ".join(out)


_OPS = {"sr": synonym_replacement, "wi": random_insertion, "ws": random_swap, "wd": random_deletion}


def _run_eda(text: str, params: dict, r) -> str:
    op, level, mode = params["op"], params["level"], params["mode"]
    if mode == "eda_code":
        sentence = get_only_chars(text)
        words = [w for w in sentence.split(" ") if w != ""]
    else:
        words = text.split()
    if not words:
        return text
    arg = level if op == "wd" else max(1, int(level * len(words)))
    if op in ("sr", "wi"):
        out = " ".join(_OPS[op](words, arg, r, paper=mode == "paper"))
    else:
        out = " ".join(_OPS[op](words, arg, r))
    return get_only_chars(out) if mode == "eda_code" else out


MLVP_WORD_RATIO = 0.10  # MLVP's t2v benchmark: word level at its severity 2, ratio = 0.05 x 2 (App. B.4)
_MLVP_TOKENS = "whitespace tokens as they are (EDA functions on sentence.split(), as MLVP calls them)"
_MLVP_FIXED = {"mlvp_severity": 2,
               "level_scheme": "fixed: MLVP's benchmark runs one level per family; severities 1-5 all run ratio 0.10"}


def _eda_tables(op: str, levels_key: str = "level") -> dict:
    def t(levels, **kw):
        return {s: {"op": op, levels_key: lv, **kw} for s, lv in enumerate(levels, start=1)}

    common = {"lexicon": "WordNet 3.0 (Debian wordnet-base)"} if op in ("sr", "wi") else {}
    count = {"count": "p = level" if op == "wd" else "n = max(1, int(level * #words))"}
    paper = ("whitespace words; matched without case or attached punctuation, both kept in the output"
             if op in ("sr", "wi") else "whitespace words (case, punctuation kept)")
    tables = {
        "qiu": t(QIU_LEVELS, mode="paper", gate=False, tokens=paper, **common, **count),
        "qiu_gated": t(QIU_LEVELS, mode="paper", tokens=paper, **QIU_GATE_PARAMS, **common, **count),
        "qiu_gated_code": t(QIU_LEVELS, mode="paper", tokens=paper, **GATE_PARAMS, **common, **count),
        "qiu_eda_code": t(QIU_LEVELS, mode="eda_code", tokens="EDA get_only_chars (lower-case, letters only)",
                          **GATE_PARAMS, **common, **count),
        "mlvp": t((MLVP_WORD_RATIO,) * 5, mode="mlvp", tokens=_MLVP_TOKENS, **MLVP_GATE_PARAMS, **_MLVP_FIXED,
                  **common, **count),
        "mlvp_code": t(MLVP_LEVELS, mode="mlvp", tokens=_MLVP_TOKENS, **GATE_PARAMS,
                       mlvp_severity_note="ratio = 0.05 x severity; MLVP's t2v benchmark uses severity 2", **common,
                       **count),
    }
    return tables


_VNOTES = {
    "qiu": "[P2] Table 8 semantics on the caption's own tokens, l = .15-.35, ungated (default)",
    "qiu_gated": "as qiu, with the similarity gate (MiniLM cosine >= 0.9, <= 100 tries; [C2] gates EDA/IP); a "
                 "sample no attempt passes is dropped (the paper, App. 5.3)",
    "qiu_gated_code": "as qiu_gated, keeping the last attempt after 100 failures ([C2])",
    "qiu_eda_code": "[C2] eda(): lower-cased, letters-only normalisation before and after, gated",
    "mlvp": "MLVP's t2v benchmark: EDA functions on whitespace tokens, ratio 0.10 at every severity, gated, the "
            "last attempt kept when none passes (the code; the paper does not say)",
    "mlvp_code": "MLVP do_text_perturbation.py's scale: ratio 0.05 x s, gated, the last attempt kept (the code)",
}


def _eda_op(name: str, op: str, display: str, what: str):
    @register(name, modality="text", category="word",
              source=f"{P2} Table 8 ({display}); EDA (Wei & Zou 2019) as in {C2} eda.py; {MLVP} ({MLVP_CODE})",
              variants=_eda_tables(op), default_variant="qiu", variant_notes=_VNOTES,
              check=R.wordnet_reason if op in ("sr", "wi") else None,
              tags=("p2", "mlvp", "eda", "wordnet" if op in ("sr", "wi") else "alg"),
              description=f"{display} [P2 word level]: {what}")
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        if params.get("gate"):
            return gated(text, lambda r, k: _run_eda(text, params, r), rng, params)
        return _run_eda(text, params, py_rng(rng))

    fn.__name__ = fn.__qualname__ = name
    return fn


synonym_replacement_op = _eda_op("synonym_replacement", "sr", "Synonym Replacement (SR)",
                                 "replace n = max(1, int(l*#words)) non-stop-words by random WordNet synonyms.")
word_insertion_op = _eda_op("word_insertion", "wi", "Word Insertion (WI)",
                            "insert a synonym of a random word at a random position, n = max(1, int(l*#words)) "
                            "times.")
word_swap_op = _eda_op("word_swap", "ws", "Word Swap (WS)",
                       "swap two random words, n = max(1, int(l*#words)) times.")
word_deletion_op = _eda_op("word_deletion", "wd", "Word Deletion (WD)",
                           "delete each word with probability l (a one-word text is kept).")


def _ip_tables() -> dict:
    def t(levels, mode, **kw):
        return {s: {"level": lv, "mode": mode, "marks": "".join(PUNCTUATIONS), **kw}
                for s, lv in enumerate(levels, start=1)}

    return {
        "qiu": t(QIU_LEVELS, "qiu", gate=False, count="q ~ U{1 .. int(l*#words + 1)}"),
        "qiu_gated": t(QIU_LEVELS, "qiu", count="q ~ U{1 .. int(l*#words + 1)}", **QIU_GATE_PARAMS),
        "qiu_gated_code": t(QIU_LEVELS, "qiu", count="q ~ U{1 .. int(l*#words + 1)}", **GATE_PARAMS),
        "mlvp": t((MLVP_WORD_RATIO,) * 5, "mlvp", count="q = max(1, int(ratio*#words))", **MLVP_GATE_PARAMS,
                  **_MLVP_FIXED),
        "mlvp_code": t(MLVP_LEVELS, "mlvp", count="q = max(1, int(ratio*#words))", **GATE_PARAMS,
                       mlvp_severity_note="ratio = 0.05 x severity; MLVP's t2v benchmark uses severity 2"),
    }


@register("insert_punctuation", modality="text", category="word",
          source=f"{P2} Table 8 (IP); AEDA (Karimi et al. 2021) insert_punctuation_marks as in {C2}; {MLVP}",
          variants=_ip_tables(), default_variant="qiu",
          variant_notes={"qiu": "[C2] AEDA, q ~ U{1..int(l*#words+1)}, ungated (default)",
                         "qiu_gated": "as qiu, with the similarity gate ([C2] gates IP); dropped when no attempt "
                                      "passes (the paper)",
                         "qiu_gated_code": "as qiu_gated, the last attempt kept ([C2])",
                         "mlvp": "MLVP's benchmark: q = max(1, int(ratio*#words)), ratio 0.10 at every severity, "
                                 "gated, the last attempt kept when none passes (the code)",
                         "mlvp_code": "MLVP's code: q = max(1, int(ratio*#words)), ratio 0.05 x s, gated"},
          tags=("p2", "mlvp", "aeda", "alg"),
          description="Insert Punctuation (IP) [P2 word level]: insert random marks from . , ! ? ; : before "
                      "random words.")
def insert_punctuation(text: str, params: dict, rng: np.random.Generator) -> str:
    def make(r, k=0):
        return insert_punctuation_marks(text, params["level"], r, params["mode"])

    if params.get("gate"):
        return gated(text, make, rng, params)
    return make(py_rng(rng))


def refresh_availability() -> None:
    """Re-decide availability (WordNet) of SR and WI (the registry also does it on every listing)."""
    for name in ("synonym_replacement", "word_insertion"):
        _REGISTRY[name].refresh()
