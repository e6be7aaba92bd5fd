"""The Dataset protocol: items with a visual (an image or a video, loaded lazily) and what tasks need of them.

An :class:`Item` carries its captions (``texts``: retrieval, ITM), referring expressions with boxes (``refs``:
grounding), questions with answers (``questions``: VQA), and task-specific extras in ``meta`` (e.g. SNLI-VE
hypotheses and labels, NLVR2's second image). Its visual is read only when asked for (:meth:`Dataset.visual`), so
building a dataset over a folder of 5,000 images or 1,000 videos costs only the annotation parse.

Retrieval sees a dataset as two lists: its visuals (one per item) and its texts (every caption of every item,
flattened; ``text_items()[j]`` is the item of text j). What counts as a match is the dataset's choice
(``positives``): ``"item"`` — a caption's only positive is its own item (COCO, Flickr30K, MSRVTT, the built-in
scenes); ``"caption"`` — every item with exactly the same caption is a positive (the built-in event videos, where
different videos can share a caption).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

ProgressFn = Optional[Callable[[int, int], None]]
KINDS = ("image", "video")


class DatasetError(ValueError):
    """A dataset that cannot be built or read as asked (missing folder or file, wrong column, unknown split...).
    The message is one line that says what to do."""


@dataclass
class Ref:
    """A referring expression and its box (x0, y0, x1, y1 in the item's image pixels)."""

    expression: str
    box: tuple
    meta: dict = field(default_factory=dict)


@dataclass
class QA:
    """A question about the item's visual, its answer, and a type code (for per-type accuracy)."""

    question: str
    answer: str
    qtype: str = ""
    meta: dict = field(default_factory=dict)


@dataclass
class Item:
    id: str
    texts: list[str] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    questions: list[QA] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    load: Optional[Callable[[], np.ndarray]] = None  # returns the visual (H×W×3 or T×H×W×3 uint8)


class Dataset:
    """Base class of every dataset. A subclass implements ``__len__`` and ``item(i)``; it may override
    ``visual(i)``/``visuals()`` to read or render faster in bulk. A registered subclass gets ``name``, ``kind``,
    ``tasks`` and ``splits`` from its registration (:func:`robustlab.datasets.registry.register_dataset`), declared
    there only; ``positives`` it sets itself."""

    name: str = ""
    kind: str = "image"  # "image" or "video"
    tasks: tuple[str, ...] = ("retrieval",)
    splits: tuple[str, ...] = ()
    positives: str = "item"  # "item" or "caption" (see the module docstring)

    def __init__(self, split: str | None = None, root: str | Path | None = None, **params):
        self.split = split
        self.root = Path(root).expanduser() if root is not None else None
        self.params = {k: v for k, v in params.items() if v is not None}
        self._texts: tuple[list[str], list[int]] | None = None

    # ---- the protocol -------------------------------------------------------------------------------------
    def __len__(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def item(self, i: int) -> Item:  # pragma: no cover - abstract
        raise NotImplementedError

    def visual(self, i: int) -> np.ndarray:
        it = self.item(i)
        if it.load is None:
            raise DatasetError(f"{self.name}: item {it.id} has no visual")
        return it.load()

    def visuals(self, indices: Sequence[int] | None = None, progress: ProgressFn = None) -> list[np.ndarray]:
        idx = range(len(self)) if indices is None else list(indices)
        out = []
        for j, i in enumerate(idx):
            out.append(self.visual(int(i)))
            if progress:
                progress(j + 1, len(idx))
        return out

    def item_source(self, i: int) -> dict:
        """Where item i comes from, for records, the basket and exports (JSON)."""
        it = self.item(i)
        return {"dataset": self.name, "split": self.split, "id": it.id, "index": int(i),
                **({"root": str(self.root)} if self.root else {}),
                **{k: v for k, v in it.meta.items() if k in ("path", "seed", "start", "end")}}

    # ---- derived views (retrieval) ------------------------------------------------------------------------
    def _flat(self) -> tuple[list[str], list[int]]:
        if self._texts is None:
            texts, owners = [], []
            for i in range(len(self)):
                for t in self.item(i).texts:
                    if t:
                        texts.append(t)
                        owners.append(i)
            self._texts = (texts, owners)
        return self._texts

    def texts(self) -> list[str]:
        """Every caption of every item, flattened (item order, then caption order)."""
        return list(self._flat()[0])

    def text_items(self) -> list[int]:
        """The item of each text in :meth:`texts`."""
        return list(self._flat()[1])

    def text_positives(self, texts: Sequence[str] | None = None) -> list[list[int]]:
        """For each text, the items that match it (see ``positives``)."""
        texts_, owners = self._flat()
        if self.positives == "caption":
            where: dict[str, list[int]] = {}
            for t, i in zip(texts_, owners):
                lst = where.setdefault(t, [])
                if not lst or lst[-1] != i:
                    lst.append(i)
            return [list(where[t]) for t in texts_]
        return [[i] for i in owners]

    def visual_positives(self) -> list[list[int]]:
        """For each item, the indices (into :meth:`texts`) of the texts that match it (empty: no caption)."""
        out: list[list[int]] = [[] for _ in range(len(self))]
        for j, items in enumerate(self.text_positives()):
            for i in items:
                out[i].append(j)
        return out

    # ---- identity -----------------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """A stable id of this dataset's content choice (name, split, root and parameters): cache and memo keys."""
        parts = [self.name, self.split or "", str(self.root or "")]
        parts += [f"{k}={v}" for k, v in sorted(self.params.items())]
        return "|".join(parts) + f"|n={len(self)}"

    def describe(self) -> dict:
        return {"dataset": self.name, "split": self.split, "kind": self.kind, "n": len(self),
                "texts": len(self._flat()[0]), **({"root": str(self.root)} if self.root else {}), **self.params}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} split={self.split} n={len(self)} {self.kind}s>"


class InMemoryDataset(Dataset):
    """Visuals already in memory (a list of arrays) with their captions: the built-in galleries and uploads.

    ``captions[i]`` is item i's caption, a list of captions, or None (a distractor: never a query)."""

    def __init__(self, visuals: Sequence[np.ndarray], captions: Sequence[Any], names: Sequence[str] | None = None,
                 *, name: str = "memory", kind: str | None = None, split: str | None = None,
                 meta: Sequence[dict] | None = None, positives: str | None = None, source: str | None = None,
                 refs: Sequence[list] | None = None, questions: Sequence[list] | None = None, **params):
        super().__init__(split=split, **params)
        self.name = name
        self.items_ = list(visuals)
        if len(captions) != len(self.items_):
            raise DatasetError(f"{len(captions)} captions for {len(self.items_)} visuals")
        if kind is None:
            kind = "video" if self.items_ and np.asarray(self.items_[0]).ndim == 4 else "image"
        if kind not in KINDS:
            raise DatasetError(f"kind must be image or video, got {kind!r}")
        self.kind = kind
        self.positives = positives or ("caption" if kind == "video" else "item")
        self.captions = [c if (c is None or isinstance(c, str)) else list(c) for c in captions]
        self.names = list(names) if names is not None else [f"{kind}-{i:05d}" for i in range(len(self.items_))]
        self.meta = list(meta) if meta is not None else [{} for _ in self.items_]
        self.source = source or name  # "builtin" / "upload" (the galleries' attribute)
        self._refs = list(refs) if refs is not None else None
        self._questions = list(questions) if questions is not None else None
        self.tasks = ("retrieval",) + (("grounding",) if refs is not None else ()) + \
            (("vqa",) if questions is not None else ())

    # the galleries' older attribute names
    @property
    def images(self) -> list[np.ndarray]:
        return self.items_

    @property
    def videos(self) -> list[np.ndarray]:
        return self.items_

    def __len__(self) -> int:
        return len(self.items_)

    def item(self, i: int) -> Item:
        c = self.captions[i]
        texts = [] if c is None else ([c] if isinstance(c, str) else [t for t in c if t])
        return Item(id=self.names[i], texts=texts, meta=dict(self.meta[i]),
                    refs=list(self._refs[i]) if self._refs else [],
                    questions=list(self._questions[i]) if self._questions else [],
                    load=lambda i=i: self.items_[i])

    def visual(self, i: int) -> np.ndarray:
        return self.items_[i]

    def visuals(self, indices=None, progress=None):
        return list(self.items_) if indices is None else [self.items_[int(i)] for i in indices]


__all__ = ["Dataset", "DatasetError", "InMemoryDataset", "Item", "Ref", "QA", "KINDS"]
