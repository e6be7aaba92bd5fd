"""MSR-VTT: text–video retrieval on a local copy.

    build("msrvtt", root="~/data/msrvtt", split="test")            # 1k-A: 1,000 videos, one caption each

Splits:

- ``test`` — the 1k-A test set (Yu et al., JSFusion, ECCV 2018) that CLIP4Clip and most text-to-video papers
  report: CLIP4Clip's ``MSRVTT_JSFUSION_test.csv``, columns ``key,vid_key,video_id,sentence``
  (``ret0,msr7579,video7579,a girl wearing red top and black trouser is putting a sweater on a dog``), one row —
  one caption — per video, in the file's order.
- ``full-test`` / ``train`` / ``val`` — the official splits of ``MSRVTT_data.json`` (``test``: 2,990 videos,
  ``train``: 6,513, ``validate``: 497), each video with all its captions (20): ``videos[]`` with ``video_id`` and
  ``split``, ``sentences[]`` with ``video_id`` and ``caption``. Items in ``videos[]`` order, captions in
  ``sentences[]`` order.

Both files come in CLIP4Clip's ``msrvtt_data.zip`` (see "Data Preparing" in https://github.com/ArrowLuo/CLIP4Clip);
they are looked for in the folder, ``msrvtt_data/`` and ``annotation/``. The videos are ``<video_id>.mp4`` in
``videos/all/`` (as ``MSRVTT.zip`` unpacks), ``videos/`` or the folder itself: the first that holds the first
video. ``positives = "item"``: a caption's only positive is its own video.

Videos are decoded when read (``visual(i)``), through :func:`robustlab.datasets._clips.read_clip` (PyAV):
``num_frames`` (12) frames sampled uniformly over the whole video — or ``fps=`` (one frame every 1/fps s,
``num_frames`` ignored; CLIP4Clip's own sampling is ``fps=1, max_frames=12``) — at most ``max_frames`` (64), long
side at most ``max_side`` (256 px; None keeps the size): a 12×192×256×3 uint8 array is 1.8 MB. ``n=`` takes the
first n videos; ``skip_missing=True`` leaves out videos whose file is not there (counted in ``describe()``),
otherwise reading one is a DatasetError naming it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robustlab.datasets._clips import (DEFAULT_MAX_FRAMES, DEFAULT_MAX_SIDE, DEFAULT_NUM_FRAMES, ClipDataset,
                                       read_clip, ClipSource)
from robustlab.datasets._local import find_file, need, need_list, pick_dir, read_csv, read_json, rel
from robustlab.datasets.base import DatasetError, Item
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import is_file, shown_path, visible

CLIP4CLIP_GET = ("it is in CLIP4Clip's msrvtt_data.zip (https://github.com/ArrowLuo/CLIP4Clip, 'Data Preparing')")
CSV_COLUMNS = ("video_id", "sentence")  # key and vid_key are read when present, not needed
VIDEOS_GET = ("the videos are MSRVTT.zip, e.g. from https://www.robots.ox.ac.uk/~maxbain/frozen-in-time/data/"
              "MSRVTT.zip; or pass skip_missing=True")
JSON_FORMAT = "MSRVTT_data.json: videos[] with video_id, split; sentences[] with video_id, caption"
SPLITS = {"test": None, "full-test": "test", "train": "train", "val": "validate"}  # ours -> MSRVTT_data.json's
VIDEO_DIRS = ["videos/all", "videos", ""]
ANN_DIRS = ("", "msrvtt_data", "annotation", "annotations")


@register_dataset("msrvtt", kind="video", tasks=("retrieval",), splits=tuple(SPLITS), default_split="test",
                  description="MSR-VTT text-video retrieval: 1k-A test (one caption per video) or the official "
                              "splits (20 captions per video)",
                  needs="MSRVTT_JSFUSION_test.csv (split test) or MSRVTT_data.json (full-test, train, val), from "
                        "CLIP4Clip's msrvtt_data.zip, and the videos as videos/all/<video_id>.mp4, "
                        "videos/<video_id>.mp4 or <video_id>.mp4",
                  markers=tuple(f"{d}/{n}".lstrip("/") for d in ("", "msrvtt_data", "annotation", "annotations")
                                for n in ("MSRVTT_JSFUSION_test.csv", "MSRVTT_data.json")),
                  paper="Xu et al., MSR-VTT (CVPR 2016); 1k-A test: Yu et al., JSFusion (ECCV 2018), as used by "
                        "CLIP4Clip (Luo et al., 2021)")
class MSRVTT(ClipDataset):
    def __init__(self, root, split: str = "test", n: int | None = None, num_frames: int | None = DEFAULT_NUM_FRAMES,
                 fps: float | None = None, max_frames: int = DEFAULT_MAX_FRAMES,
                 max_side: int | None = DEFAULT_MAX_SIDE, skip_missing: bool = False,
                 ann_file: str | Path | None = None):
        who = self.name
        n = self._setup(root, split, n, num_frames, fps, max_frames, max_side, skip_missing, ann_file)
        if split == "test":
            self.ann_file = find_file(self.root, ("MSRVTT_JSFUSION_test.csv",), ANN_DIRS, ann_file, who=who,
                                      get=CLIP4CLIP_GET)
            records = self._from_csv(self.ann_file)
        else:
            self.ann_file = find_file(self.root, ("MSRVTT_data.json",), ANN_DIRS, ann_file, who=who,
                                      get=CLIP4CLIP_GET)
            records = self._from_json(self.ann_file, SPLITS[split])
        if not records:
            raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} has no video in split {split!r}")
        self.video_dir = pick_dir(self.root, VIDEO_DIRS, f"{records[0]['id']}.mp4")
        self.missing = 0
        if skip_missing:
            kept = [r for r in records if is_file(p := self.video_dir / f"{r['id']}.mp4") and visible(p)]
            self.missing = len(records) - len(kept)
            if not kept:
                raise DatasetError(f"{who}: none of the {len(records)} videos of split {split!r} is in "
                                   f"{shown_path(self.video_dir)!r} (expected <video_id>.mp4 files)")
            records = kept
        self.records = records[:n] if n is not None else records

    def _from_csv(self, path: Path) -> list[dict]:
        rows = read_csv(path, CSV_COLUMNS, self.name)
        out, seen = [], {}
        for ln, row in enumerate(rows, start=2):
            vid, sent = (row.get("video_id") or "").strip(), " ".join((row.get("sentence") or "").split())
            if not vid or not sent:
                raise DatasetError(f"{self.name}: {shown_path(path)!r} line {ln}: empty video_id or sentence")
            if vid in seen:  # 1k-A has one caption per video; a repeated video keeps its captions together
                out[seen[vid]]["texts"].append(sent)
                continue
            seen[vid] = len(out)
            out.append({"id": vid, "texts": [sent], "key": row.get("key")})
        return out

    def _from_json(self, path: Path, value: str) -> list[dict]:
        who, where = self.name, path.name
        data = read_json(path, who)
        videos = need_list(data, "videos", where, who, JSON_FORMAT)
        sentences = need_list(data, "sentences", where, who, JSON_FORMAT)
        out, at = [], {}
        for k, v in enumerate(videos):
            if need(v, "split", f"{where} videos[{k}]", who, JSON_FORMAT) == value:
                vid = str(need(v, "video_id", f"{where} videos[{k}]", who, JSON_FORMAT))
                at[vid] = len(out)
                out.append({"id": vid, "texts": []})
        for k, s in enumerate(sentences):
            vid = str(need(s, "video_id", f"{where} sentences[{k}]", who, JSON_FORMAT))
            if vid in at:
                cap = " ".join(str(need(s, "caption", f"{where} sentences[{k}]", who, JSON_FORMAT)).split())
                if cap:
                    out[at[vid]]["texts"].append(cap)
        return out

    def __len__(self) -> int:
        return len(self.records)

    def video_path(self, i: int) -> Path:
        return self.video_dir / f"{self.records[i]['id']}.mp4"

    def item(self, i: int) -> Item:
        r = self.records[i]
        return Item(id=r["id"], texts=list(r["texts"]), meta={"path": rel(self.video_path(i), self.root)},
                    load=lambda i=i: self.visual(i))

    def visual(self, i: int) -> np.ndarray:
        return read_clip(self.video_path(i), num_frames=self.num_frames, fps=self.fps, max_frames=self.max_frames,
                         max_side=self.max_side, who=self.name, get=VIDEOS_GET)

    def frame_source(self, i: int) -> ClipSource:
        """Item i's whole video as a lazy frame source (``n_frames``, ``read(indices)``): what lazy perturbation
        reads when a model samples its own frames (``visual(i)`` is the dataset's sampling)."""
        return ClipSource(self.video_path(i), max_side=self.max_side, who=self.name, get=VIDEOS_GET)

    def describe(self) -> dict:
        return {**super().describe(), "annotations": str(self.ann_file), "videos_dir": str(self.video_dir),
                **({"missing_videos_skipped": self.missing} if self.missing else {})}


__all__ = ["MSRVTT", "SPLITS"]
