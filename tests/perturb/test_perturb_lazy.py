"""Lazy video perturbation: frame t alone equals frame t of the whole perturbed clip, for every video-capable
perturbation; only the needed frames are read; records regenerate; records made before per-frame seeding still
regenerate with the old scheme."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from robustlab.perturb import perturb, regenerate
from robustlab.perturb.lazy import ArraySource, perturb_sampled
from robustlab.perturb.registry import (LEGACY_FRAME_SEEDING, VersionMismatchWarning, get_perturbation,
                                        list_perturbations)
from robustlab.models.protocols import sample_frame_indices

VIDEO_OPS = sorted(s.name for s in list_perturbations() if "video" in s.applies_to and s.available)
WHOLE = {"codec1", "codec2", "mlvp_h264", "mlvp_event_insertion"}


def clip(t=24, h=40, w=48, seed=0) -> np.ndarray:
    """A moving textured clip (flow-based ops see motion)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (h, w * 2, 3), dtype=np.uint8)
    base = (base.astype(np.float32) * 0.5 + np.linspace(0, 120, w * 2)[None, :, None]).astype(np.uint8)
    return np.stack([np.roll(base, 2 * i, axis=1)[:, :w] for i in range(t)])


@pytest.fixture(scope="module")
def vid():
    return clip()


def test_every_video_op_is_covered():
    assert len(VIDEO_OPS) >= 35
    planned = [n for n in VIDEO_OPS if get_perturbation(n).modality == "video" and get_perturbation(n).plan]
    assert len(planned) == len([n for n in VIDEO_OPS if get_perturbation(n).modality == "video"]) - len(WHOLE)


@pytest.mark.parametrize("name", VIDEO_OPS)
def test_lazy_equals_whole_clip_then_sample(vid, name):
    spec = get_perturbation(name)
    sevs = [1, 3, 5] if name not in WHOLE else [2]
    for variant in spec.variants:
        for s in sevs:
            whole = perturb(vid, name, s, seed=7, variant=variant).output
            for n in (8, 3):
                src = ArraySource(vid)
                res = perturb_sampled(src, name, s, seed=7, variant=variant,
                                      indices=lambda T: sample_frame_indices(T, n))
                want = whole[sample_frame_indices(len(whole), n)]
                assert res.output.shape == want.shape, (name, variant, s)
                assert np.array_equal(res.output, want), (name, variant, s, n)
                smp = res.record["sampled"]
                assert smp["lazy"] == (name not in WHOLE)
                if name in WHOLE:
                    assert smp["why"] and src.frames_read == len(vid)
                else:
                    assert src.frames_read <= 2 * n < len(vid)  # only what the model sees (+ flow neighbours)
                assert smp["n_out"] == len(whole) and smp["indices"] == list(sample_frame_indices(len(whole), n))


@pytest.mark.parametrize("name", ["gaussian_noise", "jumble", "freeze", "rotate", "mlvp_snow", "mlvp_motion_blur",
                                  "codec1"])
def test_lazy_records_regenerate(vid, name):
    res = perturb_sampled(vid, name, 4, seed=3, indices=lambda T: sample_frame_indices(T, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error", VersionMismatchWarning)
        again = regenerate(res.record, vid)
    assert np.array_equal(again, res.output)
    other = vid.copy()
    other[:, 0, 0] ^= 1
    with pytest.raises(ValueError, match="input_hash"):
        regenerate(res.record, other)


def test_per_frame_image_ops_read_only_sampled_frames_and_match_single_frames(vid):
    whole = perturb(vid, "shot_noise", 3, seed=11)
    assert whole.record["frame_seeding"] == "per-frame"
    one = perturb_sampled(vid, "shot_noise", 3, seed=11, indices=[17])
    assert np.array_equal(one.output[0], whole.output[17])
    assert one.record["sampled"]["frames_read"] == [17]


def test_old_chunked_records_still_regenerate(vid):
    """A video record from robustlab 0.1 (no frame_seeding field) regenerates with chunk seeding, bit for bit."""
    small = vid[:, :16, :16]  # small frames: several per chunk, so the two schemes differ
    old = perturb(small, "gaussian_noise", 3, seed=5, frame_seeding=LEGACY_FRAME_SEEDING)
    new = perturb(small, "gaussian_noise", 3, seed=5)
    assert not np.array_equal(old.output, new.output)
    rec = dict(old.record)
    rec.pop("frame_seeding")
    rec["versions"] = dict(rec["versions"], robustlab="0.1.0")
    with pytest.warns(VersionMismatchWarning, match="robustlab 0.1.0"):
        again = regenerate(rec, small)
    assert np.array_equal(again, old.output)
    with pytest.raises(ValueError, match="unknown frame seeding"), pytest.warns(VersionMismatchWarning):
        regenerate(dict(rec, frame_seeding="per-pixel"), small)


def test_224_frames_keep_their_old_outputs():
    """At 224² a chunk is one frame, so per-frame seeding reproduces the 0.1 outputs exactly."""
    v = clip(t=3, h=224, w=224)
    for name in ("gaussian_noise", "motion_blur", "frost"):
        a = perturb(v, name, 2, seed=1).output
        b = perturb(v, name, 2, seed=1, frame_seeding=LEGACY_FRAME_SEEDING).output
        assert np.array_equal(a, b), name


def test_severity_zero_and_bad_indices(vid):
    res = perturb_sampled(vid, "jumble", 0, indices=[0, 5])
    assert np.array_equal(res.output, vid[[0, 5]]) and "clean" in res.record["note"]
    with pytest.raises(ValueError, match="0..23"):
        perturb_sampled(vid, "jumble", 2, indices=[30])
    with pytest.raises(TypeError):
        perturb_sampled(vid, "ocr", 2)


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_lazy_retrieval_metrics_equal_eager_on_builtin_videos(tmp_path):
    """The sweep's lazy path gives the same Result metrics (order metrics included) as perturbing whole clips."""
    from robustlab.datasets import build
    from robustlab.engine.cache import EmbeddingCache
    from robustlab.models import load_model
    from robustlab.tasks import get

    m = load_model("builtin:tiny-clip-video-seqtransf", device="cpu")
    ds = build("builtin-videos", n=24)
    conds = [None, {"visual": "jumble:3"}, {"visual": "gaussian_noise:4"}, {"visual": "rotate:2"},
             {"visual": "codec2:2"}, {"visual": "sampling:5", "text": "keyboard:2"}]
    task = get("retrieval")
    lazy = task.evaluate(m, ds, conds, cache=EmbeddingCache(tmp_path / "a"), worst=2)
    eager = task.evaluate(m, ds, conds, cache=EmbeddingCache(tmp_path / "b"), lazy=False, worst=2)
    for a, b in zip(lazy, eager):
        assert a.metrics == b.metrics, a.conditions
        assert "order_acc" in a.flat() or "t2v_R@1_reversed" in a.flat()
    rec = lazy[2].extra["worst"][0]["visual_record"]
    assert rec["sampled"]["lazy"] and len(rec["sampled"]["indices"]) == m.num_frames
