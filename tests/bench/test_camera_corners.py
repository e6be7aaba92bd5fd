"""benchmarks/bench_camera_corners.py: the two halves of a rotation it scores (black corners alone; the turned frame
with its corners kept) put back together are the perturbation itself, pixel for pixel, and neither half is the
identity. The measurement is benchmarks/results/camera_corners.json, in docs/model-history.md. The halves are tested as
functions: registering them here would add them to every later test's registry."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from robustlab.perturb import get_perturbation

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_camera_corners", ROOT / "benchmarks" / "bench_camera_corners.py")
B = importlib.util.module_from_spec(spec)
spec.loader.exec_module(B)


@pytest.mark.parametrize("name,severity", [("static_rotate", 1), ("static_rotate", 3), ("rotate", 1), ("rotate", 4)])
def test_the_halves_put_together_are_the_perturbation(name, severity):
    video = np.random.default_rng(0).integers(1, 256, (6, 40, 48, 3), dtype=np.uint8)  # no black pixel of its own
    pert = get_perturbation(name)
    params = pert.severity_table[severity]
    corners, kept = B._split(name)
    full = pert.fn(video, params, np.random.default_rng(7))
    black = corners(video, params, np.random.default_rng(7))
    turned = kept(video, params, np.random.default_rng(7))
    mask = (black == 0).all(-1)
    assert mask.any() and not mask.all()
    assert np.array_equal(turned[mask], video[mask]) and np.array_equal(black[~mask], video[~mask])
    assert np.array_equal(np.where(mask[..., None], 0, turned), full)  # corners black again: the perturbation
    assert not np.array_equal(turned, video)


def test_the_halves_follow_the_perturbations_angles():
    assert B._angles("static_rotate", {"angle": 15}, 3, np.random.default_rng(0)).tolist() == [15.0] * 3
    a = B._angles("rotate", {"max_angle": 6}, 500, np.random.default_rng(0))
    assert a.min() == -6 and a.max() == 6 and np.array_equal(a, np.round(a))
