"""The median-rank convention: the ordinary median (robustlab, CLIP4Clip's ``compute_metrics``) or the lower of the two
middle ranks (``torch.median``, HAT-VTR's released ``tta_main.py``)."""
import numpy as np
import pytest
import torch

from robustlab.metrics.retrieval import MDR_CONVENTIONS, both_directions, median_rank, retrieval, summarize_ranks


def test_even_count_the_two_conventions_differ_and_lower_is_torch_median():
    r = np.array([4, 1, 7, 2])  # sorted 1 2 4 7: middle ranks 2 and 4
    assert median_rank(r) == 3.0 and median_rank(r, "median") == float(np.median(r))
    assert median_rank(r, "lower") == 2.0 == float(torch.tensor(r).median())
    assert summarize_ranks(r)["MdR"] == 3.0 and summarize_ranks(r, mdr="lower")["MdR"] == 2.0
    # odd count: the same
    assert median_rank([5, 1, 3], "lower") == median_rank([5, 1, 3]) == 3.0
    assert np.isnan(median_rank([], "lower"))


def test_retrieval_scores_with_either_convention():
    # 4 queries × 4 items, ground truth on the diagonal at ranks 1, 2, 3, 4
    s = np.array([[.9, .1, .0, .0], [.8, .5, .1, .0], [.8, .7, .6, .0], [.9, .8, .7, .1]])
    gt = [0, 1, 2, 3]
    a, b = retrieval(s, gt), retrieval(s, gt, mdr="lower")
    assert a["MdR"] == 2.5 and b["MdR"] == 2.0
    assert {k: v for k, v in a.items() if k != "MdR"} == {k: v for k, v in b.items() if k != "MdR"}
    assert both_directions(s, gt, mdr="lower")["t2i"]["MdR"] == 2.0
    for m in MDR_CONVENTIONS:  # every torch.median of a random even count
        r = np.random.default_rng(3).integers(1, 50, size=10)
        want = float(torch.tensor(r).median()) if m == "lower" else float(np.median(r))
        assert median_rank(r, m) == want


def test_an_unknown_convention_is_a_one_line_error():
    with pytest.raises(ValueError, match="mdr must be one of median, lower, got 'upper'"):
        retrieval(np.eye(3), [0, 1, 2], mdr="upper")
