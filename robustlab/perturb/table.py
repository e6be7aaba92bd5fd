"""The perturbation table: every built-in perturbation's name and the module that declares it, in listing order.

This is the one declaration of what is built in and of the listing order: :func:`robustlab.perturb.list_perturbations`
lists the specs in this order (the six v1 image perturbations first, then the rest of [P2]'s image catalogue, the
text perturbations, the video ones), and importing ``robustlab.perturb`` imports the modules named here, whose
``@register`` declares each one with its card (metadata and severity tables: the data file beside the module, e.g.
``image/noise.toml``, or keywords where the tables are computed, as text/'s); a module's package need not import it.
A perturbation registered outside this table (a user's ``@register``, a test's) is listed after these, in the order
it was registered. Data only: nothing is imported here.
"""
from __future__ import annotations

# name -> the module whose ``@register(name, ...)`` declares it
PERTURBATIONS: dict[str, str] = {
    # ---- image
    # v1 (the first six: their order is part of the tested interface)
    "gaussian_noise": "robustlab.perturb.image.noise",
    "shot_noise": "robustlab.perturb.image.noise",
    "impulse_noise": "robustlab.perturb.image.noise",
    "defocus_blur": "robustlab.perturb.image.blur",
    "jpeg_compression": "robustlab.perturb.image.digital",
    "pixelate": "robustlab.perturb.image.digital",
    # the rest of [P2]'s catalogue: noise, blur, weather, digital, stylize
    "speckle_noise": "robustlab.perturb.image.noise",
    "glass_blur": "robustlab.perturb.image.blur",
    "motion_blur": "robustlab.perturb.image.blur",
    "zoom_blur": "robustlab.perturb.image.blur",
    "snow": "robustlab.perturb.image.weather",
    "frost": "robustlab.perturb.image.weather",
    "fog": "robustlab.perturb.image.weather",
    "brightness": "robustlab.perturb.image.weather",
    "contrast": "robustlab.perturb.image.digital",
    "elastic_transform": "robustlab.perturb.image.digital",
    "stylize": "robustlab.perturb.image.stylize",
    # ---- text
    # char: [P2]'s nlpaug character ops (text/char.py)
    "keyboard": "robustlab.perturb.text.char",
    "ocr": "robustlab.perturb.text.char",
    "char_insert": "robustlab.perturb.text.char",
    "char_substitute": "robustlab.perturb.text.char",
    "char_swap": "robustlab.perturb.text.char",
    "char_delete": "robustlab.perturb.text.char",
    # [P1]'s TextFlint ops (text/textflint_ops.py): char, word, sentence
    "spelling_error": "robustlab.perturb.text.textflint_ops",
    "typos": "robustlab.perturb.text.textflint_ops",
    "punctuation": "robustlab.perturb.text.textflint_ops",
    "prefix_swap": "robustlab.perturb.text.textflint_ops",
    "multi_pos_swap_jj": "robustlab.perturb.text.textflint_ops",
    "multi_pos_swap_nn": "robustlab.perturb.text.textflint_ops",
    "swap_syn_wordnet": "robustlab.perturb.text.textflint_ops",
    "swap_syn_word_embedding": "robustlab.perturb.text.textflint_ops",
    "append_irr": "robustlab.perturb.text.textflint_ops",
    "insert_adv": "robustlab.perturb.text.textflint_ops",
    "tense": "robustlab.perturb.text.textflint_ops",
    "reverse_neg": "robustlab.perturb.text.textflint_ops",
    # [P1] bias (text/bias.py)
    "gender_male": "robustlab.perturb.text.bias",
    "gender_female": "robustlab.perturb.text.bias",
    "gender_neutral": "robustlab.perturb.text.bias",
    "gender_swap": "robustlab.perturb.text.bias",
    # [P1] DropText and positional (text/drop.py)
    "no_nouns": "robustlab.perturb.text.drop",
    "no_verbs": "robustlab.perturb.text.drop",
    "no_nouns_and_no_verbs": "robustlab.perturb.text.drop",
    "only_nouns": "robustlab.perturb.text.drop",
    "only_verbs": "robustlab.perturb.text.drop",
    "only_nouns_and_only_verbs": "robustlab.perturb.text.drop",
    "random_noun": "robustlab.perturb.text.drop",
    "random_verb": "robustlab.perturb.text.drop",
    "drop_first": "robustlab.perturb.text.drop",
    "drop_last": "robustlab.perturb.text.drop",
    "drop_first_and_last": "robustlab.perturb.text.drop",
    "shuffle_order": "robustlab.perturb.text.drop",
    # [P2] / MLVP word level, EDA (text/eda.py)
    "synonym_replacement": "robustlab.perturb.text.eda",
    "word_insertion": "robustlab.perturb.text.eda",
    "word_swap": "robustlab.perturb.text.eda",
    "word_deletion": "robustlab.perturb.text.eda",
    "insert_punctuation": "robustlab.perturb.text.eda",
    # hub models (text/sentence.py): back-translation, Styleformer, MLM
    "back_translation": "robustlab.perturb.text.sentence",
    "formal": "robustlab.perturb.text.sentence",
    "casual": "robustlab.perturb.text.sentence",
    "passive": "robustlab.perturb.text.sentence",
    "active": "robustlab.perturb.text.sentence",
    "mlm_suggestion": "robustlab.perturb.text.sentence",
    # ---- video
    # [P1] temporal, camera, codec
    "sampling": "robustlab.perturb.video.temporal",
    "reverse_sampling": "robustlab.perturb.video.temporal",
    "jumble": "robustlab.perturb.video.temporal",
    "box_jumble": "robustlab.perturb.video.temporal",
    "freeze": "robustlab.perturb.video.temporal",
    "static_rotate": "robustlab.perturb.video.camera",
    "rotate": "robustlab.perturb.video.camera",
    "translate": "robustlab.perturb.video.camera",
    "codec1": "robustlab.perturb.video.codec",
    "codec2": "robustlab.perturb.video.codec",
    # MLVP's 12
    "mlvp_gaussian_noise": "robustlab.perturb.video.mlvp.appearance",
    "mlvp_impulse_noise": "robustlab.perturb.video.mlvp.appearance",
    "mlvp_fog": "robustlab.perturb.video.mlvp.appearance",
    "mlvp_elastic": "robustlab.perturb.video.mlvp.appearance",
    "mlvp_style": "robustlab.perturb.video.mlvp.appearance",
    "mlvp_snow": "robustlab.perturb.video.mlvp.appearance",
    "mlvp_h264": "robustlab.perturb.video.mlvp.appearance",
    "mlvp_motion_blur": "robustlab.perturb.video.mlvp.motion",
    "mlvp_defocus": "robustlab.perturb.video.mlvp.motion",
    "mlvp_occlusion": "robustlab.perturb.video.mlvp.content",
    "mlvp_event_insertion": "robustlab.perturb.video.mlvp.content",
    "mlvp_temporal_scrambling": "robustlab.perturb.video.mlvp.content",
}

__all__ = ["PERTURBATIONS"]
