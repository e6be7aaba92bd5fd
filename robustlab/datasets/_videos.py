"""What the loaders of whole-video datasets share (MSVD, DiDeMo, ActivityNet Captions, LSMDC, MSRVTT-QA,
ActivityNet-QA, NeXT-QA): finding each record's video file under the folder, reading plain-text annotation lines,
and the Dataset whose items are those videos (with their captions or their questions).

A loader implements :meth:`VideoFileDataset._records`: it finds and parses its annotations (setting ``ann_file``)
into records — ``{"id", "names", "texts" | "questions", "meta"}`` plus, optionally, ``"start"`` / ``"end"``
(seconds: the part of the file that is the item) and ``"files"`` (exact paths to try first). The constructor,
shared, checks the split and the sampling before and keeps the first ``n`` records after. ``names`` are the file
names or stems the video may have (``-4wsuPCjDBc_5_15``, ``v_QOlSCBRmfWY`` then ``QOlSCBRmfWY``, ``video7010``);
each is looked up in an index of every video file under the folder (any depth, hidden folders skipped; ``.mp4``
first when a video is there in several containers), built once, at the first lookup. Videos are decoded only when
an item's visual is read, through :func:`robustlab.datasets._clips.read_clip` (the sampling of
:class:`~robustlab.datasets._clips.ClipDataset`). ``skip_missing=True`` leaves out the records whose video is not
found (counted in ``describe()``); otherwise reading one is a one-line DatasetError naming the file expected.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from robustlab.datasets._clips import (DEFAULT_MAX_FRAMES, DEFAULT_MAX_SIDE, DEFAULT_NUM_FRAMES, ClipDataset,
                                       ClipSource, read_clip)
from robustlab.datasets._local import _annotation_limit, _err, _short, rel
from robustlab.datasets.base import DatasetError, Item
from robustlab.datasets.uploads import VIDEO_SUFFIXES
from robustlab.io import files as io_files  # by module: the size limits are read (and patched) at call time
from robustlab.io.confined import is_file, shown_path

SUFFIXES = VIDEO_SUFFIXES + (".3gp", ".wmv", ".flv", ".mts", ".m2ts")  # DiDeMo's Flickr originals too
MAX_INDEXED = 1_000_000  # video files looked at under one folder (ActivityNet has 20k, LSMDC 118k)


def index_videos(root: Path) -> dict[str, Path]:
    """Every video file under ``root`` (any depth, hidden folders skipped) by its file name and by its stem: ``name
    -> path``. A stem found in several containers keeps the one first in :data:`SUFFIXES` (``.mp4``
    first), then the first path in sorted order."""
    found: list[tuple[int, str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in filenames:
            ext = os.path.splitext(f)[1].lower()
            if ext in SUFFIXES and not f.startswith("."):
                found.append((SUFFIXES.index(ext), os.path.join(dirpath, f), Path(dirpath) / f))
        if len(found) >= MAX_INDEXED:
            break
    out: dict[str, Path] = {}
    for _, _, p in sorted(found, key=lambda t: (t[0], t[1])):
        if is_file(p):
            out.setdefault(p.name, p)
            out.setdefault(p.stem, p)
    return out


def read_lines(path: Path, who: str) -> list[tuple[int, str]]:
    """The non-blank lines of a text file as ``(line number, text without its line end)``, stat-ed against
    ``ROBUSTLAB_MAX_ANNOTATION_MB`` before it is read (and never read past it)."""
    limit, setting = _annotation_limit()
    try:
        with io_files.open_capped(path, limit, _short(path, None), setting, encoding="utf-8-sig") as f:
            return [(ln, line.rstrip("\r\n")) for ln, line in enumerate(f, start=1) if line.strip()]
    except io_files.InputError as e:
        raise DatasetError(f"{who}: {e}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{who}: cannot read {shown_path(path)!r} ({_err(e)})") from e


def clean(text) -> str:
    """A caption, question or answer with its whitespace normalised."""
    return " ".join(str(text).split())


class VideoFileDataset(ClipDataset):
    """Items that are video files (or a part of one), found under the folder by name. Subclasses implement
    :meth:`_records`; ``videos_get`` says where the videos come from and ``videos_expected`` how they are named
    (both for the one-line messages). The default split is the first of the registration's."""

    videos_get = ""
    videos_expected = "<id>.mp4"

    def __init__(self, root, split: str | None = None, n: int | None = None,
                 num_frames: int | None = DEFAULT_NUM_FRAMES, fps: float | None = None,
                 max_frames: int = DEFAULT_MAX_FRAMES, max_side: int | None = DEFAULT_MAX_SIDE,
                 skip_missing: bool = False, ann_file: str | Path | None = None):
        split = self.splits[0] if split is None else split
        n = self._setup(root, split, n, num_frames, fps, max_frames, max_side, skip_missing, ann_file)
        records = self._records(split, ann_file)
        if not records:
            raise DatasetError(f"{self.name}: {shown_path(self.ann_file)!r} has nothing in split {split!r}")
        self._videos: dict[str, Path] | None = None
        self.missing = 0
        if skip_missing:
            kept = [r for r in records if self._find(r) is not None]
            self.missing = len(records) - len(kept)
            if not kept:
                raise DatasetError(f"{self.name}: none of the {len(records)} videos of split {split!r} is under "
                                   f"{shown_path(self.root)!r} (expected {self.videos_expected})")
            records = kept
        self.records = records[:n] if n is not None else records

    def _records(self, split: str, ann_file: str | Path | None) -> list[dict]:  # pragma: no cover - abstract
        """The split's records from the annotations (``ann_file``: the file to read instead of the one looked for);
        sets ``self.ann_file``."""
        raise NotImplementedError

    @property
    def videos(self) -> dict[str, Path]:
        """The index of the video files under the folder (built at the first lookup)."""
        if self._videos is None:
            self._videos = index_videos(self.root)
        return self._videos

    def _find(self, r: dict) -> Path | None:
        inside = os.path.normpath(self.root) + os.sep
        for p in r.get("files", ()):  # built from annotation text: never a path that leaves the folder
            if os.path.normpath(p).startswith(inside) and is_file(p):
                return p
        return next((self.videos[k] for k in r["names"] if k in self.videos), None)

    def __len__(self) -> int:
        return len(self.records)

    def video_path(self, i: int) -> Path:
        r = self.records[i]
        p = self._find(r)
        if p is None:
            get = f" ({self.videos_get})" if self.videos_get else ""
            raise DatasetError(f"{self.name}: video {r['names'][0]!r} is missing: no {self.videos_expected} for it "
                               f"under {shown_path(self.root)!r}{get}")
        return p

    def item(self, i: int) -> Item:
        r = self.records[i]
        p = self._find(r)
        meta = {**r.get("meta", {}), **({"path": rel(p, self.root)} if p is not None else {})}
        if "start" in r:
            meta.update(start=r["start"], end=r["end"])
        return Item(id=r["id"], texts=list(r.get("texts", ())), questions=list(r.get("questions", ())), meta=meta,
                    load=lambda i=i: self.visual(i))

    def visual(self, i: int) -> np.ndarray:
        r = self.records[i]
        return read_clip(self.video_path(i), r.get("start"), r.get("end"), num_frames=self.num_frames, fps=self.fps,
                         max_frames=self.max_frames, max_side=self.max_side, who=self.name, get=self.videos_get)

    def frame_source(self, i: int) -> ClipSource:
        """Item i's video (or its part) as a lazy frame source (``n_frames``, ``read(indices)``)."""
        r = self.records[i]
        return ClipSource(self.video_path(i), r.get("start"), r.get("end"), max_side=self.max_side, who=self.name,
                          get=self.videos_get)

    def describe(self) -> dict:
        return {**super().describe(), "annotations": str(self.ann_file),
                **({"missing_videos_skipped": self.missing} if self.missing else {})}


__all__ = ["VideoFileDataset", "index_videos", "read_lines", "clean", "SUFFIXES", "MAX_INDEXED"]
