"""AppTest of the Grounding page: a built-in scene with its ground-truth box, perturbations and severities, the
sweep chart, an upload, the hf-grounding spec box offline, and the basket."""
import io

import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")
TIMEOUT = 240


@pytest.fixture()
def page():
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.switch_page("pages/grounding.py").run()
    assert not at.exception, at.exception
    return at


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_builtin_scene_defaults(page):
    at = page
    assert not at.error
    assert at.selectbox(key="gr_model").value == "builtin:tiny-vilt"
    assert at.radio(key="gr_source").value == "dataset"
    assert at.selectbox(key="gr_img_pert").value == "gaussian_noise" and at.slider(key="gr_img_sev").value == 3
    m = metrics(at)
    for label in ("IoU to ground truth, clean", "IoU to ground truth, perturbed", "IoU clean vs perturbed box"):
        assert 0.0 <= float(m[label]) <= 1.0
    assert len(at.image) == 2  # clean and perturbed, boxes drawn
    assert any(s.value == "Severity sweep 0–5" for s in at.subheader)
    # the built-in expression is the world's referring expression for the chosen target
    from robustlab.datasets.synthetic import world

    sc = world.sample_scene(world.DEMO_SEED, 0)
    expr = at.text_input(key="gr_expr_0_0").value
    assert expr == world.referring_expression(sc, 0, 128)["expression"]


def test_perturbations_severities_scene_and_basket(page):
    at = page
    at.number_input(key="gr_scene").set_value(5).run()
    assert not at.exception
    at.selectbox(key="gr_img_pert").set_value("defocus_blur").run()
    at.slider(key="gr_img_sev").set_value(5).run()
    at.selectbox(key="gr_txt_pert").set_value("keyboard").run()
    at.slider(key="gr_txt_sev").set_value(2).run()
    assert not at.exception and not at.error
    assert any("defocus_blur s5 + keyboard s2" in m.value for m in at.markdown)
    at.button(key="gr_add").click().run()
    assert not at.exception
    assert any("Added to the basket (1 example(s))." in s.value for s in at.success)
    basket = at.session_state["basket"]
    (ex,) = basket.items  # one combined condition: one example, the expression its part (issue 45, item 5)
    assert ex.kind == "image" and [p.kind for p in ex.parts] == ["text"]
    assert ex.parts[0].record["name"] == "keyboard" and ex.parts[0].record["severity"] == 2
    assert ex.record["name"] == "defocus_blur" and ex.record["severity"] == 5
    assert ex.model["view"] == "grounding" and ex.model["ground_truth"] is not None
    at.slider(key="gr_img_sev").set_value(0).run()
    at.selectbox(key="gr_txt_pert").set_value("(none)").run()
    m = metrics(at)
    assert m["IoU to ground truth, clean"] == m["IoU to ground truth, perturbed"]
    assert float(m["IoU clean vs perturbed box"]) == 1.0


def test_upload_and_typed_expression(page):
    at = page
    at.radio(key="gr_source").set_value("upload").run()
    assert not at.exception
    assert any("Upload an image" in i.value for i in at.info)
    at.file_uploader(key="gr_upload").set_value(("bad.png", b"\x89PNG\r\n\x1a\n garbage", "image/png")).run()
    assert not at.exception and at.error
    from robustlab.datasets.synthetic import world

    img = world.render_scene(world.sample_scene(1000, 2), 128)
    b = io.BytesIO()
    Image.fromarray(img).save(b, format="PNG")
    at.file_uploader(key="gr_upload").set_value(("scene.png", b.getvalue(), "image/png")).run()
    assert not at.exception and not at.error
    at.text_input(key="gr_expr_upload").input("the star").run()
    m = metrics(at)
    assert "IoU to ground truth, clean" not in m and "IoU clean vs perturbed box" in m
    assert len(at.image) == 2
    at.text_input(key="gr_expr_upload").input("   ").run()
    assert not at.exception and any("Type a referring expression" in e.value for e in at.error)


def fresh(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page("pages/grounding.py").run()
    assert not at.exception, at.exception
    return at


def test_sidebar_grounding_model_is_used_directly():
    at = fresh(model_choice="builtin:tiny-vilt")
    assert not at.error and not at.info
    assert not [s for s in at.selectbox if s.key == "gr_model"]  # no separate picker: the sidebar's model grounds
    assert "IoU clean vs perturbed box" in metrics(at)


def test_sidebar_model_that_cannot_ground_offers_the_grounding_models(page):
    (line,) = [i.value for i in page.info if "cannot do grounding" in i.value]
    assert line.startswith("The sidebar's model builtin:tiny-vit-clip cannot do grounding")
    assert page.selectbox(key="gr_model").options[0] == "builtin:tiny-vilt"
    assert any(o.startswith("hf-grounding:") for o in page.selectbox(key="gr_model").options)


def test_hf_grounding_spec_unavailable_offline_is_shown(monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_ALLOW_CUSTOM_MODELS", "1")  # typed specs are the operator's choice (issue 23)
    at = fresh(model_choice="other (open_clip / hf / path)…", custom_spec="hf-grounding:/no/such/folder")
    assert any("unavailable here" in w.value and "builtin:tiny-vilt" in w.value for w in at.warning)
    assert not at.get("plotly_chart")
    at = fresh(model_choice="other (open_clip / hf / path)…", custom_spec="open_clip:ViT-B-32")
    assert any("cannot do grounding" in i.value for i in at.info)
    assert at.selectbox(key="gr_model").value == "builtin:tiny-vilt" and "IoU clean vs perturbed box" in metrics(at)


def test_uploaded_image_gallery_item_with_a_typed_expression():
    from robustlab.datasets.synthetic.datasets import builtin_gallery
    from robustlab.datasets.uploads import ingest_uploads

    g = builtin_gallery(3)
    files = []
    for i, im in enumerate(g.images):
        b = io.BytesIO()
        Image.fromarray(im).save(b, format="PNG")
        files.append((f"mine{i}.png", b.getvalue()))
    rep = ingest_uploads(files, caption_lines="\n".join(g.captions))
    at = fresh(dataset="upload", upload_gallery=rep.gallery, upload_gallery_id="up-3", gr_scene=2)
    assert not at.error
    assert at.number_input(key="gr_scene").max == 2
    assert any(t.value.startswith("#2 · mine2.png") for t in at.text)
    at.text_input(key="gr_expr_2_0").input("the small blue square").run()
    assert not at.exception and not at.error
    m = metrics(at)
    assert "IoU to ground truth, clean" not in m and "IoU clean vs perturbed box" in m
    at.button(key="gr_add").click().run()
    ex = next(e for e in at.session_state["basket"].items if e.kind == "image")
    assert ex.source["type"] == "upload" and ex.source["name"] == "mine2.png"
