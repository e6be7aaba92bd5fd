"""Streamlit AppTest of the dashboard: loads with defaults, reacts to widgets, never raises.

AppTest (Streamlit 1.67) drops the entry point's sidebar elements from its tree after a rerun when the app uses
st.navigation (the real browser keeps them; tests/browser/test_browser.py clicks them), and then ignores later
changes to their session state. So a sidebar choice is made the way a returning user's session has it: through the
widget's session-state key, set before a fresh app's first run.
"""
import pytest
from streamlit.testing.v1 import AppTest

TIMEOUT = 240


@pytest.fixture()
def app():
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
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
    app.slider(key="img_sev").set_value(0)
    app.slider(key="txt_sev").set_value(0).run()
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


def test_sidebar_widgets_exist(app):
    assert app.radio(key="dataset").value == "builtin"
    assert app.selectbox(key="model_choice").value == "builtin:tiny-vit-clip"  # the default (issue 27)
    assert app.selectbox(key="device").value == "auto"


def test_app_tunes_the_allocator_at_start(monkeypatch):
    from robustlab.perturb import allocator

    calls = []
    monkeypatch.setattr(allocator, "tune_allocator", lambda: calls.append(1) or False)
    fresh()
    assert calls == [1]


def fresh(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def test_empty_upload_gallery():
    at = fresh(dataset="upload")
    assert any("gallery is empty" in i.value for i in at.info)
    assert at.radio(key="dataset").value == "upload"
    assert not at.error


def test_unloadable_model_is_a_message_and_the_session_keeps_working(monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_ALLOW_CUSTOM_MODELS", "1")  # typed specs are the operator's choice (issue 23)
    at = fresh(model_choice="other (open_clip / hf / path)…", custom_spec="hf:nobody/not-a-model")
    errs = [e.value for e in at.error]
    assert any("can't be loaded" in e and "builtin:tiny-clip" in e for e in errs), errs
    at.run()  # a rerun of the failing choice gives the same message, not a traceback
    assert not at.exception and any("can't be loaded" in e.value for e in at.error)
    # and the built-in model is one choice away
    at2 = fresh(model_choice="builtin:tiny-clip")
    assert not at2.error and ranks(at2)["Ground-truth rank, clean"].isdigit()


def test_uploaded_gallery_path():
    """AppTest cannot drive st.file_uploader, so the upload is ingested the way the page does it and placed in
    session state; the browser test covers the real upload widget."""
    import io

    from PIL import Image

    from robustlab.datasets.synthetic.datasets import builtin_gallery
    from robustlab.datasets.uploads import ingest_uploads

    g = builtin_gallery(12)
    files = []
    for i, im in enumerate(g.images):
        b = io.BytesIO()
        Image.fromarray(im).save(b, format="PNG")
        files.append((f"img{i}.png", b.getvalue()))
    files.append(("broken.png", b"\x89PNG\r\n garbage"))
    # plain caption lines pair with the files by position only when there is one per file given (issue 24): the
    # broken file's own caption goes with it
    rep = ingest_uploads(files, caption_lines="\n".join(g.captions + ["a broken file"]))
    assert rep.added == 12 and len(rep.errors) == 1 and list(rep.gallery.captions) == list(g.captions)
    at = fresh(upload_gallery=rep.gallery, upload_gallery_id="upload-test", dataset="upload")
    m = ranks(at)
    assert m["Ground-truth rank, clean"].isdigit()
    assert at.selectbox(key="query_idx").options[0].startswith("#0 · ")
    assert "(12 images in your gallery)" in at.expander[0].label
