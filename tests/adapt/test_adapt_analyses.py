"""HAT-VTR's analyses of a run (robustlab.adapt.analyses): the Reliable Memory's accuracy per batch, the time
breakdown, R@K vs severity before and after, the full-gallery L_NA switch, the adapted top-k and heatmap, and the
MdR convention of a run -- each checked against an independent computation on the trained built-in video model."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from adapt_fixtures import videos_fixture  # noqa: F401 (the fixture videos)

from robustlab import adapt
from robustlab.adapt import losses as L
from robustlab.adapt.towers import AdaptError
from robustlab.metrics.retrieval import median_rank, ranks

VIDEOS_N = 32  # the built-in videos of the fixture `videos` (tests/adapt/adapt_fixtures.py)


@pytest.fixture(scope="module")
def meanp():
    import robustlab as rl

    return rl.load_model("builtin:tiny-clip-video-meanp")


@pytest.fixture(scope="module")
def bench(meanp, videos):
    """One bench for the module: the shifted videos are perturbed and encoded once."""
    from robustlab.tasks.retrieval_bench import RetrievalBench

    return RetrievalBench(meanp, videos, lazy=True)


@pytest.fixture(scope="module")
def hat(meanp, videos, bench):
    """One HAT-VTR run on shifted video queries (2 batches of 16, 2 steps), with the lower-median MdR."""
    return adapt.run(meanp, videos, "hat-vtr", "v2t", "gaussian_noise:3", steps=2, mdr="lower", bench=bench)


# ---- the Reliable Memory's accuracy ---------------------------------------------------------------------------
def test_reliable_memory_keeps_each_pairs_correctness_and_trims_with_it():
    rm = L.ReliableMemory(capacity=3, ratio=0.5)
    q = torch.tensor([[3.0, 0], [0, 0.1], [-3.0, 0], [0, -0.1]])  # diversity: 0 and 2 are the far ones
    g = F.normalize(torch.randn(4, 2, generator=torch.Generator().manual_seed(0)), dim=-1)
    assert rm.accuracy() is None
    assert sorted(rm.update(q, g, index=[7, 8, 9, 10], correct=[True, False, False, True])) == [0, 2]
    assert [e.index for e in rm.entries] and sorted(e.index for e in rm.entries) == [7, 9]
    assert rm.accuracy() == 0.5
    rm.update(q * 2, g, index=[1, 2, 3, 4], correct=[True, True, True, True])  # more diverse: they displace
    assert len(rm) == 3 and sorted(e.index for e in rm.entries) == [1, 3, 7]  # by diversity, 6 ties 6 > 3
    assert rm.accuracy() == 1.0
    rm2 = L.ReliableMemory(capacity=4, ratio=0.5)
    rm2.update(q, g)  # no diagnostic given: unknown
    assert rm2.accuracy() is None


def test_memory_log_against_the_unadapted_ranking(meanp, videos, bench):
    """lr 0 and raw-argmax targets: the pseudo-positives at each batch's first step are the shifted queries' top-1,
    so the batch accuracy is the batch's shifted R@1; the memory's accuracy is the share of correct kept pairs."""
    r = adapt.run(meanp, videos, "hat-vtr", "v2t", "gaussian_noise:3", steps=1, lr=0.0, select=False, batch_size=8,
                  ratio=0.5, capacity=6, bench=bench)
    top1 = ranks(r.scores_shifted, r.positives) == 1
    assert [m["batch"] for m in r.memory] == [0, 1, 2, 3]
    assert [m["size"] for m in r.memory] == [4, 6, 6, 6]  # 0.5 · 8 per batch, capacity 6
    assert all(m["added"] == 4 for m in r.memory)
    for m in r.memory:
        b = m["batch"]
        assert m["batch_accuracy"] == pytest.approx(top1[b * 8:(b + 1) * 8].mean())
        assert 0.0 <= m["accuracy"] <= 1.0
    first = r.memory[0]  # after the first batch the memory holds exactly what it added
    assert first["accuracy"] == pytest.approx(first["added_accuracy"])
    assert adapt.memory_accuracy(r)["batch"] == [1, 2, 3, 4]
    assert adapt.memory_accuracy(r)["accuracy"] == r.memory_curve("accuracy")
    # Tent has no memory: an empty curve
    t = adapt.run(meanp, videos, "tent", "v2t", "gaussian_noise:3", steps=1, keep_arrays=False, bench=bench)
    assert t.memory == [] and adapt.memory_accuracy(t)["accuracy"] == []


# ---- the time breakdown -------------------------------------------------------------------------------------
def test_time_breakdown_phases_add_up(hat):
    t = hat.timing
    assert set(t["seconds"]) == {"prepare", "forward", "loss", "hsm", "memory", "backward"}
    assert all(v >= 0 for v in t["seconds"].values())
    assert t["seconds"]["forward"] > 0 and t["seconds"]["backward"] > 0 and t["seconds"]["hsm"] > 0
    assert t["seconds"]["memory"] > 0 and t["seconds"]["loss"] > 0
    for k, v in t["seconds"].items():
        assert t["per_1000_queries"][k] == pytest.approx(v * 1000 / hat.n_queries, rel=1e-3, abs=1e-3)
    assert sum(t["share"].values()) == pytest.approx(1.0, abs=1e-3)
    # the phases are inside the measured adaptation time (prepare + adapt)
    assert sum(t["seconds"].values()) <= hat.seconds["prepare"] + hat.seconds["adapt"] + 1e-3
    rows = adapt.time_breakdown(hat)
    assert [r["phase"] for r in rows] == ["forward", "backward", "memory", "hsm", "loss", "prepare"]
    assert adapt.time_breakdown(adapt.AdaptResult("none", "v2t", {}, {}, 1, 1, {}, [], {}, 0)) == []


# ---- the MdR convention of a run ------------------------------------------------------------------------------
def test_a_run_records_and_uses_its_mdr_convention(hat):
    assert hat.mdr == "lower" and hat.to_json()["mdr"] == "lower"
    for key, s in (("shifted", hat.scores_shifted), ("adapted", hat.scores_adapted)):
        assert hat.metrics[key]["MdR"] == median_rank(ranks(s, hat.positives), "lower")
    with pytest.raises(AdaptError, match="mdr must be one of median, lower"):
        adapt.run(None, None, "tent", mdr="middle")


# ---- the full-gallery L_NA ------------------------------------------------------------------------------------
def test_full_gallery_na_is_the_entropy_over_the_whole_gallery():
    s = torch.randn(5, 9, generator=torch.Generator().manual_seed(2)) * 0.2
    ent = [-(r.softmax(0) * r.log_softmax(0)).sum().item() for r in s / 0.02]
    thr = sorted(ent)[3]
    kept = [e * max(1 - e / (thr + 1e-3), 0.0) for e in ent if e <= thr]
    assert L.noise_robust_entropy_logits(s / 0.02, torch.tensor(thr)).item() == pytest.approx(
        sum(kept) / len(kept), rel=1e-5)


def test_na_over_is_a_named_option_with_the_released_default(meanp, videos, hat, bench):
    spec = {p["name"]: p for p in adapt.get_method("hat-vtr").to_dict()["params"]}["na_over"]
    assert spec["default"] == "batch" and tuple(spec["choices"]) == ("batch", "gallery")
    assert hat.params["na_over"] == "batch"
    g = adapt.run(meanp, videos, "hat-vtr", "v2t", "gaussian_noise:3", steps=2, keep_arrays=False, na_over="gallery",
                  bench=bench)
    assert g.params["na_over"] == "gallery"
    na_b, na_g = [x["na"] for x in hat.losses], [x["na"] for x in g.losses]
    assert all(math.isfinite(x) for x in na_g) and na_b != na_g  # a different loss, same first scores
    assert g.metrics["shifted"] == {**hat.metrics["shifted"], "MdR": g.metrics["shifted"]["MdR"]}
    with pytest.raises(AdaptError, match="na_over"):
        adapt.run(meanp, videos, "hat-vtr", "v2t", "gaussian_noise:3", na_over="everything")


# ---- the adapted top-k and heatmap ----------------------------------------------------------------------------
def test_top_k_before_and_after_follow_the_score_matrices(hat):
    for q in (0, 17, 31):
        t = adapt.top_k(hat, q, k=4)
        assert t["query"] == q and t["positives"] == list(np.atleast_1d(hat.positives[q]))
        for side, s in (("before", hat.scores_shifted), ("after", hat.scores_adapted)):
            items = t[side]["items"]
            assert [x["item"] for x in items] == list(np.argsort(-s[q], kind="stable")[:4])
            assert [x["rank"] for x in items] == [1, 2, 3, 4]
            assert all(x["positive"] == (x["item"] in t["positives"]) for x in items)
            assert t[side]["gt_rank"] == ranks(s[q:q + 1], [t["positives"]])[0]
    with pytest.raises(AdaptError, match="query must be in 0..31"):
        adapt.top_k(hat, 32)
    with pytest.raises(AdaptError, match="k must be at least 1"):
        adapt.top_k(hat, 0, 0)


def test_heatmap_puts_the_ground_truth_on_the_diagonal(hat):
    h = adapt.heatmap(hat, n=5, start=2)
    assert h["queries"] == [2, 3, 4, 5, 6] and len(h["items"]) == 5
    a, b = np.asarray(h["adapted"]), np.asarray(h["shifted"])
    assert a.shape == b.shape == (5, 5)
    for i, q in enumerate(h["queries"]):
        g = h["items"][i]
        assert g in list(np.atleast_1d(hat.positives[q]))
        assert a[i, i] == pytest.approx(hat.scores_adapted[q, g]) and b[i, i] == pytest.approx(hat.scores_shifted[q, g])
    assert len(adapt.heatmap(hat, n=100)["queries"]) == 32  # clipped to the queries
    with pytest.raises(AdaptError, match="start in 0..31"):
        adapt.heatmap(hat, n=3, start=40)
    no_arrays = adapt.AdaptResult("tent", "v2t", {}, {}, 1, 1, {}, [], {}, 0)
    with pytest.raises(AdaptError, match="keep_arrays=True"):
        adapt.top_k(no_arrays, 0)


# ---- R@K vs severity, before and after -------------------------------------------------------------------------
@pytest.mark.slow  # three severities, three runs (and one direct run to compare)
def test_severity_curve_rows_match_direct_runs(meanp, videos, bench):
    c = adapt.severity_curve(meanp, videos, "hat-vtr", "v2t", "gaussian_noise", (5, 1, 3), steps=1, batch_size=16,
                             seed=0)  # the method's own seed (the stream order's) next to the perturbation's
    assert [r["severity"] for r in c.rows] == [1, 3, 5]
    s = c.series("R@1")
    assert s["severity"] == [1, 3, 5] and len(set(s["clean"])) == 1
    assert s["shifted"][0] >= s["shifted"][-1]  # the shift hurts more at severity 5
    direct = adapt.run(meanp, videos, "hat-vtr", "v2t", "gaussian_noise:3", keep_arrays=False, steps=1, batch_size=16,
                       bench=bench)
    assert c.rows[1]["shifted"] == direct.metrics["shifted"] and c.rows[1]["adapted"] == direct.metrics["adapted"]
    assert c.to_json()["rows"][1]["condition"] == {"name": "gaussian_noise", "severity": 3, "seed": 0}


def test_severity_curve_refuses_in_one_line(meanp, videos):
    with pytest.raises(AdaptError, match="severities must be integers 1..5"):
        adapt.severity_curve(meanp, videos, "tent", "v2t", "gaussian_noise", (0, 6))
    with pytest.raises(AdaptError, match="needs a perturbation"):
        adapt.severity_curve(meanp, videos, "tent", "v2t", "")


# ---- the task layer's adaptation cells (sweeps): the MdR convention, the timing and the memory's accuracy ---------
def test_retrieval_task_adaptation_cell_records_timing_memory_and_mdr(meanp, videos, bench, hat):
    from robustlab.perturb.condition import Condition
    from robustlab.tasks.conditions import ADAPT, adapt_condition
    from robustlab.tasks.registry import get as get_task

    conds = {"visual": Condition("gaussian_noise", 3), ADAPT: adapt_condition("hat-vtr", {"steps": 2})}
    r = get_task("retrieval").evaluate(meanp, videos, [conds], bench=bench, mdr="lower")[0]
    info = r.extra["adapt"]
    assert r.extra["mdr"] == "lower" and r.metrics["v2t"] == hat.metrics["adapted"]  # the fixture's run, the same
    assert set(info["timing"]["v2t"]) == {"prepare", "forward", "loss", "hsm", "memory", "backward"}
    assert info["memory_accuracy"]["v2t"] == hat.memory_curve("accuracy")
