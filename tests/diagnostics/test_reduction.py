"""Hubness reduction: each method against a direct implementation of its formula, and on planted hubs."""
import json

import numpy as np
import pytest

from robustlab.diagnostics import hubness as H
from robustlab.diagnostics import reduction as R
from robustlab.metrics import retrieval


def _nrm(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def hub_heavy(seed=0, n=400, d=32, n_hubs=8):
    """Query shift toward a common direction c, with a few gallery items near c: those become hubs
    (the mechanism HAT-VTR describes). Ground truth: query i ↔ gallery item i."""
    rng = np.random.default_rng(seed)
    g = _nrm(rng.normal(size=(n, d)))
    c = _nrm(rng.normal(size=(1, d)))
    hubs = rng.choice(n, n_hubs, replace=False)
    g[hubs] = _nrm(c + 0.3 * rng.normal(size=(n_hubs, d)))
    q = _nrm(g + 1.8 * rng.normal(size=(n, d)) / np.sqrt(d) + 0.8 * c)
    return q @ g.T, np.arange(n), hubs


def ref_dsl(s, lam):
    out = np.empty_like(s)
    for j in range(s.shape[1]):
        e = np.exp(lam * (s[:, j] - s[:, j].max()))
        out[:, j] = s[:, j] * e / e.sum()
    return out


def ref_qbnorm(s, bank, beta, k):
    active = set()
    for row in bank:
        active |= set(np.argsort(-row)[:k].tolist())
    out = s.copy()
    for i, row in enumerate(s):
        if int(np.argmax(row)) in active:
            for j in range(s.shape[1]):
                out[i, j] = np.exp(beta * row[j]) / np.exp(beta * bank[:, j]).sum()
    return out


def ref_hsm(s, alpha, beta, m, B, K):
    """The digest's sketch (§3.5): concatenate the raw history with the current batch, Eq. 6, keep the current
    rows; memory holds the K − 1 most recent raw batch matrices; first batch unrefined."""
    def softmax(x, axis):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    out, history = [], []
    for start in range(0, len(s), B):
        st = s[start:start + B]
        if not history:
            out.append(st)
        else:
            sbar = np.concatenate(history + [st], 0)
            shat = m * sbar * softmax(alpha * sbar, 0) + (1 - m) * sbar * softmax(beta * sbar, 1)
            out.append(shat[-len(st):])
        history = (history + [st])[-(K - 1):] if K > 1 else []
    return np.concatenate(out, 0)


def test_dsl_qbnorm_hsm_match_their_formulas():
    rng = np.random.default_rng(1)
    s = rng.uniform(-0.2, 0.6, size=(45, 30))
    bank = rng.uniform(-0.2, 0.6, size=(20, 30))
    np.testing.assert_allclose(R.reduce(s, "dsl", temperature=50), ref_dsl(s, 50), rtol=1e-10)
    np.testing.assert_allclose(R.reduce(s, "qbnorm", beta=20, k=1, querybank=bank), ref_qbnorm(s, bank, 20, 1),
                               rtol=1e-10)
    np.testing.assert_allclose(R.reduce(s, "qbnorm", beta=5, k=3), ref_qbnorm(s, s, 5, 3), rtol=1e-10)
    for B, K in [(16, 100), (4, 3), (7, 1), (10, 2)]:
        np.testing.assert_allclose(R.reduce(s, "hsm", batch_size=B, memory=K), ref_hsm(s, 100, 10, 0.5, B, K),
                                   rtol=1e-9, atol=1e-300)


def test_hsm_first_batch_unrefined_and_memory_rule():
    s, _, _ = hub_heavy(n=100)
    out = R.reduce(s, "hsm", batch_size=16)
    assert np.array_equal(out[:16], s[:16])
    assert not np.allclose(out[16:32], s[16:32])
    # memory=None: the released code's rule, K − 1 = ⌊0.1·N_G⌋ = 10 previous batches
    np.testing.assert_allclose(R.reduce(s, "hsm", batch_size=4, memory=None), ref_hsm(s, 100, 10, 0.5, 4, 11),
                               rtol=1e-9)


@pytest.mark.parametrize("method", ["dsl", "qbnorm", "hsm"])
def test_planted_hubs_are_suppressed_and_recall_does_not_drop(method):
    s, gt, hubs = hub_heavy()
    before_nk = H.k_occurrence(s, 10)
    assert (before_nk[hubs] >= 2 * 10).all()  # the construction really makes the planted items hubs
    assert len(set(H.top_hubs(before_nk, 6)) - set(hubs)) == 0
    res = R.before_after(s, gt, method, k=10)
    b, a = res["before"], res["after"]
    assert b["hub_occurrence"] > 0.3  # hub-heavy to start with
    assert a["hub_occurrence"] < b["hub_occurrence"]
    assert a["R@1"] >= b["R@1"] and a["R@5"] >= b["R@5"]
    assert a["n_k"][hubs].sum() < b["n_k"][hubs].sum()
    assert res["scores"].shape == s.shape and np.array_equal(b["n_k"], before_nk)
    assert res["params"] == R.METHODS[method].defaults()


def test_registry_lists_methods_with_parameters():
    listed = R.list_methods()
    json.dumps(listed)  # the pages render it as is
    by_name = {m["name"]: m for m in listed}
    assert set(by_name) == {"dsl", "qbnorm", "hsm"}
    hsm = {p["name"]: p["default"] for p in by_name["hsm"]["params"]}
    assert hsm == {"alpha": 100.0, "beta": 10.0, "m": 0.5, "batch_size": 16, "memory": 100}
    assert {p["name"]: p["default"] for p in by_name["dsl"]["params"]} == {"temperature": 100.0}
    assert {p["name"] for p in by_name["qbnorm"]["params"]} == {"beta", "k", "querybank"}


def test_reduction_never_changes_shape_or_touches_input():
    s, _, _ = hub_heavy(n=50)
    orig = s.copy()
    for name in R.METHODS:
        assert R.reduce(s, name).shape == s.shape
    assert np.array_equal(s, orig)


@pytest.mark.parametrize("kw,msg", [
    (dict(method="nope"), "unknown hubness reduction"),
    (dict(method="dsl", lam=3), "no parameter lam"),
    (dict(method="dsl", temperature=-1), "temperature must be > 0"),
    (dict(method="hsm", m=1.5), r"m must be in \[0.0, 1.0\]"),
    (dict(method="hsm", batch_size=0), "batch_size must be"),
    (dict(method="hsm", batch_size=2.5), "batch_size must be an integer"),
    (dict(method="qbnorm", k=999), "k must be between"),
    (dict(method="qbnorm", querybank=np.zeros((3, 7))), "gallery columns"),
])
def test_bad_parameters_are_clear_value_errors(kw, msg):
    s = np.random.default_rng(0).random((6, 5))
    method = kw.pop("method")
    with pytest.raises(ValueError, match=msg):
        R.reduce(s, method, **kw)


def test_bad_scores():
    with pytest.raises(ValueError, match="NaN"):
        R.reduce(np.array([[0.1, np.nan]]), "dsl")
    with pytest.raises(ValueError, match="queries × gallery"):
        R.reduce(np.zeros(3), "hsm")


def test_retrieval_of_reduced_scores_is_consistent():
    s, gt, _ = hub_heavy(n=120)
    res = R.before_after(s, gt, "qbnorm", k=5, ks=(1, 5, 10, 50))
    assert res["after"]["R@50"] == retrieval(res["scores"], gt, ks=(50,))["R@50"]
