"""PEELING's extraction: the object of a referring expression and its properties (spaCy rules or an LLM), and the
released code's plural test. Part of :mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from robustlab.perturb.text import resources as R


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
