"""Character-level text perturbations of [P2] (Qiu et al. 2022, Table 8) through nlpaug 1.1.11.

keyboard (KeyboardAug), ocr (OcrAug), char_insert / char_substitute / char_swap / char_delete
(RandomCharAug actions). Severity s = 1..5 sets ``aug_word_p`` = 0.15, 0.20, 0.25, 0.30, 0.35; every other
constructor argument is nlpaug 1.1.11's default, written out in the severity table so the record shows it.

Randomness: nlpaug draws from Python's global ``random`` (and, for some augmenters, numpy's global RNG). Each
call seeds both from the call's ``np.random.Generator``, runs the augmenter under a lock, and restores the
previous global states afterwards, so calls are reproducible and do not disturb the caller's RNG streams
(other threads that use the global RNGs *during* a call can still interleave with it).

Behaviour inherited from nlpaug (kept, because it is what the papers' data contain): the text is stripped,
tokenised on non-word characters and re-joined with nlpaug's detokeniser, so spacing around some punctuation
can change (e.g. "don't" -> "don ' t") in a text that also had a word augmented. Empty or whitespace-only
text, and text with no augmentable word (e.g. every word shorter than ``min_char``), is returned unchanged.
nlpaug 1.1.11 returns a list; it is normalised to a str. nlpaug is imported lazily (it pulls in torch).
"""
from __future__ import annotations

import functools
import random
import threading

import numpy as np

from robustlab.perturb.registry import register
from robustlab.perturb.text import textflint_ops as tf
from robustlab.perturb.text._common import scaled_p

P2 = "Qiu et al. 2022 [P2] Table 8"
LEVELS = (0.15, 0.20, 0.25, 0.30, 0.35)  # aug_word_p for severities 1..5 ([P2] §2; [C2] 0.05 × {3..7})

# nlpaug 1.1.11 constructor defaults (checked against inspect.signature in tests/perturb/test_perturb.py)
_CHAR_COMMON = {"aug_char_p": 0.3, "aug_char_min": 1, "aug_char_max": 10, "aug_word_min": 1, "aug_word_max": 10}
KEYBOARD_DEFAULTS = {**_CHAR_COMMON, "min_char": 4, "include_special_char": True, "include_numeric": True,
                     "include_upper_case": True, "lang": "en"}
OCR_DEFAULTS = {**_CHAR_COMMON, "aug_char_min": 2, "min_char": 1}
RANDOM_CHAR_DEFAULTS = {**_CHAR_COMMON, "min_char": 4, "include_upper_case": True, "include_lower_case": True,
                        "include_numeric": True, "swap_mode": "adjacent", "spec_char": "!@#$%^&*()_+"}

_LOCK = threading.RLock()


def _table(defaults: dict, **extra) -> dict:
    return {s: {**extra, "aug_word_p": p, **defaults} for s, p in enumerate(LEVELS, start=1)}


MLVP_RATIO = 0.35  # MLVP's t2v benchmark: character level at its severity 7, ratio = 0.05 x 7 (App. B.4)
# parameters that describe the level and are not nlpaug constructor arguments (dropped before the call)
_LEVEL_KEYS = ("level_scheme", "mlvp_severity", "paper_level")


def mlvp_table(defaults: dict, **extra) -> dict:
    """MLVP's one character-level setting at every severity 1..5: aug_word_p = 0.35 (its severity 7), no gate
    (``do_text_perturbation.py`` gates only the word-level and style perturbations)."""
    p = {**extra, "aug_word_p": MLVP_RATIO, **defaults, "mlvp_severity": 7,
         "level_scheme": "fixed: MLVP's benchmark runs one level per family; severities 1-5 all run ratio 0.35"}
    return {s: dict(p) for s in range(1, 6)}


@functools.lru_cache(maxsize=64)
def _augmenter(cls_name: str, frozen: tuple):
    import nlpaug.augmenter.char as nac

    return getattr(nac, cls_name)(**dict(frozen))


def _has_augmentable_word(aug, text: str) -> bool:
    """Mirror nlpaug's word pre-selection (min_char) and per-char eligibility without drawing randomness."""
    tokens = aug.tokenizer(text)
    for i in aug.pre_skip_aug(tokens):
        chars = aug.token2char(tokens[i])
        if aug.skip_aug(list(range(len(chars))), chars):
            return True
    return False


def run_nlpaug(cls_name: str, text: str, params: dict, rng: np.random.Generator) -> str:
    if not text or not text.strip():
        return text
    aug = _augmenter(cls_name, tuple(sorted((k, v) for k, v in params.items() if k not in _LEVEL_KEYS)))
    if not _has_augmentable_word(aug, text.strip()):
        return text
    py_seed = int(rng.integers(0, 2 ** 63))
    np_seed = int(rng.integers(0, 2 ** 32))
    with _LOCK:
        py_state, np_state = random.getstate(), np.random.get_state()
        try:
            random.seed(py_seed)
            np.random.seed(np_seed)
            out = aug.augment(text, n=1)
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
    if isinstance(out, (list, tuple)):
        out = out[0] if len(out) else text
    return text if out is None else str(out)


_COMMON = dict(modality="text", category="char", default_variant="qiu_nlpaug", tags=("p2", "nlpaug", "random"),
               requires=("nlpaug",))
_NOTE = {"qiu_nlpaug": "nlpaug 1.1.11, aug_word_p = .15/.20/.25/.30/.35, other arguments nlpaug defaults ([P2] [C2])"}


# [P1] TextFlint Keyboard / Ocr (reimplemented in textflint_ops.py, imported on first use)
TF_KEYBOARD = scaled_p(0.2, trans_min=1, trans_max=10, min_char=4, include_special_char=True, include_numeric=True,
                       include_upper_case=True, impl="textflint",
                       rules="nlpaug 1.1.11 res/char/keyboard/en.json (TextFlint KeyboardRules)")
TF_OCR = scaled_p(0.2, trans_min=1, trans_max=10, min_char=1, impl="textflint",
                  rules="nlpaug 1.1.11 res/char/ocr/en.json + reverse mapping")


def _textflint_sub(kind: str, text: str, params: dict, rng) -> str:
    rules = tf.keyboard_rules() if kind == "keyboard" else tf.ocr_rules()
    return tf.textflint_char_sub(text, params, rng, rules)


_P1_NOTE = ("[P1] Schiappa et al. via TextFlint 0.1.0 (reimplemented, see textflint_ops.py): "
            "clamp(int(trans_p*#tokens), 1, 10) tokens, one character each; trans_p = 0.2 x s/3 "
            "(the paper's single level at severity 3)")
_MLVP_NOTE = "MLVP uses this op at its severity 7 (ratio 0.35) = robustlab severity 5 of qiu_nlpaug"
_NOTE_MLVP = {"qiu_nlpaug": f"{_NOTE['qiu_nlpaug']}; {_MLVP_NOTE}",
              "mlvp": "MLVP's t2v benchmark setting: aug_word_p 0.35 (its severity 7) at every severity 1-5, "
                      "other arguments nlpaug defaults, ungated (as do_text_perturbation.py)"}


@register("keyboard", source=f"{P2}; nlpaug 1.1.11 KeyboardAug; [P1] Schiappa et al. 2022 (TextFlint Keyboard)",
          severity_table=_table(KEYBOARD_DEFAULTS), variants={"schiappa_textflint": TF_KEYBOARD},
          variant_notes={**_NOTE, "schiappa_textflint": _P1_NOTE}, description="Substitute characters by a QWERTY "
          "keyboard neighbour (nlpaug KeyboardAug); aug_word_p = fraction of words changed. [P1 ChangeChar, "
          "Natural] as variant schiappa_textflint.", **{**_COMMON, "tags": _COMMON["tags"] + ("p1", "p1:ChangeChar",
                                                                                             "type:Natural")})
def keyboard(text: str, params: dict, rng: np.random.Generator) -> str:
    if params.get("impl") == "textflint":
        return _textflint_sub("keyboard", text, params, rng)
    return run_nlpaug("KeyboardAug", text, params, rng)


@register("ocr", source=f"{P2}; nlpaug 1.1.11 OcrAug; [P1] Schiappa et al. 2022 (TextFlint Ocr); MLVP",
          severity_table=_table(OCR_DEFAULTS),
          variants={"schiappa_textflint": TF_OCR, "mlvp": mlvp_table(OCR_DEFAULTS)},
          variant_notes={**_NOTE_MLVP, "schiappa_textflint": _P1_NOTE},
          description="Substitute characters by predefined OCR confusions (nlpaug OcrAug, e.g. 0->o, l->1); "
          "aug_word_p = fraction of words changed. [P1 ChangeChar, Natural] as variant schiappa_textflint.",
          **{**_COMMON, "tags": _COMMON["tags"] + ("mlvp", "p1", "p1:ChangeChar", "type:Natural")})
def ocr(text: str, params: dict, rng: np.random.Generator) -> str:
    if params.get("impl") == "textflint":
        return _textflint_sub("ocr", text, params, rng)
    return run_nlpaug("OcrAug", text, params, rng)


def _random_char(action: str, what: str):
    name = {"substitute": "char_substitute"}.get(action, f"char_{action}")

    @register(name, source=f"{P2}; nlpaug 1.1.11 RandomCharAug(action='{action}'); MLVP",
              severity_table=_table(RANDOM_CHAR_DEFAULTS, action=action),
              variants={"mlvp": mlvp_table(RANDOM_CHAR_DEFAULTS, action=action)}, variant_notes=_NOTE_MLVP,
              description=f"{what} (nlpaug RandomCharAug '{action}'); aug_word_p = fraction of words changed.",
              **{**_COMMON, "tags": _COMMON["tags"] + ("mlvp",)})
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        return run_nlpaug("RandomCharAug", text, params, rng)

    fn.__name__ = fn.__qualname__ = name
    return fn


char_insert = _random_char("insert", "Insert random characters (letters, digits, !@#$%^&*()_+)")
char_substitute = _random_char("substitute", "Replace characters by random characters")
char_swap = _random_char("swap", "Swap adjacent characters within a word")
char_delete = _random_char("delete", "Delete random characters")
