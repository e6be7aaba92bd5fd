"""Tests for the video perturbations ([P1] Schiappa et al. and MLVP) and the registry's video paths."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from PIL import Image

from robustlab.perturb import get_perturbation, list_perturbations, perturb, regenerate, register
from robustlab.perturb import registry as reg

P1_VIDEO = ["sampling", "reverse_sampling", "jumble", "box_jumble", "freeze", "static_rotate", "rotate", "translate",
            "codec1", "codec2"]
MLVP = ["mlvp_gaussian_noise", "mlvp_impulse_noise", "mlvp_fog", "mlvp_snow", "mlvp_elastic", "mlvp_h264",
        "mlvp_motion_blur", "mlvp_defocus", "mlvp_occlusion", "mlvp_style", "mlvp_event_insertion",
        "mlvp_temporal_scrambling"]
VIDEO_OPS = P1_VIDEO + MLVP
CAMERA = {"static_rotate", "rotate", "translate"}
DETERMINISTIC = {"sampling", "reverse_sampling", "static_rotate", "codec1", "codec2", "mlvp_h264",
                 "mlvp_motion_blur", "mlvp_defocus", "mlvp_event_insertion"}


def moving_video(t=12, h=24, w=32, speed=2) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    frames = []
    for i in range(t):
        img = np.stack([120 + 80 * np.sin((xx + speed * i) / 5), 120 + 70 * np.cos(yy / 4 + i / 4),
                        100 + 60 * np.sin((xx + yy) / 7)], -1)
        img[(xx - 6 - speed * i) ** 2 + (yy - h / 2) ** 2 < (min(h, w) / 5) ** 2] = [220, 40, 40]
        frames.append(img)
    return np.clip(np.stack(frames), 20, 235).astype(np.uint8)


def index_video(t=40, h=4, w=6) -> np.ndarray:
    """Frame i is filled with the value i."""
    return np.repeat(np.arange(t, dtype=np.uint8)[:, None, None, None], h * w * 3).reshape(t, h, w, 3)


def ids(out: np.ndarray) -> list[int]:
    """The frame indices of an index_video after a pure re-indexing perturbation."""
    assert (out == out[:, :1, :1, :1]).all()
    return [int(v) for v in out[:, 0, 0, 0]]


def psnr(a, b) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def available(name) -> bool:
    return get_perturbation(name).available


@pytest.fixture(scope="module")
def vid():
    return moving_video()


# ----------------------------------------------------------------------------------------------- registry

def test_video_specs_listed_with_metadata():
    specs = {s.name: s for s in list_perturbations("video")}
    assert set(VIDEO_OPS) <= set(specs)
    for name in VIDEO_OPS:
        s = specs[name]
        assert s.modality == "video" and s.source and s.description and s.category
        assert s.default_variant in s.variants and s.severity_table == s.variants[s.default_variant]
        assert all(sorted(t) == [1, 2, 3, 4, 5] for t in s.variants.values())
        assert set(s.variant_notes) == set(s.variants), name
        assert s.applies_to == (("image", "video") if name in CAMERA else ("video",))
        d = json.loads(json.dumps(s.to_dict()))
        assert "fn" not in d and "check" not in d and d["output_note"] == s.output_note
        if s.name != "mlvp_style":
            assert s.available, (name, s.reason)
    cats = {n: specs[n].category for n in VIDEO_OPS}
    assert {cats[n] for n in ("sampling", "reverse_sampling", "jumble", "box_jumble", "freeze")} == {"temporal"}
    assert {cats[n] for n in CAMERA} == {"camera"} and cats["codec1"] == cats["codec2"] == "digital"
    assert all("mlvp" in specs[n].tags for n in MLVP)
    # per-frame P1 perturbations are the image ops, which accept videos
    assert {"gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "jpeg_compression"} <= set(specs)
    style = specs["mlvp_style"]
    if not style.available:
        assert "stylize" in style.reason
    assert {n for n in VIDEO_OPS if n not in CAMERA} & {s.name for s in list_perturbations("image")} == set()


def test_import_stays_light():
    """Registering the video perturbations imports neither PyAV nor OpenCV, SciPy or torch."""
    import subprocess
    import sys

    code = ("import sys, importlib; m = importlib.import_module('robustlab.perturb'); m.list_perturbations('video'); "
            "print(sorted(k for k in ('av', 'cv2', 'scipy', 'torch') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_paper_tables():
    def col(name, key, variant=None):
        s = get_perturbation(name)
        return [s.variants[variant or s.default_variant][i][key] for i in range(1, 6)]

    assert col("sampling", "rate") == col("reverse_sampling", "rate") == [2, 4, 8, 16, 32]
    assert col("jumble", "segment") == [4, 8, 16, 32, 64] and get_perturbation("jumble").default_variant == "offline"
    assert col("jumble", "segment", "on_the_fly") == [32, 16, 8, 4, 2]
    assert col("box_jumble", "segment") == [2, 4, 8, 16, 32]
    assert col("box_jumble", "segment", "on_the_fly") == [4, 9, 16, 25, 36]
    assert col("freeze", "fraction") == [0.4, 0.2, 0.1, 0.05, 0.1]
    assert col("static_rotate", "angle") == [7.5, 15, 30, 45, 90]
    assert col("rotate", "max_angle") == [6, 12, 18, 24, 30]
    assert col("rotate", "max_angle", "on_the_fly") == [7, 13, 19, 25, 31]
    assert col("translate", "max_offset") == [7, 15, 23, 31, 39]
    assert col("codec1", "qscale") == [20, 40, 60, 80, 100] and col("codec1", "codec") == ["mpeg2video"] * 5
    assert col("codec1", "effective_qscale") == [20, 31, 31, 31, 31]
    assert col("codec2", "qscale") == [15, 30, 45, 60, 75] and col("codec2", "codec") == ["mpeg4"] * 5
    assert col("codec2", "effective_qscale") == [15, 30, 31, 31, 31]
    assert col("mlvp_gaussian_noise", "sigma") == [0.08, 0.12, 0.18, 0.26, 0.38]
    assert col("mlvp_impulse_noise", "amount") == [0.03, 0.06, 0.09, 0.17, 0.27]
    assert col("mlvp_fog", "mlvp") == [[1.5, 2], [2, 2], [2.5, 1.7], [2.5, 1.5], [3, 1.4]]
    assert col("mlvp_snow", "zoom") == [3, 2, 4, 4.5, 2.5] and col("mlvp_snow", "fall_speed") == [3] * 5
    assert np.allclose(col("mlvp_elastic", "mlvp"), np.array([(2, .7, .1), (2, .08, .2), (.05, .01, .02),
                                                              (.07, .01, .02), (.12, .01, .02)]) * 244)
    assert col("mlvp_h264", "bitrate") == [500_000, 250_000, 100_000, 50_000, 25_000]
    assert list(zip(col("mlvp_motion_blur", "short"), col("mlvp_motion_blur", "long"))) == \
        [(5, 9), (7, 13), (9, 17), (11, 21), (13, 25)]
    assert col("mlvp_defocus", "radius") == [3, 4, 6, 8, 10]
    assert col("mlvp_occlusion", "ratio") == [0.3, 0.4, 0.5, 0.6, 0.8]
    assert np.allclose(col("mlvp_occlusion", "ratio", "code"), np.linspace(0.3, 0.8, 5))
    assert col("mlvp_style", "mlvp") == [[0.2], [0.4], [0.6], [0.8], [1.0]]
    assert col("mlvp_event_insertion", "ratio") == [0.3, 0.4, 0.5, 0.6, 0.7]
    assert col("mlvp_temporal_scrambling", "trim_ratio") == [0.4, 0.3, 0.2, 0.1, 0.05]
    assert col("mlvp_temporal_scrambling", "trim_ratio", "code") == [0.6, 0.7, 0.8, 0.9, 0.95]
    from robustlab.io.media import effective_qscale
    from robustlab.perturb.video import codec

    assert (codec.QMIN, codec.QMAX) == (2, 31) and effective_qscale(100) == 31


def test_image_ops_behind_mlvp_have_mlvp_constants():
    from robustlab.perturb.video.mlvp import image_op_params

    for video_op, image_op in (("mlvp_fog", "fog"), ("mlvp_elastic", "elastic_transform")):
        if not available(image_op):
            pytest.skip(f"{image_op} not available: {get_perturbation(image_op).reason}")
        s = get_perturbation(image_op)
        for sev, p in get_perturbation(video_op).severity_table.items():
            variant, params = image_op_params(s, sev, p["mlvp"])
            nums = sorted(float(v) for v in params.values() if isinstance(v, (int, float)))
            assert all(any(abs(n - m) < 1e-6 * max(1, abs(m)) for n in nums) for m in p["mlvp"]), (image_op, sev)


# ------------------------------------------------------------------------------------------ input kinds

def test_image_given_to_video_only_op_is_a_clear_value_error(vid):
    img = vid[0]
    for name in VIDEO_OPS:
        if name in CAMERA or not available(name):
            continue
        with pytest.raises(ValueError, match="video-only") as e:
            perturb(img, name, 2)
        assert "\n" not in str(e.value) and isinstance(e.value, TypeError)
    with pytest.raises(ValueError, match="video-only"):
        perturb(Image.fromarray(img), "jumble", 2)
    for name in CAMERA:  # spatial: an image is a 1-frame video
        res = perturb(img, name, 3, seed=1)
        assert res.output.shape == img.shape and res.record["input"]["kind"] == "image"
        assert regenerate(res.record, img).tobytes() == res.output.tobytes()
    assert perturb(img, "translate", 2, variant="schiappa_offline").output.shape == (224, 224, 3)
    with pytest.raises(TypeError, match="image or video array"):
        perturb("text", "jumble", 1)


def test_video_objects_and_float_videos_are_accepted(vid):
    from robustlab.io.media import Video

    v = Video(frames=vid, fps=8.0, source_fps=8.0, codec="h264", container="mp4", original_size=vid.shape[1:3],
              duration=1.5, n_frames_total=len(vid), indices=np.arange(len(vid)))
    a = perturb(v, "jumble", 3, seed=4)
    assert a.output.tobytes() == perturb(vid, "jumble", 3, seed=4).output.tobytes()
    assert regenerate(a.record, vid).tobytes() == a.output.tobytes()
    assert perturb(vid.astype(np.float32) / 255, "box_jumble", 1).output.shape == vid.shape


# ------------------------------------------------------------------------------- determinism, regenerate

@pytest.mark.parametrize("name", VIDEO_OPS)
def test_every_variant_and_severity_regenerates_bit_for_bit(vid, name):
    spec = get_perturbation(name)
    if not spec.available:
        with pytest.raises(RuntimeError, match="unavailable"):
            perturb(vid, name, 1)
        pytest.skip(f"{name} unavailable: {spec.reason}")
    x = vid[:8]
    for variant in spec.variants:
        for sev in range(0, 6):
            res = perturb(x, name, sev, seed=sev * 7 + 1, variant=variant)
            out = res.output
            assert out.dtype == np.uint8 and out.ndim == 4 and out.shape[-1] == 3
            if not spec.output_note:
                assert out.shape == x.shape, (name, variant, sev)
            rec = json.loads(json.dumps(res.record))
            assert rec["output"]["shape"] == list(out.shape)
            assert rec["input"] == {"kind": "video", "shape": list(x.shape)}
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                again = regenerate(rec, x)
            assert again.tobytes() == out.tobytes() and again.shape == out.shape, (name, variant, sev)
            if sev == 0:
                assert out.tobytes() == x.tobytes() and rec["params"] == {}


@pytest.mark.parametrize("name", VIDEO_OPS)
def test_seed_dependence(name):
    if not available(name):
        pytest.skip("unavailable")
    v = moving_video(t=24, h=16, w=24)
    a, b = (perturb(v, name, 2, seed=s).output for s in (1, 2))
    same = a.shape == b.shape and a.tobytes() == b.tobytes()
    assert same == (name in DETERMINISTIC), name
    assert not (a.shape == v.shape and np.array_equal(a, v)), name


def test_codec_records_carry_av_and_machine(vid):
    rec = perturb(vid, "codec2", 1).record
    assert rec["versions"]["av"] and rec["versions"]["machine"]
    rec = json.loads(json.dumps(rec))
    rec["versions"]["av"] = "0.0.1"
    with pytest.warns(reg.VersionMismatchWarning, match=r"av 0\.0\.1 ->"):
        regenerate(rec, vid)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 3, 5), (2, 3, 5), (1, 24, 32)])
def test_tiny_and_one_frame_videos(shape):
    x = np.random.default_rng(0).integers(30, 220, shape + (3,), dtype=np.uint8)
    for name in VIDEO_OPS:
        if not available(name):
            continue
        for variant in get_perturbation(name).variants:
            try:
                res = perturb(x, name, 5, seed=3, variant=variant)
            except ValueError as e:  # allowed, if it says why
                assert name == "mlvp_event_insertion" and shape[0] == 1 and "at least 2 frames" in str(e)
                continue
            assert res.output.dtype == np.uint8 and res.output.ndim == 4 and min(res.output.shape) >= 1
            assert regenerate(res.record, x).tobytes() == res.output.tobytes()


# --------------------------------------------------------------------------- temporal index semantics

def test_sampling_and_reverse_sampling_indices():
    v = index_video(10)
    assert ids(perturb(v, "sampling", 1).output) == [0, 0, 2, 2, 4, 4, 6, 6, 8, 8]
    assert ids(perturb(v, "sampling", 2).output) == [0] * 4 + [4] * 4 + [8] * 4  # ⌈10/4⌉·4 = 12 frames
    assert ids(perturb(v, "reverse_sampling", 2).output) == [8] * 4 + [4] * 4 + [0] * 4
    assert ids(perturb(v[:1], "sampling", 5).output) == [0] * 32
    assert ids(perturb(index_video(40), "sampling", 5).output) == [0] * 32 + [32] * 32


@pytest.mark.parametrize("variant,segs", [("offline", [4, 8, 16, 32, 64]), ("on_the_fly", [32, 16, 8, 4, 2])])
def test_jumble_shuffles_within_segments(variant, segs):
    v = index_video(70)
    for sev, seg in enumerate(segs, 1):
        got = ids(perturb(v, "jumble", sev, seed=sev, variant=variant).output)
        assert sorted(got) == list(range(70))
        for start in range(0, 70, seg):
            assert sorted(got[start:start + seg]) == list(range(start, min(start + seg, 70)))
    assert ids(perturb(v, "jumble", 1, seed=0).output) != list(range(70))


@pytest.mark.parametrize("variant,segs", [("offline", [2, 4, 8, 16, 32]), ("on_the_fly", [4, 9, 16, 25, 36])])
def test_box_jumble_shuffles_segment_order(variant, segs):
    v = index_video(70)
    for sev, seg in enumerate(segs, 1):
        got = ids(perturb(v, "box_jumble", sev, seed=sev, variant=variant).output)
        assert sorted(got) == list(range(70))
        runs = np.split(np.array(got), np.nonzero(np.diff(got) != 1)[0] + 1)
        for run in runs:  # every maximal increasing run is a union of whole segments
            assert run[0] % seg == 0 and (run[-1] + 1) % seg == 0 or run[-1] == 69
    assert ids(perturb(v, "box_jumble", 2, seed=0).output) != list(range(70))


def test_freeze_semantics():
    v = index_video(40)
    for sev, k in [(1, 16), (2, 8), (3, 4), (4, 2), (5, 4)]:
        for variant in ("offline", "on_the_fly"):
            got = ids(perturb(v, "freeze", sev, seed=sev, variant=variant).output)
            anchors = sorted(set(got))
            assert got == sorted(got)  # time never goes backwards
            assert len(anchors) in (k, k + 1) and (len(anchors) == k or (variant == "on_the_fly" and 0 in anchors))
            for a, b in zip(anchors, anchors[1:] + [40]):  # each anchor shown until the next one
                assert got.count(a) == b - a
            if variant == "offline":
                assert len(got) == 40 - anchors[0] and len(anchors) == k
            else:
                assert len(got) == 40 and got[0] == 0
    assert ids(perturb(index_video(1), "freeze", 1).output) == [0]  # k clamped to 1


def test_temporal_scrambling_trims_and_scrambles():
    t = 60
    v = index_video(t)
    for variant, keep in (("paper", [0.6, 0.7, 0.8, 0.9, 0.95]), ("code", [0.4, 0.3, 0.2, 0.1, 0.05])):
        for sev in range(1, 6):
            got = ids(perturb(v, "mlvp_temporal_scrambling", sev, seed=sev, variant=variant).output)
            n_mid = t - int(t * (1 - keep[sev - 1]) + 1e-9)
            assert len(got) == t
            assert max(got) - min(got) < n_mid + 1 and len(set(got)) <= n_mid
    paper5 = ids(perturb(v, "mlvp_temporal_scrambling", 5, seed=0).output)
    assert paper5 != sorted(paper5)  # full chunk shuffle
    s1 = ids(perturb(v, "mlvp_temporal_scrambling", 1, seed=0).output)
    breaks = int(np.sum(np.diff(s1) < 0))
    assert 1 <= breaks <= 2  # one adjacent chunk swap


def test_event_insertion_positions():
    v = moving_video(t=10, h=24, w=32)
    for variant in ("paper", "code"):
        for sev, k in enumerate([3, 4, 5, 6, 7], 1):
            out = perturb(v, "mlvp_event_insertion", sev, variant=variant).output
            assert out.shape == v.shape
            orig = [any(np.array_equal(o, f) for f in v) for o in out]
            assert sum(orig) == 10 - k, (variant, sev)
            if variant == "code":
                assert orig == [True] * (10 - k) + [False] * k and np.array_equal(out[:10 - k], v[:10 - k])
            else:
                half = (10 - k + 1) // 2
                assert orig == [True] * half + [False] * k + [True] * (10 - k - half)
                assert np.array_equal(out[0], v[0]) and np.array_equal(out[-1], v[-1])


# ------------------------------------------------------------------------------------------------ camera

def test_static_rotate_equals_pil_per_frame(vid):
    for sev, angle in enumerate([7.5, 15, 30, 45, 90], 1):
        out = perturb(vid, "static_rotate", sev).output
        ref = np.stack([np.asarray(Image.fromarray(f).rotate(angle)) for f in vid])
        assert out.tobytes() == ref.tobytes(), sev


def test_rotate_draws_one_integer_angle_per_frame(vid):
    for variant, m in (("offline", 18), ("on_the_fly", 19)):
        out = perturb(vid, "rotate", 3, seed=5, variant=variant).output
        angles = np.random.default_rng(5).integers(-m, m + 1, size=len(vid))
        ref = np.stack([np.asarray(Image.fromarray(f).rotate(int(a))) for f, a in zip(vid, angles)])
        assert out.tobytes() == ref.tobytes()
        assert len(set(angles.tolist())) > 1


def test_translate_variants():
    import cv2

    still = np.repeat(moving_video(t=1, h=224, w=224), 6, axis=0)
    for sev in (1, 5):
        a = perturb(still, "translate", sev, seed=2).output  # size-aware: per-frame offsets, size kept
        assert a.shape == still.shape and len({f.tobytes() for f in a}) > 1
        b = perturb(still, "translate", sev, seed=2, variant="on_the_fly").output  # one offset per clip
        assert b.shape == still.shape and len({f.tobytes() for f in b}) == 1
        c = perturb(still, "translate", sev, seed=2, variant="schiappa_offline").output
        assert c.shape == (6, 224, 224, 3)
    # schiappa_offline at 224×224 input == the [C1] recipe: resize to 256, crop 224 at (dy, dx) per frame
    out = perturb(still, "translate", 2, seed=9, variant="schiappa_offline").output
    off = np.random.default_rng(9).integers(0, 16, size=(6, 2))
    big = cv2.resize(still[0], (256, 256))
    for f, (dy, dx) in zip(out, off):
        assert np.array_equal(f, big[dy:dy + 224, dx:dx + 224])
    # the size-aware default on a 224-px square input equals the [C1] recipe too
    assert perturb(still, "translate", 2, seed=9).output.tobytes() == out.tobytes()
    # at s5 the crop can leave the 256-px frame: black padding, never a dropped frame
    out5 = perturb(np.repeat(still, 10, axis=0), "translate", 5, seed=1, variant="schiappa_offline").output
    assert out5.shape == (60, 224, 224, 3) and (out5[:, -1].max(axis=(1, 2)) == 0).any()


# ------------------------------------------------------------------------------------------------ codecs

def test_codec_severities_psnr_as_measured(vid):
    from robustlab.perturb import share

    with share.disabled():  # every severity really encoded (sharing would serve s3..s5 s2's output)
        c1 = [perturb(vid, "codec1", s).output for s in range(1, 6)]
        c2 = [perturb(vid, "codec2", s).output for s in range(1, 6)]
    assert all(np.array_equal(c1[1], c) for c in c1[2:])  # q:v 40..100 all quantise with 31
    assert psnr(c1[0], vid) > psnr(c1[1], vid)
    assert np.array_equal(c2[2], c2[3]) and np.array_equal(c2[3], c2[4])
    p2 = [psnr(c, vid) for c in c2]
    assert p2[0] > p2[1] > p2[2]
    h = [psnr(perturb(vid, "mlvp_h264", s).output, vid) for s in range(1, 6)]
    assert all(a >= b for a, b in zip(h, h[1:])) and h[0] > h[4] + 3, h


# ---------------------------------------------------------------------------------------------- MLVP

def test_fixed_patterns_are_shared_by_all_frames(vid):
    still = np.repeat(vid[:1], 5, axis=0)
    for name in ("mlvp_gaussian_noise", "mlvp_impulse_noise", "mlvp_fog", "mlvp_elastic"):
        if not available(name):
            continue
        out = perturb(still, name, 3, seed=1).output
        assert all(np.array_equal(out[0], f) for f in out[1:]), name
        assert not np.array_equal(out[0], still[0])
    assert not np.array_equal(*perturb(still, "gaussian_noise", 3, seed=1).output[:2])  # per-frame image op
    snow = perturb(still, "mlvp_snow", 3, seed=1).output
    assert not np.array_equal(snow[0], snow[1])  # the curtain falls


def test_mlvp_gaussian_is_the_image_op_with_one_draw(vid):
    out = perturb(vid, "mlvp_gaussian_noise", 2, seed=11).output
    for t in (0, 5):
        assert out[t].tobytes() == perturb(vid[t], "gaussian_noise", 2, seed=11).output.tobytes()


def test_mlvp_fog_and_elastic_use_the_image_ops(vid):
    from robustlab.perturb.video._common import sub_seed

    for video_op, image_op in (("mlvp_fog", "fog"), ("mlvp_elastic", "elastic_transform")):
        if not available(video_op):
            continue
        out = perturb(vid, video_op, 2, seed=3).output
        seed = sub_seed(np.random.default_rng(3))
        fn, params = get_perturbation(image_op).fn, get_perturbation(image_op).severity_table[2]
        assert out[4].tobytes() == fn(vid[4], dict(params), np.random.default_rng(seed)).tobytes()


def test_mlvp_impulse_mask_is_per_pixel(vid):
    out = perturb(vid, "mlvp_impulse_noise", 5, seed=0).output
    changed = (out != vid).any(-1)
    assert ((out == 0).all(-1) | (out == 255).all(-1))[changed].all()  # all three channels together
    assert 0.2 < changed.mean() < 0.34


@pytest.mark.parametrize("name,variant", [("mlvp_gaussian_noise", None), ("mlvp_impulse_noise", None),
                                          ("mlvp_motion_blur", None), ("mlvp_motion_blur", "code"),
                                          ("mlvp_defocus", None)])
def test_mlvp_psnr_decreases_with_severity(vid, name, variant):
    vals = [psnr(perturb(vid, name, s, seed=0, variant=variant).output, vid) for s in range(1, 6)]
    assert all(a > b for a, b in zip(vals, vals[1:])), vals


def test_mlvp_occlusion_area_grows(vid):
    for variant in ("paper", "code"):
        black = [(perturb(vid, "mlvp_occlusion", s, seed=0, variant=variant).output.max(-1) == 0).mean()
                 for s in range(1, 6)]
        assert all(a < b for a, b in zip(black, black[1:])), black
    from robustlab.perturb.video.mlvp import occlude

    out = occlude(vid, [(4, 4, 14, 14)] * len(vid), 0.5, np.random.default_rng(0))
    blk = out.max(-1) == 0
    assert blk.any(axis=0)[:4].sum() == 0 and blk.any(axis=0)[:, :4].sum() == 0  # stays inside the box
    assert np.all(blk.sum(axis=(1, 2)) == 8 * 8)  # int(10·√.5)=7 px sides, drawn inclusively as cv2.rectangle


def test_motion_blur_direction_follows_motion():
    from robustlab.perturb.video.mlvp import linear_motion_kernel

    def slope(k):  # weighted covariance of (row, col): > 0 for a "\\" line, < 0 for "/"
        r, c = np.mgrid[0:k.shape[0], 0:k.shape[1]]
        return float((k * (r - (k * r).sum()) * (c - (k * c).sum())).sum())

    # the 'paper' orientation for flow (fx, fy) = (1, 1), i.e. down-right on screen, is 135° -> a "\\" line
    assert slope(linear_motion_kernel(135.0, 9)) > 1 and slope(linear_motion_kernel(45.0, 9)) < -1
    import cv2

    still = np.repeat(moving_video(t=1), 4, axis=0)
    for variant in ("paper", "code"):  # frame 0 has zero flow: every pixel is "high motion" (>= a zero percentile)
        out = perturb(still, "mlvp_motion_blur", 1, variant=variant).output
        assert np.array_equal(out[0], cv2.filter2D(still[0], -1, linear_motion_kernel(0.0, 9)))


# ------------------------------------------------------------------------- registry: per-frame image ops

@pytest.mark.parametrize("name", ["gaussian_noise", "defocus_blur", "shot_noise"])
def test_image_ops_on_videos_per_frame_seeded_threaded_reproducible(name, monkeypatch):
    """Frame t draws from child t of the seeded generator (per-frame seeding, robustlab 0.2): chunks and threads do
    not matter. Records of 0.1 (chunk i with the i-th child, advancing across its frames) keep that scheme."""
    v = moving_video(t=10, h=16, w=16)
    monkeypatch.setattr(reg, "VIDEO_CHUNK_ELEMENTS", v[0].size * 3)  # chunks of 3, 3, 3, 1 frames
    spec = get_perturbation(name)
    params = spec.params(3)
    kids = np.random.default_rng(5).spawn(10)
    one = (lambda f, g: spec.fn(f[None], dict(params), g)[0]) if spec.batched else \
        (lambda f, g: spec.fn(f, dict(params), g))
    ref = np.stack([one(f, kids[t]) for t, f in enumerate(v)])
    kids = np.random.default_rng(5).spawn(4)
    legacy = []
    for i, a in enumerate(range(0, 10, 3)):
        chunk = v[a:a + 3]
        legacy.append(spec.fn(chunk, dict(params), kids[i]) if spec.batched else
                      np.stack([spec.fn(f, dict(params), kids[i]) for f in chunk]))
    legacy = np.concatenate(legacy)
    for threads in (1, 3):
        monkeypatch.setattr(reg, "VIDEO_THREADS", threads)
        res = perturb(v, name, 3, seed=5)
        assert res.output.tobytes() == ref.tobytes(), threads
        assert res.record["frame_seeding"] == "per-frame"
        assert regenerate(res.record, v).tobytes() == ref.tobytes()
        old = perturb(v, name, 3, seed=5, frame_seeding="chunked")
        assert old.output.tobytes() == legacy.tobytes(), threads
    still = np.repeat(v[:1], 10, axis=0)  # fresh randomness in every frame
    out = perturb(still, name, 3, seed=5).output
    distinct = len({f.tobytes() for f in out})
    assert distinct == (1 if "deterministic" in spec.tags else 10), name


def test_spec_chunk_elements_overrides_the_video_chunks(monkeypatch):
    """fog's video chunks follow its own ``chunk_elements`` (6 frames at 224²-sized chunks), not the global size: for
    0.1 records (chunk seeding) that decides the randomness; per-frame seeding gives the same frames whatever the
    chunks."""
    spec = get_perturbation("fog")
    assert spec.chunk_elements == 1 << 20 and spec.batched
    v = moving_video(t=7, h=16, w=16)
    monkeypatch.setattr(reg, "VIDEO_CHUNK_ELEMENTS", v[0].size)  # globally: one frame per chunk
    monkeypatch.setattr(spec, "chunk_elements", v[0].size * 3)  # fog: chunks of 3, 3, 1 frames
    params = spec.params(3)
    kids = np.random.default_rng(2).spawn(3)
    ref = np.concatenate([spec.fn(v[a:a + 3], dict(params), kids[i]) for i, a in enumerate(range(0, 7, 3))])
    kids = np.random.default_rng(2).spawn(7)
    per_frame = np.stack([spec.fn(v[t:t + 1], dict(params), kids[t])[0] for t in range(7)])
    for threads in (1, 2):
        monkeypatch.setattr(reg, "VIDEO_THREADS", threads)
        res = perturb(v, "fog", 3, seed=2, frame_seeding="chunked")
        assert res.output.tobytes() == ref.tobytes(), threads
        assert regenerate(res.record, v).tobytes() == ref.tobytes()
        assert perturb(v, "fog", 3, seed=2).output.tobytes() == per_frame.tobytes()
    with pytest.raises(ValueError, match="chunk_elements applies to batched image"):
        reg.register("not_batched_chunked", modality="image", category="noise", source="test",
                     severity_table={s: {} for s in range(1, 6)}, chunk_elements=1 << 20)(lambda x, p, r: x)
    assert "not_batched_chunked" not in {s.name for s in reg.list_perturbations()}


def test_flow_ops_do_not_depend_on_threads(monkeypatch):
    v = moving_video(t=10, h=16, w=24)
    outs = []
    for threads in (1, 2):
        monkeypatch.setattr(reg, "VIDEO_THREADS", threads)
        ops = (("mlvp_motion_blur", "paper"), ("mlvp_motion_blur", "code"), ("mlvp_defocus", None))
        outs.append([perturb(v, n, 3, variant=var).output.tobytes() for n, var in ops])
    assert outs[0] == outs[1]


def test_availability_follows_required_perturbations(vid):
    try:
        @register("_test_video_dep_user", modality="video", category="test", source="test",
                  severity_table={s: {} for s in range(1, 6)}, requires_perturbations=(("_test_dep_a", "_test_dep_b"),))
        def _user(x, params, rng):
            return reg.resolve_perturbation(("_test_dep_a", "_test_dep_b")).fn(x, params, rng)

        spec = get_perturbation("_test_video_dep_user")
        assert not spec.available and "'_test_dep_a' or '_test_dep_b'" in spec.reason
        with pytest.raises(RuntimeError, match="unavailable"):
            perturb(vid, "_test_video_dep_user", 1)

        @register("_test_dep_b", modality="image", category="test", source="test",
                  severity_table={s: {} for s in range(1, 6)}, batched=True)
        def _dep(x, params, rng):
            return 255 - x

        assert {s.name: s.available for s in list_perturbations("video")}["_test_video_dep_user"]
        assert np.array_equal(perturb(vid, "_test_video_dep_user", 1).output, 255 - vid)

        @register("_test_checked", modality="video", category="test", source="test",
                  severity_table={s: {} for s in range(1, 6)}, check=lambda: "weights missing in /nowhere")
        def _checked(x, params, rng):
            return x

        assert get_perturbation("_test_checked").reason == "weights missing in /nowhere"
    finally:
        for n in ("_test_video_dep_user", "_test_dep_b", "_test_checked"):
            reg._REGISTRY.pop(n, None)


def test_video_op_output_contract_is_checked(vid):
    try:
        @register("_test_bad_video", modality="video", category="test", source="test",
                  severity_table={s: {} for s in range(1, 6)})
        def _bad(x, params, rng):
            return x[:-1]  # changes T without saying so in output_note

        with pytest.raises(RuntimeError, match="returned shape"):
            perturb(vid, "_test_bad_video", 1)
    finally:
        reg._REGISTRY.pop("_test_bad_video", None)
