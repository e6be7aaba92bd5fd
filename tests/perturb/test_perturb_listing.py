"""The listing order of the perturbations is declared (robustlab.perturb.table), not the order modules are imported
in; ``list_perturbations`` takes a wildcard pattern first and still takes a modality as its only argument."""
from __future__ import annotations

import pytest

from robustlab.perturb import list_perturbations
from robustlab.perturb import registry as reg
from robustlab.perturb.table import PERTURBATIONS

LISTING_ORDER = tuple(PERTURBATIONS)
# the table's three runs, by the modality of the package that declares each entry
IMAGE, TEXT, VIDEO = (tuple(n for n, m in PERTURBATIONS.items() if m.startswith(f"robustlab.perturb.{k}."))
                      for k in ("image", "text", "video"))


def names(specs) -> list[str]:
    return [s.name for s in specs]


def test_every_builtin_is_listed_in_the_declared_order():
    assert LISTING_ORDER == IMAGE + TEXT + VIDEO  # image, then text, then video: one run each
    assert names(list_perturbations()) == list(LISTING_ORDER)
    assert names(list_perturbations(modality="text")) == list(TEXT)
    # image perturbations also take videos; the camera ops (video) also take images
    assert names(list_perturbations(modality="video")) == list(IMAGE + VIDEO)
    assert names(list_perturbations(modality="image")) == \
        [n for n in LISTING_ORDER if "image" in reg.get_perturbation(n).applies_to]
    assert names(list_perturbations())[:6] == ["gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur",
                                               "jpeg_compression", "pixelate"]


def test_wildcard_pattern_first():
    assert names(list_perturbations("*noise*", modality="image")) == ["gaussian_noise", "shot_noise", "impulse_noise",
                                                                      "speckle_noise"]
    assert names(list_perturbations("MLVP_*", "video")) == [n for n in VIDEO if n.startswith("mlvp_")]
    assert names(list_perturbations("mlvp_*", modality="image")) == []
    assert names(list_perturbations("gaussian_noise")) == ["gaussian_noise"]
    assert list_perturbations("no_such_*") == []


def test_a_modality_alone_is_still_the_modality():
    for m in ("image", "video", "text"):
        assert names(list_perturbations(m)) == names(list_perturbations(modality=m))
    with pytest.raises(ValueError, match="valid: image, video, text"):
        list_perturbations("audio")
    with pytest.raises(ValueError, match="unknown modality"):
        list_perturbations("*", modality="audio")


def test_perturbations_registered_later_come_after_the_builtins():
    try:
        for n in ("_test_listing_b", "_test_listing_a"):
            reg.register(n, modality="image", category="test", source="test",
                         severity_table={s: {} for s in range(1, 6)})(lambda x, p, r: x)
        assert names(list_perturbations())[len(LISTING_ORDER):] == ["_test_listing_b", "_test_listing_a"]
        assert names(list_perturbations("_test_listing_*", modality="video")) == ["_test_listing_b",
                                                                                   "_test_listing_a"]
    finally:
        for n in ("_test_listing_b", "_test_listing_a"):
            reg._REGISTRY.pop(n, None)
