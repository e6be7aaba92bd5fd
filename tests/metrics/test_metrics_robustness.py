"""γᵃ, γʳ and MMI on the digests' worked numbers, and the paper-style table."""
import numpy as np
import pytest

import robustlab as rl
from robustlab.metrics import both_directions, invert_gt, retrieval, robustness, robustness_table, rsum
from robustlab.metrics.robustness import table_rows

# Qiu et al. Table 1, CLIP ZS on Flickr30K-IP: clean RSUM and the 17 per-perturbation RSUMs (already averaged
# over severities), "ave 499.2", "Impact ↓6.5%"
CLIP_ZS_FLICKR_IP = {
    "gaussian_noise": 501.7, "shot_noise": 504.2, "impulse_noise": 481.2, "speckle_noise": 515.5,
    "defocus_blur": 502.1, "glass_blur": 530.1, "motion_blur": 509.7, "zoom_blur": 457.8, "snow": 470.7,
    "frost": 495.6, "fog": 519.7, "brightness": 530.1, "contrast": 515.4, "elastic": 510.4, "pixelate": 469.5,
    "jpeg_compression": 524.6, "stylize": 447.6}


def test_schiappa_worked_example():
    # digest §3.2: VideoClip zs, MSRVTT, clean R@5 22.7 %, shot noise s1 15.3 %
    r = rl.metrics.robustness(0.227, 0.153)
    assert r["gamma_a"] == pytest.approx(0.926)
    assert r["gamma_r"] == pytest.approx(0.674, abs=5e-4)
    assert r["mmi"] == pytest.approx(1 - r["gamma_r"])
    pct = robustness(22.7, 15.3, scale=100)  # the paper's percentages give the same numbers
    assert pct["gamma_a"] == pytest.approx(0.926) and pct["gamma_r"] == pytest.approx(r["gamma_r"])


def test_mmi_worked_example():
    assert robustness(89.3, 68.0, scale=100)["mmi"] == pytest.approx(0.2385, abs=5e-5)  # digest §5A


def test_qiu_table1_ave_and_impact():
    t = robustness_table(CLIP_ZS_FLICKR_IP, clean=533.7, scale=600)
    assert t["overall"]["ave"] == pytest.approx(499.17, abs=0.005)  # the table prints 499.2
    assert t["overall"]["mmi"] == pytest.approx(0.0647, abs=5e-5)  # "↓6.5%"
    assert t["overall"]["n"] == 17
    # mean of the per-perturbation MMIs = MMI of the mean (affine)
    assert np.mean([r["mmi"] for r in t["perturbations"]]) == pytest.approx(t["overall"]["mmi"])
    worst = max(t["perturbations"], key=lambda r: r["mmi"])
    assert worst["perturbation"] == "stylize"  # bold in the paper's row: the most effective perturbation


def test_gamma_is_not_clipped_and_broadcasts():
    r = robustness(0.5, 0.6)
    assert r["gamma_r"] == pytest.approx(1.2) and r["gamma_a"] == pytest.approx(1.1) and r["mmi"] < 0
    arr = robustness(0.8, np.array([0.8, 0.4, 0.0]))
    np.testing.assert_allclose(arr["gamma_r"], [1.0, 0.5, 0.0])
    np.testing.assert_allclose(arr["gamma_a"], [1.0, 0.6, 0.2])
    np.testing.assert_allclose(arr["mmi"], [0.0, 0.5, 1.0])
    assert isinstance(robustness(0.8, 0.4)["gamma_a"], float)


def test_table_from_a_severity_sweep_with_categories():
    clean = 0.8
    sweep = {("clean", 0): clean}
    for s in range(1, 6):
        sweep[("gaussian_noise", s)] = 0.8 - 0.1 * s   # mean 0.5
        sweep[("shot_noise", s)] = 0.8 - 0.05 * s      # mean 0.65
        sweep[("defocus_blur", s)] = 0.7               # mean 0.7
    sweep["back_trans"] = 0.6                          # a single-level (sentence) perturbation
    cats = {"noise": ["gaussian_noise", "shot_noise"], "blur": ["defocus_blur"]}
    t = robustness_table(sweep, categories=cats)       # clean taken from the severity-0 entry
    assert t["clean"] == clean
    rows = {r["perturbation"]: r for r in t["perturbations"]}
    assert rows["gaussian_noise"]["mean"] == pytest.approx(0.5)
    assert rows["gaussian_noise"]["gamma_r"] == pytest.approx(0.5 / 0.8)
    assert rows["gaussian_noise"]["gamma_a"] == pytest.approx(0.7)
    # γ of the severity mean = mean of the per-severity γ (P1 averages γ over severities)
    per_sev = [robustness(clean, sweep[("gaussian_noise", s)])["gamma_r"] for s in range(1, 6)]
    assert rows["gaussian_noise"]["gamma_r"] == pytest.approx(np.mean(per_sev))
    assert rows["back_trans"]["severities"] == {"single": 0.6} and rows["back_trans"]["category"] == "other"
    cat = {c["category"]: c for c in t["categories"]}
    assert cat["noise"]["n"] == 2
    assert cat["noise"]["gamma_r"] == pytest.approx((0.5 + 0.65) / 2 / 0.8)
    assert cat["noise"]["gamma_r_std"] == pytest.approx(np.std([0.5 / 0.8, 0.65 / 0.8]))  # population SD
    assert cat["blur"]["gamma_r_std"] == 0.0
    ov = t["overall"]
    assert ov["n"] == 4 and ov["ave"] == pytest.approx((0.5 + 0.65 + 0.7 + 0.6) / 4)
    assert ov["mmi"] == pytest.approx((clean - ov["ave"]) / clean)
    sample = robustness_table(sweep, categories=cats, ddof=1)
    assert sample["categories"][0]["gamma_r_std"] == pytest.approx(np.std([0.5 / 0.8, 0.65 / 0.8], ddof=1))
    flat = table_rows(t)
    assert [r["level"] for r in flat].count("perturbation") == 4 and flat[-1]["name"] == "all"
    assert flat[0]["s1"] == pytest.approx(0.7)
    # {perturbation: category} works as well as {category: [perturbations]}
    t2 = robustness_table(sweep, categories={"gaussian_noise": "noise", "shot_noise": "noise",
                                             "defocus_blur": "blur"})
    assert t2["categories"] == t["categories"]


@pytest.mark.parametrize("call,msg", [
    (lambda: robustness(0, 0.1), "clean score is 0"),
    (lambda: robustness(95.0, 80.0), "scale=100"),
    (lambda: robustness(0.5, -0.1), "≥ 0"),
    (lambda: robustness(0.5, float("nan")), "NaN"),
    (lambda: robustness([0.5, 0.6], [0.1, 0.2, 0.3]), "broadcast"),
    (lambda: robustness("a", 0.1), "number"),
    (lambda: robustness(0.5, 0.1, scale=0), "scale"),
    (lambda: robustness_table({}), "non-empty"),
    (lambda: robustness_table({("a", 1): 0.5}), "no clean score"),
    (lambda: robustness_table({("a", 0): 0.5, ("b", 0): 0.6, ("a", 1): 0.4}), "disagree"),
    (lambda: robustness_table({("a", 0): 0.5}), "no perturbed entries"),
    (lambda: robustness_table({("a", "x"): 0.5}, clean=0.6), "not an integer"),
    (lambda: robustness_table({("a", 1): 0.5}, clean=0.6, categories={"n": ["a"], "m": ["a"]}), "two categories"),
])
def test_bad_input_is_a_clear_value_error(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_multi_caption_directions_and_rsum():
    rng = np.random.default_rng(0)
    n_img, per = 20, 3
    img = rng.normal(size=(n_img, 8))
    caps = np.repeat(img, per, axis=0) + 0.3 * rng.normal(size=(n_img * per, 8))
    gt = np.repeat(np.arange(n_img), per)            # caption -> its image
    s = caps @ img.T
    inv = invert_gt(gt)
    assert inv[0] == [0, 1, 2] and len(inv) == n_img
    res = both_directions(s, gt, ks=(1, 5, 10, 50))
    assert res["t2i"] == retrieval(s, gt, ks=(1, 5, 10, 50))
    assert res["i2t"] == retrieval(s.T, inv, ks=(1, 5, 10, 50))
    assert res["i2t"]["R@50"] == 1.0
    total = rsum(res["t2i"], res["i2t"])
    assert total == pytest.approx(100 * sum(res[d][f"R@{k}"] for d in ("t2i", "i2t") for k in (1, 5, 10)))
    assert 0 <= total <= 600
    with pytest.raises(ValueError, match="outside a gallery"):
        invert_gt([0, 5], 3)
    with pytest.raises(ValueError, match="RSUM needs R@100"):
        rsum(res["t2i"], res["i2t"], ks=(50, 100))


def test_retrieval_default_keys_unchanged_and_all_ks():
    s = np.eye(120)
    assert set(retrieval(s, np.arange(120))) == {"R@1", "R@5", "R@10", "MdR", "MnR"}
    i = np.arange(120)
    worst = ((i[None, :] - i[:, None]) % 120) / 120.0  # the ground truth (diagonal) scores lowest in its row
    r = retrieval(worst, i, ks=rl.metrics.ALL_KS)
    assert set(r) >= {"R@50", "R@100"} and r["R@100"] == 0.0 and r["MdR"] == 120.0
    with pytest.raises(ValueError, match="positive integers"):
        retrieval(s, np.arange(120), ks=(0,))
    with pytest.raises(ValueError, match="NaN"):
        retrieval(np.array([[np.nan, 1.0]]), [0])
