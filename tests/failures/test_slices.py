"""Slice discovery with no metadata (robustlab.failures.slices, issue 47 item 2): a planted slice is found with its
CI above 0 and named by its word; shuffled failures give no slice; metadata slices by hand; the bootstrap CI; the
vocabulary; discovery takes no metadata."""
from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from robustlab.failures import slices as S

D = 24
WORDS = ["black", "white", "gray", "circle", "square", "star", "small", "large", "background"]


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _word_vectors(seed=0):
    """One direction per content word; other words a small random vector (shared by images and text)."""
    rng = np.random.default_rng(seed)
    vec = {w: np.eye(D)[i] for i, w in enumerate(WORDS)}
    return vec, rng


def _encoder(vec):
    """A text tower in the images' space: the normalised sum of the phrase's word directions."""
    def enc(texts):
        out = []
        for t in texts:
            v = sum((vec.get(w, np.zeros(D)) for w in S.tokens(t)), np.zeros(D)) + 1e-3 * np.ones(D)
            out.append(v)
        return _unit(np.array(out))
    return enc


def planted(n=400, seed=0, slice_rate=0.8, rest_rate=0.1):
    """Images on a black (planted, 80 % fail), white or gray background (10 %), each with one shape of a size;
    the captions say it all; the embeddings are the words' directions plus noise."""
    vec, rng = _word_vectors(seed)
    bgs = rng.choice(["black", "white", "gray"], size=n, p=[0.2, 0.4, 0.4])
    shapes = rng.choice(["circle", "square", "star"], size=n)
    sizes = rng.choice(["small", "large"], size=n)
    caps = [f"a {z} {s} on a {b} background" for b, s, z in zip(bgs, shapes, sizes)]
    clean = _unit(np.stack([1.2 * vec[b] + vec[s] + 0.6 * vec[z] for b, s, z in zip(bgs, shapes, sizes)])
                  + 0.25 * rng.standard_normal((n, D)))
    pert = _unit(clean + 0.3 * rng.standard_normal((n, D)))
    in_slice = bgs == "black"
    failed = np.where(in_slice, rng.random(n) < slice_rate, rng.random(n) < rest_rate)
    severity = np.where(failed, rng.integers(1, 4, n).astype(float), np.nan)
    return failed, clean, pert, caps, _encoder(vec), severity, in_slice


def _f1(s, truth):
    hit = truth[s.members].sum()
    return 2 * hit / (s.size + truth.sum())


def test_planted_slice_is_found_named_and_significant():
    failed, clean, pert, caps, enc, sev, truth = planted()
    found = S.discover_slices(failed, clean, pert, caps, enc, severity=sev, k=5, seed=0, n_boot=500)
    assert found, "the planted slice was not found"
    top = found[0]
    members = np.zeros(truth.size, bool)
    members[top.members] = True
    precision, recall = (members & truth).sum() / members.sum(), (members & truth).sum() / truth.sum()
    assert precision >= 0.8 and recall >= 0.8, (top.description, precision, recall)
    assert "black" in S.tokens(top.description)
    assert top.ci[0] > 0 and top.ci[0] <= top.difference <= top.ci[1]
    assert top.failure_rate > 0.6 and top.rest_rate < 0.2
    assert top.size == len(top.members) and top.score > 0
    assert 1 <= top.mean_breaking_severity <= 3
    assert top.examples and all(failed[i] for i in top.examples)
    json.dumps(top.to_dict())  # plain JSON
    assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)
    assert len({s.description for s in found}) == len(found)  # one slice per description


def test_mixture_alone_finds_the_planted_slice_and_names_it_through_the_text_tower():
    """Cross-fitted error-aware mixture (no concept groups): its best group is mostly the planted one."""
    failed, clean, pert, caps, enc, sev, truth = planted(seed=1)
    found = S.discover_slices(failed, clean, pert, caps, enc, generators=("mixture",), k=5, seed=0, n_boot=200,
                              describe="embedding")
    assert found and all(s.source == "mixture" for s in found)
    best = max(found, key=lambda s: _f1(s, truth))
    assert _f1(best, truth) >= 0.7 and best.ci[0] > 0
    assert "black" in S.tokens(best.description)


def test_without_text_the_mixture_still_runs_and_names_groups_plainly():
    failed, clean, pert, _caps, _enc, _sev, truth = planted(seed=2)
    found = S.discover_slices(failed, clean, pert, k=4, seed=0, n_boot=200)
    assert found and all(s.description.startswith("group ") for s in found)
    assert max(_f1(s, truth) for s in found) >= 0.7


def test_shuffled_failures_give_no_slice():
    """The Bonferroni-corrected filter keeps chance out, over every phrase and component tried."""
    failed, clean, pert, caps, enc, _sev, _truth = planted(seed=3)
    rng = np.random.default_rng(0)
    false = [len(S.discover_slices(rng.permutation(failed), clean, pert, caps, enc, k=8, seed=s, n_boot=100))
             for s in range(3)]
    assert sum(false) <= 1, false


def test_discovery_takes_no_metadata():
    params = inspect.signature(S.discover_slices).parameters
    assert not {"attributes", "metadata", "meta", "labels", "groups"} & set(params)
    failed, clean, pert, caps, enc, _sev, _truth = planted(n=120)
    with pytest.raises(TypeError):
        S.discover_slices(failed, clean, pert, caps, enc, attributes={"background": ["black"] * 120})


def test_metadata_slices_by_hand():
    failed = np.array([1, 1, 1, 0, 0, 0, 0, 1, 0, 0], bool)
    attrs = {"bg": ["black"] * 4 + ["white"] * 6,
             "objects": [["circle"], ["circle", "star"], ["star"], [], ["circle"], ["star"], ["star"], ["circle"],
                         ["star"], ["star"]]}
    sev = np.array([1, 2, 3, np.nan, np.nan, np.nan, np.nan, 5, np.nan, np.nan])
    out = {s.description: s for s in S.metadata_slices(failed, attrs, severity=sev, min_size=2, n_boot=200)}
    assert set(out) == {"bg=black", "bg=white", "objects=circle", "objects=star"}
    black = out["bg=black"]
    assert black.size == 4 and black.failure_rate == 0.75 and black.rest_rate == pytest.approx(1 / 6)
    assert list(black.members) == [0, 1, 2, 3] and black.mean_breaking_severity == 2.0
    assert black.examples == [0, 1, 2]
    circle = out["objects=circle"]  # a list value puts the item in each of its values' slices
    assert list(circle.members) == [0, 1, 4, 7] and circle.failure_rate == 0.75
    star = out["objects=star"]
    assert star.size == 6 and star.failure_rate == pytest.approx(2 / 6)
    listed = S.metadata_slices(failed, attrs, min_size=2, n_boot=200)
    assert [s.score for s in listed] == sorted((s.score for s in listed), reverse=True)
    assert listed[0].description in ("bg=black", "objects=circle")
    assert not S.metadata_slices(failed, attrs, min_size=7)  # no value with 7+ items (and not all of them)
    with pytest.raises(ValueError, match="one value per item"):
        S.metadata_slices(failed, {"bg": ["black"] * 3})


def test_bootstrap_ci_covers_the_difference_and_narrows_with_n():
    rng = np.random.default_rng(0)
    widths = []
    for n in (100, 1600):
        mask = np.arange(n) < n // 4
        failed = np.where(mask, rng.random(n) < 0.6, rng.random(n) < 0.3)
        lo, hi = S.bootstrap_difference_ci(failed, mask, n_boot=2000, seed=1)
        d = failed[mask].mean() - failed[~mask].mean()
        assert lo < d < hi
        widths.append(hi - lo)
    assert widths[1] < widths[0] / 2.5
    assert S.bootstrap_difference_ci(failed, mask, seed=3) == S.bootstrap_difference_ci(failed, mask, seed=3)


def test_vocabulary_phrases_and_contrast_sets():
    caps = ["two objects on gray: a small red circle at the top", "a large blue square on a black background",
            "a small red circle on a white background", "one object on gray: a large blue square"] * 3
    phrases = S.candidate_phrases(caps, min_count=3)
    assert "small red circle" in phrases and "black background" in phrases and "two objects" in phrases
    assert not any(p.split()[0] in ("and", "with") or p.split()[-1] in ("and", "with", "a", "on", "the")
                   for p in phrases)
    assert "gray a" not in phrases and "objects on gray a" not in phrases  # never across the colon
    sets = [{phrases[j] for j in s} for s in S.contrast_sets(phrases)]
    assert any({"on a black background", "on a white background"} <= s for s in sets)
    assert any({"two objects", "one object"} <= s for s in sets)  # a final "s" is ignored


def test_kmeans_baseline_covers_every_item_and_names_clusters_by_caption_words():
    failed, clean, _pert, caps, _enc, _sev, _truth = planted(seed=4)
    out = S.kmeans_slices(failed, clean, caps, k=4, seed=0, n_boot=100)
    assert len(out) == 4 and sum(s.size for s in out) == failed.size
    assert [s.failure_rate for s in out] == sorted((s.failure_rate for s in out), reverse=True)
    assert "black" in S.tokens(out[0].description)


def test_bad_shapes_are_one_line_errors():
    failed, clean, pert, caps, enc, _sev, _truth = planted(n=60)
    with pytest.raises(ValueError, match="one row per item"):
        S.discover_slices(failed[:-1], clean)
    with pytest.raises(ValueError, match="perturbed_emb"):
        S.discover_slices(failed, clean, pert[:, :5])
    with pytest.raises(ValueError, match="one caption per item"):
        S.discover_slices(failed, clean, pert, caps[:-1], enc)
    assert S.discover_slices(np.zeros(60, bool), clean) == []  # nothing fails: nothing to find
