"""Karpathy's caption splits (``dataset_coco.json``, ``dataset_flickr30k.json``), the shared reader of
``coco`` and ``flickr30k``: image–text retrieval with several captions per image.

Format (Karpathy & Fei-Fei, CVPR 2015; ``caption_datasets.zip`` from
https://cs.stanford.edu/people/karpathy/deepimagesent/)::

    {"dataset": "coco",
     "images": [{"filepath": "val2014",                       # COCO only: the image's folder
                 "filename": "COCO_val2014_000000391895.jpg",
                 "split": "test",                              # train / val / test / restval (COCO only)
                 "cocoid": 391895, "imgid": 0,
                 "sentences": [{"raw": "A man with a red helmet on a small moped on a dirt road. ",
                                "tokens": [...], "sentid": 770337}, ...]}, ...]}

An item is an image; its texts are its captions (``raw``, whitespace-normalised), the first ``captions_per_image``
(5, the standard protocol: COCO 5k test = 5,000 images / 25,000 captions, Flickr30K 1k test = 1,000 / 5,000; a
few COCO images have 6 or 7 — ``captions_per_image=None`` keeps them all). ``positives = "item"``: each caption's
only positive is its own image, so an image has its 5 captions as positives (``visual_positives()``). Items keep
the file's order; ``n=`` takes the first n images (all of them when the split has fewer). Images are decoded
when read (``visual(i)``), at their own size.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robustlab.datasets._local import check_n, find_file, need, need_list, read_image, read_json, rel
from robustlab.datasets.base import Dataset, DatasetError, Item
from robustlab.io.confined import is_dir, is_file, shown_path

KARPATHY_URL = "https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip"
FORMAT = "Karpathy's format: images[] with filename, split, sentences[].raw"


class KarpathyCaptions(Dataset):
    """Images and captions of one split of a Karpathy split file. Subclasses set the file name, the image folders
    and how a split name maps to the file's ``split`` values (``name``, ``kind``, ``tasks`` and ``splits`` come from
    the subclass's registration)."""

    positives = "item"
    ann_name = ""  # e.g. "dataset_coco.json"
    image_get = ""  # where to get the images (for a missing-file message)
    split_values: dict[str, tuple[str, ...]] = {}  # our split -> the file's split values

    def __init__(self, root, split: str = "test", n: int | None = None, captions_per_image: int | None = 5,
                 ann_file: str | Path | None = None):
        who = self.name
        if split not in self.split_values:
            raise DatasetError(f"{who} has no split {split!r}; splits: {', '.join(self.split_values)}")
        n = check_n(n, who)
        if captions_per_image is not None and (not isinstance(captions_per_image, (int, np.integer)) or
                                               captions_per_image < 1):
            raise DatasetError(f"{who}: captions_per_image must be a positive integer or None, "
                               f"got {captions_per_image!r}")
        super().__init__(split=split, root=root, n=n, captions_per_image=captions_per_image,
                         ann_file=str(ann_file) if ann_file else None)
        root = self.root
        self.ann_file = find_file(root, (self.ann_name,), ("", "annotations", "caption_datasets"), ann_file, who=who,
                                  get=f"it is in Karpathy's caption_datasets.zip ({KARPATHY_URL})")
        data = read_json(self.ann_file, who)
        where = self.ann_file.name
        images = need_list(data, "images", where, who, FORMAT)
        wanted = set(self.split_values[split])
        self.records: list[dict] = []
        for k, im in enumerate(images):
            at = f"{where} images[{k}]"
            if str(need(im, "split", at, who, FORMAT)) not in wanted:  # str: a list or object is no split
                continue
            fname = str(need(im, "filename", at, who, FORMAT))
            sents = need_list(im, "sentences", at, who, FORMAT)
            caps = [" ".join(str(need(s, "raw", f"{at}.sentences[{j}]", who, FORMAT)).split())
                    for j, s in enumerate(sents)]
            caps = [c for c in caps if c]
            if captions_per_image is not None:
                caps = caps[:int(captions_per_image)]
            fid = im.get("cocoid") if im.get("cocoid") is not None else Path(fname).stem  # COCO id / Flickr id
            self.records.append({"id": str(fid), "filename": fname, "filepath": str(im.get("filepath") or ""),
                                 "texts": caps})
            if n is not None and len(self.records) >= n:
                break
        if not self.records:
            raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} has no image in split {split!r} "
                               f"(split values {', '.join(sorted(wanted))})")
        self._dirs: dict[str, Path] = {}

    # where the images are: subclasses say which folders to try for a record's ``filepath``
    def image_dirs(self, filepath: str) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def image_path(self, i: int) -> Path:
        r = self.records[i]
        fp = r["filepath"]
        if fp not in self._dirs:  # the first candidate folder that exists, looked up once per filepath
            cands = [self.root / d if d else self.root for d in self.image_dirs(fp)]
            probe = next((d for d in cands if is_file(d / r["filename"])), None)
            self._dirs[fp] = probe or next((d for d in cands if is_dir(d) and d != self.root), cands[0])
        return self._dirs[fp] / r["filename"]

    def __len__(self) -> int:
        return len(self.records)

    def item(self, i: int) -> Item:
        r = self.records[i]
        return Item(id=r["id"], texts=list(r["texts"]),
                    meta={"path": rel(self.image_path(i), self.root), "filename": r["filename"]},
                    load=lambda i=i: self.visual(i))

    def visual(self, i: int) -> np.ndarray:
        return read_image(self.image_path(i), self.name, self.image_get)

    def describe(self) -> dict:
        return {**super().describe(), "annotations": str(self.ann_file),
                "images_dir": str(self.image_path(0).parent) if len(self) else None}


__all__ = ["KarpathyCaptions", "KARPATHY_URL"]
