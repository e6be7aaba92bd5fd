"""Whole-clip work shared between severities (robustlab.perturb.share): the groups derived from the effective
parameters are exactly the byte-identical severities (measured with sharing off), a group is encoded once per clip,
every severity keeps its own record and regenerates bit for bit, and the lazy path decodes a clip once."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from robustlab.perturb import perturb, regenerate, share
from robustlab.perturb.lazy import ArraySource, perturb_sampled
from robustlab.perturb.registry import get_perturbation

CODECS = [("codec1", None), ("codec1", "mpeg1video"), ("codec2", None), ("mlvp_h264", None)]


def clip(t=14, h=32, w=40, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (h, w * 2, 3), dtype=np.uint8)
    return np.stack([np.roll(base, 3 * i, axis=1)[:, :w] for i in range(t)])


@pytest.fixture(autouse=True)
def _empty_memos():
    share.clear()
    yield
    share.clear()


class FileLike:
    """A frame source with an identity, as a video file's: counts whole-clip reads."""

    def __init__(self, frames, name="clip.mp4"):
        self.frames_, self.n_frames, self.identity, self.whole_reads = frames, len(frames), (name, 1), 0

    def read(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        self.whole_reads += len(idx) == self.n_frames
        return self.frames_[idx]


def counting(monkeypatch, name):
    spec = get_perturbation(name)
    calls = []
    fn = spec.fn

    def counted(x, params, rng, **kw):
        calls.append(params["qscale"] if "qscale" in params else params.get("bitrate"))
        return fn(x, params, rng, **kw)
    monkeypatch.setattr(spec, "fn", counted)
    return calls


def test_groups_follow_the_encoders_clamp():
    assert share.share_groups("codec1") == [(1,), (2, 3, 4, 5)]  # q:v 20, then 40..100 all clamp to 31
    assert share.share_groups("codec1", "mpeg1video") == [(1,), (2, 3, 4, 5)]
    assert share.share_groups("codec2") == [(1,), (2,), (3, 4, 5)]  # 15, 30, then 45..75 -> 31
    assert share.share_groups("mlvp_h264") == [(s,) for s in range(1, 6)]  # five bitrates
    assert share.share_groups("gaussian_noise") == [(s,) for s in range(1, 6)]  # nothing declared


@pytest.mark.parametrize("name,variant", CODECS)
def test_groups_are_exactly_the_identical_outputs(name, variant):
    """Measured with sharing off: same group <=> same bytes (no coarser, no finer)."""
    v = clip()
    with share.disabled():
        outs = [perturb(v, name, s, seed=s, variant=variant).output.tobytes() for s in range(1, 6)]
    measured = {}
    for s, o in enumerate(outs, 1):
        measured.setdefault(o, []).append(s)
    assert sorted(tuple(g) for g in measured.values()) == share.share_groups(name, variant)


def test_a_group_is_encoded_once_and_each_record_regenerates(monkeypatch):
    v = clip()
    with share.disabled():
        ref = {s: perturb(v, "codec1", s, seed=7).output for s in range(1, 6)}
    calls = counting(monkeypatch, "codec1")
    res = {s: perturb(v, "codec1", s, seed=7) for s in range(1, 6)}
    assert calls == [20, 40]  # s1 and s2 encoded; s3..s5 served s2's output
    assert all(np.array_equal(res[s].output, ref[s]) for s in res)
    recs = [res[s].record for s in range(2, 6)]
    assert [r["severity"] for r in recs] == [2, 3, 4, 5]
    assert [r["params"]["qscale"] for r in recs] == [40, 60, 80, 100]
    assert len({r["output_hash"] for r in recs}) == 1 and len({r["input_hash"] for r in recs}) == 1
    res[3].output[:] = 0  # a caller writing into its output does not touch what the others get
    for s in range(1, 6):
        assert np.array_equal(regenerate(res[s].record, v), ref[s])
    assert len(share.MEMO) == 0 or share.MEMO.bytes <= share.MEMO.max_bytes


def test_lazy_whole_clip_decodes_once_and_shares_the_group(monkeypatch):
    v = clip()
    idx = [0, 4, 9, 13]
    with share.disabled():
        ref = {s: perturb(v, "codec2", s, seed=s).output[idx] for s in range(1, 6)}
    calls = counting(monkeypatch, "codec2")
    src = FileLike(v)
    res = {s: perturb_sampled(src, "codec2", s, seed=s, indices=idx) for s in range(1, 6)}
    assert src.whole_reads == 1  # the clip decoded once for the five severities
    assert calls == [15, 30, 45]  # 45, 60 and 75 all quantise with 31
    for s in range(1, 6):
        r = res[s].record
        assert np.array_equal(res[s].output, ref[s]) and r["severity"] == s and r["sampled"]["indices"] == idx
        assert r["input"]["hash_of"] == "the whole clip" and r["sampled"]["lazy"] is False
    share.clear()
    for s in range(1, 6):  # regenerated from the clean clip, memos empty, as a later process would
        assert np.array_equal(regenerate(res[s].record, ArraySource(v)), ref[s])


def test_lazy_without_a_shared_group_still_decodes_once(monkeypatch):
    v = clip()
    calls = counting(monkeypatch, "mlvp_h264")
    src = FileLike(v)
    outs = [perturb_sampled(src, "mlvp_h264", s, seed=0, indices=[1, 5]).output for s in range(1, 6)]
    assert len(calls) == 5 and src.whole_reads == 1
    with share.disabled():
        assert all(np.array_equal(o, perturb(v, "mlvp_h264", s).output[[1, 5]]) for s, o in enumerate(outs, 1))


def test_sharing_off_recomputes(monkeypatch):
    calls = counting(monkeypatch, "codec1")
    with share.disabled():
        for s in (2, 3):
            perturb(clip(), "codec1", s)
    assert calls == [40, 60]


def test_a_full_memo_refuses_fresh_entries_and_evicts_idle_ones(monkeypatch):
    memo = share.OutputMemo(max_bytes=100)
    a, b = (("a",), (2, 3)), (("b",), (2, 3))
    memo.put(a, 2, "A", 80)
    memo.put(b, 2, "B", 80)  # a is fresh: b is refused rather than evicting what s3 will ask for
    assert memo.get(b, 3) is None and memo.refused == 1
    monkeypatch.setattr(share, "IDLE_S", 0.0)
    memo.put(b, 2, "B", 80)  # a has been idle long enough: evicted
    assert memo.get(a, 3) is None and memo.get(b, 3) == "B"
    assert len(memo) == 0  # every severity of b's group has had it: dropped


@pytest.mark.parametrize("name,variant", CODECS)
def test_kept_frames_are_the_whole_outputs_frames(name, variant):
    """A keep_frames op converts only the sampled frames back to RGB: bit for bit the whole output's frames."""
    spec = get_perturbation(name)
    assert spec.keep_frames
    v = clip(t=13, h=30, w=38)  # odd sizes: padded for 4:2:0 and cropped back
    keep = [12, 0, 5, 5]
    for s in (1, 5):
        params = spec.params(s, variant)
        whole = spec.fn(v, params, np.random.default_rng(0))
        assert np.array_equal(spec.fn(v, params, np.random.default_rng(0), keep=keep), whole[keep])
    with pytest.raises(ValueError, match="keep must hold frame indices"):
        spec.fn(v, params, np.random.default_rng(0), keep=[13])


def test_lazy_with_an_items_own_params_is_not_shared_and_regenerates(monkeypatch):
    """perturb_sampled(params=): an item's own parameters (MLVP's boxes, a donor) never take nor leave the output
    of the table's severity group, and the record keeps them (params_override) so regenerate_sampled re-runs them."""
    v, idx = clip(), [0, 4, 9, 13]
    with share.disabled():
        own_ref = perturb(v, "codec2", 4, seed=4, params={"codec": "mpeg4", "qscale": 15, "fps": 30}).output[idx]
        table_ref = perturb(v, "codec2", 4, seed=4).output[idx]
    src = FileLike(v)
    perturb_sampled(src, "codec2", 3, seed=4, indices=idx)  # the group (3, 4, 5) is now in the memo
    calls = counting(monkeypatch, "codec2")
    own = perturb_sampled(src, "codec2", 4, seed=4, indices=idx, params={"codec": "mpeg4", "qscale": 15, "fps": 30})
    assert calls == [15] and np.array_equal(own.output, own_ref) and not np.array_equal(own.output, table_ref)
    assert own.record["params_override"] is True and own.record["params"]["qscale"] == 15
    table = perturb_sampled(src, "codec2", 4, seed=4, indices=idx)  # still the group's, from the memo
    assert calls == [15] and np.array_equal(table.output, table_ref) and "params_override" not in table.record
    share.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the output hash matches: no warning
        assert np.array_equal(regenerate(own.record, ArraySource(v)), own_ref)
