"""The listing order of the built-in perturbations, declared as data.

:func:`robustlab.perturb.list_perturbations` lists the registered specs in this order, whatever the order in which
their modules were imported (so a module can hold a whole family, and families can move between files, without
changing what the CLI, the pages and the sweeps list first). The order is part of the tested interface: the six v1
image perturbations come first, then the rest of [P2]'s image catalogue, the text perturbations, the video ones.
A perturbation registered outside this list (a user's ``@register``, a test's) is listed after these, in the order
it was registered. Data only: nothing is imported here.
"""
from __future__ import annotations

IMAGE: tuple[str, ...] = (
    # v1 (the first six: their order is part of the tested interface)
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "jpeg_compression", "pixelate",
    # the rest of [P2]'s catalogue: noise, blur, weather, digital, stylize
    "speckle_noise",
    "glass_blur", "motion_blur", "zoom_blur",
    "snow", "frost", "fog", "brightness",
    "contrast", "elastic_transform",
    "stylize",
)

TEXT: tuple[str, ...] = (
    # char: [P2]'s nlpaug character ops (text/char.py)
    "keyboard", "ocr", "char_insert", "char_substitute", "char_swap", "char_delete",
    # [P1]'s TextFlint ops (text/textflint_ops.py): char, word, sentence
    "spelling_error", "typos", "punctuation", "prefix_swap",
    "multi_pos_swap_jj", "multi_pos_swap_nn", "swap_syn_wordnet", "swap_syn_word_embedding", "append_irr",
    "insert_adv",
    "tense", "reverse_neg",
    # [P1] bias (text/bias.py)
    "gender_male", "gender_female", "gender_neutral", "gender_swap",
    # [P1] DropText and positional (text/drop.py)
    "no_nouns", "no_verbs", "no_nouns_and_no_verbs", "only_nouns", "only_verbs", "only_nouns_and_only_verbs",
    "random_noun", "random_verb",
    "drop_first", "drop_last", "drop_first_and_last", "shuffle_order",
    # [P2] / MLVP word level, EDA (text/eda.py)
    "synonym_replacement", "word_insertion", "word_swap", "word_deletion", "insert_punctuation",
    # hub models (text/sentence.py): back-translation, Styleformer, MLM
    "back_translation", "formal", "casual", "passive", "active", "mlm_suggestion",
)

VIDEO: tuple[str, ...] = (
    # [P1] temporal, camera, codec
    "sampling", "reverse_sampling", "jumble", "box_jumble", "freeze",
    "static_rotate", "rotate", "translate",
    "codec1", "codec2",
    # MLVP's 12
    "mlvp_gaussian_noise", "mlvp_impulse_noise", "mlvp_fog", "mlvp_elastic", "mlvp_style", "mlvp_snow", "mlvp_h264",
    "mlvp_motion_blur", "mlvp_defocus", "mlvp_occlusion", "mlvp_event_insertion", "mlvp_temporal_scrambling",
)

LISTING_ORDER: tuple[str, ...] = IMAGE + TEXT + VIDEO

__all__ = ["IMAGE", "TEXT", "VIDEO", "LISTING_ORDER"]
