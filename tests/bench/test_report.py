"""The sweep report (robustlab.bench.report) over run folders built from hand-made Results with known numbers."""
import io
import json
import math
import re
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from robustlab.bench.report import (
    describe,
    headline,
    load_run,
    natural,
    report_figures,
    report_tables,
    results_table,
    write_report,
)
from robustlab.metrics.retrieval import rsum
from robustlab.metrics.robustness import robustness, robustness_table
from robustlab.tasks.result import Result

DS = {"name": "builtin-videos", "root": None, "split": "test", "n": 50, "options": {}}


def cond(v=None, vs=0, t=None, ts=0):
    return {"visual": {"name": v, "severity": vs, "seed": 0} if v else {"name": None},
            "text": {"name": t, "severity": ts, "seed": 0} if t else {"name": None}}


def ret(r1, kind="video"):
    """Retrieval metrics with t2* R@1 = r1 (and known R@5, R@10 and the other direction)."""
    a, b = ("t2v", "v2t") if kind == "video" else ("t2i", "i2t")
    return {a: {"R@1": r1, "R@5": min(1.0, r1 + .1), "R@10": min(1.0, r1 + .15), "MdR": 2.0, "MnR": 3.5},
            b: {"R@1": r1 / 2, "R@5": r1, "R@10": min(1.0, r1 + .05), "MdR": 3.0, "MnR": 4.0},
            f"{a}_R@1_reversed": r1 / 3}


def make_run(root: Path, cells, task="retrieval", models=None, conditions=None, dataset=DS, directions=None):
    """A run folder exactly as the runner writes it; ``cells``: (model, conditions, metrics[, extra])."""
    root = Path(root)
    conds, mods = [], []
    for i, cell in enumerate(cells):
        model, c, metrics = cell[:3]
        extra = cell[3] if len(cell) > 3 else {}
        key = f"{task}__{model.replace(':', '-')}__{i:03d}"
        Result(model=model, model_fingerprint=model + "-fp", dataset=dataset["name"], split="test", task=task,
               conditions=c, n=50, metrics=metrics, extra={"cell": key, "seconds": 0.1, **extra},
               dataset_params={"n": 50}).save(root / "cells" / f"{key}.json")
        conds += [c] if c not in conds else []
        mods += [model] if model not in mods else []
    spec = {"schema": 1, "name": root.name, "models": models or mods, "dataset": dataset, "tasks": [task],
            "conditions": conditions or conds, "directions": directions, "worst": 3,
            "created": "2026-01-01T00:00:00", "versions": {}}
    (root / "sweep.json").write_text(json.dumps(spec))
    return root


def basic_cells(model="builtin:tiny-clip-video-meanp", clean=0.8, kind="video"):
    """One model: clean, jumble (temporal) and gaussian_noise (noise) at severities 1 and 3."""
    vals = {("jumble", 1): .6, ("jumble", 3): .4, ("gaussian_noise", 1): .7, ("gaussian_noise", 3): .5}
    return [(model, cond(), ret(clean, kind))] + [(model, cond(p, s), ret(v, kind)) for (p, s), v in vals.items()]


def test_table_numbers_match_robustness_by_hand(tmp_path):
    run = load_run(make_run(tmp_path / "r", basic_cells()))
    assert run.present == run.expected == 5 and not run.warnings
    df = results_table(run)
    assert len(df) == 5 and set(df["metric"]) == {"t2v_R@1"}
    row = df[(df["visual"] == "jumble") & (df["visual_severity"] == 3)].iloc[0]
    assert row["visual_category"] == "temporal" and row["visual_modality"] == "video"
    assert row["text"] == "clean" and row["text_severity"] == 0 and row["axes"] == "visual"
    assert row["t2v_R@5"] == pytest.approx(.5) and row["v2t_R@1"] == pytest.approx(.2)
    assert row["RSUM"] == pytest.approx(rsum(ret(.4)["t2v"], ret(.4)["v2t"], percent=True))  # the papers' 0..600
    assert row["RSUM"] == pytest.approx(100 * (.4 + .5 + .55 + .2 + .4 + .45))
    r = robustness(.8, .4)
    assert (row["gamma_a"], row["gamma_r"], row["mmi"]) == pytest.approx((r["gamma_a"], r["gamma_r"], r["mmi"]))
    assert (row["gamma_a"], row["gamma_r"], row["mmi"]) == pytest.approx((.6, .5, .5))
    noise = df[df["visual"] == "gaussian_noise"].iloc[0]
    assert noise["visual_category"] == "noise" and noise["visual_modality"] == "image"
    clean = df[df["axes"] == "clean"].iloc[0]
    assert clean["visual"] == "clean" and clean["visual_category"] == "clean" and clean["gamma_r"] == 1.0

    rob = report_tables(run)["robustness"]
    vis = rob[rob["axis"] == "visual"]
    sweep = {("jumble", 1): .6, ("jumble", 3): .4, ("gaussian_noise", 1): .7, ("gaussian_noise", 3): .5}
    ref = robustness_table(sweep, clean=.8, categories={"jumble": "temporal", "gaussian_noise": "noise"})
    jum = vis[(vis["level"] == "perturbation") & (vis["name"] == "jumble")].iloc[0]
    assert jum["score"] == pytest.approx(.5) and jum["gamma_r"] == pytest.approx(.625)
    assert jum["gamma_a"] == pytest.approx(.7) and jum["mmi"] == pytest.approx(.375)
    assert (jum["s1"], jum["s3"]) == pytest.approx((.6, .4))
    over = vis[vis["level"] == "overall"].iloc[0]
    assert over["gamma_r"] == pytest.approx(ref["overall"]["gamma_r"]) == pytest.approx((.625 + .75) / 2)
    assert over["gamma_r_std"] == pytest.approx(ref["overall"]["gamma_r_std"]) == pytest.approx(.0625)  # population
    assert over["mmi"] == pytest.approx((.8 - .55) / .8) and over["perturbations"] == 2
    cats = vis[vis["level"] == "category"].set_index("name")
    assert cats.loc["noise", "gamma_r"] == pytest.approx(.75) and cats.loc["noise", "gamma_r_std"] == 0
    nat = vis[vis["level"] == "natural"].iloc[0]  # visual: natural == all
    assert nat["gamma_r"] == pytest.approx(over["gamma_r"])

    eff = report_tables(run)["effective"].iloc[0]  # A09
    assert eff["most_effective"] == "jumble" and eff["least_effective"] == "gaussian_noise"
    assert eff["most_gamma_r"] == pytest.approx(.625)


def test_metric_choice_rsum_and_unknown_metric(tmp_path):
    run = load_run(make_run(tmp_path / "r", basic_cells()))
    df = results_table(run, metric="RSUM")
    row = df[(df["visual"] == "jumble") & (df["visual_severity"] == 3)].iloc[0]
    c, p = rsum(ret(.8)["t2v"], ret(.8)["v2t"]), rsum(ret(.4)["t2v"], ret(.4)["v2t"])  # 0..600, one scale (issue 45)
    assert row["metric"] == "RSUM" and row["scale"] == 600.0
    assert row["gamma_a"] == pytest.approx(robustness(c, p, scale=600)["gamma_a"])
    assert row["gamma_r"] == pytest.approx(p / c)
    assert set(results_table(run, metric="t2v_R@5")["metric"]) == {"t2v_R@5"}
    with pytest.raises(ValueError, match="no cell has the metric 'R@7'.*t2v_R@1"):
        results_table(run, metric="R@7")


def test_partial_run_renders_and_counts(tmp_path):
    cells = basic_cells()
    all_conds = [c for _, c, _ in cells] + [cond("freeze", 2)]
    root = make_run(tmp_path / "r", cells[:3], conditions=all_conds)
    run = load_run(root)
    assert (run.present, run.expected) == (3, 6)
    assert "3 of 6 cells present" in describe(run)
    assert len(run.missing()) == 3 and any("freeze s2" in m for m in run.missing())
    csv_path, html_path = write_report(root)
    html = html_path.read_text()
    assert "3 of 6 cells present" in html and "a partial run" in html and "visual freeze s2" in html
    assert len(pd.read_csv(csv_path)) == 3


def test_malformed_cells_are_skipped_with_a_warning(tmp_path):
    root = make_run(tmp_path / "r", basic_cells())
    (root / "cells" / "broken.json").write_text('{"model": "x", "metrics": ')
    (root / "cells" / "nokeys.json").write_text(json.dumps({"model": "x"}))
    (root / "cells" / "badcond.json").write_text(json.dumps(
        {**Result("m", "m", "d", None, "retrieval", cond(), 1, {"acc": .5}).to_json(), "conditions": {"visual": 3}}))
    (root / "cells" / "list.json").write_text("[1, 2]")
    run = load_run(root)
    assert run.present == 5 and len(run.warnings) == 4
    assert all(w.startswith("cells/") and "skipped" in w for w in run.warnings)
    _, html_path = write_report(root)
    html = html_path.read_text()
    assert "cells/broken.json: skipped" in html and "cells/nokeys.json: skipped" in html


def test_missing_or_empty_run_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run folder"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a run folder"):
        write_report(tmp_path / "empty")
    # cells without sweep.json still render, with a warning
    root = make_run(tmp_path / "r", basic_cells())
    (root / "sweep.json").unlink()
    run = load_run(root)
    assert run.expected is None and run.present == 5 and "sweep.json: missing" in run.warnings[0]
    assert write_report(root)[1].is_file()


def test_combination_grid_first_row_and_column_are_single_modality(tmp_path):
    m = "builtin:tiny-clip-video-meanp"
    vals = [(cond(), .8), (cond("jumble", 3), .4), (cond("jumble", 1), .6), (cond(t="typos", ts=3), .6),
            (cond(t="drop_first", ts=3), .7), (cond("jumble", 3, "typos", 3), .2),
            (cond("jumble", 3, "drop_first", 3), .3)]
    run = load_run(make_run(tmp_path / "r", [(m, c, ret(v)) for c, v in vals]))
    grid = report_tables(run)["combinations"]
    z = grid.pivot_table(index="visual", columns="text", values="gamma_r")
    assert "jumble s1" not in z.index  # only the visual conditions that were combined
    assert z.loc["clean", "clean"] == 1.0
    assert z.loc["jumble s3", "clean"] == pytest.approx(.5)  # first column: visual alone
    assert z.loc["clean", "typos s3"] == pytest.approx(.75)  # first row: text alone
    assert z.loc["jumble s3", "typos s3"] == pytest.approx(.25)
    assert z.loc["jumble s3", "drop_first s3"] == pytest.approx(.375)
    fig = report_figures(run)[f"combinations · {m}"]
    assert list(fig.data[0].y)[0] == "visual: clean" and list(fig.data[0].x)[0] == "text: clean"
    # the category tables hold single-axis cells only
    rob = report_tables(run)["robustness"]
    assert set(rob["axis"]) == {"visual", "text"}
    vis = rob[(rob["axis"] == "visual") & (rob["level"] == "perturbation")].iloc[0]
    assert vis["score"] == pytest.approx(.5)  # mean of s1 .6 and s3 .4, not the combined cells


def test_natural_only_excludes_positional_and_droptext(tmp_path):
    assert natural("text", "typos") and natural("text", "back_translation")
    assert not natural("text", "drop_first") and not natural("text", "shuffle_order")
    assert not natural("text", "no_nouns")  # DropText lives in registry category "word"
    assert natural("visual", "jumble") and natural("visual", "gaussian_noise")
    m = "m"
    vals = [(cond(), .8), (cond(t="typos", ts=1), .6), (cond(t="drop_first", ts=1), .2), (cond(t="no_nouns", ts=1), .4)]
    rob = report_tables(load_run(make_run(tmp_path / "r", [(m, c, ret(v)) for c, v in vals])))["robustness"]
    text = rob[rob["axis"] == "text"].set_index("level")
    assert text.loc["overall", "gamma_r"] == pytest.approx((.75 + .25 + .5) / 3)
    assert text.loc["natural", "gamma_r"] == pytest.approx(.75) and text.loc["natural", "perturbations"] == 1


def test_image_and_video_runs_pick_their_directions(tmp_path):
    img = load_run(make_run(tmp_path / "img", basic_cells("builtin:tiny-clip", kind="image"),
                            dataset={**DS, "name": "builtin"}))
    vid = load_run(make_run(tmp_path / "vid", basic_cells()))
    di, dv = results_table(img), results_table(vid)
    assert set(di["metric"]) == {"t2i_R@1"} and "i2t_R@10" in di and "t2v_R@1" not in di
    assert set(dv["metric"]) == {"t2v_R@1"} and "v2t_R@10" in dv
    assert di["RSUM"].iloc[0] == pytest.approx(dv["RSUM"].iloc[0])
    # the sweep's directions decide which comes first
    rev = load_run(make_run(tmp_path / "rev", basic_cells(), directions=["v2t", "t2v"]))
    assert set(results_table(rev)["metric"]) == {"v2t_R@1"}
    for run in (img, vid):
        assert write_report(run.root)[1].is_file()


def test_non_retrieval_tasks_use_accuracy(tmp_path):
    cells = [("hf-vilt", cond(), {"acc": .8, "per_type": {"yes/no": {"acc": .9, "n": 10}}, "chance_acc": .5}),
             ("hf-vilt", cond("gaussian_noise", 2), {"acc": .6, "per_type": {"yes/no": {"acc": .7, "n": 10}},
                                                     "chance_acc": .5}),
             ("hf-vilt", cond(t="typos", ts=2), {"acc": .4, "per_type": {}, "chance_acc": .5})]
    run = load_run(make_run(tmp_path / "vqa", cells, task="vqa"))
    df = results_table(run)
    assert set(df["metric"]) == {"acc"} and "RSUM" not in df and "per_type_yes/no_acc" in df
    row = df[df["visual"] == "gaussian_noise"].iloc[0]
    assert row["gamma_r"] == pytest.approx(.75) and row["gamma_a"] == pytest.approx(.8)
    assert headline(Result("m", "m", "d", None, "x", cond(), 1, {"mean_iou": .3, "accuracy": .5})) == "accuracy"
    assert headline(Result("m", "m", "d", None, "grounding", cond(), 1,
                           {"acc@0.5": .4, "mean_iou": .3, "by_expression": {}})) == "acc@0.5"
    assert set(results_table(run, metric="chance_acc")["metric"]) == {"chance_acc"}
    _, html_path = write_report(run.root)
    html = html_path.read_text()
    assert "metric acc" in html and "n = 50 items" in html


def _png(color) -> bytes:
    import numpy as np
    from PIL import Image

    b = io.BytesIO()
    Image.fromarray(np.full((8, 12, 3), color, np.uint8)).save(b, format="PNG")
    return b.getvalue()


def worst_cells(root: Path):
    (root / "thumbs" / "clean").mkdir(parents=True)
    (root / "thumbs" / "clean" / "4.png").write_bytes(_png(200))
    (root / "thumbs" / "cellA").mkdir(parents=True)
    (root / "thumbs" / "cellA" / "4.png").write_bytes(_png(50))
    (root.parent / "secret.png").write_bytes(_png(0))
    worst = [{"direction": "t2v", "query": 4, "item": 4, "text": "a <script>alert(1)</script> dog & cat",
              "clean_rank": 1, "perturbed_rank": 17, "visual_record": {"name": "jumble", "severity": 3, "seed": 4},
              "text_record": None, "thumb": "thumbs/cellA/4.png", "clean_thumb": "thumbs/clean/4.png"},
             {"direction": "v2t", "query": 9, "item": 9, "text": "nine", "clean_rank": 2, "perturbed_rank": 8,
              "visual_record": None, "text_record": None, "thumb": "thumbs/cellA/9.png",
              "clean_thumb": "../secret.png"}]
    cells = basic_cells()
    cells[2] = cells[2] + ({"worst": worst},)
    return cells


def test_worst_examples_inline_thumbnails_and_escape_captions(tmp_path):
    from plotly.offline import get_plotlyjs

    root = make_run(tmp_path / "r", worst_cells(tmp_path / "r"))
    _, html_path = write_report(root)
    html = html_path.read_text().replace(get_plotlyjs(), "")
    assert html.count('src="data:image/png;base64,') == 2  # the two thumbnails on disk inside the run folder
    assert "thumbnail missing: thumbs/cellA/9.png" in html
    assert "clean thumbnail missing: ../secret.png" in html  # outside the run folder: never read
    assert "<script>alert(1)</script>" not in html
    assert "a &lt;script&gt;alert(1)&lt;/script&gt; dog &amp; cat" in html
    assert "1 → 17" in html and "<details><summary>record</summary>" in html and "&#34;jumble&#34;" in html


def test_html_is_self_contained_and_csv_matches(tmp_path):
    from plotly.offline import get_plotlyjs

    root = make_run(tmp_path / "r", worst_cells(tmp_path / "r"))
    out = tmp_path / "out"
    csv_path, html_path = write_report(root, out_dir=out)
    assert csv_path.parent == out and html_path.parent == out
    html = html_path.read_text()
    assert html.count(get_plotlyjs()[:2000]) == 1  # plotly.js embedded once
    assert "<script src" not in html and "<link" not in html and 'src="http' not in html
    assert "cdn.plot.ly" not in html.replace(get_plotlyjs(), "")
    figs = report_figures(load_run(root))
    assert all(isinstance(f, go.Figure) for f in figs.values())
    assert html.count('class="plotly-graph-div"') == len(figs)
    csv = pd.read_csv(csv_path)
    df = results_table(load_run(root))
    assert list(csv.columns) == list(df.columns)
    assert csv["gamma_r"].tolist() == pytest.approx(df["gamma_r"].tolist())


def test_several_models_figures_and_scatter(tmp_path):
    cells = basic_cells("a", .8) + basic_cells("b", .5)
    run = load_run(make_run(tmp_path / "r", cells))
    figs = report_figures(run)
    assert {"clean", "heatmap · a", "heatmap · b", "severity", "robustness", "scatter"} <= set(figs)
    sc = figs["scatter"].data[0]
    assert list(sc.text) == ["a", "b"] and list(sc.x) == pytest.approx([.8, .5])
    sev = figs["severity"]
    assert sev.layout.annotations[0].text == "gaussian_noise"  # panels in table order
    first = [t for t in sev.data if t.name == "a"][0]
    assert list(first.x) == [0, 1, 3] and list(first.y) == pytest.approx([.8, .7, .5])  # severity 0 = clean
    hm = figs["heatmap · b"].data[1]  # relative drop 1 − p/c, rows gaussian_noise, jumble
    # jumble s1 beats b's clean score: not clipped
    assert list(hm.y) == ["gaussian_noise", "jumble"] and hm.z[1][0] == pytest.approx(1 - .6 / .5)


def test_a_run_without_a_clean_cell_still_renders(tmp_path):
    cells = basic_cells()[1:]
    run = load_run(make_run(tmp_path / "r", cells))
    df = results_table(run)
    assert df["gamma_r"].isna().all()
    html = write_report(run.root)[1].read_text()
    assert "no clean cell in this run" in html


@pytest.mark.browser
@pytest.mark.slow
def test_report_renders_offline_in_chromium(tmp_path, browser):
    m = "builtin:tiny-clip-video-meanp"
    cells = worst_cells(tmp_path / "r") + basic_cells("other", .6)
    cells += [(m, cond(t="typos", ts=3), ret(.6)), (m, cond("jumble", 3, "typos", 3), ret(.3))]
    _, html_path = write_report(make_run(tmp_path / "r", cells))
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors, requests = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("request", lambda r: requests.append(r.url))
    page.goto(html_path.resolve().as_uri())
    page.wait_for_load_state("load")
    plots = page.locator(".js-plotly-plot")
    n = len(report_figures(load_run(tmp_path / "r")))
    assert n >= 7
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length === {n}", timeout=60_000)
    for i in range(n):
        assert plots.nth(i).locator(".main-svg").count() >= 1, f"plot {i} did not render"
    assert page.locator("img[src^='data:image/png;base64,']").count() == 2
    assert errors == []
    assert [u for u in requests if not u.startswith(("file://", "data:"))] == []
    page.close()


def test_several_tasks_in_one_run_get_their_own_figures(tmp_path):
    cells = [("v", cond(), {"acc": .8}), ("v", cond("gaussian_noise", 3), {"acc": .4}),
             ("v", cond("gaussian_noise", 1), {"acc": .6}), ("v", cond(t="typos", ts=2), {"acc": .7})]
    root = make_run(tmp_path / "r", cells, task="vqa")
    for i, (m, c, met) in enumerate(cells):  # the same model on a second task, as the runner writes it
        Result(m, m, DS["name"], "test", "itm", c, 50, {"acc": met["acc"] / 2, "pos_over_neg": .5}).save(
            root / "cells" / f"itm__{i}.json")
    spec = json.loads((root / "sweep.json").read_text())
    (root / "sweep.json").write_text(json.dumps({**spec, "tasks": ["vqa", "itm"]}))
    run = load_run(root)
    assert (run.present, run.expected) == (8, 8)
    df = results_table(run)
    assert list(df["task"]) == ["vqa"] * 4 + ["itm"] * 4  # the sweep's task order
    itm = df[(df["task"] == "itm") & (df["visual"] == "gaussian_noise") & (df["visual_severity"] == 3)].iloc[0]
    assert itm["clean_score"] == pytest.approx(.4) and itm["gamma_r"] == pytest.approx(.5)
    figs = report_figures(run)
    assert {"clean · vqa · builtin-videos", "clean · itm · builtin-videos", "heatmap · v · itm · builtin-videos"} \
        <= set(figs)
    hm = figs["heatmap · v · vqa · builtin-videos"].data[0]
    assert list(hm.x) == ["s1", "s2", "s3"]  # severities in order, text s2 between visual s1 and s3
    assert write_report(root)[1].is_file()


def test_scores_the_gamma_formulas_refuse_do_not_break_the_report(tmp_path):
    cells = [("m", cond(), {"margin": .5}), ("m", cond("gaussian_noise", 1), {"margin": -.2}),
             ("m", cond("gaussian_noise", 3), {"margin": .1})]
    run = load_run(make_run(tmp_path / "r", cells, task="custom"))
    df = results_table(run)
    assert set(df["metric"]) == {"margin"}
    assert math.isnan(df.loc[1, "gamma_r"]) and df.loc[2, "gamma_r"] == pytest.approx(.2)
    assert report_tables(run)["robustness"].empty
    assert "no γ scores" in write_report(run.root)[1].read_text()


# ---- the summary in plain words, on real tiny sweeps: every number in a sentence recomputed from the cells -----
NUM = re.compile(r"(?<![\w.@])\d+(?:\.\d+)?")  # numbers as words: not R@1, s3 or t2i


def nums(sentence: str) -> list[str]:
    return NUM.findall(sentence)


def f2(x: float) -> str:
    return f"{x:.2f}"


def by_hand(root: Path, direction: str) -> dict:
    """From the cells' JSON files alone (no report code): per model its clean R@1 and n, per axis the R@1 of every
    severity of every perturbation, and the R@1 of every visual + text pair."""
    out = {}
    for p in sorted((root / "cells").glob("*.json")):
        d = json.loads(p.read_text())
        m = out.setdefault(d["model"], {"clean": None, "n": d["n"], "visual": {}, "text": {}, "pairs": {}})
        v, t = (d["conditions"].get(a) or {} for a in ("visual", "text"))
        if set(d["conditions"]) - {"visual", "text"}:
            continue  # interventions, adaptation
        r1 = d["metrics"][direction]["R@1"]
        if not v.get("name") and not t.get("name"):
            m["clean"] = r1
        elif v.get("name") and t.get("name"):
            m["pairs"][f"{v['name']} s{v['severity']} with {t['name']} s{t['severity']}"] = r1
        else:
            axis, c = ("visual", v) if v.get("name") else ("text", t)
            m[axis].setdefault(c["name"], []).append(r1)
    return out


def gammas(m: dict, axis: str) -> tuple[dict, dict, float]:
    """γʳ per perturbation (severity mean / clean), per category (mean over its perturbations) and overall."""
    from robustlab.perturb import get_perturbation

    per = {p: sum(v) / len(v) / m["clean"] for p, v in m[axis].items()}
    cats: dict = {}
    for p, g in per.items():
        cats.setdefault(get_perturbation(p).category, []).append(g)
    return per, {c: sum(g) / len(g) for c, g in cats.items()}, sum(per.values()) / len(per)


def ties(vals: dict, best: bool) -> list[str]:
    target = f2(max(vals.values()) if best else min(vals.values()))
    return [k for k, v in vals.items() if f2(v) == target]


IV = re.compile(r" \[(\d+\.\d+), (\d+\.\d+)\]")


def bracketed(sentence: str) -> str:
    """``sentence`` without its " [lo, hi]" intervals, after checking each brackets the γʳ printed before it (a
    sentence that ranks conditions states their intervals: issue 45)."""
    for m in IV.finditer(sentence):
        before = NUM.findall(sentence[:m.start()])[-1]
        assert float(m.group(1)) <= float(before) + 0.005 and float(before) <= float(m.group(2)) + 0.005, sentence
    return IV.sub("", sentence)


def check_axis(lines: list[str], model: str, m: dict, axis: str, noun: str) -> None:
    """The axis's two sentences: count, share kept, worst / mildest category, worst / mildest perturbation."""
    from robustlab.bench.report_summary import CATEGORY_WORDS

    per, cats, over = gammas(m, axis)
    lines = [bracketed(s) for s in lines]  # the intervals are checked there; the values here
    head = next(s for s in lines if s.startswith(f"Under the {len(per)} {noun} perturbations, {model} "))
    want = [str(len(per)), f"{100 * over:.0f}"]
    if 2 <= len(cats) < len(per):
        want += [f2(min(cats.values())), f2(max(cats.values()))]
        assert all(CATEGORY_WORDS[c][0] in head for c in ties(cats, False) + ties(cats, True))
    assert nums(head) == want, head
    if len({f2(g) for g in per.values()}) == 1:
        same = f"Every {noun} perturbation gives {model} the same γʳ ({f2(next(iter(per.values())))})."
        assert same in lines, lines
        return
    single = next(s for s in lines if s.startswith(f"Of single {noun} perturbations") and model in s)
    assert nums(single) == [f2(min(per.values())), f2(max(per.values()))], single
    assert all(p in single for p in ties(per, False) + ties(per, True)), single


@pytest.fixture(scope="module")
def image_sweep(tmp_path_factory):
    """tiny-clip on the first 12 built-in images: 5 image perturbations (noise, blur, digital) at severities 1 and
    3, 3 text perturbations (char, word) at 2, and their pairs."""
    from robustlab.bench import SweepSpec, condition_grid, run_sweep

    root = tmp_path_factory.mktemp("summary") / "img"
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 12},
                     conditions=condition_grid(["gaussian_noise", "shot_noise", "defocus_blur", "motion_blur",
                                                "contrast"], [1, 3], ["keyboard", "char_swap", "word_swap"], [2]))
    run_sweep(spec, root)
    return root


def test_summary_of_a_real_sweep_says_what_the_cells_hold(image_sweep):
    from robustlab.bench.report_summary import summary

    lines = summary(load_run(image_sweep))
    model, m = "builtin:tiny-clip", by_hand(image_sweep, "t2i")["builtin:tiny-clip"]
    assert len(lines) == 6, lines
    assert lines[0] == f"{model} reaches a clean text→image R@1 of {f2(m['clean'])} ({m['n']} items)."
    assert nums(lines[0]) == [f2(m["clean"]), "12"]
    check_axis(lines, model, m, "visual", "image")
    check_axis(lines, model, m, "text", "text")
    pairs = {k: v / m["clean"] for k, v in m["pairs"].items()}
    combo = lines[-1]
    assert nums(combo) == [str(len(pairs)), f2(min(pairs.values()))] and len(pairs) == 15, combo
    assert any(k in combo for k in ties(pairs, False)), combo
    # the same sentences open report.html (escaped) and stand before every section
    html = write_report(image_sweep)[1].read_text()
    first = html.index('id="summary"')
    assert first < html.index("1. Clean scores per model") and first < html.index('class="plotly-graph-div"')
    for s in lines:
        assert s.replace("'", "&#39;") in html


def test_summary_compares_two_models_first(tmp_path):
    from robustlab.bench import SweepSpec, condition_grid, run_sweep
    from robustlab.bench.report_summary import summary

    a, b = "builtin:tiny-clip-video-meanp", "builtin:tiny-clip-video-seqtransf"
    spec = SweepSpec(models=[a, b], dataset={"name": "builtin-videos", "split": "test", "n": 8},
                     conditions=condition_grid(["jumble", "gaussian_noise"], [2], ["keyboard"], [3], combine="none"))
    run_sweep(spec, tmp_path / "vid")
    lines = summary(load_run(tmp_path / "vid"))
    hand = by_hand(tmp_path / "vid", "t2v")
    over = {axis: {m: gammas(hand[m], axis)[2] for m in (a, b)} for axis in ("visual", "text")}
    clean = {m: hand[m]["clean"] for m in (a, b)}
    t = report_tables(load_run(tmp_path / "vid"))
    gd, md = t["gamma_models"], t["models"]
    for i, (vals, what, table) in enumerate([(over["visual"], "robust", gd[gd["axis"] == "visual"]),
                                             (over["text"], "robust", gd[gd["axis"] == "text"]),
                                             (clean, "clean", md[md["condition"] == "clean"])]):
        s = lines[i]
        hi, lo = sorted((a, b), key=lambda x: -vals[x])
        assert what in s and len(table) == 1, s
        row = table.iloc[0]
        assert {row["model_a"], row["model_b"]} == {a, b} and row["n"] == 8
        sign = 1 if row["model_a"] == hi else -1
        lo_ci, hi_ci = sorted((sign * row["delta_lo"], sign * row["delta_hi"]))
        ci = f"95 % CI {'+' if lo_ci >= 0 else '−'}{f2(abs(lo_ci))} to {'+' if hi_ci >= 0 else '−'}{f2(abs(hi_ci))}"
        assert ci in s, (s, ci)  # the interval of the paired bootstrap, whichever way it goes
        if row["holds"]:  # a claim: only where the paired bootstrap holds
            assert s.startswith(f"{hi} is ") and f"vs {f2(vals[lo])} for {lo};" in s, s
        else:  # no claim: the "no difference we can tell apart at n = …", with the interval
            assert s.startswith("No difference in ") and "that we can tell apart at n = 8" in s, s
            assert " is more " not in s and " is better " not in s, s
    assert all(IV.search(s) for s in lines if s.startswith("Of single")), lines  # ranked conditions: intervals
    for m in (a, b):
        assert f"{m} reaches a clean text→video R@1 of {f2(clean[m])} (8 items)." in lines
        check_axis(lines, m, hand[m], "visual", "video")
        one = next(s for s in lines if s.startswith(f"Under its one text perturbation (keyboard), {m} "))
        g = gammas(hand[m], "text")[2]
        assert nums(one) == [f"{100 * g:.0f}", f2(g)], one


def test_summary_of_runs_without_robustness_is_one_honest_sentence(tmp_path):
    from robustlab.bench import SweepSpec, condition_grid, run_sweep
    from robustlab.bench.report_summary import summary

    # no finished cell: the sweep asked for 3
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 8},
                     conditions=condition_grid(["gaussian_noise"], [1, 2]))
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "sweep.json").write_text(json.dumps(spec.to_json()))
    assert summary(load_run(tmp_path / "none")) == [
        "No cell of this run has finished yet of the 3 it asks for: there is nothing to summarise."]
    assert "No cell of this run has finished yet" in write_report(tmp_path / "none")[1].read_text()
    # a single clean cell
    run_sweep(SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 8},
                        conditions=condition_grid()), tmp_path / "one")
    clean = json.loads(next((tmp_path / "one" / "cells").glob("*.json")).read_text())["metrics"]["t2i"]["R@1"]
    assert summary(load_run(tmp_path / "one")) == [
        f"builtin:tiny-clip reaches a clean text→image R@1 of {f2(clean)} (8 items).",
        "The run has no perturbed cell for builtin:tiny-clip, so there is no robustness to report."]
    # perturbed cells without their clean cell
    lines = summary(load_run(make_run(tmp_path / "noclean", basic_cells()[1:])))
    assert lines == [("builtin:tiny-clip-video-meanp has no clean cell in this run, so its robustness (γʳ) cannot be "
                      "computed.")]
    # a partial run says so first
    cells = basic_cells()
    lines = summary(load_run(make_run(tmp_path / "part", cells[:3], conditions=[c for _, c, _ in cells])))
    assert lines[0] == "A partial run: 3 of 5 cells have finished; the sentences below cover those."


def test_summary_of_interventions_and_adaptation(tmp_path):
    from robustlab.bench import SweepSpec, condition_grid, run_sweep
    from robustlab.bench.report_summary import summary

    run_sweep(SweepSpec(models=["builtin:tiny-vilt"], dataset={"name": "builtin", "split": "demo", "n": 8},
                        tasks=["vqa"], conditions=condition_grid(interventions=["quag:crossmodal",
                                                                                "input:language-only"])),
              tmp_path / "iv")
    acc = {}
    for p in (tmp_path / "iv" / "cells").glob("*.json"):
        d = json.loads(p.read_text())
        acc[(d["conditions"].get("intervention") or {}).get("name") or "baseline"] = d["metrics"]["acc"]
    lines = summary(load_run(tmp_path / "iv"))
    pc = lambda x: f"{100 * x:.1f}"  # noqa: E731 - accuracy in percent, as QUAG's Table 1 prints it (issue 45)
    assert lines[0] == f"builtin:tiny-vilt reaches a clean acc of {pc(acc['baseline'])} % (8 items)."
    worst = min((k for k in acc if k != "baseline"), key=lambda k: acc[k])
    delta = acc[worst] - acc["baseline"]
    drops = sum(acc["baseline"] - acc[k] >= 0.02 - 1e-12 for k in acc if k != "baseline")
    assert lines[1].startswith("Model interventions on builtin:tiny-vilt") and worst in lines[1], lines
    assert nums(lines[1]) == [pc(acc["baseline"]), pc(acc[worst]), pc(abs(delta)), str(drops), "2", "2"], lines[1]
    assert len(lines) == 2

    run_sweep(SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 8},
                        conditions=condition_grid(text=["keyboard"], text_severities=[2], adapt=["tent"])),
              tmp_path / "tta")
    cells = {}
    for p in (tmp_path / "tta" / "cells").glob("*.json"):
        d = json.loads(p.read_text())
        key = "tent" if d["conditions"].get("adapt") else "none" if d["conditions"]["text"].get("name") else "clean"
        cells[key] = d["metrics"]["t2i"]["R@1"]
    line = next(s for s in summary(load_run(tmp_path / "tta")) if s.startswith("Test-time adaptation"))
    assert nums(line) == ["1", f2(cells["clean"]), f2(cells["none"]), f2(cells["tent"])], line
    assert line.endswith("tent recovers the most." if f2(cells["tent"]) > f2(cells["none"])
                         else "no method beats the unadapted queries."), line


def test_report_titles_carry_no_internal_tags_and_labels_fit(tmp_path):
    m = "builtin:tiny-clip-video-meanp"
    vals = [(cond(), .8), (cond("mlvp_temporal_scrambling", 3), .4), (cond(t="typos", ts=3), .6),
            (cond("mlvp_temporal_scrambling", 3, "typos", 3), .2)]
    root = make_run(tmp_path / "r", [(m, c, ret(v)) for c, v in vals])
    html = write_report(root)[1].read_text()
    heads = re.findall(r"<h[1-3][^>]*>(.*?)</h[1-3]>", html)
    assert heads and not [h for h in heads if re.search(r"\b[ADMP]\d{1,2}\b", h)], heads
    figs = report_figures(load_run(root))
    for fig in figs.values():
        title = fig.layout.title.text or ""
        assert not re.search(r"\b[ADMP]\d{1,2}\b", title), title
        assert "t2v_R@1" not in title  # the metric as words: text→video R@1
    hm = figs[f"heatmap · {m}"]
    longest = max(len(y) for y in hm.data[0].y)  # "mlvp_temporal_scrambling"
    assert hm.layout.margin.l >= 7 * longest and hm.layout.yaxis.automargin
    assert hm.layout.yaxis2.showticklabels is False  # one set of row labels: none squeezed between the panels
    combo = figs[f"combinations · {m}"]
    assert combo.layout.margin.l >= 7 * max(len(y) for y in combo.data[0].y)
    assert html.count('<div class="scroll">') >= html.count('<table class="tbl')  # every table scrolls sideways
    assert "gamma_r" in pd.read_csv(root / "results.csv").columns  # the data keeps its own column names
