"""MSVD (the Microsoft Research Video Description corpus): text–video retrieval on a local copy.

    build("msvd", root="~/data/msvd", split="test")                   # 670 videos, all their captions
    build("msvd", root="~/data/msvd", split="test", captions_per_video=1)   # HAT-VTR's: the first caption

Captions, the first of these found in the folder, ``msvd_data/`` or ``annotations/``:

- ``AllVideoDescriptions.txt`` — the English descriptions as released with the clips (Chen & Dolan, ACL 2011;
  https://www.cs.utexas.edu/users/ml/clamp/videoDescription/): ``#`` comment lines, then one
  ``<clip_id> <caption>`` line per caption (``-4wsuPCjDBc_5_15 a squirrel is eating a peanut in it's shell``);
- ``captions_msvd.json`` — X-Pool's (and HAT-VTR's) ``{clip_id: [caption, ...]}``.

CLIP4Clip's ``raw-captions.pkl`` is a Python pickle and is never opened; a folder with only that file is told to
add one of the two above. Splits: the standard 1,200 / 100 / 670 videos of ``train_list.txt``, ``val_list.txt``
and ``test_list.txt`` (one clip id per line; in CLIP4Clip's ``msvd_data.zip`` and X-Pool's ``data/MSVD/``). An item
is a clip, in its list's order, with its captions in the caption file's order (``captions_per_video=1`` keeps the
first: HAT-VTR's 670 query pairs); ``positives = "item"``. Videos are ``YouTubeClips/<clip_id>.avi`` (as
``YouTubeClips.tar`` unpacks; any video file named ``<clip_id>.*`` anywhere under the folder is found).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robustlab.datasets._clips import DEFAULT_MAX_FRAMES, DEFAULT_MAX_SIDE, DEFAULT_NUM_FRAMES
from robustlab.datasets._local import find_file, read_json
from robustlab.datasets._videos import VideoFileDataset, clean, read_lines
from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import is_file, shown_path

ANN_DIRS = ("", "msvd_data", "annotations")
CAPTION_FILES = ("AllVideoDescriptions.txt", "captions_msvd.json")
CAPTIONS_GET = ("AllVideoDescriptions.txt is at https://www.cs.utexas.edu/users/ml/clamp/videoDescription/ "
                "(CLIP4Clip's raw-captions.pkl is a pickle robustlab never opens)")
LISTS_GET = "it is in CLIP4Clip's msvd_data.zip (https://github.com/ArrowLuo/CLIP4Clip, 'Data Preparing')"
VIDEOS_GET = "the clips are YouTubeClips.tar from https://www.cs.utexas.edu/users/ml/clamp/videoDescription/"
SPLITS = ("test", "val", "train")


@register_dataset("msvd", kind="video", tasks=("retrieval",), splits=SPLITS,
                  description="MSVD text-video retrieval: the standard 1,200 / 100 / 670 split, every caption of "
                              "a clip (or its first: captions_per_video=1)",
                  needs="AllVideoDescriptions.txt (or X-Pool's captions_msvd.json; CLIP4Clip's raw-captions.pkl "
                        "is a pickle, never read), {train,val,test}_list.txt from CLIP4Clip's msvd_data.zip, and "
                        "the clips as YouTubeClips/<clip_id>.avi",
                  markers=tuple(f"{d}/{n}".lstrip("/") for d in ANN_DIRS for n in CAPTION_FILES),
                  paper="Chen & Dolan, Collecting Highly Parallel Data for Paraphrase Evaluation (ACL 2011); split "
                        "as CLIP4Clip (Luo et al., 2021); used by HAT-VTR (Zhang et al., ICLR 2026, App. D)")
class MSVD(VideoFileDataset):
    videos_get = VIDEOS_GET
    videos_expected = "YouTubeClips/<clip_id>.avi"

    def __init__(self, root, split: str | None = None, n: int | None = None,
                 num_frames: int | None = DEFAULT_NUM_FRAMES, fps: float | None = None,
                 max_frames: int = DEFAULT_MAX_FRAMES, max_side: int | None = DEFAULT_MAX_SIDE,
                 skip_missing: bool = False, captions_per_video: int | None = None,
                 ann_file: str | Path | None = None):
        if captions_per_video is not None and (not isinstance(captions_per_video, (int, np.integer))
                                               or isinstance(captions_per_video, bool) or captions_per_video < 1):
            raise DatasetError(f"{self.name}: captions_per_video must be a positive integer or None, "
                               f"got {captions_per_video!r}")
        self.captions_per_video = None if captions_per_video is None else int(captions_per_video)
        super().__init__(root, split, n, num_frames, fps, max_frames, max_side, skip_missing, ann_file)
        if self.captions_per_video is not None:
            self.params["captions_per_video"] = self.captions_per_video

    def _records(self, split: str, ann_file) -> list[dict]:
        who = self.name
        try:
            self.ann_file = find_file(self.root, CAPTION_FILES, ANN_DIRS, ann_file, who=who, get=CAPTIONS_GET)
        except DatasetError:
            pkl = next((self.root / d / "raw-captions.pkl" for d in ANN_DIRS if is_file(self.root / d /
                                                                                       "raw-captions.pkl")), None)
            if pkl is None:
                raise
            raise DatasetError(f"{who}: {shown_path(pkl)!r} is a Python pickle, which robustlab never opens: put "
                               f"AllVideoDescriptions.txt (or captions_msvd.json) beside it ({CAPTIONS_GET})") from None
        self.list_file = find_file(self.root, (f"{split}_list.txt",), ANN_DIRS, None, who=who, get=LISTS_GET)
        captions = (self._from_json(self.ann_file) if self.ann_file.suffix.lower() == ".json"
                    else self._from_txt(self.ann_file))
        records, keep = [], self.captions_per_video
        for ln, vid in read_lines(self.list_file, who):
            vid = vid.strip()
            caps = captions.get(vid)
            if not caps:
                raise DatasetError(f"{who}: {shown_path(self.list_file)!r} line {ln}: clip {vid!r} has no caption "
                                   f"in {self.ann_file.name}")
            records.append({"id": vid, "names": [vid], "texts": caps[:keep] if keep is not None else list(caps)})
        return records

    def _from_txt(self, path: Path) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for ln, line in read_lines(path, self.name):
            if line.lstrip().startswith("#"):
                continue
            vid, _, cap = clean(line).partition(" ")
            if not cap:
                raise DatasetError(f"{self.name}: {shown_path(path)!r} line {ln}: expected '<clip_id> <caption>'")
            out.setdefault(vid, []).append(cap)
        return out

    def _from_json(self, path: Path) -> dict[str, list[str]]:
        data = read_json(path, self.name)
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise DatasetError(f"{self.name}: {shown_path(path)!r} is not {{clip_id: [caption, ...]}} "
                               "(X-Pool's captions_msvd.json)")
        return {str(k): [c for c in (clean(x) for x in v) if c] for k, v in data.items()}

    def describe(self) -> dict:
        return {**super().describe(), "split_list": str(self.list_file)}


__all__ = ["MSVD", "SPLITS"]
