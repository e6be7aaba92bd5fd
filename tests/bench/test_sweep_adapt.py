"""Test-time adaptation as a sweep axis (issue 14): ``--adapt`` adds, for every single-axis shift, one cell per
method; the retrieval task runs robustlab.adapt on that side's queries; the report lays the cells out as HAT-VTR's
Tables 1–3; a model that cannot adapt a side is refused before any cell runs; sweeps resume as before."""
import json
import math

import pytest

from robustlab.bench import (Cell, SweepError, SweepSpec, condition_grid, parse_adapt, pending,
                                    run_sweep)
from robustlab.perturb.condition import Condition
from robustlab.tasks.conditions import ADAPT, adapt_condition, conditions_json, normalize

MODEL = "builtin:tiny-clip-video-meanp"


def test_parse_adapt_and_the_grid():
    tent, hat = parse_adapt("none,tent,hat-vtr", ["steps=1", "hat-vtr.capacity=8"])
    assert (tent.name, tent.severity, tent.variant) == ("tent", 1, "steps=1")
    assert hat.variant == "capacity=8,steps=1"
    # no diagnostic method in "all"; the paper's other baselines (READ, SAR, EATA: issue 48) are in it
    assert [c.name for c in parse_adapt("all")] == ["tent", "tcr", "hat-vtr", "read", "sar", "eata"]
    assert parse_adapt("none") == [] and parse_adapt(None) == []
    # parameters are checked and canonical: the same setting is the same cell
    assert adapt_condition("tcr", {"lr": "3e-4"}) == adapt_condition("tcr", {"lr": 0.0003})
    for text, params, msg in [("tent,bogus", [], "unknown adaptation method 'bogus'"),
                              ("tent", ["stepz=1"], "has a parameter 'stepz'"),
                              ("tent", ["steps=0"], "steps must be an integer in [1, 100]"),
                              ("tent", ["tcr.t=1"], "'tcr' is not among the --adapt methods"),
                              ("none", ["steps=1"], "needs --adapt")]:
        with pytest.raises(SweepError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            parse_adapt(text, params)

    g = condition_grid(["gaussian_noise"], [3], ["keyboard"], [3], combine="none", adapt=[tent, hat])
    vis, txt = Condition("gaussian_noise", 3), Condition("keyboard", 3)
    assert g == [{}, {"visual": vis}, {"visual": vis, ADAPT: tent}, {"visual": vis, ADAPT: hat},
                 {"text": txt}, {"text": txt, ADAPT: tent}, {"text": txt, ADAPT: hat}]
    # only the shifts whose queries the sweep's directions use; "none" adds nothing
    g = condition_grid(["gaussian_noise"], [3], ["keyboard"], [3], combine="none", adapt=["none", "tent"],
                       directions=["t2v"])
    assert [set(c) for c in g] == [set(), {"visual"}, {"text"}, {"text", ADAPT}]
    # results and cell keys without the axis are what they were; with it, keys stay unique and file-safe
    assert set(conditions_json({"visual": vis})) == {"visual", "text"}
    assert conditions_json({"visual": vis, ADAPT: tent})[ADAPT] == {"name": "tent", "severity": 1, "seed": 0,
                                                                     "variant": "steps=1"}
    assert normalize({"visual": "gaussian_noise:3", ADAPT: "tent/steps=1"}) == {"visual": vis, ADAPT: tent}
    assert normalize({"visual": "gaussian_noise:3", ADAPT: "none"}) == {"visual": vis}
    cells = [Cell(MODEL, "retrieval", c) for c in condition_grid(["gaussian_noise"], [3], ["keyboard"], [3],
                                                                 combine="none", adapt=[tent, hat])]
    keys = [c.key for c in cells]
    assert len(set(keys)) == len(keys) and all(k.replace("-", "").replace("_", "").replace(".", "").isalnum()
                                               for k in keys)
    assert "visual-gaussian-noise-s3-adapt-tent-steps-1" in keys[2]


def _spec(**kw):
    return SweepSpec(models=[MODEL], dataset={"name": "builtin-videos", "split": "test", "n": 32},
                     conditions=condition_grid(["gaussian_noise"], [3], adapt=parse_adapt("none,tent", ["steps=1"])),
                     **kw)


def test_sweep_cells_report_table_and_resume(tmp_path):
    from robustlab.bench.report import load_run, report_tables, write_report

    out = tmp_path / "run"
    spec = _spec()
    st = run_sweep(spec, out)
    assert st.done == st.total == 3 and st.skipped == 0
    cells = {c.key: json.loads((out / "cells" / f"{c.key}.json").read_text()) for c in spec.cells()}
    clean, shifted, tent = (cells[c.key] for c in spec.cells())
    assert tent["conditions"][ADAPT] == {"name": "tent", "severity": 1, "seed": 0, "variant": "steps=1"}
    assert set(tent["metrics"]) == {"v2t"}  # a visual shift adapts the video queries only
    assert set(tent["metrics"]["v2t"]) == {"R@1", "R@5", "R@10", "MdR", "MnR"}
    info = tent["extra"]["adapt"]
    assert info["method"] == "tent" and info["side"] == "visual" and info["params"]["v2t"]["steps"] == 1
    assert info["per_1000_queries"]["v2t"] > 0 and info["queries"]["v2t"] == 32
    # the same queries as the clean and shifted cells (one bench for the model)
    assert info["clean"]["v2t"] == clean["metrics"]["v2t"] and info["shifted"]["v2t"] == shifted["metrics"]["v2t"]

    csv_path, html_path = write_report(out)
    tables = report_tables(load_run(out))
    t = tables["adaptation"]
    assert list(t.columns) == ["model", "task", "dataset", "direction", "metric", "perturbation", "severity",
                               "clean", "none", "tent (steps=1)", "best", "n"]
    assert list(t["perturbation"]) == ["gaussian_noise", "mean"] and set(t["severity"]) == {3}
    assert set(t["direction"]) == {"v2t"}
    row = t.iloc[0]
    assert row["clean"] == clean["metrics"]["v2t"]["R@1"] and row["none"] == shifted["metrics"]["v2t"]["R@1"]
    assert row["tent (steps=1)"] == tent["metrics"]["v2t"]["R@1"]
    top = max(row["none"], row["tent (steps=1)"])
    assert set(row["best"].split(" = ")) == {k for k in ("none", "tent (steps=1)") if math.isclose(row[k], top)}
    assert t.iloc[1]["none"] == row["none"]  # the mean of one perturbation
    # the adaptation cell stays out of the robustness tables (their metric is still the clean headline)
    res = tables["results"]
    assert set(res["metric"]) == {"t2v_R@1"} and list(res["adapt"]) == ["none", "none", "tent (steps=1)"]
    assert (tables["robustness"]["axis"] == "visual").all()
    html = html_path.read_text()
    assert "Test-time adaptation (HAT-VTR, Tables 1–3)" in html and "tent (steps=1)" in html
    assert (out / "adaptation.csv").is_file()

    # resumable: nothing to run again; a lost adaptation cell is the only one recomputed, to the same numbers
    st2 = run_sweep(spec, out)
    assert st2.done == 0 and st2.skipped == 3
    tent_cell = spec.cells()[2]
    (out / "cells" / f"{tent_cell.key}.json").unlink()
    assert pending(spec, out) == [tent_cell]
    assert load_run(out).missing() == [f"{MODEL} · retrieval · visual gaussian_noise s3, adapt tent (steps=1)"]
    st3 = run_sweep(spec, out)
    assert st3.done == 1 and st3.skipped == 2
    again = json.loads((out / "cells" / f"{tent_cell.key}.json").read_text())
    assert again["metrics"] == tent["metrics"]


def test_preflight_refuses_a_model_that_cannot_adapt_that_side(tmp_path):
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 8},
                     conditions=condition_grid(["contrast"], [3], adapt=["tent"]))
    with pytest.raises(SweepError, match="builtin:tiny-clip has no LayerNorm on its image side") as e:
        run_sweep(spec, tmp_path / "run")
    assert "\n" not in str(e.value)
    assert not (tmp_path / "run").exists()  # before any cell (and before sweep.json)
    # directions that leave the adapted side out, and tasks that take no adaptation: one line too
    with pytest.raises(SweepError, match="runs in i2t"):
        run_sweep(SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 8},
                            conditions=[{"visual": Condition("contrast", 3), ADAPT: adapt_condition("tent")}],
                            directions=["t2i"]), tmp_path / "r2")
    with pytest.raises(SweepError, match="itm takes no test-time adaptation"):
        run_sweep(SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 8},
                            tasks=["retrieval", "itm"],
                            conditions=[{"text": Condition("keyboard", 3), ADAPT: adapt_condition("tent")}]),
                  tmp_path / "r3")


def test_cli_bench_adapt_refusal_is_one_line(tmp_path, capsys):
    from robustlab.cli import main

    rc = main(["bench", "--models", "builtin:tiny-clip", "--dataset", "builtin", "--n", "8", "--perturbations",
               "contrast", "--severities", "3", "--adapt", "none,tent", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("robustlab:")]
    assert rc == 2 and len(lines) == 1 and "no LayerNorm on its image side" in lines[0], err
    assert "Traceback" not in err


def test_adapt_table_layout_means_best_and_fallbacks(tmp_path):
    """Hand-made cells with known R@1: rows per perturbation and severity, a mean row per severity, the best
    method per row (never the diagnostic oracle), and clean / shifted from the adaptation cells' own record when
    the run lacks those cells."""
    from robustlab.bench.report import load_run, report_tables
    from robustlab.tasks.result import Result

    def c(v=None, vs=0, t=None, ts=0, a=None):
        d = {"visual": {"name": v, "severity": vs, "seed": 0} if v else {"name": None},
             "text": {"name": t, "severity": ts, "seed": 0} if t else {"name": None}}
        return d | ({ADAPT: {"name": a, "severity": 1, "seed": 0}} if a else {})

    def m(d, r1):
        return {d: {"R@1": r1, "R@5": r1, "R@10": r1, "MdR": 1.0, "MnR": 1.0}}
    both = m("t2v", .9) | m("v2t", .8)
    cells = [(c(), both, {})]
    shifted = {("gaussian_noise", 1): .5, ("gaussian_noise", 3): .3, ("jumble", 1): .6}  # jumble 3 has no cell
    for (p, s), v in shifted.items():
        cells.append((c(p, s), m("t2v", .7) | m("v2t", v), {}))
    adapted = {"tent": {("gaussian_noise", 1): .55, ("gaussian_noise", 3): .3, ("jumble", 1): .6, ("jumble", 3): .2},
               "hat-vtr": {("gaussian_noise", 1): .6, ("gaussian_noise", 3): .35, ("jumble", 1): .5,
                           ("jumble", 3): .25},
               "oracle": {k: .99 for k in [("gaussian_noise", 1), ("gaussian_noise", 3), ("jumble", 1),
                                           ("jumble", 3)]}}
    for meth, vals in adapted.items():
        for (p, s), v in vals.items():
            info = {"adapt": {"method": meth, "clean": m("v2t", .8), "shifted": m("v2t", shifted.get((p, s), .1)),
                              "per_1000_queries": {"v2t": 2.0}}}
            cells.append((c(p, s, a=meth), m("v2t", v), info))
    cells.append((c(t="keyboard", ts=2), m("t2v", .4) | m("v2t", .8), {}))
    cells.append((c(t="keyboard", ts=2, a="tent"), m("t2v", .45), {"adapt": {"per_1000_queries": {"t2v": 1.0}}}))
    root = tmp_path / "run"
    for i, (cd, met, extra) in enumerate(cells):
        key = f"retrieval__x__{i:03d}"
        Result(model="x", model_fingerprint="fp", dataset="builtin-videos", split="test", task="retrieval",
               conditions=cd, n=50, metrics=met, extra={"cell": key, **extra}).save(root / "cells" / f"{key}.json")
    (root / "sweep.json").write_text(json.dumps({"models": ["x"], "tasks": ["retrieval"], "conditions":
                                                 [cd for cd, _, _ in cells], "directions": None, "name": "r"}))
    tables = report_tables(load_run(root))
    t = tables["adaptation"]
    assert list(t.columns) == ["model", "task", "dataset", "direction", "metric", "perturbation", "severity", "clean",
                               "none", "tent", "hat-vtr", "oracle", "best", "n"]
    assert list(t["direction"]) == ["t2v"] * 2 + ["v2t"] * 6  # the dataset's order: text queries first
    v = t[t["direction"] == "v2t"].set_index(["perturbation", "severity"])
    assert list(v.index) == [("gaussian_noise", 1), ("gaussian_noise", 3), ("jumble", 1), ("jumble", 3),
                             ("mean", 1), ("mean", 3)]
    assert (v["clean"] == .8).all()
    assert v.loc[("jumble", 3), "none"] == pytest.approx(.1)  # no shifted cell: what the adaptation cells measured
    assert v.loc[("mean", 1), "hat-vtr"] == pytest.approx((.6 + .5) / 2)
    assert v.loc[("mean", 3), "none"] == pytest.approx((.3 + .1) / 2)
    assert list(v["best"]) == ["hat-vtr", "hat-vtr", "none = tent", "hat-vtr", "tent", "hat-vtr"]
    tx = t[t["direction"] == "t2v"].iloc[0]
    assert (tx["perturbation"], tx["clean"], tx["none"], tx["tent"], tx["best"]) == ("keyboard (text)", .9, .4, .45,
                                                                                      "tent")
    res = tables["results"]
    assert set(res["metric"]) == {"t2v_R@1"}  # the adaptation cells (one direction each) never set the headline
    assert res.loc[res["adapt"] != "none", "adapt_s_per_1000q"].notna().all()
