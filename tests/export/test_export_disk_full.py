"""Issue 15: a full disk while exporting is reported in one line and leaves nothing half-written.

A full disk is simulated where the bytes go: every file the export code opens for writing through ``os.fdopen``
gets a shared byte budget; the write that crosses it writes what fits (as a real full disk does) and raises
ENOSPC. Each case is tried with the disk filling up at many points of the export.
"""
from __future__ import annotations

import datetime as _datetime
import errno
import io
import json
import os
import zipfile

import numpy as np
import pytest
from PIL import Image

from robustlab.cli import main
from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.export import manifest as M
from robustlab.export.manifest import writer
from robustlab.export.basket import Basket, builtin_source, make_example
from robustlab.perturb import perturb


class FullDisk:
    """A byte budget shared by every file opened through ``os.fdopen`` while installed."""

    def __init__(self, budget: int):
        self.left = int(budget)
        self.hit = 0
        self._fdopen = os.fdopen

    def fdopen(self, fd, mode="r", *a, **k):
        f = self._fdopen(fd, mode, *a, **k)
        return _Limited(f, self) if "w" in mode or "a" in mode else f


class _Limited:
    def __init__(self, f, disk: FullDisk):
        self.f, self.disk = f, disk

    def write(self, data):
        if len(data) > self.disk.left:
            self.f.write(data[:self.disk.left])  # what fits goes to disk, like a real full disk
            self.disk.left, self.disk.hit = 0, self.disk.hit + 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.disk.left -= len(data)
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()
        return False


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture(scope="module")
def basket():
    g = builtin_gallery(4)
    b = Basket()
    for i, (name, sev) in enumerate([("gaussian_noise", 3), ("pixelate", 4), ("jpeg_compression", 5)]):
        img = g.images[i]
        b.add(make_example("image", img, perturb(img, name, sev, seed=i), builtin_source("gallery", 7, i, g.names[i])))
    cap = g.captions[0]
    b.add(make_example("text", cap, perturb(cap, "keyboard", 3, seed=1),
                       builtin_source("gallery", 7, 0, g.names[0], field="caption")))
    return b


def _export_bytes(basket, tmp_path):
    M.export_dir(basket, tmp_path / "probe")
    return sum(p.stat().st_size for p in (tmp_path / "probe").rglob("*") if p.is_file())


def test_export_dir_on_a_full_disk_leaves_nothing_and_says_so(basket, tmp_path, monkeypatch):
    total = _export_bytes(basket, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own file, there before")
    for budget in sorted({0, 1, 100, total // 4, total // 2, total - 200, total - 1}):
        disk = FullDisk(budget)
        monkeypatch.setattr(M.os, "fdopen", disk.fdopen)
        with pytest.raises(M.ExportWriteError) as ei:
            M.export_dir(basket, out)
        monkeypatch.undo()
        assert disk.hit == 1, budget
        assert "disk is full" in str(ei.value) and str(out) in str(ei.value) and "\n" not in str(ei.value)
        assert _files(out) == ["mine.txt"], budget  # nothing half-written, no temp file, the user's file kept
    # enough space: the export is complete and regenerates bit for bit
    disk = FullDisk(total + 10)
    monkeypatch.setattr(M.os, "fdopen", disk.fdopen)
    entries = M.export_dir(basket, out)
    monkeypatch.undo()
    assert len(entries) == len(basket) and disk.hit == 0
    assert all(r.ok for r in M.regenerate_export(out))


class _FrozenClock:
    """Stands in for the writer's ``datetime`` module: every manifest says it was exported at one fixed time."""

    class datetime(_datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return _datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=tz)

    timezone = _datetime.timezone


def test_save_zip_on_a_full_disk_leaves_no_partial_zip(basket, tmp_path, monkeypatch):
    # The manifest's "exported" time is deflated with the rest: a clock that ticks between measuring the zip and
    # saving it can change the zip's size by a byte (CI once saw size - 1 bytes suffice). The clock is frozen so
    # the budgets below are exact.
    monkeypatch.setattr(writer, "_dt", _FrozenClock)
    path = tmp_path / "robustlab-export.zip"
    path.write_bytes(b"an older export the user keeps")
    size = len(M.build_zip(basket))
    for budget in (0, size // 3, size - 1):
        with monkeypatch.context() as m:
            m.setattr(M.os, "fdopen", FullDisk(budget).fdopen)
            with pytest.raises(M.ExportWriteError, match="disk is full.*no partial zip"):
                M.save_zip(basket, path)
        assert path.read_bytes() == b"an older export the user keeps"
        assert _files(tmp_path) == ["robustlab-export.zip"]
    assert M.save_zip(basket, path) == size and path.read_bytes() == M.build_zip(basket)
    assert zipfile.ZipFile(path).testzip() is None


def _png(arr) -> bytes:
    b = io.BytesIO()
    Image.fromarray(arr).save(b, format="PNG")
    return b.getvalue()


def test_cli_perturb_stops_on_a_full_disk_and_keeps_a_whole_manifest(tmp_path, monkeypatch, capsys):
    g = builtin_gallery(6)
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):
        (src / f"scene{i}.png").write_bytes(_png(g.images[i]))
    full = tmp_path / "full"
    assert main(["perturb", str(src), "--name", "gaussian_noise", "--severity", "2", "--out", str(full),
                 "--quiet"]) == 0
    per_file = sum(p.stat().st_size for p in full.rglob("*.png")) // 6
    capsys.readouterr()
    out = tmp_path / "out"
    monkeypatch.setattr(M.os, "fdopen", FullDisk(int(per_file * 2.5)).fdopen)
    rc = main(["perturb", str(src), "--name", "gaussian_noise", "--severity", "2", "--out", str(out), "--quiet"])
    monkeypatch.undo()
    cap = capsys.readouterr()
    assert rc == 1 and "stopped" in cap.err and "disk is full" in cap.err and "Traceback" not in cap.err
    assert cap.err.count("disk is full") == 1  # one line, not one per remaining file
    lines = (out / M.MANIFEST).read_text().splitlines()
    entries = [json.loads(line) for line in lines]  # every line whole
    assert 1 <= len(entries) < 6
    pngs = sorted(str(p.relative_to(out)) for p in out.rglob("*.png"))
    listed = sorted(e[k]["path"] for e in entries for k in ("clean", "perturbed"))
    assert pngs == listed  # no file of the failed example left behind
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]  # robustlab.io.atomic's temporary files
    assert main(["regenerate", str(out), "--quiet"]) == 0


def test_a_manifest_line_cut_by_a_full_disk_is_taken_back(tmp_path):
    g = builtin_gallery(3)
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"s{i}.png").write_bytes(_png(g.images[i]))
    out = tmp_path / "out"
    with M.FilePerturber(out, "pixelate", 3) as fp:
        assert not fp.add(src / "s0.png").error
        real = fp._manifest

        class HalfLine:  # the manifest's own write fails half-way through the line
            def write(self, text):
                real.write(text[: len(text) // 2])
                real.flush()
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            def __getattr__(self, name):
                return getattr(real, name)

        fp._manifest = HalfLine()
        res = fp.add(src / "s1.png")
        fp._manifest = real
        assert res.fatal and "disk is full" in res.error
    lines = (out / M.MANIFEST).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["source"]["name"].endswith("s0.png")
    assert len(list(out.rglob("*.png"))) == 2  # s0's clean and perturbed only


def test_cli_regenerate_out_on_a_full_disk_verifies_everything_and_leaves_nothing(basket, tmp_path, monkeypatch,
                                                                                  capsys):
    z = tmp_path / "e.zip"
    z.write_bytes(M.build_zip(basket))
    out = tmp_path / "rebuilt"
    monkeypatch.setattr(M.os, "fdopen", FullDisk(3000).fdopen)
    rc = main(["regenerate", str(z), "--out", str(out)])
    monkeypatch.undo()
    cap = capsys.readouterr()
    assert rc == 2 and "disk is full" in cap.err and "every example was still verified" in cap.err
    assert cap.out.count("OK ") == len(basket) and f"{len(basket)}/{len(basket)} example(s)" in cap.out
    assert _files(out) == []
    assert main(["regenerate", str(z), "--out", str(out), "--quiet"]) == 0  # space again: it works


def test_export_page_build_failure_keeps_the_basket(basket, monkeypatch):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["basket"] = basket
    at.run()

    def no_space(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(M, "build_zip", no_space)
    at.switch_page("pages/export.py").run()
    assert not at.exception
    assert any("cannot be built" in e.value and "basket is kept" in e.value for e in at.error)
    assert len(at.session_state["basket"]) == len(basket)
    monkeypatch.undo()
    at.run()
    assert not at.exception and not at.error
    assert any(b.label.startswith("Download zip") for b in at.get("download_button"))
    np.testing.assert_equal(len(at.session_state["basket"]), len(basket))
