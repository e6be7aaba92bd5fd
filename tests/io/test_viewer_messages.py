"""Issue 44, findings 3 and 4: what a dashboard viewer reads in a message.

A viewer is not the operator: a message the dashboard shows never names a server path absolutely (it names files
relative to the dataset's folder or to the data root they are under), and it says the same thing whether a file is
outside the data roots, missing, unreadable or has a name the file system refuses (a 256-character component:
ENAMETOOLONG). The library and the CLI (no data roots in force) keep naming paths as given. A typed model spec gets
the same line whether or not a file of that name lies next to the server.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.datasets import DatasetError, build
from robustlab.io import files
from robustlab.io.access import AccessDenied, set_read_roots
from robustlab.io.files import InputError

REPO = Path(__file__).resolve().parents[2]
LONG = "a" * 256  # one path component over NAME_MAX (255): ENAMETOOLONG


def png(path: Path, value: int = 90) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((12, 16, 3), value, np.uint8)).save(path)
    return path


@pytest.fixture
def data(tmp_path):
    """tmp/data: the data root (resolved, in force for the test); tmp/outside: a planted secret next to it."""
    root, outside = (tmp_path / "data").resolve(), (tmp_path / "outside").resolve()
    root.mkdir()
    outside.mkdir()
    png(outside / "secret.jpg", 200)
    (outside / "secret.txt").write_text("TOP-SECRET\n")
    set_read_roots([root])
    yield root, outside
    set_read_roots(None)


def no_server_path(msg: str, *paths: Path) -> None:
    assert "\n" not in msg, msg
    for p in paths:
        assert str(p) not in msg, msg
    assert "TOP-SECRET" not in msg and "Traceback" not in msg, msg


def same(a: str, b: str, name_a: str, name_b: str) -> None:
    """The two messages are one line apart from the name each names."""
    assert a.replace(name_a, "<name>") == b.replace(name_b, "<name>"), (a, b)


# ---- finding 3: paths relative to the root ---------------------------------------------------------------------
def test_upload_empty_folder_is_named_relative_to_the_data_root(data):
    root, _ = data
    (root / "empty").mkdir()
    with pytest.raises(DatasetError) as e:
        build("upload", root=root / "empty")
    msg = str(e.value)
    no_server_path(msg, root)
    assert msg.startswith("upload: no image files in 'empty' "), msg
    set_read_roots(None)  # the library and the CLI: the operator at a shell still reads the full path
    with pytest.raises(DatasetError) as e:
        build("upload", root=root / "empty")
    assert str(root / "empty") in str(e.value)


def _msrvtt(root: Path) -> Path:
    from robustlab.io.media import write_video

    ds = root / "msrvtt"
    (ds / "videos").mkdir(parents=True)
    with open(ds / "MSRVTT_JSFUSION_test.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "vid_key", "video_id", "sentence"])
        w.writerows([("ret0", "msr0", "video0", "a dog"), ("ret1", "msr1", "video1", "a cat"),
                     ("ret2", "msr2", "video2", "a car")])
    frames = np.stack([np.full((16, 16, 3), 20 + 9 * k, np.uint8) for k in range(8)])
    write_video(frames, ds / "videos" / "video0.mp4", fps=8.0)
    good = (ds / "videos" / "video0.mp4").read_bytes()
    (ds / "videos" / "video2.mp4").write_bytes(good[: len(good) // 3])  # truncated
    return ds


def test_msrvtt_missing_and_truncated_videos_name_no_server_path(data):
    root, outside = data
    ds_root = _msrvtt(root)
    ds = build("msrvtt", root=ds_root)
    assert ds.visual(0).shape[0] == 12
    msgs = {}
    for i, name in ((1, "videos/video1.mp4"), (2, "videos/video2.mp4")):
        with pytest.raises(DatasetError) as e:
            ds.visual(i)
        msgs[i] = str(e.value)
        no_server_path(msgs[i], root)
        assert f"'msrvtt/{name}'" in msgs[i], msgs[i]
    assert "is missing" in msgs[1] and "truncated" in msgs[2] or "not a video" in msgs[2], msgs
    # a video symlinked out of the root (to a file that exists) reads exactly like the missing one
    (ds_root / "videos" / "video1.mp4").symlink_to(outside / "secret.jpg")
    with pytest.raises(DatasetError) as e2:
        ds.visual(1)
    assert str(e2.value) == msgs[1]


def _coco(root: Path, filenames: list[str]) -> Path:
    ds = root / "coco"
    (ds / "val2014").mkdir(parents=True)
    images = [{"filepath": "val2014", "filename": f, "split": "test", "cocoid": k,
               "sentences": [{"raw": f"caption {k}"}]} for k, f in enumerate(filenames)]
    (ds / "dataset_coco.json").write_text(json.dumps({"images": images}))
    return ds


def test_coco_outside_missing_and_symlinked_images_read_the_same(data):
    root, outside = data
    ds_root = _coco(root, ["../../../outside/secret.jpg", "../../../outside/nothere.jpg", "link.jpg", "gone.jpg",
                           "ok.jpg"])
    png(ds_root / "val2014" / "ok.jpg")
    (ds_root / "val2014" / "link.jpg").symlink_to(outside / "secret.jpg")
    ds = build("coco", root=ds_root)
    assert ds.visual(4).shape == (12, 16, 3)
    msgs = []
    for i in range(4):
        with pytest.raises(DatasetError) as e:
            ds.visual(i)
        msgs.append(str(e.value))
        no_server_path(msgs[-1], root, outside)
    same(msgs[0], msgs[1], "secret.jpg", "nothere.jpg")  # an existing file outside the root == a missing one
    same(msgs[2], msgs[3], "link.jpg", "gone.jpg")  # a symlink out of the root == a missing file
    assert "is missing" in msgs[1], msgs[1]


def test_annotation_file_outside_missing_or_broken_names_no_server_path(data):
    root, outside = data
    ds_root = _coco(root, ["ok.jpg"])
    (ds_root / "dataset_coco.json").write_text("{not json")
    with pytest.raises(DatasetError) as e:
        build("coco", root=ds_root)
    no_server_path(str(e.value), root)
    assert "coco: 'coco/dataset_coco.json' is not valid JSON" in str(e.value), str(e.value)
    (ds_root / "dataset_coco.json").unlink()
    with pytest.raises(DatasetError) as missing:
        build("coco", root=ds_root)
    (ds_root / "dataset_coco.json").symlink_to(outside / "secret.txt")
    with pytest.raises(DatasetError) as linked:
        build("coco", root=ds_root)
    assert str(missing.value) == str(linked.value)
    no_server_path(str(missing.value), root, outside)
    with pytest.raises(DatasetError) as a:
        build("coco", root=ds_root, ann_file=str(outside / "secret.txt"))
    with pytest.raises(DatasetError) as b:
        build("coco", root=ds_root, ann_file=str(outside / "nothere.txt"))
    same(str(a.value), str(b.value), "secret.txt", "nothere.txt")  # an annotation file given outside: as missing
    no_server_path(str(a.value), root, outside)


# ---- finding 3: model specs ------------------------------------------------------------------------------------
def test_a_typed_hf_spec_reads_the_same_whether_or_not_a_file_of_that_name_is_there(tmp_path, monkeypatch):
    from ui import operator

    monkeypatch.chdir(REPO)  # app.py is there, assetz is not
    assert (REPO / "app.py").is_file() and not (REPO / "assetz").exists()
    cfg = operator.OperatorConfig(data_roots=(tmp_path.resolve(),), allow_custom_models=True)
    for prefix in ("hf:", "hf-vilt:", "hf-grounding:", "hf-xclip:"):
        a, b = operator.spec_refusal(f"{prefix}app.py", cfg), operator.spec_refusal(f"{prefix}assetz", cfg)
        assert a == b and a is not None and "hub downloads are off" in a, (prefix, a, b)
    a, b = operator.spec_refusal("app.py", cfg), operator.spec_refusal("appz.py", cfg)
    assert a == b and a is not None and a.startswith("it is not a checkpoint this dashboard may open"), (a, b)
    hub = operator.OperatorConfig(data_roots=(tmp_path.resolve(),), allow_custom_models=True, allow_hub=True)
    assert operator.spec_refusal("hf:app.py", hub) == operator.spec_refusal("hf:assetz", hub)
    # what was allowed stays allowed, what was refused stays refused
    ck = tmp_path / "clip"
    ck.mkdir()
    (ck / "config.json").write_text("{}")
    assert operator.spec_refusal(f"hf:{ck}", cfg) is None
    assert operator.spec_refusal("hf:/etc", cfg).startswith("it is not a checkpoint")
    assert operator.spec_refusal("hf:../app.py", cfg).startswith("it is not a checkpoint")


def test_a_confined_process_reads_a_bare_hf_name_as_a_hub_id_never_a_local_folder(tmp_path, monkeypatch):
    """With the hub allowed the refusal above lets ``hf:NAME`` through: the loader must then not read a folder
    NAME next to the server (outside the roots); the CLI still does."""
    from robustlab.models.hf_base import hf_source

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no probe of the network
    (tmp_path / "mymodel").mkdir()
    (tmp_path / "mymodel" / "config.json").write_text("{}")
    (tmp_path / "root").mkdir()
    monkeypatch.chdir(tmp_path)
    assert hf_source("hf", "mymodel")[3] is True  # the CLI: a local folder
    set_read_roots([tmp_path / "root"])
    try:
        assert hf_source("hf", "mymodel")[3] is False  # the dashboard: a hub repo id
    finally:
        set_read_roots(None)


def test_the_cli_still_says_what_is_wrong_with_a_spec(tmp_path, monkeypatch):
    from robustlab.models.registry import parse_spec, spec_source

    monkeypatch.chdir(REPO)
    assert spec_source("hf:app.py") == ("local", "app.py")  # the operator's own view: it is that file
    with pytest.raises(ValueError, match="unknown model spec 'appz.py'"):
        parse_spec("appz.py")


# ---- finding 4: a name the file system refuses -----------------------------------------------------------------
def test_a_256_character_component_is_the_same_refusal_as_a_missing_folder(data):
    from ui.folders import resolve_folder

    root, _ = data
    with pytest.raises(AccessDenied) as missing:
        resolve_folder(str(root), "no/such", [root])
    for sub in (LONG, f"x/{LONG}/y", "loop"):
        if sub == "loop":
            (root / "loop").symlink_to(root / "loop")  # ELOOP
        with pytest.raises(AccessDenied) as e:
            resolve_folder(str(root), sub, [root])
        same(str(e.value), str(missing.value), sub, "no/such")
        no_server_path(str(e.value), root)


def test_a_256_character_file_name_reads_like_a_missing_file(data):
    root, _ = data
    ds_root = _coco(root, [LONG + ".jpg", "gone.jpg"])
    ds = build("coco", root=ds_root)
    with pytest.raises(DatasetError) as long_:
        ds.visual(0)
    with pytest.raises(DatasetError) as gone:
        ds.visual(1)
    same(str(long_.value), str(gone.value), LONG + ".jpg", "gone.jpg")
    no_server_path(str(long_.value), root)
    for fn in (files.read_file_capped, files.check_file_size, files.open_capped):
        with pytest.raises(InputError) as a:
            fn(root / (LONG + ".txt"))
        with pytest.raises(InputError) as b:
            fn(root / "gone.txt")
        same(str(a.value), str(b.value), LONG + ".txt", "gone.txt")
        no_server_path(str(a.value), root)
    (root / "up").mkdir()
    png(root / "up" / "a.png")
    (root / "up" / "captions.txt").write_text("a cat\n")
    assert build("upload", root=root / "up").names == ["a.png"]


@pytest.mark.slow
def test_the_dashboard_shows_one_line_for_a_256_character_folder(data, monkeypatch):
    from apptest_helpers import fresh

    from ui.folders import ANOTHER

    root, _ = data
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(root))
    png(root / "shapes" / "a.png")
    lines = {}
    for sub in (LONG, "no/such/folder"):
        at = fresh(timeout=300, dataset="folder", folder_pick=ANOTHER, folder_fmt="upload", folder_sub=sub)
        assert not at.exception, [e.value for e in at.exception]
        (err,) = [e.value for e in at.error]
        assert str(root) not in err
        lines[sub] = err.replace(sub, "<shown>")
    assert len(set(lines.values())) == 1, lines


def test_the_confinement_itself_refuses_names_the_file_system_refuses(tmp_path):
    """resolve_inside, check_read and visible (robustlab.io.access), called directly: a 256-character component or
    a symlink loop is one more path it may not open, never an OSError (issue 44, finding 4)."""
    from robustlab.io.access import AccessDenied, check_read, resolve_inside, set_read_roots, visible

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    set_read_roots([tmp_path])
    try:
        for rel in ("b" * 256, "loop", "loop/x"):
            with pytest.raises(AccessDenied):
                resolve_inside(tmp_path, rel)
            with pytest.raises(AccessDenied):
                check_read(tmp_path / rel)
            assert visible(tmp_path / rel) is False
    finally:
        set_read_roots(None)
