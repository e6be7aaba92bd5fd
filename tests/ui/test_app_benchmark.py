"""AppTest of the Benchmark page: it renders; a tiny sweep (built-in images, 8 items, one perturbation at severities
1–2, tiny-clip) runs to completion (ROBUSTLAB_SYNC_SWEEP=1: in the script thread, AppTest has no fragment timers)
and shows its heatmap and worst examples; "Open on Retrieval" sets the Retrieval page's state; an existing run
folder opens; bad run names, a folder of another dataset's sweep, an unreadable folder, empty selections and
uploads are one line, never a traceback."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from robustlab.bench import SweepSpec, condition_grid, run_sweep

TIMEOUT = 120
PAGE = "pages/benchmark.py"


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(root))
    monkeypatch.setenv("ROBUSTLAB_SYNC_SWEEP", "1")
    return root


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished tiny run folder, written by the sweep runner directly."""
    root = tmp_path_factory.mktemp("runs")
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 8},
                     conditions=condition_grid(["gaussian_noise"], [1, 2], ["keyboard"], [2], combine="none"))
    run_sweep(spec, root / "done")
    return root


def page(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def configure(at, name="tiny"):
    at.number_input(key="bench_n").set_value(8)
    at.radio(key="bench_pmode").set_value("chosen names").run()
    at.multiselect(key="bench_pnames").set_value(["gaussian_noise"])
    at.multiselect(key="bench_sev").set_value([1, 2])
    at.text_input(key="bench_name").set_value(name).run()
    assert not at.exception, at.exception
    return at


def charts(at):
    return at.get("plotly_chart")


def test_renders_with_the_sidebar_choices(runs):
    at = page()
    assert not at.error and not at.warning
    assert at.selectbox(key="bench_task").value == "retrieval"
    assert at.multiselect(key="bench_models").value == ["builtin:tiny-vit-clip"]  # the sidebar's (default) model
    assert "builtin:tiny-vilt" not in at.multiselect(key="bench_models").options  # cannot retrieve
    assert not at.button(key="bench_go").disabled
    assert any("cells:" in c.value for c in at.caption)


def test_tiny_sweep_runs_shows_the_report_and_opens_on_retrieval(runs):
    at = configure(page(model_choice="builtin:tiny-clip"))  # tiny-clip: noise s1-2 leaves worst examples to show
    assert any(c.value.startswith("3 cells: 1 model(s)") for c in at.caption)
    at.button(key="bench_go").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("Done: 3 cell(s) run" in s.value for s in at.success)
    assert (runs / "tiny" / "sweep.json").exists() and len(list((runs / "tiny" / "cells").glob("*.json"))) == 3
    assert any(s.value == "Report — tiny" for s in at.subheader)
    assert len(charts(at)) >= 2  # heatmap and severity curves at least
    assert any(s.value == "Worst examples" for s in at.subheader)
    assert len(at.get("image")) >= 1 and any("rank 1 →" in c.value or "→" in c.value for c in at.caption)
    assert len(at.get("download_button")) == 2

    # the same sweep again: every cell is already there (resume)
    at.button(key="bench_go").click().run()
    assert any("Done: 0 cell(s) run, 3 already there" in s.value for s in at.success)

    # a worst example opens on the Retrieval page with its model, condition and query
    cell = at.selectbox(key="bench_worst_cell")
    cond = cell.format_func(cell.value)
    assert "gaussian_noise" in cond
    w = json.loads(next((runs / "tiny" / "cells").glob(f"*{'s1' if 's1' in cond else 's2'}*.json")).read_text())
    w = w["extra"]["worst"][0]
    at.button(key=f"bench_open_{cell.value}_0").click().run()
    assert not at.exception, at.exception
    s = at.session_state
    assert s["model_choice"] == "builtin:tiny-clip" and s["dataset"] == "builtin"
    assert s["img_pert"] == "gaussian_noise" and s["img_sev"] == w["visual_record"]["severity"]
    assert s["txt_pert"] == "(none)" and s["seed"] == 0 and s["direction"] == w["direction"]
    assert (s["query_idx"] if w["direction"][0] == "t" else s["query_visual"]) == w["item"]
    assert any(h.value.startswith("Retrieval") for h in at.header)
    assert at.selectbox(key="img_pert").value == "gaussian_noise"


def test_open_an_existing_run(finished, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(finished))
    at = page()
    at.radio(key="bench_mode").set_value("Open a run").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="bench_open").value == "done"
    assert any(s.value == "Report — done" for s in at.subheader)
    assert len(charts(at)) >= 2 and not at.error
    labels = at.selectbox(key="bench_worst_cell").options  # AppTest lists the formatted labels
    assert any("keyboard" in lb for lb in labels) and any("gaussian_noise" in lb for lb in labels)


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "a\\b", " "])
def test_bad_run_name_is_one_line(runs, name):
    at = configure(page(), name=name)
    assert len(at.error) == 1 and "refused" in at.error[0].value and "\n" not in at.error[0].value
    assert at.button(key="bench_go").disabled
    assert not runs.exists() or not any(runs.iterdir())


def test_folder_of_another_dataset_and_unreadable_folders(runs):
    other = runs / "other"
    other.mkdir(parents=True)
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin-videos", "split": "demo", "n": 4})
    (other / "sweep.json").write_text(json.dumps(spec.to_json()))
    at = configure(page(), name="other")
    at.button(key="bench_go").click().run()
    assert not at.exception, at.exception
    assert any("holds a sweep over another dataset (builtin-videos" in e.value for e in at.error)
    assert not (other / "cells").exists()

    bad = runs / "broken"
    (bad / "cells").mkdir(parents=True)
    (bad / "sweep.json").write_text("{not json")
    (bad / "cells" / "x.json").write_text("[1, 2")
    at.radio(key="bench_mode").set_value("Open a run").run()
    at.selectbox(key="bench_open").set_value("broken").run()
    assert not at.exception, at.exception
    assert any("cells/x.json" in w.value for w in at.warning)
    assert any("No finished cell" in i.value for i in at.info)


def test_empty_selections_and_uploads_say_so(runs):
    at = page()
    at.radio(key="bench_pmode").set_value("chosen names").run()
    assert any("Pick at least one perturbation" in w.value for w in at.warning)
    at.multiselect(key="bench_pnames").set_value(["gaussian_noise"])
    at.multiselect(key="bench_sev").set_value([]).run()
    assert any("Pick at least one severity" in w.value for w in at.warning)
    at.multiselect(key="bench_sev").set_value([1])
    at.multiselect(key="bench_models").set_value([]).run()
    assert any("Pick at least one model" in w.value for w in at.warning)
    assert at.button(key="bench_go").disabled and not at.exception

    up = page(dataset="upload")
    assert any("uploads live only in this browser session" in i.value for i in up.info)
    assert up.radio(key="bench_builtin").value == "builtin" and not up.button(key="bench_go").disabled


def test_job_cancel_keeps_finished_cells_and_resume_skips_them(tmp_path):
    """The page's job: Cancel (its Event) stops after a finished cell; Resume (same spec, same folder) runs the
    rest and skips it."""
    from ui.bench import Job

    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 8},
                     conditions=condition_grid(["gaussian_noise", "defocus_blur"], [1]))
    job = Job(spec, tmp_path / "r")
    job.run(lambda p: job.cancel.set() if p.get("done", 0) >= 1 else None)
    assert job.error is None and job.status.cancelled and 1 <= job.status.done < 3
    again = Job(job.spec, job.out)
    again.run()
    assert again.error is None and not again.status.cancelled
    assert again.status.skipped == job.status.done and again.status.done == 3 - job.status.done
    assert len(list((tmp_path / "r" / "cells").glob("*.json"))) == 3


def test_vqa_sweep_with_interventions_shows_table1(runs):
    at = page()
    at.selectbox(key="bench_task").set_value("vqa").run()
    assert not at.exception, at.exception
    at.multiselect(key="bench_models").set_value(["builtin:tiny-vilt"])
    at.number_input(key="bench_n").set_value(8)
    at.radio(key="bench_pmode").set_value("none").run()
    at.multiselect(key="bench_iv").set_value(["quag:crossmodal", "input:language-only"])
    at.text_input(key="bench_name").set_value("quag").run()
    assert not at.exception, at.exception
    assert any(c.value.startswith("3 cells: 1 model(s)") and "2 interventions" in c.value for c in at.caption)
    at.button(key="bench_go").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    t1 = next(d for d in at.dataframe if "intervention" in d.value.columns).value
    assert list(t1["intervention"]) == ["baseline", "input:language-only", "quag:crossmodal"]


def test_retrieval_offers_no_interventions(runs):
    at = page()
    assert at.selectbox(key="bench_task").value == "retrieval"
    assert not [m for m in at.multiselect if m.key == "bench_iv"]
    at.radio(key="bench_pmode").set_value("none").run()
    assert any("Pick at least one perturbation." in w.value for w in at.warning)


def test_the_adaptation_methods_are_the_registrys(runs):
    """Issue 48: READ, SAR and EATA are offered beside Tent, TCR and HAT-VTR (the registry's methods, as
    `robustlab bench --adapt all` takes them: every one that adapts, the diagnostic oracle left out), and the help
    names them all."""
    from robustlab.adapt import list_methods
    from robustlab.bench.spec import parse_adapt

    at = page()
    box = at.multiselect(key="bench_adapt")
    want = [m["name"] for m in list_methods() if m["adapts"] and not m["diagnostic"]]
    assert box.options == want and {"tent", "tcr", "hat-vtr", "read", "sar", "eata"} <= set(want)
    assert "oracle" not in box.options and "none" not in box.options
    assert [c.name for c in parse_adapt("all")] == want  # the CLI's "all", in the same order
    assert "Tent, TCR, HAT-VTR, READ, SAR, EATA adapting" in box.help


def test_retrieval_sweep_with_test_time_adaptation_shows_the_table(runs):
    at = page(model_choice="builtin:tiny-clip")  # ends with tiny-clip's visual side, which has nothing to adapt
    at.number_input(key="bench_n").set_value(16)
    at.radio(key="bench_pmode").set_value("none").run()
    at.multiselect(key="bench_text").set_value(["keyboard"])
    at.multiselect(key="bench_sev").set_value([2])
    at.multiselect(key="bench_adapt").set_value(["tent"])
    at.text_input(key="bench_name").set_value("tta").run()
    assert not at.exception, at.exception
    assert any(c.value.startswith("3 cells: 1 model(s)") for c in at.caption)  # clean, keyboard s2, + Tent
    at.button(key="bench_go").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    tab = next(d for d in at.dataframe if "tent" in d.value.columns).value
    assert {"clean", "none", "tent", "best"} <= set(tab.columns) and list(tab["direction"]) == ["t2i", "t2i"]
    assert list(tab["perturbation"]) == ["keyboard (text)", "mean"] and (tab["clean"] >= tab["none"]).all()
    # a visual shift for tiny-clip (no LayerNorm on its image side): one line, nothing run
    at.radio(key="bench_pmode").set_value("chosen names").run()
    at.multiselect(key="bench_pnames").set_value(["gaussian_noise"])
    at.multiselect(key="bench_text").set_value([])
    at.text_input(key="bench_name").set_value("tta2").run()
    at.button(key="bench_go").click().run()
    assert not at.exception, at.exception
    assert any("no LayerNorm on its image side" in e.value for e in at.error), [e.value for e in at.error]


@pytest.fixture(scope="module")
def sweep20(tmp_path_factory):
    """A finished sweep over the first 20 built-in images (not the sidebar's 300-image demo gallery): one visual and
    one text perturbation, worst examples kept."""
    root = tmp_path_factory.mktemp("runs20")
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 20},
                     conditions=condition_grid(["contrast"], [5], ["keyboard"], [3], combine="none"))
    run_sweep(spec, root / "twenty")
    return root


def _open_worst(at, label_part: str):
    """Select the worst-examples cell whose label holds ``label_part``; its index (the Open buttons' keys)."""
    box = at.selectbox(key="bench_worst_cell")
    idx = next(i for i, lb in enumerate(box.options) if label_part in lb)
    box.set_value(idx).run()
    assert not at.exception, at.exception
    return idx


@pytest.mark.parametrize("which", ["contrast", "keyboard"])
def test_a_worst_example_opens_on_the_sweeps_own_gallery_with_its_rank(sweep20, monkeypatch, which):
    """'rank 1 → 7' of a 20-item sweep is rank 1 → 7 on the Retrieval page: it opens on the sweep's first 20 items
    (the sidebar says so), not on the 300-item demo gallery; the sidebar's button goes back to the demo gallery."""
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(sweep20))
    at = page()
    at.radio(key="bench_mode").set_value("Open a run").run()
    assert at.selectbox(key="bench_open").value == "twenty"
    summary = at.get("markdown")
    assert any("reaches a clean text→image R@1" in m.value.replace("\\", "") for m in summary)
    idx = _open_worst(at, which)
    cell = next(json.loads(p.read_text()) for p in (sweep20 / "twenty" / "cells").glob("*.json")
                if which in p.name)
    w = cell["extra"]["worst"][0]
    shown = [c.value for c in at.caption if c.value.startswith(f"{w['direction']} · item {w['item']} ·")]
    assert shown and f"rank {w['clean_rank']} → {w['perturbed_rank']}" in shown[0]
    at.button(key=f"bench_open_{idx}_0").click().run()
    assert not at.exception, at.exception
    assert any(h.value.startswith("Retrieval") for h in at.header)
    assert at.session_state["sweep_gallery"] == {"name": "builtin", "split": "demo", "n": 20, "seed": None}
    ranks = {m.label: m.value for m in at.metric}
    assert ranks["Ground-truth rank, clean"] == str(w["clean_rank"])
    assert ranks["Ground-truth rank, perturbed"] == str(w["perturbed_rank"])
    gallery = at.selectbox(key="query_idx") if w["direction"][0] == "t" else at.selectbox(key="query_visual")
    assert len(gallery.options) == 20  # the sweep's 20 items, not the 300-item demo gallery

    # the sidebar says whose gallery this is (AppTest draws app.py's sidebar on a session's first run only)
    app = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k in ("dataset", "sweep_gallery", "model_choice", "direction"):
        app.session_state[k] = at.session_state[k]
    app.run()
    assert not app.exception, app.exception
    assert app.radio(key="dataset").value == "builtin"
    assert "Built-in images (first 20, from a sweep)" in app.radio(key="dataset").options
    # its button goes back to the demo gallery: 300 items, and the label says so
    app.button(key="sweep_gallery_back").click().run()
    assert not app.exception, app.exception
    assert "sweep_gallery" not in app.session_state
    back = app.selectbox(key="query_idx") if w["direction"][0] == "t" else app.selectbox(key="query_visual")
    assert len(back.options) == 300
    again = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    again.session_state["dataset"] = "builtin"
    again.run()
    assert "Built-in images (300)" in again.radio(key="dataset").options


def test_a_sweeps_gallery_is_dropped_when_another_dataset_is_picked():
    from ui.state import sweep_gallery_of

    assert sweep_gallery_of({"name": "builtin", "split": "demo", "n": 300}) is None  # the sidebar's own gallery
    assert sweep_gallery_of({"name": "builtin", "split": None, "n": 8}) == {"name": "builtin", "split": "test",
                                                                            "n": 8, "seed": None}
    assert sweep_gallery_of({"name": "builtin", "split": "demo", "n": 10**9}) is None
    assert sweep_gallery_of({"name": "builtin", "n": 8, "options": {"size": 64}}) is None
    assert sweep_gallery_of({"name": "msrvtt", "root": "/x", "n": 8}) is None
    gal = {"name": "builtin", "split": "demo", "n": 20, "seed": None}
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.session_state["sweep_gallery"] = gal
    at.run()
    assert not at.exception, at.exception
    assert "Built-in images (first 20, from a sweep)" in at.radio(key="dataset").options
    # the viewer picks the built-in videos in the sidebar: the images' sweep gallery is dropped
    other = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    other.session_state["sweep_gallery"], other.session_state["dataset"] = gal, "builtin-videos"
    other.run()
    assert not other.exception, other.exception
    assert "sweep_gallery" not in other.session_state
    assert "Built-in images (300)" in other.radio(key="dataset").options
