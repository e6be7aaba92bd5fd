"""AppTest of the sidebar's dataset choices beyond the built-in images: an uploaded VIDEO gallery (three tiny mp4s
and a captions file, added through the real upload form) on every page, and local folders (one that works, one
that does not exist).

Pages run through ``switch_page`` in the same session, so the uploaded gallery (session state) follows them; sidebar
choices are preset through session state before the first run (see tests/ui/test_app.py)."""
import io
import json

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from robustlab.datasets.synthetic import world
from ui.folders import ANOTHER

TIMEOUT = 300
PAGES = ["pages/retrieval.py", "pages/hubness.py", "pages/embeddings.py", "pages/grounding.py", "pages/perturb.py",
         "pages/export.py", "pages/benchmark.py"]


def _videos():
    """Three short event videos of the built-in world as mp4 files, and a name,caption CSV."""
    from robustlab.io.media import write_mp4

    files, rows = [], ["name,caption"]
    for i in range(3):
        v = world.sample_video(7, i, n_frames=12)
        files.append((f"clip {i}.mp4", write_mp4(world.render_video(v, 48), 8.0), "video/mp4"))
        rows.append(f'clip {i}.mp4,"{v.caption}"')
    return files, ("captions.csv", "\n".join(rows).encode(), "text/csv")


@pytest.fixture(scope="module")
def app():
    """One session: the Retrieval page with "My uploads", three videos and their captions added through the form."""
    import torch

    torch.set_num_threads(2)
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.session_state["dataset"] = "upload"
    at.session_state["emb_method"] = "pca"
    at.run()
    assert not at.exception, at.exception
    assert any("gallery is empty" in i.value for i in at.info)
    files, captions = _videos()
    at.file_uploader(key="up_images").set_value(files)
    at.file_uploader(key="up_captions").set_value(captions)
    at.button[0].click().run()  # the form's "Add to my gallery"
    assert not at.exception, at.exception
    assert any(s.value == "Added 3 video(s)." for s in at.success), [e.value for e in at.error]
    g = at.session_state["upload_gallery"]
    assert g.kind == "video" and len(g) == 3 and all(c for c in g.captions)
    return at


def _arr(v):
    """Plotly JSON arrays: plain lists or typed arrays ({"dtype", "bdata"})."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v)


def metrics(at):
    return {m.label: m.value for m in at.metric}


def open_page(at, page):
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def test_retrieval_ranks_the_uploaded_videos(app):
    at = open_page(app, "pages/retrieval.py")
    assert at.radio(key="direction").options == ["text→video", "video→text"]
    assert "(3 videos in your gallery)" in at.expander[0].label
    m = metrics(at)
    assert m["Ground-truth rank, clean"].isdigit() and m["Ground-truth rank, perturbed"].isdigit()
    assert len(at.get("video")) == 2 * 3  # clean and perturbed top-3, each a player
    df = at.dataframe[-1].value
    assert set(df["direction"]) == {"text→video", "video→text"}
    assert set(df["condition"]) == {"clean", "video perturbed"}  # no text perturbation on videos by default
    at.radio(key="direction").set_value("v2t").run()
    assert not at.exception and not at.error
    assert len(at.get("video")) == 2 and len(at.dataframe) == 3  # the query video; two caption tables + metrics


def test_hubness_on_the_uploaded_videos(app):
    at = open_page(app, "pages/hubness.py")
    assert at.selectbox(key="hub_pert").value == "video:reverse_sampling"  # the video default of every page
    assert at.number_input(key="hub_k").value == 2  # k < 3 videos
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (fig,) = [f for f in figs if "gallery videos" in str(f["layout"].get("title"))]
    for t in fig["data"]:  # every video counted once
        assert int(np.sum(_arr(t["y"]))) == 3
    assert len(at.get("video")) == 2 * 3  # top hubs: perturbed and clean tabs


def test_embeddings_on_the_uploaded_videos(app):
    at = open_page(app, "pages/embeddings.py")
    assert any(c.value.startswith("12 points: 3 items · video reverse_sampling s1 · text keyboard s2 · PCA")
               for c in at.caption)
    groups = {t["name"] for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]}
    assert {"video · clean", "video · perturbed", "text · clean", "text · perturbed"} <= groups


def test_grounding_says_it_needs_images_and_uses_the_builtin_scenes(app):
    at = open_page(app, "pages/grounding.py")
    assert any("Grounding works on images" in i.value for i in at.info)
    assert "IoU to ground truth, clean" in metrics(at)


@pytest.mark.parametrize("page", ["pages/perturb.py", "pages/export.py"])
def test_other_pages_still_work(app, page):
    open_page(app, page)


def test_adding_images_to_a_video_gallery_is_refused(app):
    at = open_page(app, "pages/retrieval.py")
    b = io.BytesIO()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(b, format="PNG")
    at.file_uploader(key="up_images").set_value([("still.png", b.getvalue(), "image/png")])
    at.button[0].click().run()
    assert not at.exception
    assert any("this one holds videos" in e.value for e in at.error)
    assert len(at.session_state["upload_gallery"]) == 3


# ---- local folders --------------------------------------------------------------------------------------------
def fresh(page=None, **state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    (at.switch_page(page) if page else at).run()
    assert not at.exception, at.exception
    return at


def test_missing_folder_is_an_error_and_the_app_keeps_working(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(tmp_path))
    at = fresh(dataset="folder", folder_pick=ANOTHER, folder_fmt="upload", folder_sub="no/such/folder")
    errs = [e.value for e in at.error]
    assert errs == ["'no/such/folder' is not a folder or file this dashboard may open (the operator's data roots)"]
    assert at.radio(key="dataset").value == "folder"
    at.run()  # a rerun gives the same message, not a traceback
    assert not at.exception and [e.value for e in at.error] == errs
    for page in ("pages/hubness.py", "pages/embeddings.py", "pages/grounding.py", "pages/perturb.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
    assert any("may open" in e.value for e in fresh("pages/hubness.py", dataset="folder", folder_pick=ANOTHER,
                                                     folder_fmt="upload", folder_sub="no/such/folder").error)
    ok = fresh(dataset="builtin")  # and the built-in dataset is one choice away
    assert not ok.error and metrics(ok)["Ground-truth rank, clean"].isdigit()


def test_local_folders_are_off_without_data_roots(tmp_path):
    at = fresh(dataset="folder", folder_pick=ANOTHER, folder_fmt="upload", folder_sub=str(tmp_path))
    assert not at.error and any("Local folders are off" in i.value and "ROBUSTLAB_DATA_ROOTS" in i.value
                                for i in at.info)
    assert all(sb.key != "folder_pick" for sb in at.selectbox)


def test_no_folder_typed_yet_is_a_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(tmp_path))
    at = fresh(dataset="folder", folder_pick=ANOTHER, folder_fmt="upload")
    assert any("Type a folder" in i.value for i in at.info) and not at.error


def test_local_folder_of_images_with_captions(tmp_path, monkeypatch):
    from robustlab.datasets.synthetic.datasets import builtin_gallery

    g = builtin_gallery(6)
    data = tmp_path / "shapes"
    data.mkdir()
    for i, im in enumerate(g.images):
        Image.fromarray(im).save(data / f"img{i}.png")
    (data / "captions.txt").write_text("\n".join(g.captions))
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(tmp_path))
    at = fresh(dataset="folder", folder_max=4)
    assert at.selectbox(key="folder_pick").options == [f"upload · {tmp_path.name}/shapes", ANOTHER]
    assert not at.error
    m = metrics(at)
    assert m["Ground-truth rank, clean"].isdigit()
    assert len(at.selectbox(key="query_idx").options) == 4  # max items: the first 4 files
    at = fresh("pages/hubness.py", dataset="folder")
    assert not at.error and at.number_input(key="hub_k").value == 5


def test_local_folder_names_the_files_it_left_out(tmp_path, monkeypatch):
    """A folder with one file that is not an image: the gallery keeps the others, and the page says which file was
    left out (by name, once), instead of dropping it silently (issue 24: gallery.load_errors)."""
    from robustlab.datasets.synthetic.datasets import builtin_gallery

    g = builtin_gallery(4)
    data = tmp_path / "shapes"
    data.mkdir()
    for i, im in enumerate(g.images):
        Image.fromarray(im).save(data / f"img{i}.png")
    (data / "zz_fake.png").write_bytes(b"this is text, not a PNG")
    rows = [f"img{i}.png,{c}" for i, c in enumerate(g.captions)] + ["zz_fake.png,a fake"]
    (data / "captions.csv").write_text("file,caption\n" + "\n".join(rows) + "\n")
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(tmp_path))
    at = fresh(dataset="folder")
    assert not at.exception and not at.error
    left = [w.value for w in at.warning if "left out" in w.value]
    assert len(left) == 1 and "zz_fake.png" in left[0] and str(tmp_path) not in left[0], left
    assert len(at.selectbox(key="query_idx").options) == 4  # the four real images are the gallery
    assert metrics(at)["Ground-truth rank, clean"].isdigit()
