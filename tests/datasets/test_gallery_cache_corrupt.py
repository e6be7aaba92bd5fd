"""The built-in world's render cache (``<cache>/gallery/*.npz``) with one flipped byte (issue 44, finding 9): never
an exception (it was ``zipfile.BadZipFile`` until the file was deleted), never other pixels. A damaged file is
rendered again and replaced, with one log line, as a damaged embedding-cache entry is."""
import json
import logging

import numpy as np
import pytest

from robustlab.datasets.synthetic.datasets import SyntheticScenes, SyntheticVideos


def _positions(size: int) -> list[int]:
    """Every byte of the zip and .npy headers at both ends, and a stride through the pixels between them."""
    ends = set(range(min(size, 400))) | set(range(max(0, size - 400), size))
    return sorted(ends | set(range(0, size, 257)))


def _cache_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "robustlab.cache"]


@pytest.mark.parametrize("cls", [SyntheticScenes, SyntheticVideos])
def test_one_flipped_byte_anywhere_is_rebuilt_with_one_line(tmp_path, caplog, cls):
    def load():
        return cls("test", n=2, size=16, cache_dir=tmp_path).all_visuals()
    ref = load()
    (f,) = tmp_path.glob("*.npz")
    good = f.read_bytes()
    rebuilt = 0
    for pos in _positions(len(good)):
        bad = bytearray(good)
        bad[pos] ^= 0xFF
        f.write_bytes(bytes(bad))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="robustlab.cache"):
            got = load()  # raised zipfile.BadZipFile (or served other pixels) before the fix
        assert len(got) == len(ref) and all(np.array_equal(a, b) for a, b in zip(got, ref)), pos
        lines = _cache_lines(caplog)
        assert len(lines) <= 1, (pos, lines)
        if lines:  # damaged: replaced by a fresh render that reads back cleanly, without a word
            rebuilt += 1
            assert "\n" not in lines[0] and f.name in lines[0] and "rendering it again" in lines[0], lines
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="robustlab.cache"):
                again = load()
            assert not _cache_lines(caplog) and all(np.array_equal(a, b) for a, b in zip(again, ref))
    assert rebuilt > 0.8 * len(_positions(len(good)))  # a few header bytes (a timestamp, flags) do not matter


def test_the_cache_holding_other_pixels_is_rebuilt(tmp_path, caplog):
    """A file with the right name but another array in it (its dtype changed): never served."""
    ref = SyntheticScenes("test", n=2, size=16, cache_dir=tmp_path).all_visuals()
    (f,) = tmp_path.glob("*.npz")
    np.savez(f, images=np.stack(ref).astype(np.int16))
    with caplog.at_level(logging.WARNING, logger="robustlab.cache"):
        got = SyntheticScenes("test", n=2, size=16, cache_dir=tmp_path).all_visuals()
    assert all(a.dtype == np.uint8 and np.array_equal(a, b) for a, b in zip(got, ref))
    assert len(_cache_lines(caplog)) == 1


def test_a_sweep_runs_on_a_damaged_gallery_cache(tmp_path, monkeypatch, caplog, capsys):
    from robustlab.cli import main

    monkeypatch.setenv("ROBUSTLAB_CACHE", str(tmp_path / "cache"))
    args = ["bench", "--models", "builtin:tiny-clip", "--n", "6", "--perturbations", "none", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    (f,) = (tmp_path / "cache" / "gallery").glob("*.npz")
    raw = bytearray(f.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one byte in the pixels
    f.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="robustlab.cache"):
        assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert len([ln for ln in _cache_lines(caplog) if f.name in ln]) == 1
    capsys.readouterr()

    def cells(run):
        return [{k: v for k, v in json.loads(p.read_text()).items() if k not in ("extra", "checksum")}
                for p in sorted((run / "cells").glob("*.json"))]
    assert cells(tmp_path / "a") == cells(tmp_path / "b")
