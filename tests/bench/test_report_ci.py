"""The report's confidence columns (robustlab.bench.report_ci): intervals from the cells' ranks, the paired bootstrap
against clean and between models, R@K Error, the model fields, the headline parameter and extra HTML sections —
over run folders of hand-made Results whose ranks are known."""
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from robustlab.bench.report import load_run, report_figures, report_tables, results_table, write_report
from robustlab.bench.report_figures import marker_sizes
from robustlab.bench.spec import SweepSpec
from robustlab.metrics import bootstrap as bs
from robustlab.metrics.retrieval import summarize_ranks
from robustlab.tasks.result import Result

DS = {"name": "builtin-videos", "root": None, "split": "test", "n": 40, "options": {}}
N = 40
A, B = "builtin:model-a", "builtin:model-b"


def cond(v=None, s=0):
    return {"visual": {"name": v, "severity": s, "seed": 0} if v else {"name": None}, "text": {"name": None}}


def make_run(root: Path, cells, sweep_extra=None):
    """``cells``: (model, conditions, {direction: ranks}, extra)."""
    root = Path(root)
    conds, mods = [], []
    for i, (model, c, rk, extra) in enumerate(cells):
        key = f"retrieval__{model.replace(':', '-')}__{i:03d}"
        metrics = {d: summarize_ranks(np.asarray(r)) for d, r in rk.items()}
        Result(model=model, model_fingerprint=model + "-fp", dataset=DS["name"], split="test", task="retrieval",
               conditions=c, n=N, metrics=metrics,
               extra={"cell": key, "ranks": {d: [int(x) for x in r] for d, r in rk.items()}, **extra}
               ).save(root / "cells" / f"{key}.json")
        conds += [c] if c not in conds else []
        mods += [model] if model not in mods else []
    spec = {"schema": 1, "name": root.name, "models": mods, "dataset": DS, "tasks": ["retrieval"],
            "conditions": conds, "directions": None, "worst": 3, "versions": {}, **(sweep_extra or {})}
    (root / "sweep.json").write_text(json.dumps(spec))
    return root


PERFECT = [1] * N
HALF = [1] * 20 + [9] * 20  # R@1 .5, R@5 .5, R@10 1
NOISY = [1] * 36 + [2] * 4  # R@1 .9: close to clean


@pytest.fixture()
def run(tmp_path):
    return make_run(tmp_path / "r", [
        (A, cond(), {"t2v": PERFECT, "v2t": PERFECT}, {"n_params": 1_000_000}),
        (A, cond("gaussian_noise", 3), {"t2v": HALF, "v2t": HALF}, {"n_params": 1_000_000}),
        (A, cond("jpeg", 1), {"t2v": PERFECT, "v2t": PERFECT}, {"n_params": 1_000_000}),
        (B, cond(), {"t2v": NOISY, "v2t": PERFECT}, {"n_params": 4_000_000, "regime": "zero-shot"}),
        (B, cond("gaussian_noise", 3), {"t2v": HALF, "v2t": HALF}, {"n_params": 4_000_000, "regime": "zero-shot"}),
        (B, cond("jpeg", 1), {"t2v": NOISY, "v2t": PERFECT}, {"n_params": 4_000_000, "regime": "zero-shot"}),
    ], {"fields": {"regime": {A: "scratch"}, "pretraining": {A: "none", B: "web"}}})


def test_intervals_hand_checkable(run):
    df = results_table(load_run(run))
    a = df[df["model"] == A].set_index("condition")
    # every query at rank 1: the interval of R@1 is [1, 1], of MdR [1, 1]
    assert (a.loc["clean", "t2v_R@1_lo"], a.loc["clean", "t2v_R@1_hi"]) == (1.0, 1.0)
    assert (a.loc["clean", "score_lo"], a.loc["clean", "score_hi"]) == (1.0, 1.0)
    assert (a.loc["clean", "t2v_MdR_lo"], a.loc["clean", "t2v_MdR_hi"]) == (1.0, 1.0)
    assert (a.loc["clean", "RSUM_lo"], a.loc["clean", "RSUM_hi"]) == (600.0, 600.0)  # the papers' 0..600
    # half the queries at rank 1: the interval is the bootstrap's, exactly (seed 0, 1,000 resamples)
    lo, hi = bs.ci(HALF, ["R@1"])["R@1"]
    g = a.loc["visual gaussian_noise s3"]
    assert (g["t2v_R@1_lo"], g["t2v_R@1_hi"]) == (lo, hi) and lo < 0.5 < hi
    assert (g["score_lo"], g["score_hi"]) == (lo, hi)  # the headline is t2v R@1
    assert (g["RSUM_lo"], g["RSUM_hi"]) == pytest.approx(tuple(100 * x for x in bs.rsum_ci({"t2v": HALF, "v2t": HALF})))
    # R@K Error (Schiappa et al.'s results schema) = R_p - R_c: half the queries lost at R@1, none at R@10; none for
    # ranks; 0 on the clean cell
    assert g["t2v_R@1_error"] == pytest.approx(-0.5) and g["t2v_R@10_error"] == pytest.approx(0.0)
    assert a.loc["clean", "t2v_R@1_error"] == 0.0
    assert "t2v_MdR_error" not in df


def test_paired_against_clean_marks_what_holds(run):
    df = results_table(load_run(run))
    a = df[df["model"] == A].set_index("condition")
    drop = a.loc["visual gaussian_noise s3"]
    assert drop["delta"] == pytest.approx(-0.5) and drop["delta_hi"] < 0 and drop["holds"] == True  # noqa: E712
    p = bs.paired(HALF, PERFECT, "R@1")
    assert (drop["delta_lo"], drop["delta_hi"]) == (p["lo"], p["hi"])
    # γʳ = p / c per resample: the clean cell is 1 in every resample, so γʳ's interval is the score's
    assert (drop["gamma_r_lo"], drop["gamma_r_hi"]) == (drop["score_lo"], drop["score_hi"])
    assert drop["mmi_lo"] == pytest.approx(1 - drop["gamma_r_hi"]) and drop["gamma_a_lo"] == drop["score_lo"]
    same = a.loc["visual jpeg s1"]
    assert same["delta"] == 0 and (same["delta_lo"], same["delta_hi"]) == (0.0, 0.0) and same["holds"] == False  # noqa: E712,E501
    assert pd.isna(a.loc["clean", "holds"]) and math.isnan(a.loc["clean", "delta"])


def test_between_models_per_condition(run):
    t = report_tables(load_run(run))["models"]
    assert set(t["condition"]) == {"clean", "visual gaussian_noise s3", "visual jpeg s1"}
    clean = t[t["condition"] == "clean"].iloc[0]
    assert (clean["model_a"], clean["model_b"]) == (A, B)
    # 1.0 vs 0.9: B misses 4 of the 40 queries A gets, and no query goes the other way, so every resample with
    # one of them favours A: the interval [0.025, 0.2] excludes 0 (a resample without any of the four, the only
    # way to reach 0, has probability 0.9^40 = 1.5 % < 2.5 %)
    assert clean["delta"] == pytest.approx(0.1)
    p = bs.paired(PERFECT, NOISY, "R@1")
    assert (clean["delta_lo"], clean["delta_hi"], clean["holds"]) == (p["lo"], p["hi"], p["holds"])
    assert clean["holds"] and clean["delta_lo"] > 0
    g = t[t["condition"] == "visual gaussian_noise s3"].iloc[0]
    assert g["delta"] == 0 and not g["holds"]


def test_fields_regime_and_params(run):
    df = results_table(load_run(run))
    by = df.drop_duplicates("model").set_index("model")
    assert by.loc[A, "regime"] == "scratch"  # the sweep's field
    assert by.loc[B, "regime"] == "zero-shot"  # what the model declared
    assert by.loc[A, "n_params"] == 1_000_000 and by.loc[B, "n_params"] == 4_000_000
    assert by.loc[B, "field_pretraining"] == "web"
    # the scatter's markers: area proportional to the parameter count
    fig = report_figures(load_run(run))["scatter"]
    sizes = dict(zip(fig.data[0].text, fig.data[0].marker.size))
    assert sizes[B] == pytest.approx(2 * sizes[A])
    assert "marker area: parameter count" in fig.layout.title.text
    assert marker_sizes([A, B], {A: 10}) == [12.0, 12.0]  # a count unknown: no sizing


@pytest.mark.parametrize("headline,metric", [(None, "t2v_R@1"), ("R@5", "t2v_R@5"), ("RSUM", "RSUM"),
                                             ("MdR", "t2v_MdR")])
def test_headline_parameter(run, headline, metric):
    df = results_table(load_run(run), headline=headline)
    assert set(df["metric"]) == {metric}
    r = df[(df["model"] == A) & (df["condition"] == "visual gaussian_noise s3")].iloc[0]
    assert (r["score_lo"], r["score_hi"]) == (r[f"{metric}_lo"], r[f"{metric}_hi"])


def test_headline_from_the_spec_and_the_parameter_wins(tmp_path):
    root = make_run(tmp_path / "h", [(A, cond(), {"t2v": HALF, "v2t": HALF}, {})], {"report": {"headline": "RSUM"}})
    assert set(results_table(load_run(root))["metric"]) == {"RSUM"}
    assert set(results_table(load_run(root), headline="R@10")["metric"]) == {"t2v_R@10"}


def test_results_csv_html_and_extra_sections(run):
    sections = [("Protocol table", pd.DataFrame({"x": [1], "y": ["<b>"]})),
                {"title": "Another", "note": "a note", "tables": [("sub", "<p id='mine'>ok</p>")]}]
    csv, html = write_report(run, headline="R@5", sections=sections)
    got = pd.read_csv(csv)
    for c in ("t2v_R@5_lo", "t2v_R@5_hi", "t2v_R@5_error", "score_lo", "delta_lo", "holds", "regime", "n_params"):
        assert c in got.columns, c
    assert (Path(run) / "differences.csv").is_file()
    text = html.read_text()
    assert "Which differences hold (paired bootstrap)" in text and "✓ holds" in text
    assert "1 [1, 1]" in text  # a clean score with its interval
    assert "Protocol table</h2>" in text and "&lt;b&gt;" in text  # a DataFrame section, escaped
    assert "Another</h2>" in text and "<p id='mine'>ok</p>" in text  # an HTML section, as given
    assert text.index("Another</h2>") < text.index("Worst examples per perturbation")


def test_cells_without_ranks_have_no_interval(tmp_path):
    root = make_run(tmp_path / "old", [(A, cond(), {"t2v": PERFECT, "v2t": PERFECT}, {}),
                                       (A, cond("jpeg", 1), {"t2v": HALF, "v2t": HALF}, {})])
    for p in (root / "cells").glob("*.json"):  # a run made before the ranks were kept
        d = json.loads(p.read_text())
        del d["extra"]["ranks"]
        p.write_text(json.dumps(d))
    df = results_table(load_run(root))
    assert df["score_lo"].isna().all() and df["holds"].isna().all()
    assert df["t2v_R@1_error"].tolist() == [0.0, -0.5]


def test_spec_fields_and_report_round_trip():
    s = SweepSpec(models=[A], dataset=dict(DS), fields={"regime": {A: "fine-tuned"}}, report={"headline": "R@5"})
    d = s.to_json()
    assert d["fields"] == {"regime": {A: "fine-tuned"}} and d["report"] == {"headline": "R@5"}
    back = SweepSpec.from_json(json.loads(json.dumps(d)))
    assert back.fields == s.fields and back.report == s.report
    assert "fields" not in SweepSpec(models=[A], dataset=dict(DS)).to_json()  # unchanged sweep.json without them


def test_cell_files_hold_the_ranks_on_one_line(tmp_path):
    from robustlab.bench.cells import CellOutput, write_output

    res = {"model": A, "metrics": {"t2v": {"R@1": 1.0}}, "extra": {"ranks": {"t2v": list(range(1, 1001)),
                                                                           "v2t": [1] * 1000}, "cell": "k"}}
    path = write_output(tmp_path, CellOutput("k", res, {}, 0.5))
    text = path.read_text()
    assert json.loads(text)["extra"]["ranks"] == res["extra"]["ranks"]
    assert json.loads(text)["extra"]["seconds"] == 0.5
    assert len(text.splitlines()) < 20 and len(text) < 12_000  # not a line per rank


def test_robustness_rows_carry_intervals_of_the_aggregates(run):
    rob = report_tables(load_run(run))["robustness"]
    a = rob[rob["model"] == A].set_index(["level", "name"])
    lo, hi = bs.ci(HALF, ["R@1"])["R@1"]  # clean is 1 in every resample: γʳ = the perturbed R@1
    noise = a.loc[("perturbation", "gaussian_noise")]
    assert (noise["gamma_r_lo"], noise["gamma_r_hi"]) == pytest.approx((lo, hi))
    assert (a.loc[("perturbation", "jpeg"), "gamma_r_lo"], a.loc[("perturbation", "jpeg"), "gamma_r_hi"]) == (1, 1)
    # overall: the mean over the two perturbations, resample by resample -> ((lo + 1) / 2, (hi + 1) / 2)
    over = a.loc[("overall", "all")]
    assert over["gamma_r"] == pytest.approx(0.75)
    assert (over["gamma_r_lo"], over["gamma_r_hi"]) == pytest.approx(((lo + 1) / 2, (hi + 1) / 2))
    assert over["mmi_lo"] == pytest.approx(1 - over["gamma_r_hi"])


def test_a_cell_with_dropped_text_queries_is_paired_on_the_queries_it_kept(tmp_path):
    """MLVP's similarity filter drops text queries: the clean cell's ranks lose the same queries before pairing."""
    clean = [1] * 20 + [30] * 20  # queries 20..39 are the clean model's failures
    kept = [i for i in range(N) if i not in range(20, 30)]  # the text condition dropped queries 20..29
    pert = [1] * 20 + [30] * 10  # the same queries as clean, one for one: no difference at all
    tc = {"visual": {"name": None}, "text": {"name": "word_swap", "severity": 3, "seed": 0, "variant": "mlvp"}}
    root = make_run(tmp_path / "d", [
        (A, cond(), {"t2v": clean, "v2t": PERFECT}, {}),
        (A, tc, {"t2v": pert, "v2t": PERFECT}, {"dropped": {"n": 10, "of": N, "queries": list(range(20, 30))}})])
    df = results_table(load_run(root))
    row = df[df["axes"] == "text"].iloc[0]
    assert len(kept) == len(pert)
    # paired on the 30 kept queries: identical ranks -> the difference is exactly 0, and it does not hold
    assert row["delta_lo"] == 0.0 and row["delta_hi"] == 0.0 and not row["holds"]


# ---- the summary claims only what the paired bootstrap supports (issue 45, defect 3) ------------------------------
def _ranks(rng, n_top, n=N):
    """``n`` ranks of which ``n_top`` are rank 1 (shuffled), the rest rank 20."""
    r = np.array([1] * n_top + [20] * (n - n_top))
    rng.shuffle(r)
    return r.tolist()


def test_the_summary_says_no_difference_where_the_paired_bootstrap_rejects_one(tmp_path):
    """Two models whose γʳ differ a little (0.90 vs 0.85 on 40 queries): on the main of 2026-11-28 the summary said
    "builtin:model-a is more robust to video perturbations (γʳ 0.90 vs 0.85 …)"; the interval contains 0, so it
    now says the difference can't be told apart at n = 40 and gives the interval."""
    from robustlab.bench.report_summary import summary

    rng = np.random.default_rng(0)
    clean = _ranks(rng, 40)
    root = make_run(tmp_path / "r", [
        (A, cond(), {"t2v": clean, "v2t": clean}, {}),
        (A, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 36), "v2t": clean}, {}),
        (B, cond(), {"t2v": clean, "v2t": clean}, {}),
        (B, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 34), "v2t": clean}, {})])
    run = load_run(root)
    t = report_tables(run)
    g = t["gamma_models"]
    assert len(g) == 1 and g.iloc[0]["delta"] == pytest.approx(0.05) and not g.iloc[0]["holds"]
    assert g.iloc[0]["delta_lo"] < 0 < g.iloc[0]["delta_hi"]
    lines = summary(run, t)
    first = lines[0]
    assert first.startswith("No difference in robustness to video perturbations between builtin:model-a and "
                            "builtin:model-b that we can tell apart at n = 40 (γʳ 0.90 vs 0.85; difference +0.05, "
                            "95 % CI −"), first
    assert not any(" is more robust" in s or " is better" in s for s in lines), lines
    clean_line = lines[1]  # both are perfect clean: equal, no claim either
    assert clean_line.startswith("No difference in clean text→video R@1") and "(both text→video R@1 1.00;" in clean_line


def test_the_summary_claims_a_difference_that_holds_with_its_interval(tmp_path):
    from robustlab.bench.report_summary import summary

    rng = np.random.default_rng(1)
    clean = _ranks(rng, 40)
    root = make_run(tmp_path / "r", [
        (A, cond(), {"t2v": clean, "v2t": clean}, {}),
        (A, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 38), "v2t": clean}, {}),
        (B, cond(), {"t2v": clean, "v2t": clean}, {}),
        (B, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 10), "v2t": clean}, {})])
    run = load_run(root)
    t = report_tables(run)
    g = t["gamma_models"].iloc[0]
    assert g["holds"] and g["delta_lo"] > 0
    first = summary(run, t)[0]
    ci = f"95 % CI +{g['delta_lo']:.2f} to +{g['delta_hi']:.2f}"
    assert first == (f"builtin:model-a is more robust to video perturbations (γʳ 0.95 vs 0.25 for builtin:model-b; "
                     f"difference +0.70, {ci}, paired bootstrap at n = 40)."), first


def test_with_three_models_only_the_pairs_that_hold_are_ordered(tmp_path):
    from robustlab.bench.report_summary import summary

    rng = np.random.default_rng(2)
    clean = _ranks(rng, 40)
    c = "builtin:model-c"
    root = make_run(tmp_path / "r", [
        (A, cond(), {"t2v": clean, "v2t": clean}, {}),
        (A, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 38), "v2t": clean}, {}),
        (B, cond(), {"t2v": clean, "v2t": clean}, {}),
        (B, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 37), "v2t": clean}, {}),
        (c, cond(), {"t2v": clean, "v2t": clean}, {}),
        (c, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 8), "v2t": clean}, {})])
    run = load_run(root)
    t = report_tables(run)
    first = summary(run, t)[0]
    assert first.startswith("Robustness to video perturbations (γʳ builtin:model-a 0.95, builtin:model-b 0.93, "
                            "builtin:model-c 0.20); differences that hold: builtin:model-a over builtin:model-c"), first
    assert "builtin:model-b over builtin:model-c" in first and "the other pair can't be told apart at n = 40" in first
    assert "the most robust" not in first


def test_heatmaps_share_one_colour_scale_print_no_negative_zero_and_no_empty_combined_section(tmp_path):
    """Issue 45's report polish: every model's heatmap uses the run's colour range (so two models read alike), a
    cell never prints "-0.00", and a run with no cell perturbed on both axes has no "combined" section."""
    from robustlab.bench.report_figures import heatmap

    rng = np.random.default_rng(3)
    clean = _ranks(rng, 40)
    root = make_run(tmp_path / "r", [
        (A, cond(), {"t2v": clean, "v2t": clean}, {}),
        (A, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 38), "v2t": clean}, {}),
        (A, cond("jpeg", 1), {"t2v": clean, "v2t": clean}, {}),
        (B, cond(), {"t2v": clean, "v2t": clean}, {}),
        (B, cond("gaussian_noise", 3), {"t2v": _ranks(rng, 10), "v2t": clean}, {}),
        (B, cond("jpeg", 1), {"t2v": clean, "v2t": clean}, {})])
    run = load_run(root)
    df = report_tables(run)["results"]
    figs = [heatmap(df, m) for m in (A, B)]
    ranges = {(f.data[0].zmin, f.data[0].zmax, f.data[1].zmin, f.data[1].zmax) for f in figs}
    assert len(ranges) == 1, ranges  # one colour scale per metric across the models
    zmin, zmax, dmin, dmax = ranges.pop()
    assert (zmin, zmax) == (pytest.approx(0.25), pytest.approx(1.0)) and dmax == -dmin == pytest.approx(0.75)
    texts = [t for f in figs for tr in f.data for row in tr.text for t in row]
    assert "-0.00" not in texts and "0.00" in texts  # jpeg leaves the score as it is: a drop of 0, printed 0.00
    html = write_report(root)[1]
    assert "Visual and text perturbations combined" not in html.read_text()
