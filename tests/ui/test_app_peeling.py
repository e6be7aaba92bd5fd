"""AppTest of the Grounding page's PEELING panel: a built-in scene with a builtin-refs (over-specified) expression,
the panel's controls, its tests or its skip reason, adding tests to the basket and the Export page listing them, and
an upload (which needs a typed ground-truth box). The tiny-vilt checkpoint's answers are not asserted: the tests that
need tests use a world-truth VQA oracle patched in for the uniqueness questions."""
from __future__ import annotations

import io
import re

import pytest
from ui.cache import clear_all
from PIL import Image
from streamlit.testing.v1 import AppTest

from robustlab.datasets import build
from robustlab.datasets.synthetic import world
from robustlab.diagnostics import peeling as P
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")
TIMEOUT = 300
ITEM = 3  # demo-split scene 3: "the small pink square at the bottom left" (several properties to peel)
SUBHEADER = "PEELING — does a shorter expression that still names the object break the model?"


def _parse_q(q: str) -> tuple[int, str]:
    """(which question, X in the singular: the first two ask in the plural, "How many red circles are in the
    image?")."""
    for k, pre in enumerate(("How many ", "Are there many ", "Is there a reflected ")):
        if q.startswith(pre):
            x = re.sub(r"( are)? ?in the image\?$", "", q[len(pre):])
            return k, re.sub(r"\b(circle|square|triangle|diamond|star|ring|object)s\b", r"\1", x)
    raise AssertionError(q)


def oracle(objects):
    """PEELING's three questions answered from the scene's objects (a perfect VQA model for the built-in world)."""
    def ask(images, questions):
        out = []
        for q in questions:
            k, x = _parse_q(q)
            n = len(P.world_matches(x, objects) or [])
            out.append([str(n), "yes" if n >= 2 else "no", "no"][k])
        return out
    return ask


@pytest.fixture()
def ref():
    r = build("builtin-refs", split="demo", n=ITEM + 1).item(ITEM).refs[0]
    return r.expression, int(r.meta["target"])


@pytest.fixture()
def world_vqa(monkeypatch):
    """The world oracle answers the uniqueness questions; PEELING's cached runs are forgotten before and after."""
    clear_all()  # the shared pools (ui.cache)
    objs = world.sample_scene(world.DEMO_SEED, ITEM).objects
    monkeypatch.setattr(P, "vqa_function", lambda model: oracle(objs))
    yield
    clear_all()  # the shared pools (ui.cache)


def page(expr: str, target: int, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    base = {"model_choice": "builtin:tiny-vilt", "gr_img_pert": "(none)", "gr_scene": ITEM, "gr_pl_run": True,
            f"gr_target_{ITEM}": target, f"gr_expr_{ITEM}_{target}": expr}
    for k, v in {**base, **state}.items():
        at.session_state[k] = v
    at.switch_page("pages/grounding.py").run()
    assert not at.exception, at.exception
    return at


def keys(at, prefix: str) -> list[str]:
    return [b.key for b in at.button if (b.key or "").startswith(prefix)]


def test_panel_is_off_until_switched_on(ref):
    at = page(*ref, gr_pl_run=False)
    assert not at.error and any(s.value == SUBHEADER for s in at.subheader)
    assert not keys(at, "gr_pl_add_") and len(at.image) == 2  # only the page's clean and perturbed images
    at.toggle(key="gr_pl_run").set_value(True).run()
    assert not at.exception
    assert len(at.image) > 2 or any(i.value.startswith("No test") for i in at.info)


def test_panel_renders_tests_or_a_skip_reason_with_the_real_model(ref):
    at = page(*ref)
    assert not at.error
    assert any(s.value == SUBHEADER for s in at.subheader)
    assert any(c.value.startswith("Uniqueness questions answered by") and "(the grounding model)" in c.value
               for c in at.caption)
    bt = at.checkbox(key="gr_pl_bt")
    if P.back_translation_reason():
        assert bt.disabled and not bt.value
        assert any(c.value.startswith("Back-translation is off:") for c in at.caption)
    assert at.checkbox(key="gr_pl_syn").value and at.checkbox(key="gr_pl_kb").value
    assert not at.checkbox(key="gr_pl_wide").value and not at.checkbox(key="gr_pl_compat").value
    adds = keys(at, "gr_pl_add_")
    if "gr_pl_add_0" in adds:  # tests: each with its three images, expressions and uniqueness answers
        assert any("test(s)" in c.value and "issue(s)" in c.value for c in at.caption)
        assert any(c.value.startswith("Verdict:") for c in at.caption)
        assert len(at.image) >= 3
    else:  # no test: the reason in words
        assert any(i.value.startswith("No test from this expression:") for i in at.info)
    # options rerun the panel without an exception
    at.checkbox(key="gr_pl_wide").check().run()
    at.checkbox(key="gr_pl_compat").check().run()
    assert not at.exception


def test_tests_go_to_the_basket_and_the_export_page_lists_them(ref, world_vqa):
    expr, target = ref
    at = page(expr, target, gr_seed=11)
    assert not at.error
    adds = [k for k in keys(at, "gr_pl_add_") if k != "gr_pl_add_issues"]
    assert len(adds) >= 2, [i.value for i in at.info]
    assert any("World truth: the reduced expression singles out the target ✓" in c.value for c in at.caption)
    # the fixed-box model may or may not miss: each test says which, in words
    flags = [m.value for m in at.markdown if "IoU" in m.value and ("issue" in m.value or m.value.startswith("✓"))]
    assert len(flags) == len(adds)
    at.button(key="gr_pl_add_0").click().run()
    assert not at.exception
    assert any("Added 1 PEELING test(s) to the basket (1 example(s))." in s.value for s in at.success)
    ex = at.session_state["basket"][0]
    assert ex.kind == "text" and ex.record["name"] == "peeling_p2" and ex.record["severity"] is None
    assert ex.record["seed"] == P.seed_for(11, 0, 0) and ex.record["variant"] == "synonym+keyboard"
    assert ex.model["view"] == "peeling" and ex.model["id"] == "builtin:tiny-vilt" and ex.model["rawtext"] == expr
    assert ex.clean == ex.model["Reducetext"] and ex.output == ex.model["MRtext"]
    assert ex.source["type"] == "builtin" and ex.source["target"] == target
    assert ex.attachments["image"].shape == (128, 128, 3)
    at.button(key="gr_pl_add_0").click().run()
    assert any("Already in the basket." in i.value for i in at.info)
    n_issues = sum("issue" in f for f in flags)
    if n_issues:
        at.button(key="gr_pl_add_issues").click().run()
        assert not at.exception
    assert len(at.session_state["basket"]) == 1 + n_issues - ("issue" in flags[0])
    # the Export page lists them like other text examples, and packs the zip with the paper's files
    at.switch_page("pages/export.py").run()
    assert not at.exception and not at.error
    assert any("peeling_p2" in m.value for m in at.markdown)
    table = next(d.value for d in at.dataframe if "perturbation" in d.value.columns)
    assert set(table["perturbation"]) == {"peeling_p2"}
    import zipfile

    names = zipfile.ZipFile(io.BytesIO(at.session_state["export_zip"][1])).namelist()
    assert "peeling/tests.csv" in names and "peeling/tests.tsv" in names


def test_stages_off_keep_the_reduced_expression(ref, world_vqa):
    at = page(*ref, gr_seed=12, gr_pl_syn=False, gr_pl_kb=False)
    assert not at.exception
    at.button(key="gr_pl_add_0").click().run()
    ex = at.session_state["basket"][0]
    assert ex.output == ex.clean and ex.record["variant"] == "none" and ex.record["params"]["stages"] == []


def test_upload_needs_a_typed_box(world_vqa):
    img = world.render_scene(world.sample_scene(world.DEMO_SEED, ITEM), 128)
    b = io.BytesIO()
    Image.fromarray(img).save(b, format="PNG")
    at = page("the red circle", 0, gr_source="upload")
    at.file_uploader(key="gr_upload").set_value(("scene.png", b.getvalue(), "image/png")).run()
    sc = world.sample_scene(world.DEMO_SEED, ITEM)
    r = world.overspecified_expression(sc, 0, __import__("numpy").random.default_rng(0), 128)
    at.text_input(key="gr_expr_upload").input(r["expression"]).run()
    assert not at.exception
    assert any(s.value == SUBHEADER for s in at.subheader)
    assert any(i.value.startswith("PEELING needs a ground-truth box") for i in at.info)
    assert not keys(at, "gr_pl_add_")
    at.text_input(key="gr_pl_box").input("1, 2, 3").run()
    assert any("four numbers" in e.value for e in at.error)
    at.text_input(key="gr_pl_box").input(", ".join(f"{v:.1f}" for v in r["box"])).run()
    assert not at.exception and not at.error
    tests = [k for k in keys(at, "gr_pl_add_") if k != "gr_pl_add_issues"]
    assert tests or any(i.value.startswith("No test from this expression:") for i in at.info)
    if tests:
        at.button(key=tests[0]).click().run()
        ex = at.session_state["basket"][0]
        assert ex.source["type"] == "upload" and ex.source["field"] == "typed expression"
        assert ex.model["region"] == pytest.approx(list(r["box"]), abs=0.1)


# ---- the ATCR labelling view and the extraction scores ------------------------------------------------------------
N_LABEL = 6


@pytest.fixture()
def world_vqa_refs(monkeypatch):
    """A world oracle for every built-in-refs demo scene the labelling view runs on (keyed by the image's bytes)."""
    import numpy as np

    clear_all()  # the shared pools (ui.cache)
    ds = build("builtin-refs", split="demo", n=N_LABEL)
    by = {ds.visual(i).tobytes(): ds.scene(i).objects for i in range(N_LABEL)}
    one = oracle([])

    def ask_fn(model):
        def ask(images, questions):
            return [oracle(by[np.asarray(im).tobytes()])([im], [q])[0] if np.asarray(im).tobytes() in by
                    else one([im], [q])[0] for im, q in zip(images, questions)]
        return ask
    monkeypatch.setattr(P, "vqa_function", ask_fn)
    yield
    clear_all()  # the shared pools (ui.cache)


def _radios(at) -> list[str]:
    return [r.key for r in at.radio if (r.key or "").startswith("gr_at_lab_")]


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_atcr_labelling_view_labels_export_and_reload(ref, world_vqa_refs):
    import json

    at = page(*ref, gr_pl_run=False, gr_at_run=True, gr_at_n=N_LABEL)
    assert not at.error, [e.value for e in at.error]
    assert any(s.value == "PEELING — label the tests: ATCR" for s in at.subheader)
    radios = _radios(at)
    assert len(radios) >= 3, [i.value for i in at.info]
    assert _metric(at, "ATCR") == "—" and _metric(at, "Labelled").startswith("0 / ")
    at.radio(key=radios[0]).set_value("valid").run()
    at.radio(key=radios[1]).set_value("invalid").run()
    assert not at.exception
    assert _metric(at, "ATCR") == "50.0 %" and _metric(at, "Valid · invalid") == "1 · 1"
    assert any(c.value.startswith("ATCR 50.0 % of 2 labelled test(s) · 95 % Wilson interval") for c in at.caption)
    # the downloaded document is what labels_document writes for these labels
    ids = [k[len("gr_at_lab_"):] for k in radios]
    store = next(iter(at.session_state["gr_at_labels"].values()))
    assert store == {ids[0]: "valid", ids[1]: "invalid"}
    # re-load: a labels file with three labels (one of a test not in this sample)
    doc = {"format": "robustlab-peeling-atcr", "version": 1, "labels": [
        {"uniq_id": ids[0], "label": "invalid"}, {"uniq_id": ids[1], "label": "invalid"},
        {"uniq_id": ids[2], "label": "valid"}, {"uniq_id": "elsewhere-0-0", "label": "valid"}]}
    at.file_uploader(key="gr_at_upload").set_value(("atcr.json", json.dumps(doc).encode(), "application/json")).run()
    assert not at.exception
    assert any(s.value.startswith("Loaded 3 label(s); 1 are of tests not in this sample") for s in at.success)
    assert _metric(at, "ATCR") == "33.3 %" and at.radio(key=radios[0]).value == "invalid"
    # a bad file: one line, the labels kept
    at.file_uploader(key="gr_at_upload").set_value(("bad.json", b"{nope", "application/json")).run()
    assert not at.exception
    errs = [e.value.replace("\\", "") for e in at.error]  # the message is Markdown-escaped
    assert len(errs) == 1 and errs[0].startswith("Cannot load those labels: bad.json: not valid JSON")
    assert _metric(at, "ATCR") == "33.3 %"


def test_extraction_scores_on_the_page(ref):
    at = page(*ref, gr_pl_run=False, gr_ex_run=True)
    assert not at.error
    table = next(d.value for d in at.dataframe if "F1 %" in d.value.columns)
    assert list(table["target"]) == ["objects", "properties", "overall"]
    assert table["labelled"].tolist() == [40, 65, 105]
    assert any(c.value.startswith("40 labelled expression(s)") for c in at.caption)
    csv = b"expression,object,properties\nthe tall man in a hat,man,tall | in a hat\n"
    at.file_uploader(key="gr_ex_labels").set_value(("mine.csv", csv, "text/csv")).run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "F1 %" in d.value.columns)
    assert table["labelled"].tolist() == [1, 2, 3]
    at.file_uploader(key="gr_ex_labels").set_value(("bad.csv", b"a,b\n1,2\n", "text/csv")).run()
    errs = [e.value.replace("\\", "") for e in at.error]
    assert errs == ["Cannot read those labels: bad.csv: the CSV header must name expression, object and properties "
                    "columns"]
