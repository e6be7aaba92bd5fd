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


def _table(run, prefix):
    return next(d for title, _, d in report_tables(run)["protocol"] if title.startswith(prefix))


def test_mlvp_methods_by_types_with_level_means_and_avg_in_percent():
    p = load_protocol("mlvp")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10},
                        perturbations="mlvp_gaussian_noise,mlvp_fog,mlvp_defocus", text_perturbations="none",
                        severities="1,5")
    cells = [_res({}, 0.5), _res({"visual": _v("mlvp_gaussian_noise", 5)}, 0.10),
             _res({"visual": _v("mlvp_fog", 5)}, 0.30), _res({"visual": _v("mlvp_defocus", 5)}, 0.20),
             _res({"visual": _v("mlvp_gaussian_noise", 1)}, 0.40)]  # fog s1, defocus s1 not run yet
    run = _run(spec, cells)
    titles = [title for title, _, _ in report_tables(run)["protocol"]]
    # v2t is the paper's Table 1; no text shift ran, so no Table 3 (never a table of empty cells)
    assert titles[0] == "MLVP — Table 1: v2t R@1 (%) under video shifts"
    assert not any("Table 3" in x for x in titles)
    t = _table(run, "MLVP — Table 1:")
    head, body = t.iloc[0], t.iloc[1:].set_index("severity")
    # the paper's short names under a header row of its levels
    assert head["model"] == "(level)" and head["Gauss."] == "Low-Level" and head["Defocus"] == "Mid-Level"
    # the sweep left the other types out: no column for them (never a "pending" row for what was not swept)
    assert "Snow" not in t and "Motion" not in t and "pending" not in set(body.loc["s5"])
    s5 = body.loc["s5"]
    assert (s5["Gauss."], s5["Fog"], s5["Defocus"]) == ("10.0", "30.0", "20.0")  # percent, one decimal
    # each level's mean, labelled as the docstring says; every type of the level that was swept ran
    assert s5["Low-Level mean"] == "20.0" and s5["Mid-Level mean"] == "20.0"
    assert s5["Avg."] == "20.0"  # (10 + 30 + 20) / 3
    s1 = body.loc["s1"]
    assert s1["Gauss."] == "40.0" and s1["Fog"] == "pending" and s1["Low-Level mean"] == "40.0 (1 of 2)"
    assert s1["Avg."] == "40.0"
    # a type of the paper that cannot run here keeps its column and says so (AdaIN weights are not shipped)
    assert s5["Style"] == "not run here" and s5["High-Level mean"] == "—"


def test_mlvp_text_shifts_are_table_3_and_mixes_tables_17_18():
    p = load_protocol("mlvp")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10}, perturbations="mlvp_fog",
                        text_perturbations="ocr/mlvp", severities="5")
    cells = [_res({}, 0.5), _res({"visual": _v("mlvp_fog", 5)}, 0.30),
             _res({"text": _v("ocr/mlvp", 5)}, 0.5, t2v=0.25),
             _res({"visual": _v("mlvp_snow", 3) | {"mix": {"severities": [1, 2, 3, 4, 5]}}}, 0.15),
             _res({"visual": _v("mlvp_fog", 3) | {"mix": {"severities": [1, 2, 3, 4, 5]}}}, 0.35)] + [
        _res({"visual": _v("random-types", 3) | {"mix": {"severities": [1, 2, 3, 4, 5], "fraction": f,
                                                          "types": ["mlvp_fog", "mlvp_snow"]}}}, v)
        for f, v in ((0.2, 0.45), (0.4, 0.40))]
    run = _run(spec, cells)
    t1, t3 = _table(run, "MLVP — Table 1:"), _table(run, "MLVP — Table 3:")
    assert "OCR" not in t1 and "Fog" not in t3  # one side per table
    assert t3.iloc[0]["OCR"] == "Character-Level" and t3.iloc[1]["OCR"] == "25.0"  # t2v of the text-shifted cell
    assert t3.iloc[1]["Avg."] == "25.0" and t1.iloc[1]["Fog"] == "30.0"
    # the paper's order of tables, and of Table 17's columns (not the run's)
    titles = [title.split(":")[0] for title, _, _ in report_tables(run)["protocol"]]
    assert titles[:4] == ["MLVP — Table 1", "MLVP — Table 3", "MLVP — Table 17", "MLVP — Table 18"]
    t17, t18 = _table(run, "MLVP — Table 17:"), _table(run, "MLVP — Table 18:")
    assert list(t17.columns) == ["model", "Fog", "Snow", "Avg."]
    assert t17.loc[0, "Fog"] == "35.0" and t17.loc[0, "Avg."] == "25.0"
    assert (t18.loc[0, "20%"], t18.loc[0, "40%"], t18.loc[0, "Avg."]) == ("45.0", "40.0", "42.5")


def test_hat_vtr_methods_in_the_papers_order_in_percent():
    p = load_protocol("hat-vtr")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10}, perturbations="mlvp_fog,mlvp_snow",
                        text_perturbations="none", severities="5")

    def cell(name, method, v2t):
        conds = {"visual": _v(name, 5)} if name else {}
        r = _res(conds | ({"adapt": {"name": method, "severity": 1, "seed": 0}} if method else {}), v2t)
        return r
    # the run's order is not the paper's: the oracle and HAT-VTR first, no adaptation last
    cells = [_res({}, 0.5)] + [cell(n, m, v) for m, v in (("oracle", 0.9), ("hat-vtr", 0.4), ("tent", 0.2),
                                                          (None, 0.1)) for n in ("mlvp_fog", "mlvp_snow")]
    t = _table(run := _run(spec, cells), "HAT-VTR — Table 1:")
    body = t.iloc[1:]
    assert list(body["method"]) == ["no adaptation", "Tent", "Ours (HAT-VTR)", "oracle (ours only)"]
    assert list(body["Avg."]) == ["10.0", "20.0", "40.0", "90.0"] and "avg" not in t
    assert t.iloc[0]["Fog"] == "Low-Level" and body.iloc[1]["Snow"] == "20.0"
    assert not any("Table 3" in title for title, _, _ in report_tables(run)["protocol"])


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
    # one decimal, as text: a whole number keeps it ("60.0", not "60")
    assert list(t["accuracy"]) == ["60.0", "30.0", "20.0", "10.0", "59.0"]
    assert list(t["↓"]) == ["", "↓", "↓", "↓", ""]


def test_quag_delta_multiplication_ops_row_from_the_measured_count():
    p = load_protocol("quag-table1")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10})
    qa = _res({"intervention": {"name": "quag-attention:video-avg", "severity": 1, "seed": 0}}, 0, task="vqa",
              metrics={"accuracy": 0.59})
    qa.extra["multiplications"] = {"baseline": 1000, "intervened": 864, "saving": 0.136, "scope": "measured"}
    cells = [_res({}, 0, task="vqa", metrics={"accuracy": 0.6}), qa]
    t = next(d for title, _, d in report_tables(_run(spec, cells))["protocol"] if title.startswith("QUAG"))
    assert list(t["configuration"]) == ["baseline", "quag-attention:video-avg",
                                        "Δ multiplication ops, % decrease (quag-attention:video-avg)"]
    # a decrease, printed positive as the paper's "13.6%"
    assert t["accuracy"].iloc[-1] == "13.6% (measured: 864 of 1,000)"


def test_results_carry_qius_mean_recall_per_direction():
    p = load_protocol("mlvp")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10}, perturbations="mlvp_fog",
                        text_perturbations="none", severities="5")
    res = report_tables(_run(spec, [_res({}, 0.3, 0.2)]))["results"].iloc[0]
    assert res["v2t_mean_recall"] == pytest.approx((0.3 + 0.6 + 0.9) / 3)  # (R@1 + R@5 + R@10) / 3
    assert res["t2v_mean_recall"] == pytest.approx((0.2 + 0.4 + 0.6) / 3)


def test_peeling_table_ii_rows_acc_mmi_atcr_with_fips_corruptions():
    p = load_protocol("peeling")
    spec = p.build_spec(dataset={"name": "builtin-refs", "n": 10}, perturbations="fog,snow", severities="1")
    m = {"acc_original": 0.8, "acc_adv": 0.6, "mmi": 0.25, "oracle_tests_valid": 0.9, "tests": 7}
    cells = [result({}, m, task="peeling"),
             result({"visual": _v("fog", 1)}, m | {"acc_original": 0.6}, task="peeling")]  # snow not run yet
    title, note, t = next(x for x in report_tables(_run(spec, cells))["protocol"] if x[0].startswith("PEELING"))
    assert list(t["metric"]) == ["ACC", "MMI", "ATCR"]  # the paper's rows
    acc, mmi, atcr = (t.iloc[i] for i in range(3))
    assert (acc["Original"], acc["PEELING"], mmi["PEELING"], atcr["PEELING"]) == ("80.0", "60.0", "25.0", "90.0")
    assert (acc["QAQA"], acc["CAT"], acc["SIN"]) == ("not run here",) * 3
    # FIP's 15 columns, in the paper's order: the original expressions on the corrupted images, MMI vs the clean
    fip = [c for c in t.columns if c.startswith("FIP ")]
    assert fip[:3] == ["FIP Gaussian", "FIP Shot", "FIP Impulse"] and len(fip) == 15
    assert (acc["FIP Fog"], mmi["FIP Fog"], atcr["FIP Fog"]) == ("60.0", "25.0", "needs labels")  # (80-60)/80
    assert acc["FIP Snow"] == "pending" and acc["FIP Gaussian"] == "not swept"
    assert "severity 1" in note
