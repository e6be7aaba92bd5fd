"""MS-COCO captions in Karpathy's split (``dataset_coco.json``): image–text retrieval, 5 captions per image.

    build("coco", root="~/data/coco", split="test")        # the 5k test: 5,000 images, 25,000 captions

The folder holds ``dataset_coco.json`` (from Karpathy's ``caption_datasets.zip``; also looked for in
``annotations/``) and the COCO 2014 images in the folders the file's ``filepath`` names: ``val2014/`` and
``train2014/`` (also ``images/val2014/`` ...). Splits: ``test`` (5,000 images) and ``val`` (5,000) — both from
val2014 —, ``train`` = Karpathy's ``train`` + ``restval`` (82,783 + 30,504 = 113,287 images: the "Karpathy
train" that VSE++, ALBEF, BLIP and most retrieval papers train on), and ``restval`` alone. Parameters: ``n``
(the first n images), ``captions_per_image`` (5; None keeps the 6th and 7th a few images have), ``ann_file``
(another path to the JSON). See :mod:`robustlab.datasets.karpathy` for the format.
"""
from __future__ import annotations

from robustlab.datasets.karpathy import KarpathyCaptions
from robustlab.datasets.registry import register_dataset

SPLITS = {"test": ("test",), "val": ("val",), "train": ("train", "restval"), "restval": ("restval",)}


@register_dataset("coco", kind="image", tasks=("retrieval",), splits=tuple(SPLITS), default_split="test",
                  description="MS-COCO captions, Karpathy split: image-text retrieval (5k test, 5 captions each)",
                  needs="dataset_coco.json (Karpathy's caption_datasets.zip) and the COCO 2014 images in "
                        "val2014/ and train2014/ (the file's filepath; also images/val2014/ ...)",
                  markers=("dataset_coco.json", "annotations/dataset_coco.json", "caption_datasets/dataset_coco.json"),
                  paper="Lin et al., Microsoft COCO (ECCV 2014); split: Karpathy & Fei-Fei, Deep Visual-Semantic "
                        "Alignments for Generating Image Descriptions (CVPR 2015)")
class COCOCaptions(KarpathyCaptions):
    ann_name = "dataset_coco.json"
    image_get = "the COCO 2014 images are train2014.zip / val2014.zip from https://cocodataset.org/#download"
    split_values = SPLITS

    def image_dirs(self, filepath: str) -> list[str]:
        fp = filepath or "val2014"
        return [fp, f"images/{fp}", ""]


__all__ = ["COCOCaptions"]
