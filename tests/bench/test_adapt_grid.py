"""The 1,000-video adaptation grid (issue 48): bench_adapt.py runs a named variant of a shift (the table's occlusion
and event insertion ran what is today ``/centre`` and ``/synthetic``) and keeps each query's rank, and
adapt_grid_table.py's intervals are what its docstring says: the paired bootstrap on kept ranks, and across runs a
worst-case interval never narrower than the true paired one."""
import importlib.util
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_variant_runs_as_itself_and_each_querys_rank_is_kept(tmp_path, monkeypatch):
    import torch

    import robustlab
    from robustlab import adapt
    from robustlab.tasks import retrieval_bench

    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    monkeypatch.setattr(robustlab, "load_model", lambda spec: SimpleNamespace(fingerprint="f" * 16))
    monkeypatch.setattr(robustlab.datasets, "build", lambda *a, **k: [])
    monkeypatch.setattr(retrieval_bench, "RetrievalBench",
                        lambda *a, **k: SimpleNamespace(_visuals={}, _texts={}))
    rng = np.random.default_rng(0)
    gallery = rng.normal(size=(20, 4)).astype(np.float32)
    seen = []

    def run(model, ds, method, direction, condition, **kw):
        seen.append((method, condition))
        shifted = rng.normal(size=(20, 20)).astype(np.float32)
        adapted = shifted + np.eye(20, dtype=np.float32) * (30.0 if method == "eata" else 0.0)
        from robustlab.metrics.retrieval import retrieval

        pos = list(range(20))
        return SimpleNamespace(metrics={"clean": retrieval(shifted, pos), "shifted": retrieval(shifted, pos),
                                                   "adapted": retrieval(adapted, pos)},
                               spread={"clean": 0.1, "shifted": 0.2, "adapted": 0.2},
                               seconds={"per_1000_queries": 1.0}, params={}, adapted_parameters=0, losses=[],
                               query_clean=gallery, gallery=gallery, scores_shifted=shifted,
                               scores_adapted=adapted, positives=pos)

    monkeypatch.setattr(adapt, "run", run)
    out = tmp_path / "grid.json"
    args = ["--severities", "5", "--directions", "v2t", "--methods", "none,eata", "--out", str(out), "--threads", "1"]
    with pytest.raises(SystemExit, match="mlvp_no_such/x is not an available shift"):
        _bench("bench_adapt").main(["--models", "builtin:m", "--only", "mlvp_occlusion/centre,mlvp_no_such/x", *args])
    assert seen == [] and not out.exists()
    _bench("bench_adapt").main(["--models", "builtin:m", "--only", "mlvp_occlusion/centre", *args])
    assert seen == [("none", "mlvp_occlusion/centre:5"), ("eata", "mlvp_occlusion/centre:5")]
    runs = json.loads(out.read_text())["runs"]
    assert [r["perturbation"] for r in runs] == ["mlvp_occlusion/centre"] * 2
    for r in runs:
        for what in ("shifted", "adapted"):
            ranks = np.asarray(r["ranks"][what])
            assert len(ranks) == 20 and ranks.min() >= 1
            assert np.mean(ranks == 1) == pytest.approx(r[what]["R@1"])
    assert runs[1]["ranks"]["adapted"] == [1] * 20  # EATA's fake scores put every positive on top


def test_the_worst_case_interval_is_never_narrower_than_the_paired_one():
    g = _bench("adapt_grid_table")
    rng = np.random.default_rng(1)
    n = 200
    for _ in range(200):
        a = rng.random(n) < rng.random()
        b = np.where(rng.random(n) < rng.random(), a, rng.random(n) < rng.random())
        p1, p2 = a.mean(), b.mean()
        m = np.sum(a != b)
        true = math.sqrt(max(m - n * (p1 - p2) ** 2, 0.0)) / n
        assert g.worst_se(p1, p2, n) >= true - 1e-12
    # the bound is reached when the two runs' hits overlap as little as the marginals allow
    a = np.r_[np.ones(30), np.zeros(170)] == 1
    b = np.r_[np.zeros(30), np.ones(50), np.zeros(120)] == 1
    m = np.sum(a != b)
    assert g.worst_se(a.mean(), b.mean(), n) == pytest.approx(math.sqrt(m - n * (a.mean() - b.mean()) ** 2) / n)


def test_the_table_refuses_runs_on_other_queries(tmp_path, monkeypatch):
    g = _bench("adapt_grid_table")
    row = {"model": g.MODEL, "direction": "v2t", "severity": 3, "perturbation": "mlvp_fog"}
    ref = [dict(row, method=m, adapted={"R@1": 0.5}) for m in ("none", "tent", "tcr", "hat-vtr", "oracle")]
    new = [dict(row, method=m, adapted={"R@1": 0.4 if m == "none" else 0.6}) for m in ("none", "read", "sar", "eata")]
    # a variant other than the one the table ran is not read as the table's shift
    new += [dict(row, perturbation="mlvp_occlusion", method=m, adapted={"R@1": 0.1}) for m in g.METHODS]
    (tmp_path / "ref.json").write_text(json.dumps({"runs": ref}))
    (tmp_path / "new.json").write_text(json.dumps({"runs": new, "n": 10}))
    monkeypatch.setattr(g, "REF", tmp_path / "ref.json")
    monkeypatch.setattr(g, "NEW", tmp_path / "new.json")
    with pytest.raises(SystemExit, match="not the same queries"):
        g.load("v2t", 3)
    new[0]["adapted"]["R@1"] = 0.5
    (tmp_path / "new.json").write_text(json.dumps({"runs": new, "n": 10}))
    cells, shifts = g.load("v2t", 3)
    assert shifts == ["mlvp_fog"] and ("mlvp_occlusion", "eata") not in cells


def test_paired_where_both_kept_ranks_worst_case_otherwise():
    g = _bench("adapt_grid_table")
    rng = np.random.default_rng(2)
    n = 300
    cells = {}
    for p in ("mlvp_fog", "mlvp_snow"):
        none = rng.integers(1, 4, n)
        cells[(p, "none")] = {"adapted": {"R@1": float(np.mean(none == 1))}, "ranks": {"adapted": none.tolist()}}
        r = none.copy()
        r[np.flatnonzero(r > 1)[:30]] = 1  # EATA puts 30 more queries on top than no adaptation
        cells[(p, "eata")] = {"adapted": {"R@1": float(np.mean(r == 1))}, "ranks": {"adapted": r.tolist()}}
        cells[(p, "tcr")] = {"adapted": {"R@1": float(np.mean(r == 1)) + 0.02}}  # an earlier run: no ranks
    res = g.compare(cells, ["mlvp_fog", "mlvp_snow"], n, "eata", "none")
    mean = res["mean"]
    assert mean["kind"] == "paired" and mean["diff"] == pytest.approx(0.1) and mean["holds"]
    assert 0 < mean["lo"] < 0.1 < mean["hi"] < 0.15
    assert all(c["changed"] == 30 and c["kind"] == "paired" for c in res["cells"].values())
    # the same difference without ranks: only the worst case, which is wider
    res = g.compare(cells, ["mlvp_fog", "mlvp_snow"], n, "tcr", "eata")
    assert res["mean"]["kind"] == "worst case" and res["mean"]["diff"] == pytest.approx(0.02)
    assert not res["mean"]["holds"] and res["mean"]["hi"] - res["mean"]["lo"] > mean["hi"] - mean["lo"]
