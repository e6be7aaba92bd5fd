"""READ, SAR and EATA (robustlab.adapt.baselines): each loss on hand-checkable inputs, SAR's sharpness-aware step and
model recovery through the Runner, the defaults, the listing, and small runs on the built-in videos."""
import json
import math

import numpy as np
import pytest
import torch
from adapt_fixtures import seq_fixture, videos_fixture  # noqa: F401 (the fixtures seq and videos)

from robustlab import adapt
from robustlab.adapt import baselines as B
from robustlab.adapt.methods import Runner, resolve

TAU = 0.02


def _entropy(row):
    z = [math.exp(v / TAU) for v in row]
    s = sum(z)
    return -sum(p / s * math.log(p / s) for p in z)


# ---- EATA -------------------------------------------------------------------------------------------------------
def test_eata_drops_a_high_entropy_query_and_a_redundant_one_and_weights_the_rest():
    # 4 gallery items; query 0 sure of item 0, query 1 undecided (high entropy), query 2 sure of item 1 (the moving
    # average's item: redundant), query 3 fairly sure of item 2
    s = torch.tensor([[0.9, 0.0, 0.0, 0.0], [0.1, 0.1, 0.1, 0.1], [0.0, 0.9, 0.0, 0.0], [0.0, 0.0, 0.07, 0.0]])
    ent = [_entropy(r) for r in s.tolist()]
    e0 = 0.4 * math.log(4)
    assert ent[0] < e0 and ent[2] < e0 and ent[3] < e0 < ent[1]  # the inputs are what the test says
    avg = torch.tensor([0.0, 1.0, 0.0, 0.0])
    loss, parts, keep, kept_mean = B.eata_loss(s, TAU, e0, 0.05, avg)
    assert keep.tolist() == [True, False, False, True]
    assert parts["reliable"] == 3 and parts["kept"] == 2
    want = (ent[0] * math.exp(e0 - ent[0]) + ent[3] * math.exp(e0 - ent[3])) / 2
    assert loss.item() == pytest.approx(want, rel=1e-5)
    p = (s / TAU).softmax(1)
    assert torch.allclose(kept_mean, p[[0, 3]].mean(0))
    # with no moving average yet, every reliable query is kept
    _, _, keep0, _ = B.eata_loss(s, TAU, e0, 0.05, None)
    assert keep0.tolist() == [True, False, True, True]
    # nothing reliable: a zero loss that still backpropagates (zero gradients), and no moving-average update
    w = torch.ones(4, requires_grad=True)
    loss, parts, keep, kept_mean = B.eata_loss(s * w, TAU, 0.0, 0.05, None)
    loss.backward()
    assert loss.item() == 0.0 and parts["kept"] == 0 and kept_mean is None and torch.all(w.grad == 0)
    # Eq. 4
    a, n = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert torch.allclose(B.moving_average(a, n), torch.tensor([0.9, 0.1]))
    assert B.moving_average(None, n) is n and B.moving_average(a, None) is a


# ---- READ -------------------------------------------------------------------------------------------------------
def test_read_confidence_aware_loss_sharpens_confident_queries_and_pushes_noisy_ones_down():
    s = torch.tensor([[0.1, 0.0, 0.0, 0.0], [0.004, 0.0, 0.0, 0.0]], requires_grad=True)
    p = (s / TAU).softmax(1)
    pm = p.max(1).values.detach()
    assert pm[0] > math.exp(-1) > pm[1]  # one confident, one not
    loss, parts = B.read_loss(s, TAU)
    assert loss.item() == pytest.approx(float((-pm * pm.log()).mean()), rel=1e-5)  # γ = e⁻¹: −p log p
    assert parts["confident"] == 1
    loss.backward()
    # a step against the gradient raises the confident query's top score and lowers the noisy one's
    assert s.grad[0, 0] < 0 < s.grad[1, 0]
    # any γ: p log(eγ/p); the balance term is the entropy of the batch's mean softmax, subtracted
    loss2, parts2 = B.read_loss(s.detach(), TAU, gamma=0.5, balance=2.0)
    pbar = p.detach().mean(0)
    bal = float(-(pbar * pbar.log()).sum())
    want = float((pm * torch.log(math.e * 0.5 / pm)).mean()) - 2.0 * bal
    assert loss2.item() == pytest.approx(want, rel=1e-5) and parts2["bal"] == pytest.approx(bal, rel=1e-5)


# ---- SAR --------------------------------------------------------------------------------------------------------
def _sar(reset_em=0.0, rho=0.05):
    p = {"temperature": TAU, "e_margin": 0.4 * math.log(3), "rho": rho, "reset_em": reset_em}
    w = torch.tensor([1.0, 0.5, -0.3], requires_grad=True)
    x = torch.tensor([[0.10, 0.02, 0.0], [0.0, 0.12, 0.04], [0.03, 0.0, 0.03]])  # 2 of the 3 queries reliable
    runner = Runner("sar", p, torch.eye(3), None, "visual", weights=[w])
    return runner, w, x, p


def test_sar_reliable_entropy_is_the_mean_over_queries_under_the_margin():
    s = torch.tensor([[0.2, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.1, 0.0]])
    e0 = 0.4 * math.log(3)
    ent = [_entropy(r) for r in s.tolist()]
    loss, keep, _ = B.reliable_entropy(s, TAU, e0)
    assert keep.tolist() == [e < e0 for e in ent] == [True, False, True]
    assert loss.item() == pytest.approx((ent[0] + ent[2]) / 2, rel=1e-5)
    loss, keep, _ = B.reliable_entropy(s, TAU, e0, among=torch.tensor([False, True, True]))
    assert keep.tolist() == [False, False, True] and loss.item() == pytest.approx(ent[2], rel=1e-5)


def test_sar_step_takes_the_gradient_at_the_perturbed_weights_and_restores_them():
    runner, w, x, p = _sar()
    w0 = w.detach().clone()

    def scores():
        return x * w  # any differentiable function of the weights

    out = runner.step(None, scores(), 0, 0, again=lambda: (None, scores()))
    # by hand: ε̂ = ρ g / ‖g‖ from the first pass's reliable entropy at w0
    wa = w0.clone().requires_grad_(True)
    first, keep, _ = B.reliable_entropy(x * wa, TAU, p["e_margin"])
    (g,) = torch.autograd.grad(first, wa)
    eps = p["rho"] * g / g.norm()
    assert torch.allclose(w.detach(), w0 + eps, atol=1e-7)  # the second pass ran at Θ + ε̂
    wb = (w0 + eps).requires_grad_(True)
    second, _, _ = B.reliable_entropy(x * wb, TAU, p["e_margin"], among=keep)
    (g2,) = torch.autograd.grad(second, wb)
    assert out.loss.item() == pytest.approx(second.item(), rel=1e-5)
    out.loss.backward()
    runner.before_update()
    assert torch.allclose(w.detach(), w0, atol=1e-7)  # back at Θ ...
    assert torch.allclose(w.grad, g2, atol=1e-6) and not torch.allclose(g2, g, atol=1e-6)  # ... with Θ + ε̂'s gradient
    assert out.parts["reliable"] >= out.parts["reliable_second"] >= 1


def test_sar_recovers_the_initial_weights_when_the_loss_collapses():
    for reset_em, expect in ((100.0, 1), (0.0, 0)):  # a threshold above any loss: reset; 0: never
        runner, w, x, _ = _sar(reset_em=reset_em)
        w0 = w.detach().clone()
        opt = torch.optim.AdamW([w], lr=0.1)
        for _ in range(2):
            out = runner.step(None, x * w, 0, 0, again=lambda: (None, x * w))
            opt.zero_grad()
            out.loss.backward()
            runner.before_update()
            opt.step()
            runner.after_update(opt, out)
            assert out.parts["reset"] == expect
        assert runner.resets == 2 * expect
        if expect:
            assert torch.equal(w.detach(), w0) and not opt.state and runner.ema is None
        else:
            assert not torch.equal(w.detach(), w0) and opt.state


# ---- defaults and listing -----------------------------------------------------------------------------------------
def test_defaults_learning_rates_and_margins():
    for m, lr in (("read", 3e-5), ("sar", 3e-5), ("eata", 3e-4)):
        for side in ("text", "visual"):
            assert resolve(m, side, 1000, {})["lr"] == lr
    assert resolve("eata", "visual", 1000, {})["e_margin"] == pytest.approx(0.4 * math.log(1000))
    assert resolve("sar", "text", 200, {"e_margin": 0.4})["e_margin"] == 0.4
    r = resolve("sar", "visual", 200, {})
    assert r["rho"] == 0.05 and r["reset_em"] == 0.0 and r["steps"] == 3 and r["batch_size"] == 16
    assert resolve("eata", "text", 10, {})["d_margin"] == 0.05
    assert resolve("read", "text", 10, {})["gamma"] == pytest.approx(math.exp(-1))
    names = [m["name"] for m in adapt.list_methods()]
    assert {"read", "sar", "eata"} <= set(names) and names.index("oracle") == len(names) - 1
    assert "Fisher" in adapt.get_method("eata").description  # the choice about the anti-forgetting term is stated
    with pytest.raises(adapt.AdaptError, match="rho must be"):
        resolve("sar", "visual", 10, {"rho": -1})


def test_cli_lists_the_baselines(capsys):
    from robustlab.cli import main

    assert main(["adapt", "--list"]) == 0
    out = capsys.readouterr().out
    for name, label in (("read", "READ"), ("sar", "SAR"), ("eata", "EATA")):
        assert name in out and label in out
    assert "--param rho=" in out and "--param d_margin=" in out


# ---- small runs on the built-in videos -----------------------------------------------------------------------------
VIDEOS_N = 32  # the built-in videos of the fixture `videos` (tests/adapt/adapt_fixtures.py), with `seq`


@pytest.mark.parametrize("method, keys", [("read", {"ra", "confident"}), ("sar", {"first", "reliable", "reset"}),
                                          ("eata", {"entropy", "reliable", "kept"})])
def test_each_baseline_runs_and_records(seq, videos, method, keys):
    from robustlab.tasks.retrieval_bench import RetrievalBench

    bench = RetrievalBench(seq, videos, lazy=True)
    def weights():
        return [v.detach().clone() for m in seq.modules() for v in m.state_dict().values()]

    before = weights()
    for d, c in (("v2t", "mlvp_motion_blur:3"), ("t2v", "char_swap:3")):
        r = adapt.run(seq, videos, method, d, c, bench=bench, steps=2)
        assert r.method == method and r.adapted_parameters > 0
        assert len(r.losses) == 2 * math.ceil(r.n_queries / 16) and all(np.isfinite(x["loss"]) for x in r.losses)
        assert set(r.losses[0]) >= keys | {"batch", "step", "loss"}
        assert 0 <= r.metrics["adapted"]["R@1"] <= 1 and r.metrics["shifted"] == adapt.run(
            seq, videos, "none", d, c, bench=bench).metrics["adapted"]
        assert r.adapted_fingerprint != r.model_fingerprint or method == "sar"  # SAR may reset to the start
        json.dumps(r.to_json())
    assert all(torch.equal(a, b) for a, b in zip(weights(), before))  # the model passed in never changes


def test_sar_with_recovery_off_adapts_and_with_a_high_threshold_stays_at_the_start(seq, videos):
    a = adapt.run(seq, videos, "sar", "t2v", "char_swap:3", steps=1, reset_em=0.0, lr=1e-3)
    b = adapt.run(seq, videos, "sar", "t2v", "char_swap:3", steps=1, reset_em=100.0, lr=1e-3)
    assert not any(x["reset"] for x in a.losses) and all(x["reset"] for x in b.losses)
    assert a.adapted_fingerprint != a.model_fingerprint and b.adapted_fingerprint == b.model_fingerprint


def test_cli_runs_a_baseline(tmp_path, capsys):
    from robustlab.cli import main

    path = tmp_path / "sar.json"
    assert main(["adapt", "--model", "builtin:tiny-clip-video-meanp", "--n", "16", "--direction", "t2v", "--perturb",
                 "keyboard", "--severity", "3", "--method", "sar", "--param", "steps=1", "--json", "--out",
                 str(path)]) == 0
    res = json.loads(path.read_text())
    assert res["method"] == "sar" and res["params"]["lr"] == 3e-5 and res["params"]["rho"] == 0.05
    assert len(res["losses"]) == 1 and "reset" in res["losses"][0]
