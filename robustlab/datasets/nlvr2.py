"""NLVR2: visual reasoning — is a sentence true of a pair of photographs?

    build("nlvr2", root="~/data/nlvr2", split="test1")

Annotations: NLVR2's ``dev.json`` / ``test1.json`` / ``train.json`` (https://github.com/lil-lab/nlvr,
``nlvr2/data/``; looked for in the folder, ``data/`` and ``nlvr2/data/``), JSON lines::

    {"identifier": "dev-850-0-0", "sentence": "One image shows exactly two brown acorns ...", "label": "False",
     "directory": "32" (train only), "left_url": ..., "right_url": ..., ...}

``label`` is the string ``"True"`` / ``"False"`` in the released files (a JSON boolean is accepted too). The pair's
images are ``<identifier minus its last -N>-img0.png`` (left) and ``-img1.png`` (right), in ``dev/``, ``test1/``,
``train/<directory>/`` (or ``images/<split>/...``) — the images are given on request by NLVR2's authors.

Splits: ``test1`` (the public test, "Test-P"), ``dev``, ``train``. An item is an image pair with every sentence
about it (identifiers ``dev-850-0-0``, ``dev-850-0-1``, ... share the pair ``dev-850-0``): ``Item.questions``
holds one ``QA(question=sentence, answer="true" | "false", qtype="reasoning", meta={identifier})`` each, so each
sentence is evaluated once and each pair is read — and perturbed — once. Pairs keep the file's order; ``n=``
takes the first n pairs. ``texts`` is empty.

The visual: :meth:`NLVR2.visual` is ONE H×W×3 uint8 image, the left and right photographs side by side, both
scaled (aspect kept) to the same height — the smaller of their two heights, or ``height=`` — with ``gap`` white
columns between them (default 0). Image perturbations and single-image models take it as it is; a model that
wants the two images takes them from :meth:`NLVR2.visual_pair` (as read) or cuts a (perturbed) canvas back with
:meth:`NLVR2.split_visual` (the layout is in :meth:`NLVR2.pair_layout`, which reads only the files' headers).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robustlab.datasets._local import check_n, find_file, need, read_image, read_jsonl, rel
from robustlab.datasets.base import QA, Dataset, DatasetError, Item
from robustlab.datasets.registry import register_dataset
from robustlab.io import files as io_files  # by module: the size limits are read (and patched) at call time
from robustlab.io.confined import is_dir, is_file, shown_path, visible

SPLITS = ("test1", "dev", "train")
ANN_GET = "it is in https://github.com/lil-lab/nlvr (nlvr2/data/)"
IMAGES_GET = "NLVR2's images are given on request, see https://github.com/lil-lab/nlvr/tree/master/nlvr2"
FORMAT = "NLVR2 JSON lines with identifier, sentence, label"


def _label(v, at: str, who: str) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise DatasetError(f"{who}: {at}: label {v!r} is not True or False")


def _resize_to_height(img: np.ndarray, h: int) -> np.ndarray:
    from PIL import Image

    if img.shape[0] == h:
        return img
    w = max(1, int(round(img.shape[1] * h / img.shape[0])))
    return np.asarray(Image.fromarray(img).resize((w, h), Image.Resampling.BICUBIC), dtype=np.uint8)


@register_dataset("nlvr2", kind="image", tasks=("reasoning",), splits=SPLITS, default_split="test1",
                  description="NLVR2 visual reasoning: is a sentence true of a pair of images (shown side by side)",
                  needs="{test1,dev,train}.json (NLVR2's data/) and the images in test1/, dev/, train/<directory>/ "
                        "(or images/<split>/)",
                  markers=tuple(f"{d}{s}.json" for d in ("", "data/", "nlvr2/data/")
                                for s in ("test1", "dev", "train")),
                  paper="Suhr et al., A Corpus for Reasoning about Natural Language Grounded in Photographs "
                        "(ACL 2019)")
class NLVR2(Dataset):
    positives = "item"

    def __init__(self, root, split: str = "test1", n: int | None = None, height: int | None = None, gap: int = 0,
                 ann_file: str | Path | None = None, image_dir: str | Path | None = None):
        who = self.name
        if split not in SPLITS:
            raise DatasetError(f"{who} has no split {split!r}; splits: {', '.join(SPLITS)}")
        n = check_n(n, who)
        for key, v, lo in (("height", height, 1), ("gap", gap, 0)):
            if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo):
                raise DatasetError(f"{who}: {key} must be an integer >= {lo}, got {v!r}")
        super().__init__(split=split, root=root, n=n, height=height, gap=int(gap) or None,
                         ann_file=str(ann_file) if ann_file else None, image_dir=str(image_dir) if image_dir else None)
        self.height, self.gap = height, int(gap)
        self.ann_file = find_file(self.root, (f"{split}.json",), ("", "data", "nlvr2/data"), ann_file, who=who,
                                  get=ANN_GET)
        where = self.ann_file.name
        pairs: dict[str, dict] = {}
        for ln, row in enumerate(read_jsonl(self.ann_file, who), start=1):
            at = f"{where} line {ln}"
            ident = str(need(row, "identifier", at, who, FORMAT))
            key = ident.rsplit("-", 1)[0]
            if "-" not in ident or not key:
                raise DatasetError(f"{who}: {at}: identifier {ident!r} is not <split>-<set>-<pair>-<sentence>")
            if n is not None and key not in pairs and len(pairs) >= n:
                continue
            sent = " ".join(str(need(row, "sentence", at, who, FORMAT)).split())
            label = _label(need(row, "label", at, who, FORMAT), at, who)
            rec = pairs.setdefault(key, {"id": key, "directory": row.get("directory"), "questions": []})
            rec["questions"].append(QA(sent, "true" if label else "false", "reasoning", {"identifier": ident}))
        if not pairs:
            raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} has no line")
        self.records = list(pairs.values())
        if image_dir:
            self.image_dir = self.root / Path(image_dir).expanduser()
        else:
            cands = [self.root / split, self.root / "images" / split]
            self.image_dir = next((d for d in cands if is_file(self._paths_in(d, 0)[0])),
                                  next((d for d in cands if is_dir(d)), cands[0]))

    def _paths_in(self, d: Path, i: int) -> tuple[Path, Path]:
        r = self.records[i]
        if r["directory"] not in (None, ""):
            d = d / str(r["directory"])
        return d / f"{r['id']}-img0.png", d / f"{r['id']}-img1.png"

    def image_paths(self, i: int) -> tuple[Path, Path]:
        """The left and right image files of pair i."""
        return self._paths_in(self.image_dir, i)

    def __len__(self) -> int:
        return len(self.records)

    def item(self, i: int) -> Item:
        r = self.records[i]
        left, right = self.image_paths(i)
        return Item(id=r["id"], questions=[QA(q.question, q.answer, q.qtype, dict(q.meta)) for q in r["questions"]],
                    meta={"path": rel(left, self.root), "paths": [rel(left, self.root), rel(right, self.root)]},
                    load=lambda i=i: self.visual(i))

    def visual_pair(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The left and right images as read (H×W×3 uint8 each, their own sizes)."""
        return tuple(read_image(p, self.name, IMAGES_GET) for p in self.image_paths(i))

    def _layout(self, sizes: list[tuple[int, int]]) -> dict:
        h = self.height or min(hh for hh, _ in sizes)
        widths = [max(1, int(round(w * h / hh))) for hh, w in sizes]
        return {"height": h, "left_width": widths[0], "right_width": widths[1], "gap": self.gap,
                "width": widths[0] + self.gap + widths[1]}

    def pair_layout(self, i: int) -> dict:
        """Where the two images lie in :meth:`visual` (height, left_width, gap, right_width, width), from the
        files' headers only."""
        from PIL import Image

        sizes = []
        for p in self.image_paths(i):
            shown = shown_path(p)
            if not is_file(p) or not visible(p):  # outside the dashboard's data roots: as missing
                raise DatasetError(f"{self.name}: image {shown!r} is missing ({IMAGES_GET})")
            try:  # the header of the checked file (stat-ed against the upload limit, opened by open_fd)
                with io_files.open_checked(p, io_files.MAX_UPLOAD_BYTES, Path(p).name) as f, Image.open(f) as im:
                    sizes.append((im.size[1], im.size[0]))
            except io_files.InputError as e:
                raise DatasetError(f"{self.name}: {e}") from e
            except Exception as e:  # noqa: BLE001 - any header failure is a bad file
                why = " ".join(str(e).replace(str(p), shown).split())[:200]
                raise DatasetError(f"{self.name}: cannot read {shown!r} ({type(e).__name__}: {why})") from e
        return self._layout(sizes)

    def visual(self, i: int) -> np.ndarray:
        left, right = self.visual_pair(i)
        lay = self._layout([left.shape[:2], right.shape[:2]])
        h = lay["height"]
        parts = [_resize_to_height(left, h)]
        if self.gap:
            parts.append(np.full((h, self.gap, 3), 255, np.uint8))
        parts.append(_resize_to_height(right, h))
        return np.ascontiguousarray(np.concatenate(parts, axis=1))

    def split_visual(self, i: int, canvas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cut a canvas laid out as :meth:`visual` (e.g. a perturbed one of the same size) into left and right."""
        lay = self.pair_layout(i)
        canvas = np.asarray(canvas)
        if canvas.shape[:2] != (lay["height"], lay["width"]):
            raise DatasetError(f"{self.name}: canvas of {canvas.shape[1]}×{canvas.shape[0]} px is not pair {i}'s "
                               f"{lay['width']}×{lay['height']} layout")
        lw = lay["left_width"]
        return canvas[:, :lw], canvas[:, lw + lay["gap"]:]

    def describe(self) -> dict:
        labels = [q.answer for r in self.records for q in r["questions"]]
        return {**super().describe(), "sentences": len(labels), "true": labels.count("true"),
                "false": labels.count("false"), "annotations": str(self.ann_file), "images_dir": str(self.image_dir)}


__all__ = ["NLVR2", "SPLITS"]
