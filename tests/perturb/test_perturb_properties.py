"""Property-based tests (hypothesis) of every registered perturbation: image, video and text families.

For each perturbation in the registry (``robustlab.perturb.list_perturbations()``), hypothesis draws the input
(shape, channel layout, dtype, content, memory order), the severity (0..5), the seed and the variant; the
properties are the registry's documented contract (``robustlab/perturb/registry.py``):

* the output is uint8 H×W×3 (T×H×W×3 for videos) of the converted input's shape -- except where a spec's
  ``output_note`` says how it differs (``sampling``: T' = ⌈T/r⌉·r; ``freeze`` offline: T' <= T; ``translate``
  ``schiappa_offline``: 224×224 frames) -- and text perturbations return a ``str``;
* the same (input, name, severity, seed, variant) gives a bit-identical output and the same record, and the
  JSON round-tripped record regenerates it bit for bit (images, videos);
* severity 0 is a clean pass-through: the output is the converted input (``to_uint8_rgb``), or the text itself;
  empty or whitespace-only text is returned unchanged at every severity;
* the only exceptions are the documented ones: ``ValueError`` (bad severity / seed / variant, a shape, dtype or
  channel count ``to_uint8_rgb`` does not take, NaN/inf floats, an empty image or video, invalid Unicode text,
  ``mlvp_event_insertion`` on a 1-frame video), ``TypeError`` (a str given to an image op, a non-str to a text
  op), ``InputKindError`` (both: an image given to a video-only op) and ``RuntimeError`` for a perturbation
  marked unavailable, whose tests here are skipped with its reason.

Images run from 1×1 up to 2000×3 and 3×2000 (explicit examples plus a shape strategy biased to extremes), videos
from 1 to 300 frames (tiny frames when long, so the run stays bounded). Hypothesis runs derandomized with no
example database, so CI sees the same examples every time; the whole file takes well under 90 s on 2 cores.
"""
from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from robustlab.io.convert import to_uint8_rgb
from robustlab.perturb import list_perturbations, perturb, regenerate
from robustlab.perturb.registry import InputKindError

SPECS = {s.name: s for s in list_perturbations()}
IMAGE_INPUT = [n for n, s in SPECS.items() if s.modality != "text" and "image" in s.applies_to]
VIDEO_INPUT = [n for n, s in SPECS.items() if s.modality != "text" and "video" in s.applies_to]
VIDEO_ONLY = [n for n, s in SPECS.items() if s.modality == "video" and "image" not in s.applies_to]
TEXT = [n for n, s in SPECS.items() if s.modality == "text"]
UNAVAILABLE = [n for n, s in SPECS.items() if not s.available]


def _params(names):
    """Perturbation names as pytest params; an unavailable one is skipped with its reason (not failed)."""
    return [pytest.param(n, marks=pytest.mark.skip(reason=f"{n} unavailable: {SPECS[n].reason}"))
            if not SPECS[n].available else n for n in names]


def _settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def _variant(name: str, ix: int) -> str:
    vs = list(SPECS[name].variants)
    return vs[ix % len(vs)]


# ---- inputs -----------------------------------------------------------------------------------------------
LAYOUTS = ("HW", "HW1", "HW3", "HW4")  # gray, gray with a channel axis, RGB, RGBA: what to_uint8_rgb takes
DTYPES = ("uint8", "float32", "float64", "uint16", "bool", "int32")  # floats in [0, 1]; other ints are clipped
PATTERNS = ("random", "zeros", "full", "gradient")
ORDERS = ("C", "F", "reversed")  # memory layouts: contiguous, Fortran order, a negative-stride view
# SLOW_THIN: translate's schiappa_offline resizes the short side to 256 px keeping the aspect, as [C1] does, so a
# 1×2000 frame becomes 256×512000 (~400 MB, 3 s) before its 224×224 crop; 1-px-thin images stay at 600 px here.
EXTREME_HW = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 600), (600, 1), (2000, 3), (3, 2000), (3, 3), (5, 1)]

image_hw = st.one_of(st.sampled_from(EXTREME_HW), st.tuples(st.integers(1, 40), st.integers(1, 40)))
# videos: 1..300 frames; long clips get tiny frames (T·H·W stays small), short ones frames up to 24 px
video_thw = st.one_of(
    st.tuples(st.sampled_from([1, 2, 3, 299, 300]), st.integers(1, 3), st.integers(1, 3)),
    st.tuples(st.integers(1, 300), st.integers(1, 2), st.integers(1, 2)),
    st.tuples(st.integers(1, 6), st.integers(1, 24), st.integers(1, 24)),
)


def make_array(shape: tuple, dtype: str, pattern: str, content_seed: int, order: str) -> np.ndarray:
    """An image-like array of ``shape`` (the last axis is the channels where there is one) and ``dtype``; floats
    in [0, 1] (both ends included), uint16 over its whole range, bool as 0/1."""
    rng = np.random.default_rng(content_seed)
    if pattern == "zeros":
        u = np.zeros(shape)
    elif pattern == "full":
        u = np.ones(shape)
    elif pattern == "gradient":
        u = np.broadcast_to(np.linspace(0.0, 1.0, num=int(np.prod(shape))).reshape(shape), shape).copy()
    else:
        u = rng.random(shape)
        u.flat[:: max(1, u.size // 3)] = 1.0  # exact 1.0 and 0.0 values too
        u.flat[1:: max(1, u.size // 3)] = 0.0
    if dtype in ("float32", "float64"):
        a = u.astype(dtype)
    elif dtype == "bool":
        a = u >= 0.5
    else:
        a = np.round(u * {"uint8": 255, "uint16": 65535, "int32": 255}[dtype]).astype(dtype)
    if order == "F":
        a = np.asfortranarray(a)
    elif order == "reversed":
        a = np.ascontiguousarray(a[::-1])[::-1]  # the same values, seen through a negative stride
    return a


def image_input(hw, layout, dtype, pattern, content_seed, order) -> np.ndarray:
    shape = tuple(hw) if layout == "HW" else (*hw, int(layout[2:]))
    return make_array(shape, dtype, pattern, content_seed, order)


def video_input(thw, channels, dtype, pattern, content_seed, order) -> np.ndarray:
    return make_array((*thw, channels), dtype, pattern, content_seed, order)


def converted(x: np.ndarray) -> np.ndarray:
    """What the perturbation sees: to_uint8_rgb per image / per frame (the registry's documented conversion)."""
    if x.ndim == 4:
        return np.stack([to_uint8_rgb(f) for f in x])
    return to_uint8_rgb(x)


def expected_shape(name: str, variant: str, severity: int, shape: tuple) -> tuple:
    """The documented output shape for a converted input of ``shape`` (see the specs' ``output_note``)."""
    if severity == 0:
        return shape
    spec = SPECS[name]
    if name in ("sampling", "reverse_sampling"):
        r = int(spec.variants[variant][severity]["rate"])
        return (math.ceil(shape[0] / r) * r, *shape[1:])
    if name == "translate" and variant == "schiappa_offline":
        return (*shape[:-3], 224, 224, 3)
    return shape


def check_array_properties(name, x, severity, seed, variant):
    """The image/video properties of the module docstring for one call."""
    ref = converted(x)
    res = perturb(x, name, severity, seed=seed, variant=variant)
    out = res.output
    assert isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.flags.c_contiguous
    want = expected_shape(name, variant, severity, ref.shape)
    if name == "freeze" and variant == "offline" and severity > 0:  # T' = T − (first anchor), 1 <= T' <= T
        assert 1 <= out.shape[0] <= ref.shape[0] and out.shape[1:] == ref.shape[1:]
    else:
        assert out.shape == want, (name, variant, severity, out.shape, want)
    assert res.record["input"]["shape"] == list(ref.shape)
    assert res.record["output"]["shape"] == list(out.shape)
    if severity == 0:
        assert out.tobytes() == ref.tobytes() and res.record["params"] == {}
        assert "clean pass-through" in res.record["note"]
    again = perturb(x, name, severity, seed=seed, variant=variant)
    assert again.output.shape == out.shape and again.output.tobytes() == out.tobytes(), "same seed, other output"
    assert again.record == res.record
    rec = json.loads(json.dumps(res.record))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no version or output-hash mismatch warning either
        regen = regenerate(rec, x)
    assert regen.shape == out.shape and regen.tobytes() == out.tobytes()
    return out


# ---- images -------------------------------------------------------------------------------------------------
IMAGE_ARGS = dict(hw=image_hw, layout=st.sampled_from(LAYOUTS), dtype=st.sampled_from(DTYPES),
                  pattern=st.sampled_from(PATTERNS), content_seed=st.integers(0, 2**32 - 1),
                  order=st.sampled_from(ORDERS), severity=st.integers(0, 5), seed=st.integers(0, 2**64 - 1),
                  variant_ix=st.integers(0, 5))


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
@pytest.mark.parametrize("name", _params(IMAGE_INPUT))
@_settings(15)
@given(**IMAGE_ARGS)
@example(hw=(1, 1), layout="HW3", dtype="uint8", pattern="random", content_seed=0, order="C", severity=5, seed=0,
         variant_ix=0)
@example(hw=(2000, 3), layout="HW3", dtype="uint8", pattern="random", content_seed=1, order="C", severity=3,
         seed=1, variant_ix=1)
@example(hw=(3, 2000), layout="HW4", dtype="float32", pattern="gradient", content_seed=2, order="F", severity=5,
         seed=2, variant_ix=2)
@example(hw=(1, 2000), layout="HW", dtype="float64", pattern="zeros", content_seed=3, order="C", severity=1,
         seed=3, variant_ix=0)
@example(hw=(2000, 1), layout="HW1", dtype="uint16", pattern="full", content_seed=4, order="reversed", severity=4,
         seed=4, variant_ix=0)  # (translate's schiappa_offline on 1-px-thin images: see SLOW_THIN below)
def test_image_properties(name, hw, layout, dtype, pattern, content_seed, order, severity, seed, variant_ix):
    x = image_input(hw, layout, dtype, pattern, content_seed, order)
    check_array_properties(name, x, severity, seed, _variant(name, variant_ix))


@pytest.mark.parametrize("name", _params(IMAGE_INPUT))
def test_image_properties_pil_input(name):
    """PIL images of every mode convert as documented (to_uint8_rgb) and keep the size."""
    from PIL import Image

    base = make_array((3, 5, 3), "uint8", "random", 7, "C")
    for mode in ("RGB", "L", "RGBA", "P", "1", "I;16", "F", "CMYK", "LA"):
        im = Image.fromarray(base).convert(mode)
        for sev in (0, 3):
            res = perturb(im, name, sev, seed=11)
            assert res.output.dtype == np.uint8
            assert res.output.shape == expected_shape(name, SPECS[name].default_variant, sev, (3, 5, 3))
            if sev == 0:
                assert res.output.tobytes() == to_uint8_rgb(im).tobytes()
            assert perturb(im, name, sev, seed=11).output.tobytes() == res.output.tobytes()


# ---- videos -------------------------------------------------------------------------------------------------
VIDEO_ARGS = dict(thw=video_thw, channels=st.sampled_from([3, 3, 1, 4]), dtype=st.sampled_from(DTYPES),
                  pattern=st.sampled_from(PATTERNS), content_seed=st.integers(0, 2**32 - 1),
                  order=st.sampled_from(ORDERS), severity=st.integers(0, 5), seed=st.integers(0, 2**64 - 1),
                  variant_ix=st.integers(0, 5))


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
@pytest.mark.parametrize("name", _params(VIDEO_INPUT))
@_settings(10)
@given(**VIDEO_ARGS)
@example(thw=(1, 1, 1), channels=3, dtype="uint8", pattern="random", content_seed=0, order="C", severity=5, seed=0,
         variant_ix=0)
@example(thw=(300, 2, 3), channels=3, dtype="uint8", pattern="random", content_seed=1, order="C", severity=5,
         seed=1, variant_ix=0)
@example(thw=(2, 1, 24), channels=1, dtype="float32", pattern="gradient", content_seed=2, order="F", severity=1,
         seed=2, variant_ix=1)
def test_video_properties(name, thw, channels, dtype, pattern, content_seed, order, severity, seed, variant_ix):
    x = video_input(thw, channels, dtype, pattern, content_seed, order)
    variant = _variant(name, variant_ix)
    if name == "mlvp_event_insertion" and thw[0] < 2 and severity > 0:  # documented: needs 2 frames
        with pytest.raises(ValueError, match="needs a video of at least 2 frames"):
            perturb(x, name, severity, seed=seed, variant=variant)
        return
    out = check_array_properties(name, x, severity, seed, variant)
    assert out.ndim == 4


@pytest.mark.parametrize("name", _params([n for n in IMAGE_INPUT if SPECS[n].modality == "image"]))
def test_image_op_on_a_video_is_per_frame(name):
    """An image perturbation on a T×H×W×3 video: frame t is frame t perturbed alone with its own generator,
    child t of the seeded one (``registry.frame_rng``), as the registry documents; a deterministic op gives
    exactly the single-image result."""
    from robustlab.perturb.registry import frame_call, frame_rng

    spec = SPECS[name]
    x = make_array((3, 4, 5, 3), "uint8", "random", 5, "C")
    out = perturb(x, name, 2, seed=9).output
    for t in range(3):
        alone = frame_call(spec, x[t], spec.params(2), frame_rng(np.random.default_rng(9), t))
        assert out[t].tobytes() == alone.tobytes(), t
        if "deterministic" in spec.tags:
            assert out[t].tobytes() == perturb(x[t], name, 2, seed=9).output.tobytes()


# ---- text ---------------------------------------------------------------------------------------------------
WORDS = ("a", "A", "man", "woman", "rides", "riding", "brown", "horse", "on", "the", "beach", "two", "dogs", "are",
         "playing", "in", "green", "park", "she", "is", "cooking", "pasta", "quickly", "not", "red", "car", "he",
         "slices", "vegetables", "and", "puts", "them", "into", "pot", ".", ",", "!", "?", "don't", "children's",
         "New", "York", "12", "3.5", "-", "(", ")", "\"")
SPECIAL_TEXT = ("", " ", "\t", "\n\r\t \x0b\x0c", "\u00a0\u2003\u3000", "🙂🙂 🎉🎉🎉 ✨", "👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵",
                "\x00", "a\x00b\x07c\x1b[31m red\x7f", "\u200b\u200d\u202e\ufeff",
                "Café naïve résumé 東京タワー Straße",
                "ﬁ ﬂ Ⅻ ㎏ ǅ İstanbul", "... !!! ???", "x", "A", "a b to of it", "e\u0301\u0301\u0301 combining",
                "مرحبا بالعالم", "שלום", "\U0010ffff\U000e0001")
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
text_strategy = st.one_of(
    st.sampled_from(SPECIAL_TEXT),
    words,
    st.text(max_size=30),  # any code point but lone surrogates: control characters, combining marks, RTL, emoji
    st.text(alphabet=st.characters(categories=["Zs", "Zl", "Zp", "Cc"]), max_size=8),  # whitespace/control only
    st.tuples(words, st.text(max_size=8), words).map(lambda t: f"{t[0]} {t[1]}{t[2]}"),
)
LONG_WORDS = "A man rides a brown horse on the beach while two dogs are playing in the green park. " * 36
LONG_UNICODE = "".join(chr(c) for c in range(32, 3032) if not 0xD800 <= c < 0xE000) + "🙂" * 50 + "\x00\x1b"


def check_text_properties(name, text, severity, seed, variant):
    res = perturb(text, name, severity, seed=seed, variant=variant)
    out = res.output
    assert type(out) is str
    if severity == 0:
        assert out == text and res.record["params"] == {} and "clean pass-through" in res.record["note"]
    elif not text.strip():
        assert out == text and "whitespace-only" in res.record["note"]
    elif out == text:
        assert res.record["note"]  # an unchanged text says why
    assert res.record["input_hash"] and res.record["output_hash"]
    again = perturb(text, name, severity, seed=seed, variant=variant)
    assert again.output == out and again.record == res.record, "same seed, other output"
    json.dumps(res.record)


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
@pytest.mark.parametrize("name", _params(TEXT))
@_settings(8)
@given(text=text_strategy, severity=st.integers(0, 5), seed=st.integers(0, 2**64 - 1), variant_ix=st.integers(0, 5))
@example(text="", severity=5, seed=0, variant_ix=0)
@example(text=" \t\n", severity=1, seed=0, variant_ix=1)
@example(text="🙂🙂 🎉🎉🎉 ✨", severity=3, seed=1, variant_ix=0)
@example(text="a\x00b\x07c\x1b[31m red ride\u202e", severity=5, seed=2, variant_ix=0)
@example(text=LONG_WORDS, severity=5, seed=3, variant_ix=0)
@example(text=LONG_UNICODE, severity=2, seed=4, variant_ix=0)
def test_text_properties(name, text, severity, seed, variant_ix):
    check_text_properties(name, text, severity, seed, _variant(name, variant_ix))


# ---- documented refusals ------------------------------------------------------------------------------------
def test_unavailable_perturbations_refuse_with_their_reason():
    """A perturbation marked unavailable (a missing optional resource) refuses with RuntimeError naming why."""
    if not UNAVAILABLE:
        pytest.skip("every perturbation is available here")
    for name in UNAVAILABLE:
        spec = SPECS[name]
        x = "A man rides a horse." if spec.modality == "text" else np.zeros((2, 4, 4, 3), np.uint8)
        with pytest.raises(RuntimeError, match="unavailable") as e:
            perturb(x, name, 1, seed=0)
        assert spec.reason and "\n" not in str(e.value)


BAD_SEVERITIES = st.one_of(st.integers(max_value=-1), st.integers(min_value=6), st.floats(allow_nan=True),
                           st.booleans(), st.text(max_size=3), st.none(), st.just(np.float64(2.0)),
                           st.just(np.bool_(True)))
BAD_SEEDS = st.one_of(st.integers(max_value=-1), st.floats(), st.booleans(), st.text(max_size=3), st.none())


@_settings(40)
@given(name=st.sampled_from(sorted(SPECS)), severity=BAD_SEVERITIES)
def test_bad_severity_is_a_value_error(name, severity):
    x = "A man rides a horse." if SPECS[name].modality == "text" else np.zeros((2, 3, 3, 3), np.uint8)
    with pytest.raises(ValueError, match=r"severity must be an integer in 0\.\.5 \(0 = clean\)"):
        perturb(x, name, severity, seed=0)


@_settings(30)
@given(name=st.sampled_from(sorted(SPECS)), seed=BAD_SEEDS)
def test_bad_seed_is_a_value_error(name, seed):
    x = "A man rides a horse." if SPECS[name].modality == "text" else np.zeros((2, 3, 3, 3), np.uint8)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        perturb(x, name, 1, seed=seed)


@_settings(30)
@given(name=st.one_of(st.text(max_size=20), st.integers(), st.none()), variant=st.text(min_size=1, max_size=8))
def test_unknown_name_or_variant_is_a_value_error(name, variant):
    if name not in SPECS:
        with pytest.raises(ValueError, match="unknown perturbation .*valid:"):
            perturb("text", name, 1)
    if variant not in SPECS["gaussian_noise"].variants:
        with pytest.raises(ValueError, match="unknown variant .*valid:"):
            perturb(np.zeros((2, 2, 3), np.uint8), "gaussian_noise", 1, variant=variant)


BAD_ARRAYS = {
    "2 channels": (np.zeros((4, 4, 2), np.uint8), "1, 3 or 4 channels"),
    "5 channels": (np.zeros((4, 4, 5), np.uint8), "1, 3 or 4 channels"),
    "0 channels": (np.zeros((4, 4, 0), np.uint8), "1, 3 or 4 channels"),
    "1-D": (np.zeros(7, np.uint8), r"H×W, H×W×1, H×W×3 or H×W×4"),
    "0-D": (np.uint8(3), r"H×W, H×W×1, H×W×3 or H×W×4"),
    "5-D": (np.zeros((1, 2, 2, 2, 3), np.uint8), r"H×W, H×W×1, H×W×3 or H×W×4"),
    "no rows": (np.zeros((0, 5, 3), np.uint8), "at least 1×1"),
    "no columns": (np.zeros((5, 0), np.float32), "at least 1×1"),
    "NaN": (np.full((3, 3, 3), np.nan, np.float32), "NaN or infinite"),
    "inf": (np.full((3, 3), np.inf), "NaN or infinite"),
    "complex": (np.zeros((3, 3, 3), np.complex64), "numbers"),
    "str dtype": (np.full((3, 3, 3), "a"), "numbers"),
    "bytes dtype": (np.full((3, 3, 3), b"a"), "numbers"),
    "object of None": (np.full((3, 3, 3), None, object), "numbers"),
    "datetime": (np.zeros((3, 3, 3), "datetime64[s]"), "numbers"),
    "ragged list": ([[1, 2], [3]], "inhomogeneous|numbers|H×W"),
    "video without frames": (np.zeros((0, 4, 4, 3), np.uint8), "at least one frame"),
    "video of 0×4 frames": (np.zeros((2, 0, 4, 3), np.uint8), "at least 1×1"),
    "video of 2-channel frames": (np.zeros((2, 4, 4, 2), np.uint8), "1, 3 or 4 channels"),
    "video with NaN": (np.full((2, 3, 3, 3), np.nan), "NaN or infinite"),
    "video of str": (np.full((2, 3, 3, 3), "a"), "numbers"),
}


@pytest.mark.parametrize("bad", list(BAD_ARRAYS))
def test_inputs_outside_the_contract_are_a_clear_value_error(bad):
    """Shapes, channel counts and dtypes ``to_uint8_rgb`` does not take: a one-line ValueError for every array
    perturbation (an image given to a video-only op says video-only first: InputKindError, also a ValueError)."""
    x, msg = BAD_ARRAYS[bad]
    for name in IMAGE_INPUT + VIDEO_ONLY:
        if not SPECS[name].available:
            continue
        with pytest.raises(ValueError) as e:
            perturb(x, name, 2, seed=0)
        text = str(e.value)
        assert "\n" not in text and text, (name, bad)
        if isinstance(e.value, InputKindError):
            assert name in VIDEO_ONLY and "video-only" in text
        else:
            assert re.search(msg, text), (name, bad, text)


@_settings(25)
@given(name=st.sampled_from(TEXT), x=st.one_of(st.binary(max_size=8), st.integers(), st.none(),
                                               st.just(np.zeros((2, 2, 3), np.uint8)), st.lists(st.text(max_size=3))))
def test_text_op_on_a_non_str_is_a_type_error(name, x):
    if not SPECS[name].available:
        return
    with pytest.raises(TypeError, match="needs a str"):
        perturb(x, name, 2, seed=0)


@_settings(25)
@given(name=st.sampled_from([n for n in IMAGE_INPUT + VIDEO_ONLY if SPECS[n].available]), x=st.text(max_size=10))
def test_array_op_on_a_str_is_a_type_error(name, x):
    with pytest.raises(TypeError, match="image or video array"):
        perturb(x, name, 2, seed=0)


@pytest.mark.parametrize("name", _params(VIDEO_ONLY))
def test_video_only_op_on_an_image_is_input_kind_error(name):
    with pytest.raises(InputKindError, match="video-only") as e:
        perturb(np.zeros((4, 5, 3), np.uint8), name, 1)
    assert isinstance(e.value, ValueError) and isinstance(e.value, TypeError)


@_settings(20)
@given(name=st.sampled_from([n for n in TEXT if SPECS[n].available]),
       text=st.tuples(st.text(max_size=6), st.integers(0xD800, 0xDFFF), st.text(max_size=6)))
def test_text_with_a_lone_surrogate_is_a_value_error(name, text):
    """A str holding a lone surrogate (e.g. from json.loads('"\\ud800"')) is not Unicode text: refused up front
    with one line, instead of crashing deep in spaCy or a tokenizer (or an export's UTF-8 encode)."""
    s = f"{text[0]}{chr(text[1])}{text[2]}"
    with pytest.raises(ValueError, match="lone surrogate") as e:
        perturb(s, name, 2, seed=0)
    assert "\n" not in str(e.value)
