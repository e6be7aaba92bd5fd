"""ui.cache: the dashboard's shared caches are bounded in bytes by the operator's settings (issue 44)."""
from __future__ import annotations

import numpy as np

from ui import cache, operator


def test_budgets_are_the_operators_and_bad_values_fall_back(monkeypatch, tmp_path):
    cfg = operator.load_config(env={"ROBUSTLAB_MODEL_CACHE_MB": "64", "ROBUSTLAB_RESULT_CACHE_MB": "16"},
                               path=tmp_path / "none.toml")
    assert (cfg.model_cache_mb, cfg.result_cache_mb) == (64, 16) and not cfg.problems
    bad = operator.load_config(env={"ROBUSTLAB_RESULT_CACHE_MB": "lots", "ROBUSTLAB_MODEL_CACHE_MB": "1"},
                               path=tmp_path / "none.toml")
    assert (bad.model_cache_mb, bad.result_cache_mb) == (4096, 512) and len(bad.problems) == 2
    f = tmp_path / "robustlab.toml"
    f.write_text("[dashboard]\nresult_cache_mb = 32\n")
    assert operator.load_config(env={}, path=f).result_cache_mb == 32


def test_shared_results_stay_under_the_budget_and_big_ones_are_not_kept(monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_RESULT_CACHE_MB", "16")
    operator.reset_for_tests()
    cache.clear_all()
    calls = []

    @cache.shared("results")
    def perturbed(_x, key: str, severity: int):
        calls.append((key, severity))
        return np.full((1 << 20,), severity, np.uint8)  # 1 MB an output

    try:
        x = object()
        for s in range(40):
            assert perturbed(x, "img", s)[0] == s
        p = cache.pool("results")
        assert p.budget == 16 << 20 and p.nbytes <= p.budget and 10 <= len(p) <= 16
        assert perturbed(x, "img", 39)[0] == 39 and len(calls) == 40  # the newest are kept
        perturbed(x, "img", 0)
        assert len(calls) == 41  # the oldest went first

        @cache.shared("results")
        def big(n: int):
            return np.zeros(n << 20, np.uint8)

        before = set(p.keys())
        assert big(5).nbytes == 5 << 20  # over a quarter of 16 MB: shown, not kept, nobody evicted
        assert set(p.keys()) == before
    finally:
        cache.clear_all()


def test_arrays_are_keyed_by_content_and_underscored_arguments_are_not_keys():
    cache.clear_all()
    calls = []

    @cache.shared("results")
    def f(a, _ignored, k=1):
        calls.append(1)
        return float(np.sum(a)) * k

    try:
        a = np.arange(10)
        assert f(a, object()) == f(a.copy(), object()) == 45.0 and len(calls) == 1
        assert f(a, None, k=2) == 90.0 and len(calls) == 2
        f.forget(a, None)
        f(a, None)
        assert len(calls) == 3
    finally:
        cache.clear_all()


def test_a_model_may_fill_its_pool_and_a_result_only_a_quarter(monkeypatch):
    """A 600 MB ViT under a 1 GB model pool is kept (the pool is for models); a result over a quarter of its pool is
    not (one big image must not flush the others)."""
    monkeypatch.setenv("ROBUSTLAB_MODEL_CACHE_MB", "64")
    monkeypatch.setenv("ROBUSTLAB_RESULT_CACHE_MB", "64")
    operator.reset_for_tests()
    cache.clear_all()
    try:
        assert cache.pool("models").max_entry == 64 << 20 and cache.pool("results").max_entry == 16 << 20

        @cache.shared("models")
        def model(n: int):
            return np.zeros(n << 20, np.uint8)

        @cache.shared("results")
        def result(n: int):
            return np.zeros(n << 20, np.uint8)

        model(40)
        result(20)
        assert len(cache.pool("models")) == 1 and len(cache.pool("results")) == 0
    finally:
        cache.clear_all()
