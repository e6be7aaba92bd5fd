"""Flickr30K captions in Karpathy's split (``dataset_flickr30k.json``): image–text retrieval, 5 captions per image.

    build("flickr30k", root="~/data/flickr30k", split="test")   # the 1k test: 1,000 images, 5,000 captions

The folder holds ``dataset_flickr30k.json`` (from Karpathy's ``caption_datasets.zip``; also looked for in
``annotations/``) and the images (the file has no ``filepath``): in ``flickr30k-images/`` as the official archive
unpacks, ``flickr30k_images/``, ``images/``, or the folder itself — the first that holds the split's first image.
Splits: ``test`` (1,000 images), ``val`` (1,014), ``train`` (29,000). Parameters: ``n`` (the first n images),
``captions_per_image`` (5; None keeps all), ``ann_file`` (another path to the JSON). See
:mod:`robustlab.datasets.karpathy` for the format.
"""
from __future__ import annotations

from robustlab.datasets.karpathy import KarpathyCaptions
from robustlab.datasets.registry import register_dataset

SPLITS = {"test": ("test",), "val": ("val",), "train": ("train",)}
IMAGE_DIRS = ["flickr30k-images", "flickr30k_images", "images", ""]
FLICKR_IMAGES_GET = ("the Flickr30K images are flickr30k-images.tar from the request form at "
                     "https://shannon.cs.illinois.edu/DenotationGraph/")


@register_dataset("flickr30k", kind="image", tasks=("retrieval",), splits=tuple(SPLITS), default_split="test",
                  description="Flickr30K captions, Karpathy split: image-text retrieval (1k test, 5 captions each)",
                  needs="dataset_flickr30k.json (Karpathy's caption_datasets.zip) and the images in "
                        "flickr30k-images/ (or flickr30k_images/, images/, the folder itself)",
                  markers=("dataset_flickr30k.json", "annotations/dataset_flickr30k.json",
                           "caption_datasets/dataset_flickr30k.json"),
                  paper="Young et al., From image descriptions to visual denotations (TACL 2014); split: Karpathy & "
                        "Fei-Fei (CVPR 2015)")
class Flickr30KCaptions(KarpathyCaptions):
    ann_name = "dataset_flickr30k.json"
    image_get = FLICKR_IMAGES_GET
    split_values = SPLITS

    def image_dirs(self, filepath: str) -> list[str]:
        return ([filepath] if filepath else []) + IMAGE_DIRS


__all__ = ["Flickr30KCaptions", "IMAGE_DIRS", "FLICKR_IMAGES_GET"]
