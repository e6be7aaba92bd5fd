"""AppTest of the Failures page: a small failure map on the built-in images (ROBUSTLAB_SYNC_SWEEP=1: in the script
thread) renders its map, slices and one cell in detail from the result; a widget changed after the run does not
relabel the result; the operator's budget refuses a map past it in one line; a baseline shows which examples break
for one model only, with the interval; an example goes to the basket and is on the Export page; the search runs on
images, videos and grounding, and on an upload (its Dataset object, no registered dataset); a search is cancelled by
its Cancel and when its browser session has gone."""
import pytest
from apptest_helpers import fresh, png_uploads, table

from ui import failures_run as run, failures_search
from ui import operator
from ui.media import md_escape

TIMEOUT = 240
PAGE = "pages/failures.py"
MODEL = "builtin:tiny-clip"


@pytest.fixture(autouse=True)
def sync(monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_SYNC_SWEEP", "1")
    monkeypatch.delenv("ROBUSTLAB_FAILURE_MAX_CELLS", raising=False)
    operator.reset_for_tests()
    yield
    operator.reset_for_tests()


def page(**state):
    return fresh(PAGE, timeout=TIMEOUT, **{"model_choice": MODEL, **state})


TEXT = {"keyboard", "gender_swap"}


def configure(at, n=24, perts=("gaussian_noise", "keyboard"), sev=(1, 3, 5)):
    at.number_input(key="fail_n").set_value(n)
    at.multiselect(key="fail_vis_image").set_value([p for p in perts if p not in TEXT])
    at.multiselect(key="fail_txt").set_value([p for p in perts if p in TEXT])
    at.multiselect(key="fail_sev").set_value(list(sev)).run()
    assert not at.exception, at.exception
    return at


def go(at):
    at.button(key="fail_go").click().run()
    assert not at.exception, at.exception
    return at


def texts(at):
    return " ".join(str(x.value) for kind in ("markdown", "caption", "text") for x in at.get(kind))


def test_nothing_runs_before_run():
    at = page()
    assert run.RESULT not in at.session_state
    assert any("No failure map yet" in i.value for i in at.info)


def test_a_small_map_renders_from_its_result():
    at = go(configure(page()))
    assert not at.error, [e.value for e in at.error]
    out = at.session_state[run.RESULT]
    f = out.fmap
    assert f.model == MODEL and f.n == 24 and f.severities == [1, 3, 5]
    assert [p["perturbation"] for p in f.perturbations] == ["gaussian_noise", "keyboard"]
    assert len(f.items) == 2 * f.examples
    summary = table(at, "median breaking severity")
    assert list(summary["perturbation"]) == ["gaussian_noise", "keyboard"]
    assert list(summary["break"]) == [s["broken"] for s in f.summary]
    # the map is drawn (an Altair chart) and the cell detail shows the ranks of the chosen example
    assert at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")
    ranks = table(at, "model")
    j, p = at.selectbox(key="fail_ex").value, at.selectbox(key="fail_cell_pert").value
    it = run.blocks(f)[p][j]
    assert ranks.iloc[0]["clean"] == it["ranks"]["0"]
    # the first example in fragility order breaks under the most perturbations
    broken = {jj: sum(1 for q in run.blocks(f) if run.blocks(f)[q][jj]["breaks_at"]) for jj in range(f.examples)}
    assert broken[j] == max(broken.values())
    assert f"{MODEL}" in texts(at)
    # the slices come from the map (robustlab.failures' own), shown by perturbation: the first one's description
    groups = run.slice_groups(f)
    first = at.selectbox(key="fail_slice_pert").value
    shown = (groups[first]["discovered"] + groups[first]["metadata"])[0]["description"]
    assert md_escape(shown) in texts(at)


def test_a_perturbation_that_changes_nothing_is_a_no_op_never_holds():
    at = go(configure(page(), n=12, perts=("gaussian_noise", "gender_swap"), sev=(1, 5)))
    out = at.session_state[run.RESULT]
    held = [j for j, it in enumerate(run.blocks(out.fmap)["gender_swap"]) if it["breaks_at"] is None]
    assert held and all(("gender_swap", j) in out.noops for j in held)  # the built-in captions have no gendered word
    row = table(at, "no-op").set_index("perturbation").loc["gender_swap"]
    assert row["no-op"] == len(held) and row["hold"] == 0


def test_changing_a_widget_after_the_run_does_not_relabel_the_result():
    at = go(configure(page()))
    before = at.session_state[run.RESULT]
    at.multiselect(key="fail_vis_image").set_value(["defocus_blur"]).run()
    at.multiselect(key="fail_sev").set_value([2]).run()
    assert not at.exception
    assert at.session_state[run.RESULT] is before
    summary = table(at, "median breaking severity")
    assert list(summary["perturbation"]) == ["gaussian_noise", "keyboard"]
    assert "defocus_blur" not in list(summary["perturbation"])
    assert "severities 1, 3, 5" in texts(at)


def test_the_budget_refuses_in_one_line(monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_FAILURE_MAX_CELLS", "100")
    operator.reset_for_tests()
    at = go(configure(page()))  # 24 × 2 × 3 = 144 cells > 100
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "failure_max_cells" in errors[0] and "144" in errors[0], errors
    assert run.RESULT not in at.session_state


def test_the_baseline_shows_who_breaks_where():
    at = go(configure(page(baseline="builtin:tiny-vit-clip")))
    f = at.session_state[run.RESULT].fmap
    assert f.baseline == "builtin:tiny-vit-clip"
    t = table(at, "95 % CI")
    assert list(t["perturbation"]) == ["gaussian_noise", "keyboard"]
    g = [it for it in f.items if it["perturbation"] == "gaussian_noise"]
    assert t.iloc[0][f"breaks for {MODEL} only"] == sum(it["breaks_for"] == "model" for it in g)
    assert all(v.startswith("[") for v in t["95 % CI"])


def test_an_example_goes_to_the_basket_and_the_export_page():
    at = go(configure(page()))
    f = at.session_state[run.RESULT].fmap
    assert any(it["breaks_at"] for it in f.items), "nothing breaks: the test needs a breaking example"
    at.button(key="fail_add_all").click().run()
    assert not at.exception
    b = at.session_state["basket"]
    assert len(b) > 0 and all((ex.model or {}).get("view") == "failures" for ex in b)
    at.switch_page("pages/export.py").run()
    assert not at.exception
    assert not any("basket is empty" in i.value for i in at.info)


def test_vqa_and_grounding_maps_render():
    for task, pert in (("grounding", "gaussian_noise"), ("vqa", "gaussian_noise")):
        at = page(fail_task=task)
        configure(at, n=12, perts=(pert,), sev=(1, 5))
        go(at)
        assert not at.error, [e.value for e in at.error]
        f = at.session_state[run.RESULT].fmap
        assert f.task == task and f.model == "builtin:tiny-vilt"
        assert table(at, "model").iloc[0]["clean"] is not None


def test_a_search_runs_within_the_budget_and_goes_to_the_basket():
    at = configure(page(), n=16)
    at.number_input(key="fail_budget").set_value(300)
    at.button(key="fail_search_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    res = at.session_state[failures_search.RESULT]
    assert res.model == MODEL and res.budget == 300 and res.evaluations <= 300
    broken = res.broken()
    assert broken, "tiny-clip on 16 built-in images: the search should break some"
    t = table(at, "weakest breaking change")
    assert list(t["example"]) == [f"#{r['item']} · {r['id']}" for r in broken]
    at.button(key="fail_search_basket").click().run()
    assert not at.exception
    assert len(at.session_state["basket"]) > 0


def test_a_search_past_the_operators_budget_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_FAILURE_SEARCH_BUDGET", "50")
    operator.reset_for_tests()
    at = configure(page(), n=16)
    at.session_state["fail_budget"] = 40
    at.run()
    at.button(key="fail_search_go").click().run()
    assert not at.exception and not at.error
    res = at.session_state[failures_search.RESULT]  # 40 is within the operator's 50: it ran
    assert res.budget == 40 and res.evaluations <= 40
    why = failures_search.start({"budget": 60})  # the page's box stops at 50; the job refuses more itself
    assert why.startswith("Refused: a search of 60 model evaluations") and "failure_search_budget" in why


def test_the_page_is_listed_after_grounding_with_an_icon_streamlit_accepts():
    import ast
    from pathlib import Path

    from streamlit.string_util import validate_material_icon

    tree = ast.parse((Path(__file__).resolve().parents[2] / "app.py").read_text())
    views = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and getattr(n.targets[0], "id", None) == "VIEWS")
    files = [f for f, _, _ in views]
    assert files.index("pages/failures.py") == files.index("pages/grounding.py") + 1
    for _, _, icon in views:  # an unknown Material icon stops app.py on a real server (AppTest does not check)
        validate_material_icon(icon)


def search(at, budget: int):
    at.number_input(key="fail_budget").set_value(budget)
    at.button(key="fail_search_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at.session_state[failures_search.RESULT]


def test_a_search_on_grounding_and_on_videos():
    at = page(fail_task="grounding")
    at.number_input(key="fail_n").set_value(6).run()
    res = search(at, 40)
    assert res.task == "grounding" and res.model == "builtin:tiny-vilt" and res.dataset["name"] == "builtin-refs"
    assert res.evaluations <= 40 and res.dataset["n"] == 6
    if res.broken():
        t = table(at, "IoU clean → broken")
        assert list(t["example"]) == [f"#{r['item']} · {r['id']} · expression {r['ref']}" for r in res.broken()]
    at = page(dataset="builtin-videos", model_choice="builtin:tiny-clip-video-seqtransf")
    at.number_input(key="fail_n").set_value(6).run()
    res = search(at, 30)
    assert res.task == "retrieval" and res.direction == "t2v" and res.dataset["name"] == "builtin-videos"
    assert res.broken(), "the tiny video model on 6 built-in videos: the search should break some"
    assert list(table(at, "rank clean → broken")["thief"]) == [r["thief_id"] for r in res.broken()]


def test_an_upload_maps_and_searches_as_a_dataset_object():
    from robustlab.datasets.registry import list_datasets
    from robustlab.datasets.uploads import ingest_uploads

    files, caps = png_uploads(10)
    g = ingest_uploads(files, caption_lines="\n".join(caps)).gallery
    at = page(dataset="upload", upload_gallery=g, upload_gallery_id="up-fail")
    assert "Items: all 10 of the upload" in texts(at)  # an upload runs on all of its items
    at.multiselect(key="fail_vis_image").set_value(["gaussian_noise"])
    at.multiselect(key="fail_sev").set_value([1, 3]).run()
    go(at)
    assert not at.error, [e.value for e in at.error]
    out = at.session_state[run.RESULT]
    assert out.fmap.dataset["object"] is True and out.fmap.n == 10 and out.dataset is g
    names = [d["name"] for d in list_datasets()]
    assert "dashboard-upload" not in names and "in-memory" not in names  # nothing registered, here or in the library
    res = search(at, 60)
    assert res.source is g and res.dataset["object"] is True and res.evaluations <= 60


@pytest.mark.parametrize("how", ["cancel", "session gone"])
def test_a_search_job_is_cancelled(monkeypatch, how):
    from pathlib import Path

    args = {"model": MODEL, "dataset": "builtin", "n": 10, "task": "retrieval", "direction": "t2i", "k": 1,
            "budget": 500}
    job = failures_search.SearchJob(spec=None, out=Path("search"), owner="s", args=args)
    if how == "cancel":
        job.cancel.set()  # the page's Cancel button
    else:  # the browser session has gone: the job's progress callback sets the cancel event
        monkeypatch.setattr(failures_search.SearchJob, "owner_gone", lambda self, grace_s=0: True)
    job.run()
    assert job.cancelled and not job.error and job.result.cancelled
    assert job.result.candidates_tried == (0 if how == "cancel" else 1)
    assert {r["status"] for r in job.result.results} <= {"broken", "cancelled", "fails clean"}
