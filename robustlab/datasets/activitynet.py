"""ActivityNet Captions: paragraph-to-video retrieval on a local copy, as CLIP4Clip and HAT-VTR evaluate it.

    build("activitynet", root="~/data/activitynet", split="val1")    # 4,917 videos, one paragraph each

Annotations: ``train.json``, ``val_1.json``, ``val_2.json`` of ``captions.zip`` (Krishna et al., ICCV 2017;
https://cs.stanford.edu/people/ranjaykrishna/densevid/; looked for in the folder, ``captions/``, ``annotations/``
and ``data/``)::

    {"v_QOlSCBRmfWY": {"duration": 82.73, "timestamps": [[0.83, 19.86], [17.37, 60.81], ...],
                       "sentences": ["A young woman is seen standing in a room and leads into her dancing.", ...]},
     ...}

An item is a video, in the file's order, whose only text is its sentences joined into one paragraph
(CLIP4Clip's ``dataloader_activitynet_retrieval.py``); ``positives = "item"``. The standard test split is
``val1`` (``val_1.json``: 4,917 videos in HAT-VTR's Table 2); ``val2`` and ``train`` too. ``timestamps`` (each
sentence's moment) are not needed for paragraph retrieval and are not read; ``duration`` is kept in ``meta``. The
whole video is the visual. Videos are ``v_<id>.mp4`` (or ``.mkv`` / ``.webm``, as the ActivityNet downloads name
them) or ``<id>.mp4`` (CLIP4Clip's naming, without ``v_``), anywhere under the folder.
"""
from __future__ import annotations


from robustlab.datasets._local import find_file, need_list, read_json
from robustlab.datasets._videos import VideoFileDataset, clean
from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import shown_path

ANN_DIRS = ("", "captions", "annotations", "data")
ANN_GET = "it is in captions.zip from https://cs.stanford.edu/people/ranjaykrishna/densevid/"
VIDEOS_GET = "the ActivityNet videos (http://activity-net.org/download.html), or pass skip_missing=True"
FORMAT = "{video_id: {duration, timestamps, sentences[]}}"
FILES = {"val1": "val_1.json", "val2": "val_2.json", "train": "train.json"}


def video_names(vid: str) -> list[str]:
    """The stems an ActivityNet video may have on disk: ``v_<id>`` and ``<id>``, whichever the annotation gives."""
    bare = vid[2:] if vid.startswith("v_") else vid
    return [f"v_{bare}", bare]


@register_dataset("activitynet", kind="video", tasks=("retrieval",), splits=tuple(FILES),
                  description="ActivityNet Captions paragraph-to-video retrieval: each video with its sentences "
                              "concatenated (val1 as CLIP4Clip and HAT-VTR)",
                  needs="train.json / val_1.json / val_2.json from captions.zip and the videos as v_<id>.mp4 "
                        "(or .mkv / .webm, or <id>.mp4) under the folder",
                  markers=tuple(f"{d}/{f}".lstrip("/") for d in ANN_DIRS for f in ("val_1.json", "val_2.json")),
                  paper="Krishna et al., Dense-Captioning Events in Videos (ICCV 2017); paragraph retrieval as "
                        "CLIP4Clip (Luo et al., 2021); HAT-VTR's Table 2 (Zhang et al., ICLR 2026)")
class ActivityNetCaptions(VideoFileDataset):
    videos_get = VIDEOS_GET
    videos_expected = "v_<id>.mp4 / .mkv / .webm or <id>.mp4"

    def _records(self, split: str, ann_file) -> list[dict]:
        who = self.name
        self.ann_file = find_file(self.root, (FILES[split],), ANN_DIRS, ann_file, who=who, get=ANN_GET)
        data = read_json(self.ann_file, who)
        if not isinstance(data, dict):
            raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} is a {type(data).__name__}, not an object "
                               f"(expected {FORMAT})")
        records = []
        for vid, v in data.items():
            sents = [s for s in (clean(x) for x in need_list(v, "sentences", f"{self.ann_file.name}[{vid!r}]", who,
                                                             FORMAT)) if s]
            records.append({"id": vid, "names": video_names(vid), "texts": [" ".join(sents)] if sents else [],
                            "meta": {"duration": v.get("duration"), "sentences": len(sents)}})
        return records

    def describe(self) -> dict:
        return {**super().describe(), "sentences": sum(r["meta"]["sentences"] for r in self.records)}


__all__ = ["ActivityNetCaptions", "FILES", "video_names"]
