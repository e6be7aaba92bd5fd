"""Streamlit AppTest of the dashboard: loads with defaults, reacts to widgets, never raises."""
import pytest
from streamlit.testing.v1 import AppTest

TIMEOUT = 240


@pytest.fixture()
def app():
    at = AppTest.from_file("../app.py", default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def ranks(at):
    return {m.label: m.value for m in at.metric}


def test_loads_with_defaults_and_shows_results(app):
    m = ranks(app)
    assert m["Ground-truth rank, clean"].isdigit() and m["Ground-truth rank, perturbed"].isdigit()
    assert not app.error
    assert app.selectbox(key="img_pert").value == "gaussian_noise"
    assert app.selectbox(key="txt_pert").value == "keyboard"
    tables = app.dataframe
    assert len(tables) == 1
    df = tables[0].value
    assert set(df["condition"]) == {"clean", "image perturbed", "text perturbed", "both perturbed"}
    assert set(df["direction"]) == {"text→image", "image→text"}


def test_severity_change_reruns_and_updates(app):
    before = app.dataframe[0].value
    app.slider(key="img_sev").set_value(5).run()
    assert not app.exception
    after = app.dataframe[0].value
    b = before[(before.condition == "image perturbed") & (before.direction == "text→image")]["R@1"].item()
    a = after[(after.condition == "image perturbed") & (after.direction == "text→image")]["R@1"].item()
    assert a < b  # severity 5 noise hurts more than severity 3
    app.slider(key="img_sev").set_value(0).slider(key="txt_sev").set_value(0).run()
    assert not app.exception
    m = ranks(app)
    assert m["Ground-truth rank, clean"] == m["Ground-truth rank, perturbed"]


def test_other_perturbations_queries_and_topk(app):
    app.selectbox(key="img_pert").set_value("jpeg_compression").run()
    app.selectbox(key="txt_pert").set_value("(none)").run()
    app.slider(key="topk").set_value(8).run()
    assert not app.exception
    app.selectbox(key="query_idx").set_value(5).run()
    assert not app.exception
    app.radio(key="query_mode").set_value("my own text").run()
    assert not app.exception
    assert ranks(app)["Ground-truth rank, clean"] == "—"
    app.text_input(key="query_text").input("   ").run()
    assert not app.exception
    assert any("empty" in w.value for w in app.warning)
    app.text_input(key="query_text").input("a small blue square at the top").run()
    app.selectbox(key="query_gt").set_value(2).run()
    assert not app.exception and ranks(app)["Ground-truth rank, clean"].isdigit()


def test_empty_upload_gallery_and_unloadable_model(app):
    app.radio(key="dataset").set_value("upload").run()
    assert not app.exception
    assert any("gallery is empty" in i.value for i in app.info)
    app.radio(key="dataset").set_value("builtin").run()
    app.selectbox(key="model_choice").set_value("other (open_clip / hf / path)…").run()
    app.text_input(key="custom_spec").input("hf:nobody/not-a-model").run()
    assert not app.exception
    assert any("can't be loaded" in e.value for e in app.error)
    # back to the built-in model: the session keeps working
    app.selectbox(key="model_choice").set_value("builtin:tiny-clip").run()
    assert not app.exception and not app.error
    assert ranks(app)["Ground-truth rank, clean"].isdigit()


def test_uploaded_gallery_path(app):
    """AppTest cannot drive st.file_uploader, so the upload is ingested the way the page does it and placed in
    session state; the browser test covers the real upload widget."""
    import io

    import numpy as np
    from PIL import Image

    from robustlab.data.gallery import builtin_gallery, ingest_uploads

    g = builtin_gallery(12)
    files = []
    for i, im in enumerate(g.images):
        b = io.BytesIO()
        Image.fromarray(im).save(b, format="PNG")
        files.append((f"img{i}.png", b.getvalue()))
    files.append(("broken.png", b"\x89PNG\r\n garbage"))
    rep = ingest_uploads(files, caption_lines="\n".join(g.captions))
    assert rep.added == 12 and len(rep.errors) == 1
    app.session_state["upload_gallery"] = rep.gallery
    app.session_state["upload_gallery_id"] = "upload-test"
    app.radio(key="dataset").set_value("upload").run()
    assert not app.exception
    m = ranks(app)
    assert m["Ground-truth rank, clean"].isdigit()
    assert app.selectbox(key="query_idx").options[0].startswith("#0 · ")
