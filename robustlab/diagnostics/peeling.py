"""PEELING: adversarial tests for visual grounding by image-aware property reduction.

Implemented from the paper (*Adversarial Testing for Visual Grounding via Image-Aware Property Reduction*, §III-§IV;
spec digest ``seeds_methods.md`` §4) -- no code of IMGAT/PEELING is reused. A referring expression often says more
than it needs to ("the small striped red circle at the top left" where "the circle" would do). PEELING

1. **P1, property reduction**: extracts the *object* and its *properties* (:class:`SpacyExtractor`, or an LLM
   through :class:`LLMExtractor`), recombines them into shorter candidates (:func:`candidates`) and keeps those a
   VQA model says are unique in *this* image (:func:`uniqueness`: three questions, AND logic);
2. **P2, semantically-equivalent perturbation** (:func:`p2_chain`): back-translation EN→DE→EN, one WordNet synonym,
   one keyboard typo;
3. grounds the result (``MRtext``) on the same image: IoU ≤ 0.5 to the original ground-truth box is an *issue*.
   ``MMI = (ACC_ori − ACC_adv) / ACC_ori`` (:func:`robustlab.metrics.mmi`).

:func:`peel` runs one example, :func:`peel_many` a dataset (batched: one VQA call and one grounding call per chunk
of items); :meth:`PeelingRun.summary` gives the metrics and :func:`export_tests` writes the paper's files.

Paper-vs-code choices (the digest's §7 rows 16-19 and what this module adds), all switchable through
:class:`PeelingConfig` (``PeelingConfig.released()`` collects the released code's behaviour):

* **Extraction.** The paper asks ChatGPT (10 in-context examples; the released prompt has 7, the first one
  mislabelled). The default here is offline: :class:`SpacyExtractor`, a dependency-parse rule set (head noun of the
  referring noun chunk = object; its adjectival / compound modifiers, prepositional phrases, relative clauses and
  participial modifiers = properties, each the original substring, in sentence order). Its two deliberate
  departures from the parse: a participial or relative clause that ends a prepositional phrase is taken as the
  object's own property (the paper's "Man in a car talking on a cellphone" → "in a car", "talking on a
  cellphone"), and a relative clause loses its relativiser and auxiliaries ("who is wearing a hat" → "wearing a
  hat", as in the paper's example 4). :class:`LLMExtractor` plugs any completion function into a prompt in the
  released JSON format with this module's own few-shot examples.
* **Plural objects** (:func:`looks_plural`): the released code skips objects whose string ends in "s"/"es" or
  contains "men"/"women" (so "bus" and "glass" are skipped too); the paper does not mention it. Default on
  (``skip_plural``), the released rule exactly.
* **Candidates.** The paper: the object alone (strategy 1) and the object with properties in their original order
  (strategy 2), never the full set. The released code: the object alone and the object + *one* property (which,
  with a single property, *is* the full set -- kept there). Default: object alone + object with one property,
  never the full set (so an expression with one property yields only the object); ``wide=True`` adds every proper
  subset (the paper's wording). The candidate has no article (released code; "a bird stands behind..." in the
  paper's text has one): ``keep_article=True`` puts the original determiner back in the grounded expression (the
  VQA questions always use the bare phrase, as the templates need).
* **Selection.** The released code asks the three questions for the object; if it is unique, every
  object+property candidate is kept *without* asking (a unique object stays unique when a property of it is
  added); otherwise each object+property candidate is asked. Default: that; ``check_all=True`` asks every
  candidate.
* **Templates.** ``"How many " + X + " in the image?"``, ``"Are there many " + X + " in the image?"``, ``"Is there a
  reflected " + X + " in the image?"``. The released third template lacks the space before "in" ("...X" + "in the
  image?"): used only with ``compat=True``.
* **Answers.** The released code tests substrings ("one"/"1" in the count answer, "no" in the other two), so
  "someone" counts as one and "none"/"snow" as no. Default: token-level (a whole token "one" or "1"; a whole token
  "no"); ``compat=True`` restores the substring tests.
* **P2 order and levels.** Back-translation (nlpaug ``BackTranslationAug`` defaults: facebook/wmt19-en-de and
  -de-en), then synonyms, then one keyboard typo (nlpaug ``KeyboardAug(aug_char_max=1, aug_word_max=1)``, the other
  arguments nlpaug 1.1.11's defaults, run through :func:`robustlab.perturb.text.char.run_nlpaug`). Back-translation
  runs only when the WMT19 weights are in the local Hugging Face cache (the registry's ``back_translation``); else
  the stage is recorded as skipped with the registry's reason -- never faked. A callable can stand in
  (``back_translate=``).
* **Synonyms.** The paper replaces *one random word*; the released code replaces *every* token tagged
  NN/JJ(R/S)/VB(D/G/N/P/Z)/RB(R/S) by the first WordNet lemma whose phrase-bert cosine to the word exceeds 0.6 (or
  by the sole synonym when there is exactly one). Default ``synonym_mode="paper"``: one word, drawn with the seeded
  generator among the eligible tokens that have an acceptable synonym; ``"code"`` replaces all of them. The
  eligibility, the first-lemma rule, the 0.6 threshold and the sole-synonym rule are the released code's.
  phrase-bert is not available offline: the similarity is all-MiniLM-L6-v2 sentence-embedding cosine, a
  *substitute* named in every stage record (``synonym_scorer=None`` takes the first lemma unfiltered). The
  replacement is the lemma as WordNet spells it (no re-inflection, as in the released code).
* **Short expressions.** In the released code, expressions of ≤ 5 characters get only the synonym stage; so here
  (``short_len``, applied to the text entering P2).
* **Seeds.** Test ``k`` of expression ``r`` of item ``i`` gets ``seed_for(seed, 1000 * i + r, k)`` (recorded in the
  test); each P2 stage draws from its own generator
  ``default_rng([test_seed, stage])``, so switching one stage off does not change another's draws.
* **Metrics.** ``acc_original`` is the grounding accuracy (IoU > 0.5) on the original expressions of *all* items
  (the paper's ACC_ori is the model's accuracy on the whole test set) and ``mmi`` uses it; ``acc_original_tested``
  / ``mmi_tested`` restrict it to the items that produced at least one test. ``acc_reduced`` / ``mmi_reduced`` score
  the P1 output alone (the ablation of Table III, "without P2"). Where the dataset knows its world (the built-in
  scenes), ``oracle`` says how often the VQA verdict agrees with the truth (a candidate is truly unique when exactly
  one object of the scene, the target, has every attribute it names) and ``tests_valid`` is the share of tests whose
  reduced expression really singles out the target -- an automatic analogue of the paper's manual ATCR for P1.
* **Units.** An item here is one referring expression (an image with several expressions counts once per
  expression); the built-in datasets have one per image.
"""
from __future__ import annotations

import base64
import csv
import functools
import io
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import (
    Any,
    Protocol,
    runtime_checkable,
)

import numpy as np

# ---------------------------------------------------------------------------------------------- constants
TEMPLATES = ("How many {x} in the image?", "Are there many {x} in the image?", "Is there a reflected {x} in the image?")
RELEASED_TEMPLATES = ("How many {x} in the image?", "Are there many {x} in the image?",
                      "Is there a reflected {x}in the image?")  # sic: the released code's missing space
QUERIES = ("how_many", "whether", "reflection")
P2_STAGES = ("back_translation", "synonym", "keyboard")  # the paper's order (sentence, word, character level)
_STAGE_KEY = {"back_translation": 0, "synonym": 1, "keyboard": 2}
KEYBOARD_PARAMS = {"aug_char_max": 1, "aug_word_max": 1}  # released: KeyboardAug(aug_char_max=1, aug_word_max=1)
SYNONYM_TAGS = {"NN": "n", "JJ": "a", "JJR": "a", "JJS": "a", "VB": "v", "VBD": "v", "VBG": "v", "VBN": "v",
                "VBP": "v", "VBZ": "v", "RB": "r", "RBR": "r", "RBS": "r"}  # the released code's POS filter
SYNONYM_THRESHOLD = 0.6  # released: phrase-bert cosine > 0.6
PHRASE_BERT = "whaleloops/phrase-bert"
MINILM_SCORER = "all-MiniLM-L6-v2 sentence-embedding cosine (substitute for phrase-bert, not available offline)"
IOU_THRESHOLD = 0.5  # correct iff IoU > 0.5 (strict); IoU <= 0.5 is an issue
SHORT_LEN = 5
CHUNK = 100  # items per model call (numbers do not depend on it)
SKIP_REASONS = ("plural", "no_unique_candidate", "extraction_empty")


# ============================================================================================ extraction
@dataclass
class Extraction:
    """The object (head entity) of a referring expression and its properties, as substrings of the expression.

    ``spans`` (optional): character offsets ``(start, end)`` of the object and of each property in the
    expression, used to order candidates; without them (an LLM's answer) the order comes from the first
    occurrence in the sentence (the released code's rule)."""

    object: str
    properties: list[str] = field(default_factory=list)
    source: str = ""
    object_span: tuple[int, int] | None = None
    property_spans: list[tuple[int, int]] | None = None
    raw: str = ""  # the extractor's raw answer (LLM), for the record

    @property
    def empty(self) -> bool:
        return not self.object.strip()

    def to_dict(self) -> dict:
        d = {"object": self.object, "properties": list(self.properties), "source": self.source}
        if self.raw:
            d["raw"] = self.raw
        return d


@runtime_checkable
class Extractor(Protocol):
    """Anything that maps a referring expression to an :class:`Extraction` (spaCy rules, an LLM, a lookup)."""

    def __call__(self, expression: str) -> Extraction: ...


_NLP_LOCK = threading.RLock()
_SKIP_PRE = {"det", "predet", "punct", "case", "cc", "preconj"}
_REL = {"WDT", "WP", "WP$"}


def _spacy_doc(text: str):
    from robustlab.perturb.text import resources as R

    reason = R.spacy_reason()
    if reason:
        raise RuntimeError(reason)
    with _NLP_LOCK:
        return R.nlp()(text)


def _is_nominal(t) -> bool:
    return t.pos_ in ("NOUN", "PROPN") or t.lower_ in ("one", "ones")


class SpacyExtractor:
    """Object and properties from spaCy's dependency parse (``en_core_web_sm``, offline); see the module docstring.

    Object: the head noun of the referring noun chunk -- the sentence root when it is a noun, else the first noun
    chunk not inside a prepositional phrase (else the first noun chunk, else the last noun). Properties, each the
    original substring, in sentence order: the head's modifiers to its left (adjectives, compounds, numbers;
    determiners and possessive pronouns dropped; "navy blue" -- an ``nmod`` followed by its adjective -- stays one
    property), its modifiers to its right (prepositional phrases, participial and relative clauses, appositions)
    and what the parse left outside the object's phrase (a predicate: "stands behind two brown birds"; a word the
    parser hung elsewhere: the "left" of "at the top left" is joined back to its phrase)."""

    source = "spacy"

    def __init__(self, split_trailing_clauses: bool = True, strip_relativizer: bool = True):
        self.split_trailing_clauses = split_trailing_clauses
        self.strip_relativizer = strip_relativizer

    def __call__(self, expression: str) -> Extraction:
        return _spacy_extract(str(expression), self.split_trailing_clauses, self.strip_relativizer)


@functools.lru_cache(maxsize=16384)
def _spacy_extract(text: str, split_trailing: bool, strip_rel: bool) -> Extraction:
    doc = _spacy_doc(text)
    head = _object_head(doc)
    if head is None:
        return Extraction("", [], "spacy")
    spans: list[tuple[int, int]] = []  # token ranges [a, b)
    for a, b in (g for c in head.lefts if not _skip_left(c) for g in _left_groups(c)):
        if spans and a > 0 and doc[a - 1].dep_ == "nmod" and spans[-1][1] == a:  # "navy blue"
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    for c in head.rights:
        if c.dep_ in ("punct", "cc", "conj"):
            continue
        if c.dep_ == "relcl":
            spans.extend(_clause_spans(c, strip_rel))
        elif split_trailing and c.dep_ in ("prep", "agent"):
            spans.extend(_prep_spans(c, strip_rel))
        else:
            spans.append((c.left_edge.i, c.right_edge.i + 1))
    inside = {t.i for t in head.subtree}
    run: list[int] = []
    runs: list[list[int]] = []
    for t in doc:
        if t.i in inside:
            if run:
                runs.append(run)
            run = []
        else:
            run.append(t.i)
    if run:
        runs.append(run)
    for r in runs:
        a, b = _trim(doc, r[0], r[-1] + 1)
        if a >= b:
            continue
        has_verb = any(doc[k].pos_ in ("VERB", "AUX") for k in range(a, b))
        prev = max((s for s in spans if s[1] <= a), key=lambda s: s[1], default=None)
        if prev is not None and prev[0] > head.i and _trim(doc, prev[1], a) == (a, a) and not has_verb:
            spans[spans.index(prev)] = (prev[0], b)  # "at the top" + "left"
        else:
            spans.append((a, b))
    out: list[tuple[int, int]] = []
    for a, b in sorted(_trim(doc, a, b) for a, b in spans):
        if a >= b or (out and a < out[-1][1]):
            continue
        out.append((a, b))
    props = [doc[a:b].text for a, b in out]
    pspans = [(doc[a].idx, doc[b - 1].idx + len(doc[b - 1].text)) for a, b in out]
    return Extraction(head.text, props, "spacy", (head.idx, head.idx + len(head.text)), pspans)


def _object_head(doc):
    h = _head_candidate(doc)
    # a small parser's slip: "the small striped cyan square" read as "cyan" (nsubj) + "square": when the chosen
    # noun modifies a noun to its right, that noun is the head
    while h is not None and h.head.i > h.i and _is_nominal(h.head) and h.dep_ in _CLAUSAL + ("compound", "nmod"):
        h = h.head
    return h


def _head_candidate(doc):
    roots = [t for t in doc if t.dep_ == "ROOT"]
    if roots and _is_nominal(roots[0]):
        return roots[0]
    chunks = [c.root for c in doc.noun_chunks if _is_nominal(c.root)]
    for h in chunks:
        if not any(a.dep_ in ("prep", "agent", "dative") for a in h.ancestors) and h.dep_ not in ("pobj",):
            return h
    if chunks:
        return chunks[0]
    nouns = [t for t in doc if _is_nominal(t)]
    if nouns:
        return nouns[-1]
    # nothing nominal ("the small pink square" tagged all adjectives): the last word before a preposition or verb
    last = None
    for t in doc:
        if t.pos_ in ("ADP", "VERB", "AUX") and last is not None:
            break
        if t.is_alpha and t.tag_ not in ("DT", "PDT", "PRP$"):
            last = t
    return last


_CLAUSAL = ("nsubj", "nsubjpass", "dobj", "attr", "appos", "npadvmod")


def _skip_left(c) -> bool:
    return c.dep_ in _SKIP_PRE or c.tag_ in ("DT", "PDT", "PRP$", "POS")


def _left_groups(c) -> list[tuple[int, int]]:
    """Token ranges of one left modifier: its whole subtree ("red shirt", "very large"), except where the parse
    slipped -- a clausal label on a pre-nominal word ("cyan" as nsubj of "square") or an adjective labelled as an
    adverb ("large" as advmod of "striped") -- where each word is its own property."""
    slip = c.dep_ in _CLAUSAL or any(k.dep_ == "advmod" and k.tag_ in ("JJ", "JJR", "JJS", "VBN") for k in c.lefts)
    if not slip:
        return [(c.left_edge.i, c.right_edge.i + 1)]
    out = [g for k in c.lefts if not _skip_left(k) for g in _left_groups(k)]
    return out + [(c.i, c.right_edge.i + 1)]


def _trim(doc, a: int, b: int) -> tuple[int, int]:
    """Drop leading and trailing punctuation / coordinators / determiners-only edges of a token range."""
    while a < b and (doc[a].is_punct or doc[a].dep_ in ("cc",)):
        a += 1
    while b > a and (doc[b - 1].is_punct or doc[b - 1].dep_ in ("cc",) or doc[b - 1].tag_ in ("DT",)):
        b -= 1
    if b - a == 1 and doc[a].tag_ in ("DT", "PDT", "PRP$"):
        return a, a
    return a, b


def _clause_spans(c, strip_rel: bool) -> list[tuple[int, int]]:
    """A relative or participial clause split at its coordinated verbs, relativiser and auxiliaries dropped."""
    conj = [k for k in c.rights if k.dep_ == "conj" and k.pos_ in ("VERB", "AUX")]
    drop = {t.i for k in conj for t in k.subtree} | {k.i for k in c.rights if k.dep_ == "cc" and conj}
    own = [t.i for t in c.subtree if t.i not in drop]
    out = []
    for toks in [own] + [[t.i for t in k.subtree] for k in conj]:
        toks = sorted(toks)
        doc = c.doc
        while strip_rel and toks and (doc[toks[0]].tag_ in _REL or (doc[toks[0]].lower_ == "that"
                                                                   and doc[toks[0]].dep_.startswith("nsubj"))
                                      or doc[toks[0]].dep_ in ("aux", "auxpass") and c.dep_ == "relcl"):
            toks = toks[1:]
        if toks:
            out.append((toks[0], toks[-1] + 1))
    return out


def _prep_spans(p, strip_rel: bool) -> list[tuple[int, int]]:
    """A prepositional phrase; a participial / relative clause that ends it is split off as its own property."""
    doc = p.doc
    tail = None
    for t in p.subtree:
        clause = t.dep_ in ("acl", "relcl") and t.tag_ in ("VBG", "VBN", "VBZ", "VBD", "VBP", "VB") and t.head.i != p.i
        if clause and t.right_edge.i == p.right_edge.i and (tail is None or t.left_edge.i < tail.left_edge.i):
            tail = t
    if tail is None:
        return [(p.left_edge.i, p.right_edge.i + 1)]
    first = (p.left_edge.i, tail.left_edge.i)
    rest = _clause_spans(tail, strip_rel) if tail.dep_ == "relcl" else [(tail.left_edge.i, tail.right_edge.i + 1)]
    return [first] + rest if first[0] < first[1] and doc[first[0]:first[1]].text.strip() else rest


# ---------------------------------------------------------------------------------------------- LLM
LLM_INSTRUCTION = ("Please do an entity extraction task, extract the subject and modifiers from the following "
                   "sentence, and output it in json format and in English:")
# this module's own in-context examples (the released prompt's format; not its examples)
LLM_EXAMPLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("the tall lamp next to the sofa", "lamp", ("tall", "next to the sofa")),
    ("A girl in a yellow raincoat holding an umbrella", "girl", ("in a yellow raincoat", "holding an umbrella")),
    ("a dog", "dog", ()),
    ("The wooden chair that is pushed under the table.", "chair", ("wooden", "pushed under the table")),
    ("small brown horse eating grass on the left", "horse", ("small", "brown", "eating grass", "on the left")),
    ("A bald man who is laughing and waving", "man", ("bald", "laughing", "waving")),
    ("the plate of pasta closest to the camera", "plate", ("of pasta", "closest to the camera")),
)


def llm_prompt(expression: str, examples: Sequence[tuple[str, str, Sequence[str]]] = LLM_EXAMPLES) -> str:
    """The extraction prompt in the released JSON format (``{"subject": ..., "modifiers": [...]}``)."""
    lines = [LLM_INSTRUCTION, "Let me give you some example:"]
    for k, (inp, subj, mods) in enumerate(examples, start=1):
        out = json.dumps({"subject": subj, "modifiers": list(mods)})
        lines.append(f" example{k}: Input:{inp}   Output: {out}")
    lines += [f"Input: {expression}", "Output:"]
    return "\n".join(lines)


def parse_llm_answer(answer: str) -> tuple[str, list[str]]:
    """(subject, modifiers) from an answer: the text from the first "{" to the first "}" read as JSON (the released
    parser). ValueError when there is no such object or it is not JSON with a string ``subject``."""
    s = str(answer)
    a = s.find("{")
    b = s.find("}", a + 1) if a >= 0 else -1
    if a < 0 or b < 0:
        raise ValueError("no {...} in the answer")
    try:
        obj = json.loads(s[a:b + 1])
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from None
    subj = obj.get("subject") if isinstance(obj, dict) else None
    if not isinstance(subj, str):
        raise ValueError("no string 'subject'")  # noqa: TRY004 - a bad answer, reported like the others
    mods = obj.get("modifiers") or []
    if isinstance(mods, str):
        mods = [mods]
    return subj, [str(m) for m in mods if str(m).strip()]


class LLMExtractor:
    """Extraction by a language model: ``complete(prompt) -> text`` (any client: OpenAI, a local model...).

    The prompt is :func:`llm_prompt` (the released JSON format, this module's examples unless ``examples`` is
    given); the answer is read by :func:`parse_llm_answer`. An unreadable answer gives an empty extraction (the
    item is then skipped as "extraction_empty"), with the raw answer kept in ``Extraction.raw``."""

    source = "llm"

    def __init__(self, complete: Callable[[str], str],
                 examples: Sequence[tuple[str, str, Sequence[str]]] = LLM_EXAMPLES):
        self.complete = complete
        self.examples = tuple(examples)

    def __call__(self, expression: str) -> Extraction:
        raw = str(self.complete(llm_prompt(expression, self.examples)))
        try:
            subj, mods = parse_llm_answer(raw)
        except ValueError:
            return Extraction("", [], "llm (unreadable answer)", raw=raw)
        return Extraction(subj.strip(), [m.strip() for m in mods], "llm", raw=raw)


def looks_plural(obj: str) -> bool:
    """The released code's plural test: the object ends in "s" (or "es") or contains "men" / "women".

    Crude on purpose (it is the released rule): "bus" and "glass" count as plural, "mice" does not."""
    o = str(obj).strip().lower()
    return o.endswith(("s", "es")) or "men" in o or "women" in o


# ============================================================================================ candidates
@dataclass(frozen=True)
class Candidate:
    """A reduced expression: ``text`` (the bare phrase X the VQA questions use) and the properties it keeps."""

    text: str
    properties: tuple[str, ...] = ()
    strategy: str = "object"  # "object" (strategy 1) | "object+property" | "object+properties" (strategy 2)


def _locate(expression: str, phrase: str, word: bool = False) -> int:
    low, p = expression.lower(), phrase.strip().lower()
    if not p:
        return len(expression)
    if word:
        m = re.search(r"(?<![a-z0-9])" + re.escape(p) + r"(?![a-z0-9])", low)
        if m:
            return m.start()
    k = low.find(p)
    if k < 0 and p.split():
        k = low.find(p.split()[0])
    return k if k >= 0 else len(expression)


def _positions(ex: Extraction, expression: str) -> tuple[int, list[int]]:
    if ex.object_span is not None and ex.property_spans is not None and len(ex.property_spans) == len(ex.properties):
        return ex.object_span[0], [s[0] for s in ex.property_spans]
    return _locate(expression, ex.object, word=True), [_locate(expression, p) for p in ex.properties]


def _join(parts: Iterable[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(p.strip() for p in parts if p.strip())).strip()


def candidates(extraction: Extraction, expression: str, wide: bool = False) -> list[Candidate]:
    """Reduced expressions: the object alone (strategy 1), then the object with one property (strategy 2), each
    ordered as in the original sentence ("bird stands behind two brown birds", not "stands behind ... bird");
    ``wide=True`` adds the object with any larger proper subset of the properties (the paper's wording), smallest
    first. The object with *all* its properties is never a candidate (it is not a reduction)."""
    if extraction.empty:
        return []
    props = [p.strip() for p in extraction.properties if p.strip()]
    opos, ppos = _positions(extraction, expression)
    ppos = ppos[:len(props)]
    out = [Candidate(extraction.object.strip(), (), "object")]
    top = len(props) - 1 if wide else min(1, len(props) - 1)
    for k in range(1, top + 1):
        for subset in combinations(range(len(props)), k):
            parts = sorted([(opos, -1, extraction.object)] + [(ppos[j], j, props[j]) for j in subset])
            out.append(Candidate(_join(p for _, _, p in parts), tuple(props[j] for j in subset),
                                 "object+property" if k == 1 else "object+properties"))
    seen, uniq = set(), []
    full = _join(p for _, _, p in sorted([(opos, -1, extraction.object)]
                                         + [(ppos[j], j, props[j]) for j in range(len(props))]))
    for c in out:
        key = c.text.lower()
        if key in seen or (props and key == full.lower()):
            continue
        seen.add(key)
        uniq.append(c)
    return uniq


def determiner(expression: str) -> str:
    """The determiner that opens the expression ("the", "a", "an"), or "" (for ``keep_article``)."""
    m = re.match(r"\s*(the|a|an)\s", expression, re.IGNORECASE)
    return m.group(1) if m else ""


# ============================================================================================ uniqueness
def questions_for(x: str, compat: bool = False) -> tuple[str, str, str]:
    """PEELING's three questions about a phrase X (``compat=True``: the released strings, missing space kept)."""
    return tuple(t.format(x=x) for t in (RELEASED_TEMPLATES if compat else TEMPLATES))  # type: ignore[return-value]


def _tokens(answer: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", str(answer).lower())


def count_is_one(answer: str, compat: bool = False) -> bool:
    """The "how many" check: a whole token "one" or "1" (``compat``: the substring anywhere, so "someone" and
    "10" pass)."""
    a = str(answer).lower()
    if compat:
        return "one" in a or "1" in a
    t = _tokens(a)
    return "one" in t or "1" in t


def says_no(answer: str, compat: bool = False) -> bool:
    """The "are there many" / "reflected" check: a whole token "no" (``compat``: the substring, so "none",
    "snow" and "notebook" pass)."""
    a = str(answer).lower()
    return "no" in a if compat else "no" in _tokens(a)


@dataclass
class Uniqueness:
    """The three questions about X, the answers, each check, and the AND verdict."""

    x: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    checks: tuple[bool, ...]
    unique: bool
    compat: bool = False

    def to_dict(self) -> dict:
        return {"x": self.x, "unique": self.unique, "compat": self.compat,
                **{q: {"question": s, "answer": a, "ok": ok}
                   for q, s, a, ok in zip(QUERIES, self.questions, self.answers, self.checks)}}


def judge(x: str, answers: Sequence[str], compat: bool = False) -> Uniqueness:
    """A :class:`Uniqueness` from the three answers (count one, not many, not reflected; AND)."""
    answers = tuple(str(a) for a in answers)
    checks = (count_is_one(answers[0], compat), says_no(answers[1], compat), says_no(answers[2], compat))
    return Uniqueness(x, questions_for(x, compat), answers, checks, all(checks), compat)


def _answers(vqa_batch_fn: Callable, images: list, questions: list[str]) -> list[str]:
    out = vqa_batch_fn(images, questions)
    res = [a[0] if isinstance(a, (tuple, list)) else a for a in out]
    if len(res) != len(questions):
        raise ValueError(f"the VQA function returned {len(res)} answers for {len(questions)} questions")
    return [str(a) for a in res]


def uniqueness(vqa_batch_fn: Callable, image, x: str, compat: bool = False) -> Uniqueness:
    """Ask the three questions about X on ``image`` (one batched call) and judge them.

    ``vqa_batch_fn(images, questions)`` returns one answer per question: a string or an ``(answer, extra)`` pair
    (``model.vqa_batch``; :func:`vqa_function` makes one from any model)."""
    return uniqueness_many(vqa_batch_fn, [image], [x], compat)[0]


def uniqueness_many(vqa_batch_fn: Callable, images: Sequence, xs: Sequence[str], compat: bool = False,
                    chunk: int = 3 * CHUNK) -> list[Uniqueness]:
    """:func:`uniqueness` for many (image, X) pairs, one VQA call per ``chunk`` questions."""
    qs, ims = [], []
    for im, x in zip(images, xs):
        for q in questions_for(x, compat):
            qs.append(q)
            ims.append(im)
    ans: list[str] = []
    for s in range(0, len(qs), max(3, int(chunk))):
        ans += _answers(vqa_batch_fn, ims[s:s + chunk], qs[s:s + chunk])
    return [judge(x, ans[3 * k:3 * k + 3], compat) for k, x in enumerate(xs)]


def vqa_function(model) -> Callable:
    """``(images, questions) -> answers`` of a model (its ``vqa_batch``, else one ``vqa`` call per question)."""
    if callable(getattr(model, "vqa_batch", None)):
        return lambda ims, qs: [a for a, _ in model.vqa_batch(list(ims), list(qs))]
    if callable(getattr(model, "vqa", None)):
        return lambda ims, qs: [model.vqa(i, q)[0] for i, q in zip(ims, qs)]
    if callable(model):
        return model
    raise ValueError(f"{getattr(model, 'model_id', type(model).__name__)} cannot answer questions (no vqa())")


# ============================================================================================ P2
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
    from robustlab.perturb.registry import get_perturbation

    spec = get_perturbation("back_translation")
    return "" if spec.available else spec.reason


def _back_translate(text: str, seed: int, fn: Callable[[str], str] | None) -> tuple[str, str, dict]:
    if fn is not None:
        return str(fn(text)), "", {"by": getattr(fn, "__name__", "callable")}
    reason = back_translation_reason()
    if reason:
        return text, f"back_translation unavailable: {reason}", {}
    from robustlab.perturb.registry import perturb

    res = perturb(text, "back_translation", 1, seed=int(seed))
    return str(res.output), "", {"record": res.record}


@functools.lru_cache(maxsize=1)
def _minilm_ok() -> str:
    from robustlab.perturb.text import resources as R

    return R.minilm_reason()


def minilm_similarity(word: str, options: Sequence[str]) -> list[float]:
    """Cosine of all-MiniLM-L6-v2 sentence embeddings between ``word`` and each option (phrase-bert's stand-in)."""
    from robustlab.perturb.text import resources as R

    v = R.encode_sentences([word] + list(options))
    return [float(x) for x in v[1:] @ v[0]]


@functools.lru_cache(maxsize=16384)
def _lemmas(word: str, pos: str) -> tuple[str, ...]:
    from robustlab.perturb.text.wordnet import get_wordnet

    wn = get_wordnet()
    w = word.lower()
    own = {w} | set(wn.morphy(w, pos))
    out, seen = [], set()
    for names in wn.synonyms(w, pos):
        for n in names:
            s = n.replace("_", " ")
            if s.lower() in own or s.lower() in seen:
                continue
            seen.add(s.lower())
            out.append(s)
    return tuple(out)


_SCORE_CACHE: dict = {}


def synonym_for(word: str, pos: str, scorer: Any = "minilm", threshold: float = SYNONYM_THRESHOLD
                ) -> tuple[str | None, float | None]:
    """The released code's replacement for ``word`` (WordNet part of speech ``pos``): the sole synonym when there
    is exactly one, else the first lemma (synset order) whose similarity to the word exceeds ``threshold``
    (``scorer``: "minilm", None = the first lemma unfiltered, or ``f(word, options) -> sims``). (None, None) when
    nothing qualifies."""
    lemmas = _lemmas(word, pos)
    if not lemmas:
        return None, None
    if len(lemmas) == 1 or scorer is None:
        return lemmas[0], None
    key = (word.lower(), pos, scorer)
    sims = _SCORE_CACHE.get(key)
    if sims is None:
        f = minilm_similarity if scorer == "minilm" else scorer
        sims = _SCORE_CACHE[key] = list(f(word.lower(), list(lemmas)))
    for lem, s in zip(lemmas, sims):
        if s > threshold:
            return lem, round(float(s), 4)
    return None, None


def _synonym_stage(text: str, rng: np.random.Generator, mode: str, scorer: Any, threshold: float
                   ) -> tuple[str, str, dict]:
    from robustlab.perturb.text import resources as R

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
        rep, sim = synonym_for(t.text, pos, scorer, threshold)
        if rep is not None:
            picks[k] = (rep, sim)
    scorer_name = MINILM_SCORER if scorer == "minilm" else ("none (first WordNet lemma)" if scorer is None
                                                            else getattr(scorer, "__name__", "custom"))
    details = {"mode": mode, "scorer": scorer_name, "threshold": threshold, "eligible": len(picks)}
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
    import importlib.util

    if importlib.util.find_spec("nlpaug") is None:
        return text, "missing dependency: nlpaug (pip install nlpaug==1.1.11)", {}
    from robustlab.perturb.text.char import KEYBOARD_DEFAULTS, run_nlpaug

    params = {**KEYBOARD_DEFAULTS, **KEYBOARD_PARAMS}
    out = run_nlpaug("KeyboardAug", text, params, rng)
    d = {"params": params, "augmenter": "nlpaug 1.1.11 KeyboardAug"}
    if out == text:
        d["note"] = "no word of >= min_char (4) characters to change"
    return out, "", d


def p2_chain(text: str, seed: int = 0, stages: Sequence[str] = P2_STAGES, *, synonym_mode: str = "paper",
             synonym_scorer: Any = "minilm", synonym_threshold: float = SYNONYM_THRESHOLD,
             short_len: int | None = SHORT_LEN, back_translate: Callable[[str], str] | None = None
             ) -> P2Result:
    """PEELING's P2 on one (reduced) expression: back-translation → synonym → keyboard typo, in that order.

    ``stages`` switches stages on (any order given; they run in the paper's order). Every stage is recorded:
    switched off, unavailable (no WMT19 weights: the registry's reason) or short-expression skips carry a
    ``reason``. ``synonym_mode``: "paper" (one random word) or "code" (every eligible word). Deterministic in
    ``seed``."""
    unknown = [s for s in stages if s not in P2_STAGES]
    if unknown:
        raise ValueError(f"unknown P2 stage(s) {', '.join(map(repr, unknown))}; stages: {', '.join(P2_STAGES)}")
    if synonym_mode not in ("paper", "code"):
        raise ValueError("synonym_mode is 'paper' (one random word) or 'code' (every eligible word)")
    if int(seed) < 0:
        raise ValueError("seed must be >= 0")
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
            out, reason, det = _synonym_stage(cur, rng, synonym_mode, synonym_scorer, synonym_threshold)
        else:
            out, reason, det = _keyboard_stage(cur, rng)
        skipped = bool(reason) and out == cur
        recs.append(StageRecord(st, cur, out, skipped, reason, det))
        cur = out
    if not cur.strip():
        cur = "?"
    return P2Result(cur, text, int(seed), recs)


# ============================================================================================ world truth
_POS_RE = re.compile(r"\b(?:at|in) the (top left|top right|bottom left|bottom right|top|bottom|left|right|center)\b")
_FILLER = {"the", "a", "an", "at", "in", "object"}


def world_matches(x: str, objects: Sequence) -> list[int] | None:
    """Indices of the built-in world's objects that a phrase fits (every attribute it names), or None when the
    phrase uses a word outside the world's vocabulary (truth unknown)."""
    from robustlab.datasets.synthetic.world import COLORS, SHAPES, SIZES, TEXTURES

    s = x.lower().strip()
    want: dict[str, str] = {}
    m = _POS_RE.search(s)
    if m:
        want["position"] = m.group(1)
        s = s[:m.start()] + " " + s[m.end():]
    for w in re.findall(r"[a-z]+", s):
        if w in SHAPES:
            key = "shape"
        elif w in COLORS:
            key = "color"
        elif w in SIZES:
            key = "size"
        elif w in TEXTURES:
            key = "texture"
        elif w in _FILLER:
            continue
        else:
            return None
        if want.get(key, w) != w:
            return []
        want[key] = w
    if not want:
        return None
    return [k for k, o in enumerate(objects) if all(getattr(o, a) == v for a, v in want.items())]


def world_valid(x: str, objects: Sequence, target: int) -> bool | None:
    """True when the phrase fits exactly one object of the scene, the target; None when unknown."""
    m = world_matches(x, objects)
    return None if m is None else (m == [int(target)])


# ============================================================================================ records
def _box(b) -> list[float] | None:
    if b is None:
        return None
    t = b.as_tuple() if hasattr(b, "as_tuple") else tuple(b)[:4]
    return [round(float(v), 2) for v in t]


def _iou(pred, gt) -> float:
    if hasattr(pred, "iou"):
        return float(pred.iou(gt))
    from robustlab.models.protocols import Box

    return float(Box(*[float(v) for v in tuple(pred)[:4]]).iou(gt))


@dataclass
class PeelingTest:
    """One adversarial test (the paper's columns ``uniq_id, image_id, rawtext, Reducetext, MRtext, region`` and
    what grounding it gave)."""

    uniq_id: str
    image_id: str
    item: int
    ref: int
    rawtext: str
    Reducetext: str
    MRtext: str
    region: list[float]
    pred_box: list[float]
    iou: float
    issue: bool
    reduce_box: list[float]
    reduce_iou: float
    orig_box: list[float]
    orig_iou: float
    strategy: str
    properties: list[str]
    uniqueness: dict
    asked: bool
    world_valid: bool | None
    stages: list[dict]
    seed: int
    source_text: str = ""  # the dataset's expression before a text condition (== rawtext when clean)

    @property
    def correct(self) -> bool:
        return self.iou > IOU_THRESHOLD

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PeelingItem:
    """One referring expression: what PEELING did with it (``status``: "tested" or a skip reason)."""

    item: int
    ref: int
    image_id: str
    rawtext: str
    status: str
    extraction: dict
    judged: list[dict]  # every candidate's verdict: x, unique, asked, world_valid, strategy
    n_tests: int
    orig_box: list[float]
    orig_iou: float
    region: list[float]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PeelingConfig:
    """Every choice of a PEELING run (see the module docstring); ``released()`` is the released code's set."""

    compat: bool = False
    wide: bool = False
    skip_plural: bool = True
    check_all: bool = False
    keep_article: bool = False
    stages: tuple[str, ...] = P2_STAGES
    synonym_mode: str = "paper"
    synonym_scorer: Any = "minilm"
    synonym_threshold: float = SYNONYM_THRESHOLD
    short_len: int | None = SHORT_LEN
    seed: int = 0
    chunk: int = CHUNK

    @classmethod
    def released(cls, **kw) -> PeelingConfig:
        """The released code's behaviour: substring answers, its template string, every eligible word replaced.

        Not reproduced: with a single property the released code also tests object + property (the full
        expression); here the full set is never a candidate (the paper's rule)."""
        return cls(**{"compat": True, "synonym_mode": "code", **kw})

    def to_dict(self) -> dict:
        d = asdict(self)
        d["stages"] = list(self.stages)
        if not isinstance(self.synonym_scorer, (str, type(None))):
            d["synonym_scorer"] = getattr(self.synonym_scorer, "__name__", "custom")
        return d


def _config(config: PeelingConfig | None, overrides: Mapping) -> PeelingConfig:
    cfg = config or PeelingConfig()
    if overrides:
        unknown = set(overrides) - set(PeelingConfig.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown PEELING option(s): {', '.join(sorted(unknown))}")
        o = dict(overrides)
        if isinstance(o.get("stages"), str):
            o["stages"] = tuple(s.strip() for s in o["stages"].split(",") if s.strip())
        cfg = replace(cfg, **o)
    cfg.stages = tuple(cfg.stages)
    bad = [s for s in cfg.stages if s not in P2_STAGES]
    if bad:
        raise ValueError(f"unknown P2 stage(s) {', '.join(bad)}; stages: {', '.join(P2_STAGES)}")
    return cfg


# ============================================================================================ runs
@dataclass
class _Unit:
    item: int
    ref: int
    image_id: str
    image: Any
    text: str
    source_text: str
    box: tuple
    objects: Sequence | None = None
    target: int | None = None


class PeelingRun:
    """The tests and per-item records of a PEELING run, with :meth:`summary` and the image of each item (for the
    export)."""

    def __init__(self, tests: list[PeelingTest], items: list[PeelingItem], config: PeelingConfig,
                 image_of: Callable[[int], Any] | None = None, vqa_queries: int = 0, extractor: str = ""):
        self.tests, self.items, self.config = tests, items, config
        self.image_of = image_of
        self.vqa_queries = vqa_queries
        self.extractor = extractor

    def summary(self) -> dict:
        return summarize(self.items, self.tests, vqa_queries=self.vqa_queries)

    def to_json(self) -> dict:
        return {"config": self.config.to_dict(), "extractor": self.extractor, "summary": self.summary(),
                "items": [i.to_dict() for i in self.items], "tests": [t.to_dict() for t in self.tests]}


def _mmi(a, b) -> float | None:
    from robustlab.metrics import mmi

    if a is None or b is None or a <= 0:
        return None
    return round(float(mmi(a, b)), 6)


def _mean(xs) -> float | None:
    xs = list(xs)
    return round(float(np.mean(xs)), 6) if xs else None


def summarize(items: Sequence[PeelingItem], tests: Sequence[PeelingTest], vqa_queries: int = 0) -> dict:
    """The run's metrics (see the module docstring): accuracies (IoU > 0.5), MMI, skips, issue rate, reduction-only
    accuracy, per strategy, and the VQA oracle against the world's truth where known."""
    tested = [it for it in items if it.status == "tested"]
    acc_o = _mean(it.orig_iou > IOU_THRESHOLD for it in items)
    acc_ot = _mean(it.orig_iou > IOU_THRESHOLD for it in tested)
    acc_adv = _mean(t.iou > IOU_THRESHOLD for t in tests)
    acc_red = _mean(t.reduce_iou > IOU_THRESHOLD for t in tests)
    out: dict = {  # acc_adv first: a sweep report's headline is a task's first numeric metric
        "acc_adv": acc_adv, "acc_original": acc_o, "mmi": _mmi(acc_o, acc_adv),
        "acc_original_tested": acc_ot, "mmi_tested": _mmi(acc_ot, acc_adv),
        "acc_reduced": acc_red, "mmi_reduced": _mmi(acc_o, acc_red),
        "issues": sum(t.issue for t in tests), "issue_rate": None if acc_adv is None else round(1 - acc_adv, 6),
        "items": len(items), "items_tested": len(tested), "tests": len(tests),
        "tests_per_item": round(len(tests) / len(tested), 4) if tested else 0.0,
        "tests_per_item_all": round(len(tests) / len(items), 4) if items else 0.0,
        "skipped": {r: sum(it.status == r for it in items) for r in SKIP_REASONS},
        "mean_iou_original": _mean(it.orig_iou for it in items), "mean_iou_adv": _mean(t.iou for t in tests),
        "by_strategy": {}, "vqa_queries": int(vqa_queries),
    }
    for s in sorted({t.strategy for t in tests}):
        ts = [t for t in tests if t.strategy == s]
        out["by_strategy"][s] = {"n": len(ts), "acc_adv": _mean(t.iou > IOU_THRESHOLD for t in ts),
                                 "acc_reduced": _mean(t.reduce_iou > IOU_THRESHOLD for t in ts)}
    p2: dict = {}
    reasons: dict = {}
    for t in tests:
        for st in t.stages:
            d = p2.setdefault(st["stage"], {"ran": 0, "changed": 0, "skipped": 0})
            if st["skipped"]:
                d["skipped"] += 1
                r = reasons.setdefault(st["stage"], {})
                r[st["reason"]] = r.get(st["reason"], 0) + 1
            else:
                d["ran"] += 1
                d["changed"] += int(st["changed"])
    out["p2"] = p2
    out["p2_skip_reasons"] = reasons  # {stage: {reason: count}} (text: the task moves it to the Result's extra)
    judged = [j for it in items for j in it.judged if j.get("world_valid") is not None]
    if judged:
        acc_yes = [j for j in judged if j["unique"]]
        true = [j for j in judged if j["world_valid"]]
        valid_tests = [t for t in tests if t.world_valid]
        out["oracle"] = {
            "candidates": len(judged),
            "precision": _mean(j["world_valid"] for j in acc_yes),
            "recall": _mean(j["unique"] for j in true),
            "agreement": _mean(j["unique"] == j["world_valid"] for j in judged),
            "asked_agreement": _mean(j["unique"] == j["world_valid"] for j in judged if j["asked"]),
            "tests_valid": _mean(bool(t.world_valid) for t in tests if t.world_valid is not None),
            "acc_adv_valid": _mean(t.iou > IOU_THRESHOLD for t in valid_tests),
            "acc_reduced_valid": _mean(t.reduce_iou > IOU_THRESHOLD for t in valid_tests),
        }
    return out


def _ground_fn(model) -> Callable:
    if callable(getattr(model, "ground_batch", None)):
        return lambda ims, ts: model.ground_batch(list(ims), list(ts))
    if callable(getattr(model, "ground", None)):
        return lambda ims, ts: [model.ground(i, t) for i, t in zip(ims, ts)]
    raise ValueError(f"{getattr(model, 'model_id', type(model).__name__)} cannot ground expressions (no ground())")


def _run_units(model, units: list[_Unit], cfg: PeelingConfig, extractor: Extractor | None, vqa,
               progress: Callable[[int, int], None] | None = None, total: int | None = None,
               done: int = 0) -> tuple[list[PeelingTest], list[PeelingItem], int]:
    extractor = extractor or SpacyExtractor()
    ask = vqa_function(vqa if vqa is not None else model)
    ground = _ground_fn(model)
    # P1 steps 1-2: extraction and candidates
    plans = []
    for u in units:
        ex = extractor(u.text)
        if ex.empty:
            plans.append((u, ex, "extraction_empty", []))
        elif cfg.skip_plural and looks_plural(ex.object):
            plans.append((u, ex, "plural", []))
        else:
            plans.append((u, ex, "", candidates(ex, u.text, cfg.wide)))
    # P1 step 3: the object first, then (unless it is unique) the other candidates; one VQA call per chunk
    queries = 0
    first = [(k, p[3][0]) for k, p in enumerate(plans) if p[3]]
    verdicts: dict[tuple[int, int], tuple[Uniqueness, bool]] = {}
    res = uniqueness_many(ask, [plans[k][0].image for k, _ in first], [c.text for _, c in first], cfg.compat)
    queries += 3 * len(first)
    for (k, _), r in zip(first, res):
        verdicts[(k, 0)] = (r, True)
    second = []
    for k, p in enumerate(plans):
        if not p[3]:
            continue
        obj = verdicts[(k, 0)][0]
        for j in range(1, len(p[3])):
            if obj.unique and not cfg.check_all:
                verdicts[(k, j)] = (obj, False)  # a unique object stays unique with its own property added
            else:
                second.append((k, j))
    res = uniqueness_many(ask, [plans[k][0].image for k, _ in second], [plans[k][3][j].text for k, j in second],
                          cfg.compat)
    queries += 3 * len(second)
    for kj, r in zip(second, res):
        verdicts[kj] = (r, True)
    # P2 and the texts to ground: each item's original, each test's reduced and final expression
    g_images, g_texts, slots = [], [], []
    pending = []
    for k, (u, ex, status, cands) in enumerate(plans):
        g_images.append(u.image)
        g_texts.append(u.text)
        slots.append(("orig", k, None))
        sel = [j for j in range(len(cands)) if verdicts[(k, j)][0].unique]
        art = determiner(u.text) if cfg.keep_article else ""
        for n_t, j in enumerate(sel):
            c = cands[j]
            reduce_text = f"{art} {c.text}".strip() if art else c.text
            s = seed_for(cfg.seed, u.item * 1000 + u.ref, n_t)
            p2 = p2_chain(reduce_text, s, cfg.stages, synonym_mode=cfg.synonym_mode,
                          synonym_scorer=cfg.synonym_scorer, synonym_threshold=cfg.synonym_threshold,
                          short_len=cfg.short_len)
            pending.append((k, j, n_t, reduce_text, p2, s))
            g_images += [u.image, u.image]
            g_texts += [reduce_text, p2.text]
            slots += [("reduce", len(pending) - 1, None), ("adv", len(pending) - 1, None)]
    boxes = []
    for s in range(0, len(g_texts), max(1, cfg.chunk)):
        boxes += list(ground(g_images[s:s + cfg.chunk], g_texts[s:s + cfg.chunk]))
    orig_b, red_b, adv_b = {}, {}, {}
    for (kind, idx, _), b in zip(slots, boxes):
        {"orig": orig_b, "reduce": red_b, "adv": adv_b}[kind][idx] = b
    by_item: dict[int, list[int]] = {}
    for pi, p in enumerate(pending):
        by_item.setdefault(p[0], []).append(pi)
    tests: list[PeelingTest] = []
    items: list[PeelingItem] = []
    for k, (u, ex, status, cands) in enumerate(plans):
        ob = orig_b[k]
        oiou = _iou(ob, u.box)
        judged = []
        for j, c in enumerate(cands):
            v, asked = verdicts[(k, j)]
            wv = world_valid(c.text, u.objects, u.target) if u.objects is not None and u.target is not None else None
            judged.append({"x": c.text, "strategy": c.strategy, "unique": v.unique, "asked": asked,
                           "world_valid": wv})
        mine = by_item.get(k, [])
        for pi in mine:
            _, j, n_t, reduce_text, p2, s = pending[pi]
            c = cands[j]
            v, asked = verdicts[(k, j)]
            ab, rb = adv_b[pi], red_b[pi]
            aiou, riou = _iou(ab, u.box), _iou(rb, u.box)
            tests.append(PeelingTest(
                uniq_id=f"{u.image_id}-{u.ref}-{n_t}", image_id=u.image_id, item=u.item, ref=u.ref, rawtext=u.text,
                Reducetext=reduce_text, MRtext=p2.text, region=_box(u.box), pred_box=_box(ab), iou=round(aiou, 6),
                issue=bool(aiou <= IOU_THRESHOLD), reduce_box=_box(rb), reduce_iou=round(riou, 6),
                orig_box=_box(ob), orig_iou=round(oiou, 6), strategy=c.strategy, properties=list(c.properties),
                uniqueness={**v.to_dict(), "asked": asked}, asked=asked, world_valid=judged[j]["world_valid"],
                stages=[st.to_dict() for st in p2.stages], seed=s, source_text=u.source_text))
        if not status:
            status = "tested" if mine else "no_unique_candidate"
        items.append(PeelingItem(item=u.item, ref=u.ref, image_id=u.image_id, rawtext=u.text, status=status,
                                 extraction=ex.to_dict(), judged=judged, n_tests=len(mine), orig_box=_box(ob),
                                 orig_iou=round(oiou, 6), region=_box(u.box)))
    if progress:
        progress(done + len(units), total if total is not None else done + len(units))
    return tests, items, queries


def peel(model, image, expression: str, box, *, config: PeelingConfig | None = None,
         extractor: Extractor | None = None, vqa_model=None, objects: Sequence | None = None,
         target: int | None = None, image_id: str = "0", **overrides) -> PeelingRun:
    """PEELING on one (image, expression, ground-truth box): the tests it generates and how ``model`` grounds them.

    ``model`` grounds (``ground``/``ground_batch``) and, unless ``vqa_model`` is given, also answers the uniqueness
    questions (``vqa``/``vqa_batch``). ``objects``/``target``: the world's truth, when known. Options: the fields
    of :class:`PeelingConfig` (``compat``, ``wide``, ``stages``, ``seed``...)."""
    cfg = _config(config, overrides)
    u = _Unit(0, 0, str(image_id), image, str(expression), str(expression), tuple(box), objects, target)
    tests, items, q = _run_units(model, [u], cfg, extractor, vqa_model)
    return PeelingRun(tests, items, cfg, image_of=lambda i: image, vqa_queries=q,
                      extractor=getattr(extractor, "source", "spacy") if extractor else "spacy")


def peel_many(model, dataset, n: int | None = None, *, config: PeelingConfig | None = None,
              extractor: Extractor | None = None, vqa_model=None,
              image_fn: Callable[[int], Any] | None = None, text_fn: Callable[[str, int], str] | None = None,
              progress: Callable[[int, int], None] | None = None, **overrides) -> PeelingRun:
    """PEELING on the first ``n`` items (all by default) of a grounding dataset, batched by ``config.chunk`` items.

    ``image_fn(i)`` / ``text_fn(expression, i)`` replace item ``i``'s image / expression before PEELING (the task's
    visual and text conditions); by default the dataset's own. The built-in scenes' world truth
    (``dataset.scene(i).objects`` and ``Ref.meta["target"]``) feeds the oracle metrics."""
    cfg = _config(config, overrides)
    m = len(dataset) if n is None else min(int(n), len(dataset))
    if m < 1:
        raise ValueError("n must be at least 1")
    image_fn = image_fn or dataset.visual
    scene = getattr(dataset, "scene", None)
    tests: list[PeelingTest] = []
    items: list[PeelingItem] = []
    queries = 0
    for s in range(0, m, max(1, cfg.chunk)):
        units = []
        for i in range(s, min(s + cfg.chunk, m)):
            it = dataset.item(i)
            if not it.refs:
                continue
            im = image_fn(i)
            objs = None
            if callable(scene):
                try:
                    objs = scene(i).objects
                except (AttributeError, IndexError, KeyError, TypeError, ValueError):  # no world truth here
                    objs = None
            for r, ref in enumerate(it.refs):
                text = text_fn(ref.expression, i) if text_fn else ref.expression
                tgt = (ref.meta or {}).get("target")
                units.append(_Unit(i, r, str(getattr(it, "id", i)), im, text, ref.expression, tuple(ref.box),
                                   objs if tgt is not None else None, tgt))
        if units:
            t, its, q = _run_units(model, units, cfg, extractor, vqa_model, progress, m, s)
            tests += t
            items += its
            queries += q
        elif progress:
            progress(min(s + cfg.chunk, m), m)
    if not items:
        raise ValueError(f"dataset {getattr(dataset, 'name', dataset)} has no referring expressions in its first "
                         f"{m} items")
    return PeelingRun(tests, items, cfg, image_of=image_fn, vqa_queries=queries,
                      extractor=getattr(extractor, "source", "spacy") if extractor else "spacy")


# ============================================================================================ export
PAPER_COLUMNS = ("uniq_id", "rawtext", "Reducetext", "MRtext")
OFA_COLUMNS = ("uniq_id", "image_id", "text", "region", "image_base64")
EXPORT_FORMATS = ("csv", "tsv", "jsonl")


def _png_b64(image) -> str:
    from PIL import Image

    from robustlab.io.convert import to_uint8_rgb

    buf = io.BytesIO()
    Image.fromarray(to_uint8_rgb(image)).save(buf, format="PNG")
    return base64.urlsafe_b64encode(buf.getvalue()).decode("ascii")  # OFA reads urlsafe_b64decode


def _inside(directory: Path, name: str) -> Path:
    from robustlab.export.manifest import safe_member

    safe_member(name)
    if "/" in name:
        raise ValueError(f"unsafe path in export: {name!r}")
    root = directory.resolve()
    p = (root / name).resolve()
    if not p.is_relative_to(root) or p.parent != root:
        raise ValueError(f"export path {name!r} escapes {directory}")
    return p


def _cell(s: Any) -> str:
    return re.sub(r"[\t\r\n]+", " ", str(s))


def export_tests(run: PeelingRun | Sequence[PeelingTest], directory: str | Path, *, name: str = "peeling",
                 formats: Sequence[str] = ("csv", "tsv"), image_of: Callable[[int], Any] | None = None
                 ) -> dict[str, Path]:
    """Write the tests in the paper's layouts inside ``directory`` (created if needed; nothing is written
    elsewhere: ``name`` must be a plain file stem).

    * ``csv``: ``<name>.csv`` with a header ``uniq_id, rawtext, Reducetext, MRtext`` (the released xlsx columns);
    * ``tsv``: ``<name>.tsv``, OFA's RefCOCO layout without a header: ``uniq_id, image_id, text (= MRtext), region
      ("x0,y0,x1,y1" of the ground truth), image_base64`` (URL-safe base64 of PNG bytes, as OFA decodes it);
    * ``jsonl``: ``<name>.jsonl``, every field of every test (boxes, IoU, stage records, seeds).

    The images come from ``image_of(item)`` (a :class:`PeelingRun` carries the images it used). Returns
    ``{format: path}``."""
    tests = list(run.tests if isinstance(run, PeelingRun) else run)
    image_of = image_of or (run.image_of if isinstance(run, PeelingRun) else None)
    bad = [f for f in formats if f not in EXPORT_FORMATS]
    if bad:
        raise ValueError(f"unknown export format(s) {', '.join(bad)}; formats: {', '.join(EXPORT_FORMATS)}")
    if "tsv" in formats and image_of is None:
        raise ValueError("the OFA tsv needs the images: pass image_of=item -> image (or a PeelingRun)")
    directory = Path(directory)
    paths = {f: _inside(directory, f"{name}.{f}") for f in formats}  # check every name before writing anything
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    if "csv" in formats:
        with open(paths["csv"], "w", newline="", encoding="utf-8") as fp:
            w = csv.writer(fp)
            w.writerow(PAPER_COLUMNS)
            for t in tests:
                w.writerow([t.uniq_id, t.rawtext, t.Reducetext, t.MRtext])
        out["csv"] = paths["csv"]
    if "tsv" in formats:
        cache: dict[int, str] = {}
        with open(paths["tsv"], "w", newline="", encoding="utf-8") as fp:
            for t in tests:
                if t.item not in cache:
                    cache[t.item] = _png_b64(image_of(t.item))
                region = ",".join(f"{v:.2f}" for v in t.region)
                fp.write("\t".join([_cell(t.uniq_id), _cell(t.image_id), _cell(t.MRtext), region, cache[t.item]])
                         + "\n")
        out["tsv"] = paths["tsv"]
    if "jsonl" in formats:
        with open(paths["jsonl"], "w", encoding="utf-8") as fp:
            for t in tests:
                fp.write(json.dumps(t.to_dict(), default=str) + "\n")
        out["jsonl"] = paths["jsonl"]
    return out


def read_ofa_tsv(path: str | Path) -> list[dict]:
    """Rows of an OFA-style tsv written by :func:`export_tests` (image decoded to an array)."""
    from PIL import Image

    rows = []
    with open(path, encoding="utf-8") as fp:
        for line in fp:
            uid, iid, text, region, b64 = line.rstrip("\n").split("\t")
            im = np.asarray(Image.open(io.BytesIO(base64.urlsafe_b64decode(b64))).convert("RGB"))
            rows.append({"uniq_id": uid, "image_id": iid, "text": text,
                         "region": [float(v) for v in region.split(",")], "image": im})
    return rows


__all__ = [
    "IOU_THRESHOLD",
    "LLM_EXAMPLES",
    "OFA_COLUMNS",
    "P2_STAGES",
    "PAPER_COLUMNS",
    "QUERIES",
    "RELEASED_TEMPLATES",
    "TEMPLATES",
    "Candidate",
    "Extraction",
    "Extractor",
    "LLMExtractor",
    "P2Result",
    "PeelingConfig",
    "PeelingItem",
    "PeelingRun",
    "PeelingTest",
    "SpacyExtractor",
    "StageRecord",
    "Uniqueness",
    "back_translation_reason",
    "candidates",
    "count_is_one",
    "determiner",
    "export_tests",
    "judge",
    "llm_prompt",
    "looks_plural",
    "minilm_similarity",
    "p2_chain",
    "parse_llm_answer",
    "peel",
    "peel_many",
    "questions_for",
    "read_ofa_tsv",
    "says_no",
    "seed_for",
    "summarize",
    "synonym_for",
    "uniqueness",
    "uniqueness_many",
    "vqa_function",
    "world_matches",
    "world_valid",
]
