"""SNLI-VE: visual entailment — does a Flickr30K image entail, contradict or stay neutral about a hypothesis?

    build("snli-ve", root="~/data/snli-ve", split="test")      # 17,901 hypotheses about 1,000 images

Annotations: ``snli_ve_train.jsonl`` / ``snli_ve_dev.jsonl`` / ``snli_ve_test.jsonl`` (https://github.com/necla-ml/
SNLI-VE; looked for in the folder, ``data/`` and ``annotations/``), one JSON object per line::

    {"Flikr30kID": "2248275918.jpg", "Flickr30K_ID": "2248275918", "gold_label": "contradiction",
     "sentence1": "<the Flickr30K caption the SNLI premise was>", "sentence2": "<the hypothesis>",
     "pairID": "2248275918.jpg#1r1c", ...}

(``Flikr30kID``, sic, is the image's file name; ``Flickr30K_ID`` without ``.jpg`` is used when it is absent.)
Rows whose ``gold_label`` is ``-`` (no annotator majority) are skipped, as in the released files. The images are
the Flickr30K images, in ``flickr30k-images/`` (or ``flickr30k_images/``, ``images/``, ``Flickr30K/
flickr30k-images/``, the folder itself).

Splits: ``test``, ``dev``, ``train`` (the file names). An item is an image with every hypothesis about it in the
split: ``Item.questions`` holds one ``QA(question=hypothesis, answer=gold_label, qtype="entailment",
meta={pair_id, premise})`` each (file order), so each hypothesis is evaluated once and each image is read — and
perturbed — once for all of them. Images keep the order in which the file first names them; ``n=`` takes the
first n images. ``texts`` is empty (hypotheses are not captions; the premise is in each QA's meta).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robustlab.datasets._local import check_n, find_file, need, pick_dir, read_image, read_jsonl, rel
from robustlab.datasets.base import QA, Dataset, DatasetError, Item
from robustlab.datasets.flickr30k import FLICKR_IMAGES_GET
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import shown_path

LABELS = ("entailment", "neutral", "contradiction")
SPLITS = ("test", "dev", "train")
ANN_GET = "it is made by SNLI-VE's script from SNLI 1.0 and Flickr30K, see https://github.com/necla-ml/SNLI-VE"
FORMAT = "SNLI-VE JSON lines with Flikr30kID (or Flickr30K_ID), sentence2, gold_label"
IMAGE_DIRS = ["flickr30k-images", "flickr30k_images", "images", "Flickr30K/flickr30k-images", ""]


@register_dataset("snli-ve", kind="image", tasks=("entailment",), splits=SPLITS, default_split="test",
                  description="SNLI-VE visual entailment: image + hypothesis -> entailment / neutral / contradiction",
                  needs="snli_ve_{test,dev,train}.jsonl and the Flickr30K images in flickr30k-images/ (or "
                        "flickr30k_images/, images/, the folder itself)",
                  markers=("snli_ve_*.jsonl", "data/snli_ve_*.jsonl", "annotations/snli_ve_*.jsonl"),
                  paper="Xie et al., Visual Entailment: A Novel Task for Fine-Grained Image Understanding (2019)")
class SNLIVE(Dataset):
    positives = "item"

    def __init__(self, root, split: str = "test", n: int | None = None, ann_file: str | Path | None = None,
                 image_dir: str | Path | None = None):
        who = self.name
        if split not in SPLITS:
            raise DatasetError(f"{who} has no split {split!r}; splits: {', '.join(SPLITS)}")
        n = check_n(n, who)
        super().__init__(split=split, root=root, n=n, ann_file=str(ann_file) if ann_file else None,
                         image_dir=str(image_dir) if image_dir else None)
        self.ann_file = find_file(self.root, (f"snli_ve_{split}.jsonl",), ("", "data", "annotations"), ann_file,
                                  who=who, get=ANN_GET)
        where = self.ann_file.name
        by_image: dict[str, list[QA]] = {}
        self.skipped = 0
        for ln, row in enumerate(read_jsonl(self.ann_file, who), start=1):
            at = f"{where} line {ln}"
            label = str(need(row, "gold_label", at, who, FORMAT)).strip().lower()
            if label == "-":
                self.skipped += 1
                continue
            if label not in LABELS:
                raise DatasetError(f"{who}: {at}: gold_label {label!r} is not one of {', '.join(LABELS)}")
            fname = row.get("Flikr30kID") or row.get("Flickr30kID")
            if not fname:
                fid = str(need(row, ("Flikr30kID", "Flickr30K_ID"), at, who, FORMAT))
                fname = fid if fid.lower().endswith(".jpg") else f"{fid}.jpg"
            fname = str(fname)
            if n is not None and fname not in by_image and len(by_image) >= n:
                continue
            hyp = " ".join(str(need(row, "sentence2", at, who, FORMAT)).split())
            by_image.setdefault(fname, []).append(
                QA(hyp, label, "entailment", {"pair_id": row.get("pairID"), "premise": row.get("sentence1")}))
        if not by_image:
            raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} has no labelled pair")
        self.records = [{"id": Path(f).stem, "filename": f, "questions": qs} for f, qs in by_image.items()]
        self.image_dir = self.root / Path(image_dir).expanduser() if image_dir else \
            pick_dir(self.root, IMAGE_DIRS, self.records[0]["filename"])

    def __len__(self) -> int:
        return len(self.records)

    def image_path(self, i: int) -> Path:
        return self.image_dir / self.records[i]["filename"]

    def item(self, i: int) -> Item:
        r = self.records[i]
        return Item(id=r["id"], questions=[QA(q.question, q.answer, q.qtype, dict(q.meta)) for q in r["questions"]],
                    meta={"path": rel(self.image_path(i), self.root), "filename": r["filename"]},
                    load=lambda i=i: self.visual(i))

    def visual(self, i: int) -> np.ndarray:
        return read_image(self.image_path(i), self.name, FLICKR_IMAGES_GET)

    def describe(self) -> dict:
        labels = [q.answer for r in self.records for q in r["questions"]]
        return {**super().describe(), "pairs": len(labels), **{lab: labels.count(lab) for lab in LABELS},
                **({"skipped_no_label": self.skipped} if self.skipped else {}), "annotations": str(self.ann_file),
                "images_dir": str(self.image_dir)}


__all__ = ["SNLIVE", "LABELS", "SPLITS"]
