"""Issue 44, finding 5: what is read is what was checked.

Under the dashboard's data roots every dataset file is checked (it must resolve inside a root) and then opened. A
check by name followed by an open by name lets someone who can write inside a root swap a symlink in between (the
review saw 383 outside reads in 85,541). The confined readers open the resolved path with ``O_NOFOLLOW`` and then
check where the *opened* descriptor really is, so a swap -- of the file's own symlink or of a symlinked folder on
its way -- is refused like a missing file, never read.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from robustlab.io import files
from robustlab.io.access import set_read_roots
from robustlab.io.files import InputError

SECRET = b"OUTSIDE-SECRET-0123456789"
INSIDE = b"inside-content-abcdefghij"
SECONDS = 3.0  # each race runs at most this long
READS = 40_000  # ... or this many reads


@pytest.fixture
def tree(tmp_path):
    root, outside = (tmp_path / "root").resolve(), (tmp_path / "outside").resolve()
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (root / "real" / "f.txt").write_bytes(INSIDE)
    (outside / "f.txt").write_bytes(SECRET)
    set_read_roots([root])
    yield root, outside
    set_read_roots(None)


class Swapper(threading.Thread):
    """Points ``link`` at ``a`` then ``b`` then ``a``… as fast as it can (atomic replace), until stopped."""

    def __init__(self, link: Path, a: Path, b: Path, is_dir: bool = False):
        super().__init__(daemon=True)
        self.link, self.a, self.b, self.is_dir = link, a, b, is_dir
        self.stop = threading.Event()
        self.swaps = 0

    def run(self):
        tmp = self.link.with_name(self.link.name + ".swap")
        while not self.stop.is_set():
            for target in (self.a, self.b):
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                os.symlink(target, tmp, target_is_directory=self.is_dir)
                os.replace(tmp, self.link)
                self.swaps += 1


def race(read, link: Path, a: Path, b: Path, is_dir: bool = False) -> dict:
    """Read through ``read()`` while ``link`` flips between ``a`` (inside) and ``b`` (outside)."""
    os.symlink(a, link, target_is_directory=is_dir)
    sw = Swapper(link, a, b, is_dir)
    got = {"inside": 0, "refused": 0, "outside": 0, "reads": 0}
    sw.start()
    try:
        end = time.monotonic() + SECONDS
        while got["reads"] < READS and time.monotonic() < end:
            got["reads"] += 1
            try:
                data = read()
            except InputError as e:
                assert "SECRET" not in str(e) and str(b) not in str(e), str(e)
                got["refused"] += 1
                continue
            if SECRET in data:
                got["outside"] += 1
            else:
                assert data == INSIDE, data[:80]
                got["inside"] += 1
    finally:
        sw.stop.set()
        sw.join(5)
    assert sw.swaps > 100, sw.swaps  # the swapper did run during the reads
    return got


def test_a_symlink_swapped_while_it_is_read_never_lets_the_outside_file_through(tree):
    root, outside = tree
    got = race(lambda: files.read_file_capped(root / "link", 1 << 20), root / "link", root / "real" / "f.txt",
               outside / "f.txt")
    assert got["outside"] == 0, got
    assert got["inside"] > 0, got  # the inside file still reads (a symlink that stays inside is allowed)


def test_a_symlinked_folder_swapped_on_the_way_never_lets_the_outside_file_through(tree):
    root, outside = tree

    def read():
        with files.open_capped(root / "dir" / "f.txt", 1 << 20) as f:
            return f.read()

    got = race(read, root / "dir", root / "real", outside, is_dir=True)
    assert got["outside"] == 0, got
    assert got["inside"] > 0, got


def test_the_checked_descriptor_is_what_is_read(tree, monkeypatch):
    """Deterministic: the path is checked, then swapped to the outside file just before the open."""
    root, outside = tree
    link = root / "link"
    link.symlink_to(root / "real" / "f.txt")
    real_check = files.check_file_size

    def check_then_swap(path, *a, **kw):
        size = real_check(path, *a, **kw)
        os.unlink(link)
        link.symlink_to(outside / "f.txt")
        return size

    monkeypatch.setattr(files, "check_file_size", check_then_swap)
    with pytest.raises(InputError) as e:
        files.read_file_capped(link, 1 << 20)
    assert str(e.value) == "link: cannot read the file (No such file or directory)"
    link.unlink()
    link.symlink_to(root / "real" / "f.txt")
    swap_dir = root / "dir"
    swap_dir.symlink_to(root / "real", target_is_directory=True)

    def check_then_swap_dir(path, *a, **kw):
        size = real_check(path, *a, **kw)
        os.unlink(swap_dir)
        swap_dir.symlink_to(outside, target_is_directory=True)
        return size

    monkeypatch.setattr(files, "check_file_size", check_then_swap_dir)
    with pytest.raises(InputError):
        with files.open_capped(swap_dir / "f.txt", 1 << 20) as f:
            f.read()
    monkeypatch.setattr(files, "check_file_size", real_check)
    assert files.read_file_capped(link, 1 << 20) == INSIDE  # inside -> inside: allowed
    set_read_roots(None)  # the library and the CLI follow any symlink, as before
    link.unlink()
    link.symlink_to(outside / "f.txt")
    assert files.read_file_capped(link, 1 << 20) == SECRET


def test_a_video_swapped_while_it_is_read_never_shows_the_outside_video(tree):
    """The video reader (MSR-VTT, YouCook2) decodes the checked descriptor too, never the name opened again."""
    from robustlab.datasets import DatasetError
    from robustlab.datasets._clips import ClipSource
    from robustlab.io.media import write_video

    root, outside = tree
    frames = np.stack([np.full((16, 16, 3), 20 + 9 * k, np.uint8) for k in range(6)])
    write_video(frames, root / "real" / "v.mp4", fps=6.0)
    write_video(frames[::-1], outside / "v.mp4", fps=6.0)  # the same frame list, frame 0 bright
    link = root / "v.mp4"
    link.symlink_to(root / "real" / "v.mp4")
    src = ClipSource(link)
    assert src.read([0]).mean() < 30  # the inside video: frame 0 is dark
    link.unlink()

    def read():
        try:
            frame = src.read([0])
        except DatasetError as e:
            assert str(outside) not in str(e) and str(root) not in str(e), str(e)
            raise InputError(str(e)) from None
        return SECRET if frame.mean() > 40 else INSIDE

    got = race(read, link, root / "real" / "v.mp4", outside / "v.mp4")
    assert got["outside"] == 0, got
    assert got["inside"] > 0, got
