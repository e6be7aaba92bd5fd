"""QUAG's simulation study (Rawal et al. §3, App. A.5, Fig. 2): the α-coupled data, the model's short-circuit, the
result object, and the paper's finding — the crossmodal short-circuit hurts more as the coupling α grows."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from robustlab.diagnostics import quag
from robustlab.diagnostics import quag_simulation as S

# a small setting of the study (not the paper's sizes): 4 tokens per modality of 8 features, 2 layers of width 32
TINY = dict(tokens=4, dim=8, width=32, layers=2, heads=2, mlp=64, samples=1500, epochs=12, batch=32, lr=3e-3,
            threads=1)


def test_data_is_the_papers_recipe():
    x, y = S.make_data(5, 0.3, tokens=15, dim=100, seed=1)
    assert x.shape == (5, 30, 100) and y.shape == (5, 30) and x.dtype == np.float32
    rng = np.random.default_rng(1)
    m1, m2 = rng.standard_normal((5, 15, 100)), rng.standard_normal((5, 15, 100))
    p = 10 * np.sin(np.arange(1, 101) * np.pi / 202)  # the paper's p_j at dim = 100
    np.testing.assert_allclose(y[:, :15], (m1 * p).sum(-1) / 100, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y[:, 15:], (m2 * p).sum(-1) / 100, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x[:, :15], 0.7 * m1 - 0.3 * m2, rtol=1e-5, atol=1e-5)  # t = (1 − α) m1 − α m2
    np.testing.assert_allclose(x[:, 15:], 0.7 * m2 - 0.3 * m1, rtol=1e-5, atol=1e-5)  # v = (1 − α) m2 − α m1
    # the text token i needs the video token i: m1 = ((1 − α) t + α v) / (1 − 2α)
    np.testing.assert_allclose((0.7 * x[:, :15] + 0.3 * x[:, 15:]) / 0.4, m1, rtol=1e-4, atol=1e-4)
    x0, _ = S.make_data(5, 0.0, tokens=15, dim=100, seed=1)
    np.testing.assert_allclose(x0[:, :15], m1, rtol=1e-6, atol=1e-6)  # α = 0: no coupling at all


@pytest.mark.parametrize("bad", [0.5, -0.1, "high", None])
def test_alpha_outside_the_papers_range_is_one_line(bad):
    with pytest.raises(S.SimulationError) as e:
        S.make_data(2, bad)
    assert "α must be" in str(e.value) and "\n" not in str(e.value)


def test_the_models_short_circuit_is_quag_on_every_layer():
    torch.manual_seed(0)
    cfg = {k: v for k, v in TINY.items() if k != "threads"}
    m = S.SimTransformer(S.SimulationConfig(**{**cfg, "dropout": 0.0})).eval()
    x = torch.as_tensor(S.make_data(3, 0.2, 4, 8)[0])
    seen = []
    orig = quag.apply

    with torch.no_grad():
        base = m(x)
        torch.testing.assert_close(m(x, ""), base, rtol=0, atol=0)  # no quadrant: the model itself
        try:
            S.quag.apply = lambda p, lay, q: seen.append((lay.text, lay.visual, q)) or orig(p, lay, q)
            sc = m(x, "crossmodal")
        finally:
            S.quag.apply = orig
    assert seen == [((0, 4), (4, 8), quag.PRESETS["crossmodal"])] * 2  # Φ: both layers, text block first
    assert not torch.allclose(sc, base)


def test_result_object_is_seeded_and_carries_its_labels():
    kw = dict(TINY, samples=60, epochs=1)
    a = S.simulate([0.1, 0.2], shortcircuits=["crossmodal", "VV+TT"], seed=3, **kw)
    b = S.simulate([0.1, 0.2], shortcircuits=["crossmodal", "VV+TT"], seed=3, **kw)
    np.testing.assert_array_equal(a.mse, b.mse)
    np.testing.assert_array_equal(a.increase["crossmodal"], b.increase["crossmodal"])
    assert a.shortcircuits == ("crossmodal", "unimodal") and a.main == "crossmodal"
    np.testing.assert_allclose(a.increase["unimodal"], 100 * (a.mse_sc["unimodal"] - a.mse) / a.mse)
    d = a.to_dict()
    assert d["config"]["samples"] == 60 and d["seed"] == 3 and len(d["rows"]) == 2
    assert set(d["rows"][0]) >= {"alpha", "mse", "mse_crossmodal", "increase_crossmodal_pct", "best_epoch"}
    assert a.labels["x"].startswith("α") and "crossmodal" in a.labels["y"]
    for call, msg in [(lambda: S.simulate([0.1], config="huge"), "unknown simulation config"),
                      (lambda: S.simulate([0.1], depth=3), "unknown simulation setting"),
                      (lambda: S.simulate([0.1], shortcircuits=["XY"]), "unknown quadrant"),
                      (lambda: S.simulate([], **kw), "at least one α"),
                      (lambda: S.simulate([0.1], width=30, heads=4), "not divisible")]:
        with pytest.raises(ValueError, match=msg):
            call()


def test_crossmodal_short_circuit_hurts_more_as_alpha_grows():
    """Fig. 2's finding on a small setting: at weak coupling the crossmodal short-circuit barely changes the test
    MSE; at strong coupling it multiplies it (the model had learned to read the other modality's token)."""
    r = S.simulate([0.05, 0.3], seed=0, **TINY)
    low, high = r.increase["crossmodal"]
    assert abs(low) < 15, r.rows()
    assert high > 100 and high > low + 100, r.rows()


@pytest.mark.slow
def test_fig2_curve_rises_over_four_alphas_and_the_unimodal_one_does_not():
    r = S.simulate([0.0, 0.1, 0.2, 0.3], seed=0, shortcircuits=["crossmodal", "unimodal"], **TINY)
    inc = r.increase["crossmodal"]
    assert np.all(np.diff(inc) > 0), r.rows()
    # the unimodal short-circuit is not what α couples: it never hurts like the crossmodal one at strong coupling
    assert r.increase["unimodal"][-1] < inc[-1] / 4, r.rows()


def test_the_paper_config_is_app_a5():
    p = S.PAPER.check()
    assert (p.tokens, p.dim, p.width, p.layers, p.mlp) == (15, 100, 100, 4, 400)
    assert (p.samples, p.epochs, p.batch, p.lr) == (40_000, 2000, 1024, 1e-3)
    assert [int(p.samples * f) for f in p.split] == [24_000, 8_000, 8_000]
