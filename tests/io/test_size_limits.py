"""Size before read (issue 23): every file a dashboard viewer can make the server read is stat-ed before it is read,
an image's header is checked before it is decoded, a folder is scanned up to a cap, and a browser upload's ``.size``
is checked before ``getvalue()`` copies it. Each refusal is one line naming the file (relative to its folder), the
limit and the setting that changes it.

Huge files are sparse (``truncate``): they take no disk, and reading one would take real memory."""
from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile

from robustlab.datasets import build
from robustlab.datasets import _local
from robustlab.datasets.base import DatasetError
from robustlab.io import files
from robustlab.io.files import InputError

REPO = Path(__file__).resolve().parents[2]
BIG = 300 << 20  # 300 MB, sparse


def sparse(path: Path, size: int = BIG) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def png(path: Path, value: int = 90, size=(8, 10)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((*size, 3), value, np.uint8)).save(path)
    return path


def header_png(w: int, h: int) -> bytes:
    """A tiny PNG whose header claims w×h pixels."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


@pytest.fixture
def reads(monkeypatch):
    """The paths opened for reading (os.open, open, Path.read_bytes / read_text) while the test runs (opened for
    writing, as the tests make their files, is not counted)."""
    seen: list[str] = []
    real_os_open, real_open = os.open, open
    real_read_bytes, real_read_text = Path.read_bytes, Path.read_text

    def os_open(path, flags, *a, **kw):
        if not flags & (os.O_WRONLY | os.O_RDWR):  # the test writing its files is no read
            seen.append(os.fspath(path))
        return real_os_open(path, flags, *a, **kw)

    def py_open(path, *a, **kw):
        mode = a[0] if a else kw.get("mode", "r")
        if isinstance(path, (str, os.PathLike)) and ("r" in mode or "+" in mode):
            seen.append(os.fspath(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr("builtins.open", py_open)
    monkeypatch.setattr(Path, "read_bytes", lambda self: (seen.append(str(self)), real_read_bytes(self))[1])
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **kw: (seen.append(str(self)),
                                                                  real_read_text(self, *a, **kw))[1])
    return seen


def one_line(msg: str, *words: str) -> str:
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


# ---- the upload folder ---------------------------------------------------------------------------------------------
def test_sparse_huge_files_are_refused_by_stat_without_memory(tmp_path):
    """The reviewer's case: four sparse 300 MB *.png files. In a fresh process (its peak RSS is this call's) the
    loader refuses each in one line and its peak RSS does not grow (reading them first took ~1.2 GB)."""
    for i in range(4):
        sparse(tmp_path / f"big{i}.png")
    script = textwrap.dedent(f"""
        import json, resource
        from robustlab.datasets import uploads
        from robustlab.datasets.base import DatasetError
        uploads.ingest_uploads([], None)  # the loader's lazy imports, before the measure
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            uploads.from_folder({str(tmp_path)!r})
            msg = None
        except DatasetError as e:
            msg = str(e)
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024  # ru_maxrss: KiB on Linux
        print(json.dumps({{"msg": msg, "grew_mb": grew}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    msg = one_line(res["msg"], "ROBUSTLAB_MAX_UPLOAD_MB", "50 MB limit")
    for i in range(4):
        assert f"big{i}.png: 300.0 MB is over the 50 MB limit" in msg, msg
    assert str(tmp_path) not in msg  # the files are named relative to the folder
    assert res["grew_mb"] < 100, res


def test_oversized_files_are_never_opened_and_the_rest_loads(tmp_path, reads):
    for i in range(3):
        png(tmp_path / f"ok{i}.png", 40 * (i + 1))
    sparse(tmp_path / "huge.png")
    (tmp_path / "captions.txt").write_text("the huge one\none\ntwo\nthree\n")  # one line per file, by name (issue 24)
    g = build("upload", root=tmp_path)
    assert len(g) == 3 and g.names == ["ok0.png", "ok1.png", "ok2.png"] and g.captions == ["one", "two", "three"]
    assert [one_line(e, "huge.png", "300.0 MB", "ROBUSTLAB_MAX_UPLOAD_MB") for e in g.load_errors] == g.load_errors
    assert len(g.load_errors) == 1 and str(tmp_path) not in g.load_errors[0]
    assert not [p for p in reads if p.endswith("huge.png")], reads
    assert any(p.endswith("ok0.png") for p in reads)  # the spy sees reads


def test_symlinked_files_are_stat_ed_through_to_their_target(tmp_path, reads):
    outside = sparse(tmp_path / "elsewhere" / "target.bin")
    root = tmp_path / "up"
    png(root / "ok.png")
    (root / "link.png").symlink_to(outside)
    if Path("/dev/zero").exists():
        (root / "zero.png").symlink_to("/dev/zero")  # a device: never a regular file, never read
    g = build("upload", root=root)
    assert g.names == ["ok.png"]
    errs = {e.split(":")[0]: e for e in g.load_errors}
    one_line(errs["link.png"], "300.0 MB is over the 50 MB limit", "ROBUSTLAB_MAX_UPLOAD_MB")
    assert "target.bin" not in errs["link.png"] and str(tmp_path) not in errs["link.png"]
    assert not [p for p in reads if p.endswith(("link.png", "target.bin", "zero.png")) or p == "/dev/zero"], reads
    with pytest.raises(InputError, match="not a regular file"):
        files.read_file_capped("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_the_folder_does_not_hang(tmp_path):
    png(tmp_path / "ok.png")
    os.mkfifo(tmp_path / "pipe.png")
    assert build("upload", root=tmp_path).names == ["ok.png"]  # not a file: not listed, never opened
    with pytest.raises(InputError, match="pipe.png: not a regular file"):
        files.read_file_capped(tmp_path / "pipe.png")


def test_folder_entry_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_FOLDER_FILES", 50)
    for i in range(60):
        (tmp_path / f"note{i:02d}.txt").write_bytes(b"")  # every entry counts, not only images
    png(tmp_path / "a.png")
    with pytest.raises(DatasetError) as e:
        build("upload", root=tmp_path)
    one_line(str(e.value), "upload:", "more than 50 entries", "ROBUSTLAB_MAX_FOLDER_FILES")
    assert str(tmp_path.parent) not in str(e.value)
    seen, real_scandir = [], os.scandir

    class Counting:  # scan_folder stops at the cap: it never walks the whole folder
        def __init__(self, path):
            self.it = real_scandir(path)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.it.close()

        def __iter__(self):
            for entry in self.it:
                seen.append(entry.name)
                yield entry

    monkeypatch.setattr(files.os, "scandir", Counting)
    with pytest.raises(InputError, match="more than 50 entries"):
        files.scan_folder(tmp_path)
    assert len(seen) == 51
    monkeypatch.undo()
    assert len(files.scan_folder(tmp_path, cap=100, suffixes=(".png",))) == 1
    assert len(build("upload", root=tmp_path)) == 1  # under the default cap


def test_oversized_captions_file_is_refused_by_stat(tmp_path, reads):
    png(tmp_path / "a.png")
    sparse(tmp_path / "captions.txt", 60 << 20)
    with pytest.raises(DatasetError) as e:
        build("upload", root=tmp_path)
    one_line(str(e.value), "upload: captions.txt: 60.0 MB is over the 50 MB limit", "ROBUSTLAB_MAX_UPLOAD_MB")
    assert not [p for p in reads if p.endswith("captions.txt")], reads


def test_oversized_video_in_a_folder_is_refused_before_decoding(tmp_path, reads, monkeypatch):
    import robustlab.io.media as media

    monkeypatch.setattr(media, "read_video", lambda *a, **kw: pytest.fail("decoded an over-limit video"))
    sparse(tmp_path / "clip.mp4")
    with pytest.raises(DatasetError) as e:
        build("upload", root=tmp_path, kind="video")
    one_line(str(e.value), "clip.mp4: 300.0 MB is over the 50 MB limit", "ROBUSTLAB_MAX_UPLOAD_MB")
    assert not [p for p in reads if p.endswith("clip.mp4")], reads


def test_upload_limit_setting_is_the_one_for_folders_too(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_UPLOAD_BYTES", 1 << 20)  # ROBUSTLAB_MAX_UPLOAD_MB=1
    png(tmp_path / "small.png")
    with open(tmp_path / "two.png", "wb") as f:
        f.write(b"\x89PNG" + b"\0" * (2 << 20))
    g = build("upload", root=tmp_path)
    assert g.names == ["small.png"]
    assert g.load_errors == ["two.png: 2.0 MB is over the 1 MB limit (set ROBUSTLAB_MAX_UPLOAD_MB to change it)"]


def test_settings_come_from_the_environment():
    env = {**os.environ, "ROBUSTLAB_MAX_UPLOAD_MB": "7", "ROBUSTLAB_MAX_ANNOTATION_MB": "3",
           "ROBUSTLAB_MAX_FOLDER_FILES": "50"}
    code = "from robustlab.io import files as f; print(f.MAX_UPLOAD_BYTES, f.MAX_ANNOTATION_BYTES, f.MAX_FOLDER_FILES)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == [str(7 << 20), str(3 << 20), "50"], out.stderr[-1000:]
    bad = {**env, "ROBUSTLAB_MAX_UPLOAD_MB": "lots", "ROBUSTLAB_MAX_ANNOTATION_MB": "-1",
           "ROBUSTLAB_MAX_FOLDER_FILES": "nan"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=bad, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == [str(50 << 20), str(2048 << 20), "20000"], out.stderr[-1000:]


# ---- helpers ---------------------------------------------------------------------------------------------------------
def test_read_file_capped_stats_first_and_reads_at_most_the_limit(tmp_path, monkeypatch):
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 100)
    assert files.read_file_capped(p, 100) == b"x" * 100
    assert files.check_file_size(p, 100) == 100
    with pytest.raises(InputError) as e:
        files.read_file_capped(p, 99, "sub/f.bin", "SOME_SETTING")
    one_line(str(e.value), "sub/f.bin:", "over the", "SOME_SETTING")
    with pytest.raises(InputError, match="cannot read the file"):
        files.read_file_capped(tmp_path / "missing.bin")
    with pytest.raises(InputError, match="not a regular file"):
        files.check_file_size(tmp_path)
    # a file that grows between the stat and the read: at most limit + 1 bytes are read, and it is refused
    real_fstat, real_check = os.fstat, files.check_file_size

    def grow_after_check(path, *a, **kw):
        size = real_check(path, *a, **kw)
        with open(path, "ab") as f:
            f.write(b"y" * 10_000)
        return size

    monkeypatch.setattr(files, "check_file_size", grow_after_check)
    # and the opened file's own stat still says 100 bytes (the growth lands after it too)
    monkeypatch.setattr(files.os, "fstat", lambda fd: os.stat_result((*real_fstat(fd)[:6], 100, *real_fstat(fd)[7:])))
    with pytest.raises(InputError, match="grew past"):
        files.read_file_capped(p, 200)
    p.write_bytes(b"x" * 100)
    with pytest.raises(InputError, match="grew past the 200 bytes limit"):
        with files.open_capped(p, 200, encoding="utf-8") as f:
            f.read()


def test_open_capped_streams_within_the_limit(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(1000)))
    with files.open_capped(p, p.stat().st_size, encoding="utf-8") as f:
        assert sum(1 for _ in f) == 1000
    with pytest.raises(InputError, match="rows.jsonl: 10890 bytes is over the 10889 bytes limit"):
        files.open_capped(p, p.stat().st_size - 1)


# ---- images: the header's pixel count before decoding ------------------------------------------------------------
def test_image_over_40_megapixels_is_refused_before_decoding(tmp_path, monkeypatch):
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: pytest.fail("decoded an over-limit image"))
    data = header_png(7000, 7000)  # 49 MP: under Pillow's own bomb limit, over robustlab's 40 MP
    with pytest.raises(InputError) as e:
        files.load_image(data, "wide.png")
    one_line(str(e.value), "wide.png", "7000×7000 pixels", "40-megapixel limit")
    p = tmp_path / "wide.png"
    p.write_bytes(data)
    with pytest.raises(InputError, match="40-megapixel limit"):
        files.load_image(p)  # read from a path
    with pytest.raises(DatasetError, match="coco: .*40-megapixel limit"):
        _local.read_image(p, "coco")  # the local loaders' images
    root = tmp_path / "up"
    root.mkdir()
    (root / "wide.png").write_bytes(data)
    with pytest.raises(DatasetError, match="upload: wide.png: 7000×7000 pixels .*40-megapixel"):
        build("upload", root=root)


def test_local_loader_image_is_stat_ed_before_it_is_read(tmp_path, reads):
    p = sparse(tmp_path / "val2014" / "x.jpg")
    with pytest.raises(DatasetError) as e:
        _local.read_image(p, "coco", root=tmp_path)
    one_line(str(e.value), "coco: val2014/x.jpg: 300.0 MB is over the 50 MB limit", "ROBUSTLAB_MAX_UPLOAD_MB")
    assert str(tmp_path) not in str(e.value)
    assert not [q for q in reads if q.endswith("x.jpg")], reads


# ---- annotation files of the local dataset loaders --------------------------------------------------------------
def test_oversized_annotation_files_are_refused_by_stat(tmp_path, reads):
    """The annotation cap is 2 GB by default: a sparse 2.5 GB JSON / JSONL / CSV is refused, never read."""
    for name, read in (("ann.json", lambda p: _local.read_json(p, "coco")),
                       ("ann.jsonl", lambda p: _local.read_jsonl(p, "nlvr2")),
                       ("ann.csv", lambda p: _local.read_csv(p, ["video_id"], "msrvtt"))):
        p = sparse(tmp_path / name, 2560 << 20)
        with pytest.raises(DatasetError) as e:
            read(p)
        one_line(str(e.value), f"{name}: 2560.0 MB is over the 2048 MB limit", "ROBUSTLAB_MAX_ANNOTATION_MB")
        assert str(tmp_path) not in str(e.value)
        assert not [q for q in reads if q.endswith(name)], reads


def test_annotation_cap_through_a_loader(tmp_path, monkeypatch, reads):
    root = tmp_path / "coco"
    imgs = [{"filename": "a.jpg", "filepath": "val2014", "split": "test", "cocoid": 1,
             "sentences": [{"raw": "a cat", "tokens": ["a", "cat"]}]}]
    root.mkdir()
    (root / "dataset_coco.json").write_text(json.dumps({"dataset": "coco", "images": imgs}))
    png(root / "val2014" / "a.jpg")
    assert len(build("coco", root=root, split="test")) == 1
    monkeypatch.setattr(files, "MAX_ANNOTATION_BYTES", 10)
    reads.clear()
    with pytest.raises(DatasetError) as e:
        build("coco", root=root, split="test")
    one_line(str(e.value), "dataset_coco.json:", "over the", "ROBUSTLAB_MAX_ANNOTATION_MB")
    assert not [q for q in reads if q.endswith("dataset_coco.json")], reads


def test_annotation_readers_still_read_good_files(tmp_path):
    (tmp_path / "a.json").write_text('\ufeff{"x": [1, 2]}', encoding="utf-8")
    assert _local.read_json(tmp_path / "a.json", "t") == {"x": [1, 2]}
    (tmp_path / "a.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n')
    assert _local.read_jsonl(tmp_path / "a.jsonl", "t") == [{"a": 1}, {"a": 2}]
    (tmp_path / "a.csv").write_text("\ufeffvideo_id,sentence\nv1,hello\n", encoding="utf-8")
    assert _local.read_csv(tmp_path / "a.csv", ["video_id"], "t") == [{"video_id": "v1", "sentence": "hello"}]
    with pytest.raises(DatasetError, match="not valid JSON"):
        (tmp_path / "b.json").write_text("{")
        _local.read_json(tmp_path / "b.json", "t")


# ---- browser uploads: .size before getvalue() ------------------------------------------------------------------------
class FakeUpload:
    """What st.file_uploader returns, as far as robustlab uses it; getvalue() on an over-limit file fails the test."""

    def __init__(self, name: str, size: int, data: bytes | None = None):
        self.name, self.size, self.file_id, self._data = name, size, name, data

    def getvalue(self) -> bytes:
        if self._data is None:
            raise AssertionError(f"getvalue() called on {self.name}")
        return self._data


def test_uploaded_file_size_is_checked_before_getvalue():
    with pytest.raises(InputError) as e:
        files.uploaded_bytes(FakeUpload("huge.png", BIG))
    one_line(str(e.value), "huge.png: 300.0 MB is over the 50 MB limit", "ROBUSTLAB_MAX_UPLOAD_MB")
    assert files.uploaded_bytes(FakeUpload("ok.png", 3, b"abc")) == b"abc"
    with pytest.raises(InputError, match="over the"):  # a .size that lies low is still caught after the copy
        files.uploaded_bytes(FakeUpload("liar.png", 3, b"abcd"), limit=3)
    buf = io.BytesIO(b"z" * 10)  # no .size: the buffer's length, without a copy
    buf.name = "nosize.png"
    with pytest.raises(InputError, match="nosize.png"):
        files.uploaded_bytes(buf, limit=5)


def test_upload_form_reports_over_limit_files_one_line_each():
    from ui import uploads as ui_uploads

    got, errors = ui_uploads._read([FakeUpload("a.png", 3, b"abc"), FakeUpload("huge.png", BIG),
                                    FakeUpload("huge2.mp4", BIG)])
    assert got == [("a.png", b"abc")]
    assert [e.split(":")[0] for e in errors] == ["huge.png", "huge2.mp4"]
    assert all(one_line(e, "ROBUSTLAB_MAX_UPLOAD_MB") for e in errors)


def test_dashboard_uploads_refuse_over_limit_files_without_getvalue(monkeypatch):
    """Through the real pages: the "My uploads" form, the Perturb page's upload and the Grounding page's upload each
    show one line for an over-limit file and never call its getvalue()."""
    from streamlit.runtime.uploaded_file_manager import UploadedFile
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(files, "MAX_UPLOAD_BYTES", 1000)
    real, called = UploadedFile.getvalue, []

    def getvalue(self):
        called.append(self.name)
        if self.size > 1000:
            raise AssertionError(f"getvalue() called on the over-limit {self.name}")
        return real(self)

    monkeypatch.setattr(UploadedFile, "getvalue", getvalue)
    big = b"\x89PNG" + b"\0" * 5000
    small = io.BytesIO()
    Image.fromarray(np.full((8, 8, 3), 120, np.uint8)).save(small, format="PNG")

    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["dataset"] = "upload"
    at.run()
    assert not at.exception, at.exception
    at.file_uploader(key="up_images").set_value([("big.png", big, "image/png"),
                                                 ("small.png", small.getvalue(), "image/png")])
    at.file_uploader(key="up_captions").set_value(("captions.txt", b"x" * 2000, "text/plain"))
    at.button[0].click().run()
    assert not at.exception, at.exception
    errs = [e.value for e in at.error]
    assert any(e.startswith("big.png: ") and "ROBUSTLAB_MAX_UPLOAD_MB" in e and "\n" not in e for e in errs), errs
    assert any(e.startswith("captions.txt: ") and "over the" in e for e in errs), errs
    assert len(at.session_state["upload_gallery"]) == 1  # the small image is in
    assert called == ["small.png"]  # the spy sits where the pages read uploads

    for page, radio, key, err in (("pages/perturb.py", "pt_source_image", "pt_upload_image", "pt_error_image"),
                                  ("pages/grounding.py", "gr_source", "gr_upload", "gr_error")):
        at = AppTest.from_file("../../app.py", default_timeout=300)
        at.switch_page(page).run()
        assert not at.exception, at.exception
        at.radio(key=radio).set_value("upload").run()
        at.file_uploader(key=key).set_value(("huge.png", big, "image/png")).run()
        assert not at.exception, (page, at.exception)
        msg = at.session_state[err]
        assert msg.startswith("huge.png: ") and "ROBUSTLAB_MAX_UPLOAD_MB" in msg and "\n" not in msg, (page, msg)
        assert any(e.value == msg for e in at.error), page
