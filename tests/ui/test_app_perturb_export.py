"""AppTest of the Perturb and Export pages: defaults on a built-in item, perturbation/severity changes, uploads
(good and bad, through AppTest's file_uploader), the basket and the export download."""
import importlib.util
import io

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest
from apptest_helpers import table

from robustlab.export.basket import Basket, builtin_source, make_example
from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.perturb import perturb

TIMEOUT = 240
HAS_MEDIA = importlib.util.find_spec("robustlab.io.media") is not None


def _png(arr) -> bytes:
    b = io.BytesIO()
    Image.fromarray(arr).save(b, format="PNG")
    return b.getvalue()


@pytest.fixture()
def perturb_page():
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.switch_page("pages/perturb.py").run()
    assert not at.exception, at.exception
    return at


def test_loads_with_defaults_on_a_builtin_image(perturb_page):
    at = perturb_page
    assert not at.error
    # the sidebar's dataset (built-in images) by default: the Perturb page follows the sidebar (issue 45)
    assert at.radio(key="pt_kind").value == "image" and at.radio(key="pt_source_image").value == "dataset"
    assert at.selectbox(key="pt_name_image").value == "gaussian_noise"
    assert at.slider(key="pt_severity").value == 3
    assert any(s.value == "Severities 1–5" for s in at.subheader)
    assert len(at.image) == 5 + 2  # the strip and clean vs perturbed
    assert at.json[0].value is not None and "sigma" in at.json[0].value
    options = at.selectbox(key="pt_name_image").options
    assert any("noise › gaussian_noise" in o for o in options)  # grouped by modality · category


def test_change_perturbation_variant_severity_and_add_to_basket(perturb_page):
    at = perturb_page
    at.selectbox(key="pt_name_image").set_value("pixelate").run()
    at.slider(key="pt_severity").set_value(5).run()
    assert not at.exception
    assert any("pixelate · " in m.value and "severity 5" in m.value for m in at.markdown)
    at.slider(key="pt_severity").set_value(0).run()
    assert not at.exception
    assert any("clean pass-through" in str(j.value) for j in at.json)
    at.slider(key="pt_severity").set_value(2).run()
    at.number_input(key="pt_ds_item").set_value(4).run()
    at.number_input(key="pt_seed").set_value(9).run()
    at.button(key="pt_add").click().run()
    assert not at.exception
    assert any("Added to the basket (1" in s.value for s in at.success)
    at.button(key="pt_add").click().run()
    assert any("already in the basket" in i.value for i in at.info)
    basket = at.session_state["basket"]
    assert len(basket) == 1
    ex = basket[0]
    assert ex.record["name"] == "pixelate" and ex.record["severity"] == 2 and ex.record["seed"] == 9
    assert ex.source == {"type": "builtin", "collection": "gallery", "seed": 7, "index": 4, "name": "scene-7-00004"}
    # the category filter narrows the list
    at.selectbox(key="pt_group_image").set_value("image · noise").run()
    assert all("noise ›" in o for o in at.selectbox(key="pt_name_image").options)


def test_text_builtin_typed_and_bad_captions(perturb_page):
    at = perturb_page
    at.radio(key="pt_kind").set_value("text").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="pt_name_text").value == "keyboard"
    df = table(at, "MiniLM cosine")
    assert list(df["severity"]) == [1, 2, 3, 4, 5]
    assert ((df["MiniLM cosine"] <= 1.0) & (df["MiniLM cosine"] > 0)).all()
    assert any(":red-background[" in m.value for m in at.markdown)  # the highlighted diff
    assert any(m.label == "MiniLM cosine to the original" for m in at.metric)
    at.radio(key="pt_diff_level").set_value("char").run()
    assert not at.exception
    # typed text is escaped: markdown and directive characters are shown literally
    at.radio(key="pt_source_text").set_value("typed").run()
    typed = "**bold** [link](http://x.y) :red[boom] #1 $x$"
    at.text_area(key="pt_typed").input(typed).run()
    assert not at.exception
    assert any(t.value == typed for t in at.text)  # the clean caption as plain text
    at.slider(key="pt_severity").set_value(0).run()  # nothing changed: the diff is the escaped text
    diff_md = [m.value for m in at.markdown if "bold" in m.value][0]
    assert diff_md.startswith(r"\*\*bold\*\*") and r"\:red\[boom\]" in diff_md and r"\$x\$" in diff_md
    assert "http\\:\u200b//x" in diff_md  # no autolink
    at.text_area(key="pt_typed").input("   ").run()
    assert any("empty" in e.value for e in at.error)
    # uploaded caption files: good, then non-UTF-8 and empty (the good one is kept)
    at.radio(key="pt_source_text").set_value("upload").run()
    at.file_uploader(key="pt_upload_text").set_value(("caps.txt", "a red circle\n\nthe blue square\n".encode(),
                                                       "text/plain")).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="pt_upload_caption_idx").options == ["line 1 · a red circle", "line 2 · the blue square"]
    at.file_uploader(key="pt_upload_text").set_value(("latin.txt", "café".encode("latin-1"), "text/plain")).run()
    assert any("not UTF-8" in e.value for e in at.error)
    assert any("last good upload: caps.txt" in c.value for c in at.caption)
    at.file_uploader(key="pt_upload_text").set_value(("empty.txt", b"\n \n", "text/plain")).run()
    assert any("no captions" in e.value for e in at.error)
    at.button(key="pt_add").click().run()
    assert at.session_state["basket"][0].source["name"] == "caps.txt"
    assert at.session_state["basket"][0].source["line"] == 0


def test_image_upload_good_and_bad(perturb_page):
    at = perturb_page
    at.radio(key="pt_source_image").set_value("upload").run()
    assert any("Upload an image" in i.value for i in at.info)
    gray16 = (np.arange(33 * 17).reshape(33, 17) * 97).astype(np.uint16)
    at.file_uploader(key="pt_upload_image").set_value(("gray16.png", _png(gray16), "image/png")).run()
    assert not at.exception and not at.error
    assert any("17×33 px" in c.value for c in at.caption)
    at.file_uploader(key="pt_upload_image").set_value(("bad.png", b"\x89PNG\r\n\x1a\n garbage", "image/png")).run()
    assert not at.exception
    assert any(e.value.startswith("bad.png:") for e in at.error)
    assert len(at.image) == 7  # still perturbing the last good upload
    at.button(key="pt_add").click().run()
    src = at.session_state["basket"][0].source
    assert src["type"] == "upload" and src["name"] == "gray16.png" and src["sha256"].startswith("sha256:")


@pytest.fixture()
def unavailable_perturbation():
    from robustlab.perturb import registry

    name = "zz_test_needs_missing_weights"
    registry.register(name, modality="image", category="stylize", source="test",
                      severity_table={k: {"k": k} for k in range(1, 6)},
                      requires=("robustlab_no_such_dependency",))(lambda x, p, rng: x)
    yield name
    registry._REGISTRY.pop(name, None)


def test_unavailable_perturbations_are_listed_never_run(perturb_page, unavailable_perturbation):
    at = perturb_page
    at.run()
    opts = at.selectbox(key="pt_name_image").options
    assert any(unavailable_perturbation in o and "unavailable" in o for o in opts)
    assert unavailable_perturbation in table(at, "why")["perturbation"].tolist()
    at.selectbox(key="pt_name_image").set_value(unavailable_perturbation).run()
    assert not at.exception
    assert any("unavailable here" in w.value and "robustlab_no_such_dependency" in w.value for w in at.warning)
    assert not at.image and not at.button  # nothing ran, nothing to add


@pytest.mark.skipif(not HAS_MEDIA, reason="robustlab.io.media (video I/O) has not landed yet")
def test_video_builtin_and_bad_upload(perturb_page):
    at = perturb_page
    at.radio(key="pt_kind").set_value("video").run()
    assert not at.exception and not at.error
    assert len(at.get("video")) == 2
    assert len(at.image) == 5  # one filmstrip per severity
    at.radio(key="pt_source_video").set_value("upload").run()
    at.file_uploader(key="pt_upload_video").set_value(("broken.mp4", b"\x00\x00\x00\x18ftypmp42 junk",
                                                        "video/mp4")).run()
    assert not at.exception
    assert any(e.value.startswith("broken.mp4") for e in at.error)


def _basket(n=2):
    g = builtin_gallery(4)
    b = Basket()
    for i in range(n):
        b.add(make_example("image", g.images[i], perturb(g.images[i], "gaussian_noise", 2, seed=i),
                           builtin_source("gallery", 7, i, g.names[i])))
    b.add(make_example("text", g.captions[0], perturb(g.captions[0], "keyboard", 2, seed=0),
                       builtin_source("gallery", 7, 0, g.names[0], field="caption"),
                       model={"id": "builtin:tiny-clip", "view": "retrieval", "scores": {"rank": 3}}))
    return b


def test_export_page_empty_and_full():
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.switch_page("pages/export.py").run()
    assert not at.exception
    assert any("basket is empty" in i.value for i in at.info)
    at.session_state["basket"] = _basket()
    at.run()
    assert not at.exception and not at.error
    df = table(at, "perturbation")
    assert list(df["perturbation"]) == ["gaussian_noise", "gaussian_noise", "keyboard"]
    assert list(df["model"]) == ["", "", "builtin:tiny-clip"]
    assert list(df["model scores"]) == ["", "", "rank: 3"]  # "name: value", not a Python dict
    assert any(c.value == "model builtin:tiny-clip · rank: 3" for c in at.caption)
    assert not any("{" in c.value or "'rank'" in c.value for c in at.caption)
    dl = at.get("download_button")
    assert len(dl) == 1 and "3 example(s)" in dl[0].label
    # remove one, then empty the basket
    first = at.session_state["basket"][0].id
    at.button(key=f"rm_{first}").click().run()
    assert not at.exception and len(table(at, "perturbation")) == 2
    assert "2 example(s)" in at.get("download_button")[0].label
    at.button(key="export_clear").click().run()
    assert any("basket is empty" in i.value for i in at.info)


def test_export_page_shows_model_scores_readably():
    """A grounding example's IoUs: "name: value" with three decimals, a missing score as "—" (never a dict, never
    "None")."""
    g = builtin_gallery(2)
    b = Basket()
    b.add(make_example("image", g.images[0], perturb(g.images[0], "gaussian_noise", 2, seed=0),
                       builtin_source("gallery", 7, 0, g.names[0]),
                       model={"id": "builtin:tiny-grounder", "view": "grounding",
                              "scores": {"iou_clean": 0.8123456, "iou_perturbed": None,
                                         "iou_clean_vs_perturbed": 0.25}}))
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.session_state["basket"] = b
    at.switch_page("pages/export.py").run()
    assert not at.exception and not at.error
    want = "IoU clean: 0.812 · IoU perturbed: — · IoU clean vs perturbed: 0.250"
    assert list(table(at, "perturbation")["model scores"]) == [want]
    assert any(c.value == f"model builtin:tiny-grounder · {want}" for c in at.caption)
    assert not any("{" in c.value or "None" in c.value for c in at.caption)


def test_perturb_then_export_in_one_session(perturb_page):
    at = perturb_page
    at.button(key="pt_add").click().run()
    at.radio(key="pt_kind").set_value("text").run()
    at.button(key="pt_add").click().run()
    at.switch_page("pages/export.py").run()
    assert not at.exception
    df = table(at, "perturbation")
    assert list(df["kind"]) == ["image", "text"]
    assert "2 example(s)" in at.get("download_button")[0].label


def test_a_long_basket_is_filtered_sorted_and_paged_with_the_download_first():
    """Issue 45: the Export page was a 7,500-px list with the zip at the bottom. 24 examples: the download comes
    before the list, 10 show at a time, a text filter and a kind filter narrow it, "severity (high first)" sorts."""
    g = builtin_gallery(4)
    b = Basket()
    for i in range(24):
        name = ("gaussian_noise", "defocus_blur", "pixelate")[i % 3]
        b.add(make_example("image", g.images[i % 4], perturb(g.images[i % 4], name, 1 + i % 5, seed=i),
                           builtin_source("gallery", 7, i % 4, g.names[i % 4])))
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.session_state["basket"] = b
    at.switch_page("pages/export.py").run()
    assert not at.exception and not at.error
    assert any(f"Showing 10 of {len(b)} matching example(s)" in c.value for c in at.caption)
    assert at.number_input(key="ex_page").max == 3 and "24 example(s)" in at.get("download_button")[0].label
    at.text_input(key="ex_filter").set_value("pixelate").run()
    assert any("Showing 8 of 8 matching example(s) (24 in the basket)" in c.value for c in at.caption)
    at.text_input(key="ex_filter").set_value("").run()
    at.selectbox(key="ex_sort").set_value("severity (high first)").run()
    titles = [m.value for m in at.markdown if m.value.startswith("**") and "severity" in m.value]
    sevs = [int(t.split("severity ")[1].split(" ")[0]) for t in titles]
    assert len(sevs) == 10 and sevs == sorted(sevs, reverse=True) and sevs[0] == 5, titles
    at.number_input(key="ex_page").set_value(3).run()
    assert any("Showing 4 of 24 matching example(s)" in c.value for c in at.caption) and not at.exception
