"""Paper-to-robustlab map of every text perturbation of the three papers.

Each row: (paper, the paper's name or code key, robustlab name, variant, severities that reproduce the paper's
setting). [P1] rows use [C1]'s ``datasets/perturbations.json`` keys (35 on MSRVTT-P; YouCook2-P skips the 4 Bias
ones); [P2] rows are Table 8's 16 types (60 variants: 11 x 5 levels + 5 single-level); MLVP rows are the 15
query shifts of ``config/msrvtt_text_pertrubation.json``, each as its ``mlvp`` variant: MLVP's benchmark level
(char severity 7 = ratio 0.35, word severity 2 = ratio 0.10, sentence level 1) at every robustlab severity 1-5,
with the paper's drop-on-failure similarity gate on the word-level and style perturbations.
"""
from __future__ import annotations

import sys
import types

from robustlab.perturb.registry import get_perturbation

_ALL = (1, 2, 3, 4, 5)
_P1S = (3,)  # [P1] single level: rate-scaled ops reproduce it at severity 3; single-level ops at any severity

CATALOGUE: tuple[tuple[str, str, str, str, tuple], ...] = (
    # ---- [P1] Schiappa et al. (35)
    ("P1", "keyboard", "keyboard", "schiappa_textflint", _P1S),
    ("P1", "ocr", "ocr", "schiappa_textflint", _P1S),
    ("P1", "spelling_error", "spelling_error", "schiappa_textflint", _P1S),
    ("P1", "typos", "typos", "schiappa_textflint", _P1S),
    ("P1", "punctuation", "punctuation", "schiappa_textflint", _ALL),
    ("P1", "prefix_swap", "prefix_swap", "schiappa_textflint", _ALL),
    ("P1", "append_irr", "append_irr", "schiappa_textflint", _ALL),
    ("P1", "insert_adv", "insert_adv", "schiappa_textflint", _ALL),
    ("P1", "mlm_suggestion", "mlm_suggestion", "schiappa_textflint", _P1S),
    ("P1", "back_trans", "back_translation", "wmt19", _ALL),
    ("P1", "multi_pos_swap_JJ", "multi_pos_swap_jj", "schiappa_textflint", _ALL),
    ("P1", "multi_pos_swap_NN", "multi_pos_swap_nn", "schiappa_textflint", _ALL),
    ("P1", "swap_syn_word_embedding", "swap_syn_word_embedding", "schiappa_textflint", _P1S),
    ("P1", "swap_syn_wordnet", "swap_syn_wordnet", "schiappa_textflint", _P1S),
    ("P1", "active_to_passive", "passive", "styleformer", _ALL),
    ("P1", "casual_to_formal", "formal", "styleformer", _ALL),
    ("P1", "formal_to_casual", "casual", "styleformer", _ALL),
    ("P1", "tense", "tense", "schiappa_textflint", _ALL),
    ("P1", "reverse_neg", "reverse_neg", "schiappa_textflint", _ALL),
    ("P1", "gender_swap", "gender_swap", "gender_bender", _ALL),
    ("P1", "gender_male", "gender_male", "schiappa_fixed", _ALL),
    ("P1", "gender_female", "gender_female", "schiappa_fixed", _ALL),
    ("P1", "gender_neutral", "gender_neutral", "schiappa_fixed", _ALL),
    ("P1", "no_nouns", "no_nouns", "schiappa_fixed", _ALL),
    ("P1", "no_verbs", "no_verbs", "schiappa_fixed", _ALL),
    ("P1", "no_nouns_and_no_verbs", "no_nouns_and_no_verbs", "schiappa_fixed", _ALL),
    ("P1", "only_nouns", "only_nouns", "schiappa_fixed", _ALL),
    ("P1", "only_verbs", "only_verbs", "schiappa_fixed", _ALL),
    ("P1", "only_nouns_and_only_verbs", "only_nouns_and_only_verbs", "schiappa_fixed", _ALL),
    ("P1", "random_noun", "random_noun", "schiappa_fixed", _ALL),
    ("P1", "random_verb", "random_verb", "schiappa_fixed", _ALL),
    ("P1", "drop_first", "drop_first", "schiappa", _ALL),
    ("P1", "drop_last", "drop_last", "schiappa", _ALL),
    ("P1", "drop_first_and_last", "drop_first_and_last", "schiappa", _ALL),
    ("P1", "shuffle_order", "shuffle_order", "schiappa", _ALL),
    # ---- [P2] Qiu et al. (16 types, 60 variants)
    ("P2", "Keyboard", "keyboard", "qiu_nlpaug", _ALL),
    ("P2", "OCR", "ocr", "qiu_nlpaug", _ALL),
    ("P2", "Character Insert (CI)", "char_insert", "qiu_nlpaug", _ALL),
    ("P2", "Character Replace (CR)", "char_substitute", "qiu_nlpaug", _ALL),
    ("P2", "Character Swap (CS)", "char_swap", "qiu_nlpaug", _ALL),
    ("P2", "Character Delete (CD)", "char_delete", "qiu_nlpaug", _ALL),
    ("P2", "Synonym Replacement (SR)", "synonym_replacement", "qiu", _ALL),
    ("P2", "Word Insertion (WI)", "word_insertion", "qiu", _ALL),
    ("P2", "Word Swap (WS)", "word_swap", "qiu", _ALL),
    ("P2", "Word Deletion (WD)", "word_deletion", "qiu", _ALL),
    ("P2", "Insert Punctuation (IP)", "insert_punctuation", "qiu", _ALL),
    ("P2", "Formal", "formal", "styleformer", _ALL),
    ("P2", "Casual", "casual", "styleformer", _ALL),
    ("P2", "Passive", "passive", "styleformer", _ALL),
    ("P2", "Active", "active", "styleformer", _ALL),
    ("P2", "Back Translation", "back_translation", "wmt19", _ALL),
    # ---- MLVP text query shifts (15): the mlvp variants run MLVP's one level at every severity
    ("MLVP", "ocr", "ocr", "mlvp", _ALL),
    ("MLVP", "char_insert", "char_insert", "mlvp", _ALL),
    ("MLVP", "char_replace", "char_substitute", "mlvp", _ALL),
    ("MLVP", "char_swap", "char_swap", "mlvp", _ALL),
    ("MLVP", "char_delete", "char_delete", "mlvp", _ALL),
    ("MLVP", "synonym_replace", "synonym_replacement", "mlvp", _ALL),
    ("MLVP", "word_insert", "word_insertion", "mlvp", _ALL),
    ("MLVP", "word_swap", "word_swap", "mlvp", _ALL),
    ("MLVP", "word_delete", "word_deletion", "mlvp", _ALL),
    ("MLVP", "insert_punctuation", "insert_punctuation", "mlvp", _ALL),
    ("MLVP", "back_translation", "back_translation", "mlvp", _ALL),
    ("MLVP", "formal", "formal", "mlvp", _ALL),
    ("MLVP", "casual", "casual", "mlvp", _ALL),
    ("MLVP", "passive", "passive", "mlvp", _ALL),
    ("MLVP", "active", "active", "mlvp", _ALL),
)


def catalogue(paper: str | None = None) -> list[dict]:
    """Rows as dicts, with each row's current availability (and reason) from the registry."""
    out = []
    for p, key, name, variant, sev in CATALOGUE:
        if paper is not None and p != paper:
            continue
        spec = get_perturbation(name)
        out.append({"paper": p, "paper_name": key, "name": name, "variant": variant, "severities": list(sev),
                    "available": spec.available, "reason": spec.reason})
    return out


class _CallableModule(types.ModuleType):
    """Calling this module calls :func:`catalogue`: its package exposes the module under that name, so that both
    ``robustlab.perturb.text.catalogue("MLVP")`` and ``import robustlab.perturb.text.catalogue as C`` work
    (issue 46)."""

    def __call__(self, *args, **kwargs):
        return catalogue(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
