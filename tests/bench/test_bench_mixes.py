"""MLVP's mixed settings in the sweep grid: --mix-severities (Table 17) and --corrupt-fraction (Table 18)."""
from __future__ import annotations

import json

import pytest

from robustlab.bench.mixes import mixed_conditions, parse_fractions
from robustlab.bench.spec import Cell, SweepError, SweepSpec, build_spec
from robustlab.cli.parser import build_parser

DS = {"name": "builtin", "n": 8}


def _labels(spec):
    return [c["text"].label() for c in spec.conditions if "text" in c and "adapt" not in c]


def test_build_spec_adds_mixed_severities_and_corrupted_fractions():
    spec = build_spec(models=["builtin:tiny-clip"], dataset=DS, perturbations="none",
                      text_perturbations="char_swap,word_swap", severities="1-5", mix_severities=True,
                      corrupt_fractions="0.2,40%")
    labels = _labels(spec)
    assert len(labels) == 2 * 5 + 2 + 2  # the plain grid, one mixed-severity cell per type, one per fraction
    assert "mlvp:mixed-severity char_swap s1-5" in labels and "mlvp:mixed-severity word_swap s1-5" in labels
    assert "mlvp:random-types 20% s1-5" in labels and "mlvp:random-types 40% s1-5" in labels
    rt = [c["text"] for c in spec.conditions if c.get("text") and c["text"].mix and c["text"].mix.types]
    assert all(c.mix.types == ("char_swap", "word_swap") for c in rt)
    # the spec (sweep.json) reads back with its mixes: a rerun resumes the same cells
    back = SweepSpec.from_json(json.loads(json.dumps(spec.to_json())))
    assert [Cell("m", "retrieval", c).key for c in back.conditions] == \
        [Cell("m", "retrieval", c).key for c in spec.conditions]
    assert len({Cell("m", "retrieval", c).key for c in spec.conditions}) == len(spec.conditions)


def test_fractions_without_mixed_severities_run_at_each_swept_severity_and_get_adaptation_cells():
    spec = build_spec(models=["builtin:tiny-clip"], dataset=DS, perturbations="gaussian_noise",
                      text_perturbations=None, severities="3,5", corrupt_fractions="0.5", adapt="tent",
                      combine="none")
    mixed = [c for c in spec.conditions if c.get("visual") and c["visual"].mix]
    assert [c["visual"].label() for c in mixed if "adapt" not in c] == ["mlvp:random-types 50% s3",
                                                                         "mlvp:random-types 50% s5"]
    assert sum("adapt" in c for c in mixed) == 2  # each mixed shift has its adaptation cell


def test_mix_options_errors_are_one_line():
    for bad in ("0", "1.5", "abc", "150%"):
        with pytest.raises(ValueError, match="fraction"):
            parse_fractions(bad)
    assert parse_fractions("0.8, 20%,0.2") == [0.2, 0.8]
    assert parse_fractions(None) == [] and mixed_conditions([], [], [], [], fractions=[]) == []
    with pytest.raises(SweepError, match="fraction"):
        build_spec(models=["builtin:tiny-clip"], dataset=DS, perturbations="gaussian_noise", corrupt_fractions="2")
    with pytest.raises(SweepError, match="choose visual or text perturbations"):
        build_spec(models=["builtin:tiny-clip"], dataset=DS, perturbations="none", mix_severities=True)


def test_cli_flags():
    a = build_parser().parse_args(["bench", "--models", "builtin:tiny-clip", "--mix-severities",
                                   "--corrupt-fraction", "0.2,0.4,0.6,0.8", "--out", "x"])
    assert a.mix_severities is True and parse_fractions(a.corrupt_fraction) == [0.2, 0.4, 0.6, 0.8]
    a = build_parser().parse_args(["bench", "--models", "builtin:tiny-clip", "--out", "x"])
    assert a.mix_severities is False and a.corrupt_fraction is None
