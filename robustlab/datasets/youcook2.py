"""YouCook2: text–clip retrieval over the annotated segments of cooking videos, each clip cut from its video when
read.

    build("youcook2", root="~/data/youcook2", split="val")     # 3,492 segments of the 457 validation videos

Annotations: ``youcookii_annotations_trainval.json`` (in ``YouCookII.tar.gz`` from http://youcook2.eecs.umich.edu/;
looked for in the folder, ``annotations/`` and ``YouCookII/annotations/``)::

    {"database": {"GLGUsLDmhRk": {"subset": "validation", "duration": 241.62, "recipe_type": "113",
                                  "annotations": [{"id": 0, "segment": [90, 102],
                                                   "sentence": "spread margarine on two slices of white bread"},
                                                  ...]}, ...}}

Splits: ``val`` (subset ``validation``: the usual test set of text–video retrieval, since the test subset's
annotations are not public) and ``train`` (``training``). An item is a segment — one per annotation, in the
file's order — with its sentence as its only text; ``positives = "item"``. Its id is ``<video_id>_<id>`` and its
meta holds ``video_id``, ``start``, ``end`` (seconds) and ``path``.

Videos are ``<video_id>.mp4`` / ``.mkv`` / ``.webm`` anywhere under the folder (``raw_videos/validation/113/...`` as
the download script writes them, or flat): indexed once at construction. ``visual(i)`` decodes only the segment
``[start, end)`` (seeking to the keyframe before ``start``; see :mod:`robustlab.datasets._clips`): ``num_frames``
(12) uniformly over the segment, or ``fps=`` (``num_frames`` ignored), or every frame (``num_frames=None``), at
most ``max_frames`` (64), long side at most ``max_side`` (256 px). Many YouTube videos are gone, so local copies
miss some: ``skip_missing=True`` leaves out the segments of videos not found (counted in ``describe()``);
otherwise reading one is a DatasetError naming the expected file. ``n=`` takes the first n segments.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robustlab.datasets._clips import (DEFAULT_MAX_FRAMES, DEFAULT_MAX_SIDE, DEFAULT_NUM_FRAMES, VIDEO_SUFFIXES,
                                       ClipDataset, ClipSource, read_clip)
from robustlab.datasets._local import find_file, need, need_list, read_json, rel
from robustlab.datasets.base import DatasetError, Item
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import is_file, shown_path

ANN_NAME = "youcookii_annotations_trainval.json"
ANN_GET = "it is in YouCookII.tar.gz from http://youcook2.eecs.umich.edu/ (annotations/)"
VIDEOS_GET = "download the videos with YouCook2's scripts (http://youcook2.eecs.umich.edu/), or pass skip_missing=True"
FORMAT = f"{ANN_NAME}: database -> {{video_id: {{subset, annotations[{{segment: [start, end], sentence}}]}}}}"
SPLITS = {"val": "validation", "train": "training"}


def index_videos(root: Path) -> dict[str, Path]:
    """``video_id -> path`` of every .mp4 / .mkv / .webm under ``root`` (mp4 first, then the first path in sorted
    order when a video is there twice)."""
    found: dict[str, Path] = {}
    paths = sorted((p for p in root.rglob("*") if p.suffix.lower() in VIDEO_SUFFIXES and is_file(p)),
                   key=lambda p: (VIDEO_SUFFIXES.index(p.suffix.lower()), str(p)))
    for p in paths:
        found.setdefault(p.stem, p)
    return found


@register_dataset("youcook2", kind="video", tasks=("retrieval",), splits=tuple(SPLITS), default_split="val",
                  description="YouCook2 text-clip retrieval: one item per annotated segment, cut when read",
                  needs=f"{ANN_NAME} (YouCookII.tar.gz) and the videos as <video_id>.mp4 / .mkv / .webm anywhere "
                        "under the folder (e.g. raw_videos/validation/<recipe>/)",
                  markers=(ANN_NAME, f"annotations/{ANN_NAME}", f"YouCookII/annotations/{ANN_NAME}"),
                  paper="Zhou, Xu & Corso, Towards Automatic Learning of Procedures from Web Instructional Videos "
                        "(AAAI 2018)")
class YouCook2(ClipDataset):
    def __init__(self, root, split: str = "val", n: int | None = None, num_frames: int | None = DEFAULT_NUM_FRAMES,
                 fps: float | None = None, max_frames: int = DEFAULT_MAX_FRAMES,
                 max_side: int | None = DEFAULT_MAX_SIDE, skip_missing: bool = False,
                 ann_file: str | Path | None = None):
        who = self.name
        n = self._setup(root, split, n, num_frames, fps, max_frames, max_side, skip_missing, ann_file)
        self.ann_file = find_file(self.root, (ANN_NAME,), ("", "annotations", "YouCookII/annotations"), ann_file,
                                  who=who, get=ANN_GET)
        data = read_json(self.ann_file, who)
        where = self.ann_file.name
        db = need(data, "database", where, who, FORMAT)
        if not isinstance(db, dict):
            raise DatasetError(f"{who}: {where}['database'] is a {type(db).__name__}, not an object "
                               f"(expected {FORMAT})")
        self.videos = index_videos(self.root)
        records, missing_videos, self.missing = [], set(), 0
        for vid, v in db.items():
            at = f"{where} database[{vid!r}]"
            if need(v, "subset", at, who, FORMAT) != SPLITS[split]:
                continue
            for k, a in enumerate(need_list(v, "annotations", at, who, FORMAT)):
                seg = need(a, "segment", f"{at}.annotations[{k}]", who, FORMAT)
                sent = " ".join(str(need(a, "sentence", f"{at}.annotations[{k}]", who, FORMAT)).split())
                try:
                    start, end = (float(x) for x in seg)
                except (TypeError, ValueError):
                    raise DatasetError(f"{who}: {at}.annotations[{k}]['segment'] is {seg!r}, not [start, end] "
                                       "seconds") from None
                if not end > start >= 0:
                    raise DatasetError(f"{who}: {at}.annotations[{k}]: segment [{start:g}, {end:g}] is empty")
                if skip_missing and vid not in self.videos:
                    missing_videos.add(vid)
                    self.missing += 1
                    continue
                records.append({"id": f"{vid}_{a.get('id', k)}", "video_id": vid, "start": start, "end": end,
                                "texts": [sent] if sent else [], "recipe_type": v.get("recipe_type")})
            if n is not None and len(records) >= n:
                break
        self.missing_videos = len(missing_videos)
        if not records:
            why = (f"none of its videos is under {shown_path(self.root)!r} (<video_id>.mp4 / .mkv / .webm)"
                   if self.missing else f"no segment in subset {SPLITS[split]!r}")
            raise DatasetError(f"{who}: split {split!r}: {why}")
        self.records = records[:n] if n is not None else records

    def __len__(self) -> int:
        return len(self.records)

    def video_path(self, i: int) -> Path:
        vid = self.records[i]["video_id"]
        p = self.videos.get(vid)
        if p is None:
            raise DatasetError(f"{self.name}: video {vid!r} is missing: no {vid}.mp4 / .mkv / .webm under "
                               f"{shown_path(self.root)!r} ({VIDEOS_GET})")
        return p

    def item(self, i: int) -> Item:
        r = self.records[i]
        p = self.videos.get(r["video_id"])
        return Item(id=r["id"], texts=list(r["texts"]),
                    meta={"video_id": r["video_id"], "start": r["start"], "end": r["end"],
                          "recipe_type": r["recipe_type"], **({"path": rel(p, self.root)} if p else {})},
                    load=lambda i=i: self.visual(i))

    def visual(self, i: int) -> np.ndarray:
        r = self.records[i]
        return read_clip(self.video_path(i), r["start"], r["end"], num_frames=self.num_frames, fps=self.fps,
                         max_frames=self.max_frames, max_side=self.max_side, who=self.name)

    def frame_source(self, i: int) -> ClipSource:
        """Item i's whole segment as a lazy frame source (``n_frames``, ``read(indices)``)."""
        r = self.records[i]
        return ClipSource(self.video_path(i), r["start"], r["end"], max_side=self.max_side, who=self.name)

    def describe(self) -> dict:
        return {**super().describe(), "annotations": str(self.ann_file), "videos_found": len(self.videos),
                "videos": len({r["video_id"] for r in self.records}),
                **({"missing_segments_skipped": self.missing, "missing_videos_skipped": self.missing_videos}
                   if self.missing else {})}


__all__ = ["YouCook2", "SPLITS", "index_videos"]
