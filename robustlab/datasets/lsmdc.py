"""LSMDC (the Large Scale Movie Description Challenge): text–clip retrieval on a local copy.

    build("lsmdc", root="~/data/lsmdc", split="test")     # the 1,000 clips of the 2016 challenge's public test

Annotations, tab-separated without a header (as released to registered users, https://sites.google.com/site/
describingmovies/; looked for in the folder, ``annotations/`` and ``data/``)::

    <clip_id>\\t<start_aligned>\\t<end_aligned>\\t<start_extracted>\\t<end_extracted>\\t<sentence>
    0001_American_Beauty_00.00.51.926-00.00.54.129\\t00.00.51.926\\t00.00.54.129\\t...\\tSomeone is in ...

Splits: ``test`` — ``LSMDC16_challenge_1000_publictect.csv``, the 1,000-clip test set CLIP4Clip and most
text-to-video papers report; ``test-999`` — the same file less the one clip X-Pool leaves out
(``1012_Unbreakable_00.05.16.065-00.05.21.941``): the 999 clips HAT-VTR reports; ``val`` —
``LSMDC16_annos_val.csv``; ``train`` —
``LSMDC16_annos_training.csv``. An item is a clip, in the order its first line appears, with its sentences (a clip
id may repeat in val and train; the test file has one line each); ``positives = "item"``. The four times are not
read: a clip is its own file. Videos are ``avi/<movie>/<clip_id>.avi`` (``<movie>`` is the clip id before its
time range, ``0001_American_Beauty``), ``<movie>/<clip_id>.avi``, or any video file named ``<clip_id>.*`` under
the folder.
"""
from __future__ import annotations

import re

from robustlab.datasets._local import find_file
from robustlab.datasets._videos import VideoFileDataset, clean, read_lines
from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import shown_path

ANN_DIRS = ("", "annotations", "data")
FILES = {"test": "LSMDC16_challenge_1000_publictect.csv", "test-999": "LSMDC16_challenge_1000_publictect.csv",
         "val": "LSMDC16_annos_val.csv", "train": "LSMDC16_annos_training.csv"}
XPOOL_LEFT_OUT = ("1012_Unbreakable_00.05.16.065-00.05.21.941",)  # X-Pool's (and HAT-VTR's) test: 999 clips
ANN_GET = "LSMDC's annotations are given to registered users (https://sites.google.com/site/describingmovies/)"
VIDEOS_GET = "LSMDC's clips (avi/) are given to registered users, or pass skip_missing=True"
COLUMNS = 6
_TIME_RANGE = re.compile(r"_\d+\.\d+\.\d+\.\d+-\d+\.\d+\.\d+\.\d+$")


def movie_of(clip_id: str) -> str:
    """The movie folder of a clip: its id before the time range (``0001_American_Beauty_00.00.51.926-00.00.54.129``
    -> ``0001_American_Beauty``)."""
    return _TIME_RANGE.sub("", clip_id)


@register_dataset("lsmdc", kind="video", tasks=("retrieval",), splits=tuple(FILES),
                  description="LSMDC text-clip retrieval: the 1,000-clip public test of the 2016 challenge (test-999: "
                              "less the clip X-Pool leaves out, as HAT-VTR), or the val / train annotations",
                  needs="LSMDC16_challenge_1000_publictect.csv (test, test-999), LSMDC16_annos_val.csv (val) or "
                        "LSMDC16_annos_training.csv (train), tab-separated, and the clips as "
                        "avi/<movie>/<clip_id>.avi",
                  markers=tuple(f"{d}/{f}".lstrip("/") for d in ANN_DIRS for f in dict.fromkeys(FILES.values())),
                  paper="Rohrbach et al., Movie Description (IJCV 2017); test set as CLIP4Clip (Luo et al., 2021); "
                        "used by HAT-VTR (Zhang et al., ICLR 2026, App. D)")
class LSMDC(VideoFileDataset):
    videos_get = VIDEOS_GET
    videos_expected = "avi/<movie>/<clip_id>.avi"

    def _records(self, split: str, ann_file) -> list[dict]:
        who = self.name
        self.ann_file = find_file(self.root, (FILES[split],), ANN_DIRS, ann_file, who=who, get=ANN_GET)
        records: list[dict] = []
        at: dict[str, int] = {}
        for ln, line in read_lines(self.ann_file, who):
            cols = line.split("\t")
            if len(cols) != COLUMNS:
                raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} line {ln} has {len(cols)} tab-separated "
                                   f"fields, not {COLUMNS} (clip_id, start/end aligned, start/end extracted, "
                                   "sentence)")
            clip, sent = cols[0].strip(), clean(cols[5])
            if not clip:
                raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} line {ln}: empty clip id")
            if split == "test-999" and clip in XPOOL_LEFT_OUT:
                continue
            if clip not in at:
                at[clip] = len(records)
                movie = movie_of(clip)
                records.append({"id": clip, "names": [clip], "texts": [],
                                "files": [self.root / "avi" / movie / f"{clip}.avi",
                                          self.root / movie / f"{clip}.avi"],
                                "meta": {"movie": movie}})
            if sent:
                records[at[clip]]["texts"].append(sent)
        return records


__all__ = ["LSMDC", "FILES", "XPOOL_LEFT_OUT", "movie_of"]
