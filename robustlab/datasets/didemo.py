"""DiDeMo (Distinct Describable Moments): paragraph-to-video retrieval on a local copy, as CLIP4Clip evaluates it.

    build("didemo", root="~/data/didemo", split="test")      # one item per video, its descriptions as one paragraph

Annotations: LocalizingMoments' ``{train,val,test}_data.json`` (https://github.com/LisaAnne/LocalizingMoments,
``data/``; looked for in the folder, ``data/`` and ``annotations/``), a list of moments::

    [{"annotation_id": 12345, "description": "the dog jumps into the water", "video": "<name>.mov",
      "times": [[2, 2], [2, 3], ...], "download_link": "...", "num_segments": 6}, ...]

An item is a video (in the order its first description appears) whose only text is the paragraph of its
descriptions joined in the file's order (CLIP4Clip's ``dataloader_didemo_retrieval.py``; HAT-VTR's 1,004 test
pairs, 4,021 captions); ``positives = "item"``. ``times`` (which 5-second chunks each moment covers) is not needed
for paragraph retrieval and is not read. When ``{split}_list.txt`` (Collaborative Experts' list of the videos
available, one name per line) is beside the JSON file, only its videos are kept. A visual is the first 31 s of
the video, as CLIP4Clip reads it (the annotations cover the first 30 s). Videos are found by the ``video`` field,
as a file name or a stem, anywhere under the folder (``videos/<name>.mov``, or converted: ``<stem>.mp4``).
"""
from __future__ import annotations

from pathlib import Path

from robustlab.datasets._local import find_file, need, read_json
from robustlab.datasets._videos import VideoFileDataset, clean, read_lines
from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import is_file, shown_path, visible

ANN_DIRS = ("", "data", "annotations")
ANN_GET = "it is in https://github.com/LisaAnne/LocalizingMoments (data/)"
VIDEOS_GET = "download them with LocalizingMoments' download script, or pass skip_missing=True"
FORMAT = "a list of {video, description, times, ...}"
SPLITS = ("test", "val", "train")
SECONDS = 31.0  # what CLIP4Clip reads of a video (the annotation covers 6 chunks of 5 s)


@register_dataset("didemo", kind="video", tasks=("retrieval",), splits=SPLITS,
                  description="DiDeMo paragraph-to-video retrieval: each video with its descriptions concatenated "
                              "(as CLIP4Clip)",
                  needs="LocalizingMoments' {train,val,test}_data.json (optionally {split}_list.txt beside it) and "
                        "the videos under the folder, named as the json's video field (or its stem with any video "
                        "extension)",
                  markers=tuple(f"{d}/{s}_data.json".lstrip("/") for d in ANN_DIRS for s in SPLITS),
                  paper="Hendricks et al., Localizing Moments in Video with Natural Language (ICCV 2017); "
                        "paragraph retrieval as CLIP4Clip (Luo et al., 2021); used by HAT-VTR (Zhang et al., "
                        "ICLR 2026, App. D)")
class DiDeMo(VideoFileDataset):
    videos_get = VIDEOS_GET
    videos_expected = "<video> (its name or stem with any video extension)"

    def _records(self, split: str, ann_file) -> list[dict]:
        who = self.name
        self.ann_file = find_file(self.root, (f"{split}_data.json",), ANN_DIRS, ann_file, who=who, get=ANN_GET)
        data = read_json(self.ann_file, who)
        where = self.ann_file.name
        if not isinstance(data, list):
            raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} is a {type(data).__name__}, not a list "
                               f"(expected {FORMAT})")
        listed = self.ann_file.parent / f"{split}_list.txt"
        self.list_file = listed if is_file(listed) and visible(listed) else None
        keep = {v.strip() for _, v in read_lines(listed, who)} if self.list_file else None
        paragraphs: dict[str, list[str]] = {}
        for k, m in enumerate(data):
            video = str(need(m, "video", f"{where}[{k}]", who, FORMAT)).strip()
            desc = clean(need(m, "description", f"{where}[{k}]", who, FORMAT))
            if keep is not None and video not in keep:
                continue
            paragraphs.setdefault(video, [])
            if desc:
                paragraphs[video].append(desc)
        records = [{"id": v, "names": [v, Path(v).stem], "texts": [" ".join(d)] if d else [], "start": 0.0,
                    "end": SECONDS, "meta": {"descriptions": len(d)}} for v, d in paragraphs.items()]
        return records

    def describe(self) -> dict:
        return {**super().describe(), "descriptions": sum(r["meta"]["descriptions"] for r in self.records),
                **({"split_list": str(self.list_file)} if self.list_file else {})}


__all__ = ["DiDeMo", "SPLITS"]
