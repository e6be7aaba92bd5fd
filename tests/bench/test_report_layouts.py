"""Issue 48 (4): MLVP and QUAG tables in their papers' layout, on hand-made results whose values check by hand."""
import pytest

from _results import cond as _v, result, run_data as _run  # tests/bench/_results.py
from robustlab.bench.protocol import load_protocol
from robustlab.bench.report_data import report_tables
from robustlab.tasks.result import Result


def _res(conds: dict, v2t: float, t2v: float = 0.5, task="retrieval", metrics=None) -> Result:
    metrics = metrics or {d: {"R@1": r, "R@5": min(1.0, 2 * r), "R@10": min(1.0, 3 * r), "MdR": 3.0, "MnR": 4.0}
                          for d, r in (("v2t", v2t), ("t2v", t2v))}
    return result(conds, metrics, task=task)


def test_mlvp_methods_by_types_with_level_means_and_avg_in_percent():
    p = load_protocol("mlvp")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10},
                        perturbations="mlvp_gaussian_noise,mlvp_fog,mlvp_defocus", text_perturbations="none",
                        severities="1,5")
    cells = [_res({}, 0.5), _res({"visual": _v("mlvp_gaussian_noise", 5)}, 0.10),
             _res({"visual": _v("mlvp_fog", 5)}, 0.30), _res({"visual": _v("mlvp_defocus", 5)}, 0.20),
             _res({"visual": _v("mlvp_gaussian_noise", 1)}, 0.40)]  # fog s1, defocus s1 not run yet
    t = next(d for title, _, d in report_tables(_run(spec, cells))["protocol"] if title.startswith("MLVP"))
    head, body = t.iloc[0], t.iloc[1:].set_index("severity")
    assert head["model"] == "(level)" and head["mlvp_gaussian_noise"] == "Low" and head["mlvp_defocus"] == "Mid"
    # the sweep left the other types out: no column for them (never a "pending" row for what was not swept)
    assert "mlvp_snow" not in t and "mlvp_motion_blur/paper" not in t and "pending" not in set(body.loc["s5"])
    s5 = body.loc["s5"]
    assert (s5["mlvp_gaussian_noise"], s5["mlvp_fog"], s5["mlvp_defocus"]) == (10.0, 30.0, 20.0)  # percent
    assert s5["Low avg"] == "20.0" and s5["Mid avg"] == "20.0"  # every type of the level that was swept ran
    assert s5["Avg."] == pytest.approx(20.0)  # (10 + 30 + 20) / 3
    s1 = body.loc["s1"]
    assert s1["mlvp_gaussian_noise"] == 40.0 and s1["mlvp_fog"] == "pending" and s1["Low avg"] == "40.0 (1 of 2)"
    assert s1["Avg."] == pytest.approx(40.0)
    # a type of the paper that cannot run here keeps its column and says so (AdaIN weights are not shipped)
    assert s5["mlvp_style"] == "not run here" and s5["High avg"] == "—"


def test_quag_rows_in_the_papers_order():
    p = load_protocol("quag-table1")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10})
    acc = {"quag-attention:video-avg": 0.59, "quag:text": 0.1, "input:language-only": 0.3, "quag:unimodal": 0.2}
    cells = [_res({}, 0, task="vqa", metrics={"accuracy": 0.6})] + [
        _res({"intervention": {"name": name, "severity": 1, "seed": 0}}, 0, task="vqa", metrics={"accuracy": a})
        for name, a in acc.items()]  # the run's order (results.csv sorts them by name)
    t = next(d for title, _, d in report_tables(_run(spec, cells))["protocol"] if title.startswith("QUAG"))
    # Table 1's order: baseline, language-only, video-only, SC unimodal, crossmodal, video, text, QUAG-attention
    assert list(t["configuration"]) == ["baseline", "input:language-only", "quag:unimodal", "quag:text",
                                        "quag-attention:video-avg"]
    assert list(t["accuracy"]) == [60.0, 30.0, 20.0, 10.0, 59.0] and list(t["↓"]) == ["", "↓", "↓", "↓", ""]


def test_quag_delta_multiplication_ops_row_from_the_measured_count():
    p = load_protocol("quag-table1")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10})
    qa = _res({"intervention": {"name": "quag-attention:video-avg", "severity": 1, "seed": 0}}, 0, task="vqa",
              metrics={"accuracy": 0.59})
    qa.extra["multiplications"] = {"baseline": 1000, "intervened": 864, "saving": 0.136, "scope": "measured"}
    cells = [_res({}, 0, task="vqa", metrics={"accuracy": 0.6}), qa]
    t = next(d for title, _, d in report_tables(_run(spec, cells))["protocol"] if title.startswith("QUAG"))
    assert list(t["configuration"]) == ["baseline", "quag-attention:video-avg",
                                        "Δ multiplication ops (quag-attention:video-avg)"]
    assert t["accuracy"].iloc[-1] == "−13.6% (measured: 864 of 1,000)"


def test_results_carry_qius_mean_recall_per_direction():
    p = load_protocol("mlvp")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10}, perturbations="mlvp_fog",
                        text_perturbations="none", severities="5")
    res = report_tables(_run(spec, [_res({}, 0.3, 0.2)]))["results"].iloc[0]
    assert res["v2t_mean_recall"] == pytest.approx((0.3 + 0.6 + 0.9) / 3)  # (R@1 + R@5 + R@10) / 3
    assert res["t2v_mean_recall"] == pytest.approx((0.2 + 0.4 + 0.6) / 3)
