"""Datasets: one protocol (``base``), one registry (``registry``), and the loaders.

    rl.datasets.list()                                    every registered dataset: kind, tasks, splits, needs
    rl.datasets.build("builtin", n=1000)                  the synthetic scenes (default, offline)
    rl.datasets.build("builtin-videos", n=1000)           the synthetic event videos
    rl.datasets.build("msrvtt", root="~/data/msrvtt", split="test")   a local copy in its standard format

Built-in: ``builtin`` and ``builtin-videos`` (synthetic/), ``upload`` (uploads.py: the files a user gives).
Local copies: coco, flickr30k, msrvtt, youcook2, refcoco / refcoco+ / refcocog, snli-ve, nlvr2, msvd, didemo,
activitynet, lsmdc — one module each — and msrvtt-qa / activitynet-qa / next-qa (video_qa.py); karpathy.py is the
shared reader of coco and flickr30k, _videos.py what the whole-video loaders share. They parse the annotations
when built and decode an image or a video clip only when asked (``visual(i)``); ``rl.datasets.list()`` says which
files each needs, and every failure is one line (DatasetError). A pickled annotation file (RefCOCO's
``refs(unc).p``) is opened only with ``trust_pickle=True``; MSVD's pickled ``raw-captions.pkl`` never.
"""
from __future__ import annotations

import importlib

from robustlab.datasets.base import QA, Dataset, DatasetError, InMemoryDataset, Item, Ref
from robustlab.datasets.registry import build, get_entry, list_datasets, register_dataset


def __getattr__(name):
    lazy = {"builtin_gallery": "robustlab.datasets.synthetic.datasets",
            "builtin_video_gallery": "robustlab.datasets.synthetic.datasets",
            "Gallery": "robustlab.datasets.uploads", "ingest_uploads": "robustlab.datasets.uploads",
            "set_captions": "robustlab.datasets.uploads"}
    if name in lazy:
        return getattr(importlib.import_module(lazy[name]), name)
    raise AttributeError(f"module 'robustlab.datasets' has no attribute {name!r}")


list = list_datasets  # noqa: A001 - ``rl.datasets.list()`` as the README documents

__all__ = ["Dataset", "DatasetError", "InMemoryDataset", "Item", "Ref", "QA", "build", "list", "list_datasets",
           "register_dataset", "get_entry"]
