"""Helpers shared by the text perturbations (no heavy imports here: spaCy, torch and WordNet load lazily).

Randomness. Every function here draws from a private ``random.Random`` seeded from the call's
``np.random.Generator`` (:func:`py_rng`); the global ``random`` and ``numpy.random`` states are never touched
(third-party code that does use them -- nlpaug -- is wrapped in save/restore, see ``char.py``; torch sampling
-- Styleformer -- runs under ``torch.random.fork_rng``). ``random.Random`` methods used here (``random``,
``randint``, ``choice``, ``sample``, ``shuffle``) are stable across CPython 3.x, and nothing iterates a set or
dict of strings without sorting first, so outputs do not depend on ``PYTHONHASHSEED``.

Details. A perturbation returns :class:`AnnotatedText`, a ``str`` whose ``info`` dict says what happened (the
similarity gate's score and retries, which resource was used, why nothing changed). It *is* the output string
(equality, hashing and JSON behave as for ``str``); the registry copies ``info`` into the record when it knows
about it (``record["details"]``), and ``res.output.info`` always has it.
"""
from __future__ import annotations

import random
import re
import string

import numpy as np

UNK = "[UNK]"
P1 = "Schiappa et al. 2022 [P1]"
P2 = "Qiu et al. 2022 [P2]"
MLVP = "Zhang et al. (MLVP text query shifts) [P2 of seeds_methods]"
C1 = "[C1] Maddy12/VideoLanguageModelRobustness generate_noisy_text.py"
C2 = "[C2] Jielin-Qiu/MM_Robustness"
MLVP_CODE = "bingqingzhang/vtr_tta do_text_perturbation.py"
TEXTFLINT = "TextFlint 0.1.0 (behaviour reimplemented; TextFlint does not install on this stack)"

QIU_LEVELS = (0.15, 0.20, 0.25, 0.30, 0.35)  # [P2] §2: l for severities 1..5 ([C2] 0.05 x rate, rate 3..7)
MLVP_LEVELS = (0.05, 0.10, 0.15, 0.20, 0.25)  # MLVP ratio = 0.05 x severity; its t2v benchmark uses severity 2

# EDA's stop-word list (Wei & Zou 2019, eda.py; the NLTK English list with "" added). Also used for TextFlint's
# word substitutions, whose STOP_WORDS is the same NLTK-derived list.
STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
it its itself they them their theirs themselves what which who whom this that these those am is are was were be
been being have has had having do does did doing a an the and but if or because as until while of at by for with
about against between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other some such no nor
not only own same so than too very s t can will just don should now
""".split()) | {""}

PUNCT = frozenset(string.punctuation)
_TOKEN_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]", re.UNICODE)


class AnnotatedText(str):
    """A ``str`` (the perturbed text) carrying an ``info`` dict about how it was made."""

    info: dict

    def __new__(cls, text: str, info: dict | None = None):
        obj = super().__new__(cls, text)
        obj.info = dict(info or {})
        return obj

    def __reduce__(self):  # pickles (multiprocessing) as a plain annotated string
        return (AnnotatedText, (str(self), self.info))


def annotate(text: str, **info) -> AnnotatedText:
    if isinstance(text, AnnotatedText):
        merged = {**text.info, **info}
        return AnnotatedText(str(text), merged)
    return AnnotatedText(text, info)


def py_rng(rng: np.random.Generator) -> random.Random:
    """A private ``random.Random`` seeded from the call's generator (global RNG states are left alone)."""
    return random.Random(int(rng.integers(0, 2 ** 63)))


def tokens_with_spans(text: str) -> list[tuple[str, int, int]]:
    """Word and punctuation tokens with their character spans (words keep inner apostrophes)."""
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def replace_spans(text: str, edits: dict[int, str], spans) -> str:
    """Replace the tokens at the given indices (of ``spans``) with new strings, keeping the rest verbatim."""
    out, last = [], 0
    for i in sorted(edits):
        _, s, e = spans[i]
        out.append(text[last:s])
        out.append(edits[i])
        last = e
    out.append(text[last:])
    return "".join(out)


def is_punct(tok: str) -> bool:
    return bool(tok) and all(c in PUNCT or not (c.isalnum() or c.isspace()) for c in tok)


def trans_count(p: float, size: int, lo: int, hi: int | None) -> int:
    """TextFlint ``WordSubstitute.get_trans_cnt``: clamp(int(p * size), trans_min, trans_max)."""
    cnt = int(p * size)
    if cnt < lo:
        return lo
    if hi is not None and cnt > hi:
        return hi
    return cnt


def copy_case(example: str, word: str) -> str:
    """gender_bender's ``_copy_case``: capitalise like ``example`` (all-caps stays all-caps)."""
    if not word:
        return word
    if example[:1].isupper():
        word = word[0].upper() + word[1:]
    if example.isupper() and len(example) > 1:
        word = word.upper()
    return word


def single_level(params: dict, note: str = "") -> dict:
    """Severity table for a single-level perturbation: severities 1..5 all run the paper's one level."""
    p = {**params, "level_scheme": "single: severities 1-5 all run the paper's one level", "paper_level": 1}
    if note:
        p["level_note"] = note
    return {s: dict(p) for s in range(1, 6)}


def scaled_p(paper_p: float, key: str = "trans_p", **extra) -> dict:
    """Severity table scaling a rate: ``key`` = paper value x s/3, so severity 3 is the paper's setting."""
    return {s: {key: round(paper_p * s / 3, 4), **extra, "paper_value": paper_p, "paper_level": 3,
                "level_scheme": f"scaled: {key} = paper value x s/3 (paper's value at severity 3)"}
            for s in range(1, 6)}
