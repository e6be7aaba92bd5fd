"""RefCOCO, RefCOCO+ and RefCOCOg: referring-expression grounding (an expression -> the box of its object) on COCO
train2014 images.

    build("refcoco", root="~/data/refer", split="val")          # also "refcoco+", "refcocog"

Files, as https://github.com/lichengunc/refer lays them out (``data/refcoco/``...), in ``<root>/<name>/`` or
the folder itself:

- ``instances.json`` — COCO boxes: ``images[]`` with ``id``, ``file_name``; ``annotations[]`` with ``id``,
  ``image_id``, ``bbox`` ``[x, y, w, h]`` (converted to ``(x0, y0, x1, y1)`` pixels);
- the expressions — ``refs(unc).json`` / ``refs.json`` (a JSON list) or ``refs(unc).parquet`` / ``refs.parquet``
  (one row per ref, the same columns; read with pandas + pyarrow), each ref ``{ref_id, ann_id, image_id, split,
  sentences: [{sent, ...}], category_id}`` (a sentence may also be a plain string). ``(umd)`` / ``(google)`` for
  RefCOCOg. The original ``refs(unc).p`` is a Python pickle, which can run code when loaded: it is refused with a
  one-line DatasetError saying how to convert it, and loaded only with ``trust_pickle=True`` (CLI
  ``--trust-pickle``). ``python -m robustlab.datasets.refcoco FOLDER`` (:func:`convert_refs`) converts a folder's
  pickles once to JSON beside them, on the operator's command line; the dashboard's picker lists a folder that
  holds only the pickle as needing that command;
- the images ``COCO_train2014_*.jpg`` in ``train2014/`` (or ``images/train2014/``, ``images/mscoco/images/
  train2014/``, ``images/``; ``image_dir=`` to say), read when asked for.

Splits: ``val``, ``testA`` (people), ``testB`` (other objects), ``train`` for refcoco and refcoco+ (the UNC
split); ``val``, ``test``, ``train`` for refcocog (the UMD split, ``split_by="umd"``; ``split_by="google"`` reads
``refs(google)`` with ``train`` / ``val`` only).

An item is an image of the split with every expression of every ref on it (``Item.refs``: one
``Ref(expression, box, meta={ref_id, ann_id, sent_id, category_id})`` per sentence, file order): the grounding
task evaluates each expression once against its box, and each image is read — and perturbed — once for all its
expressions (RefCOCO val: 1,500 images, 10,834 expressions). Images keep the order in which the refs file first
names them; ``n=`` takes the first n images. ``texts`` is empty (expressions are not captions).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np

from robustlab.datasets._local import check_n, need, need_int, need_list, pick_dir, read_image, read_json, rel
from robustlab.datasets.base import Dataset, DatasetError, Item, Ref
from robustlab.datasets.registry import register_dataset
from robustlab.io import files as io_files  # by module: the size limits are read (and patched) at call time
from robustlab.io.confined import is_dir, is_file, shown_path, visible

REFER_GET = "it is in the dataset's zip from https://github.com/lichengunc/refer (data/)"
IMAGES_GET = "the images are COCO's train2014.zip from https://cocodataset.org/#download"
INSTANCES_FORMAT = "COCO instances.json: images[] with id, file_name; annotations[] with id, image_id, bbox"
REFS_FORMAT = "refs: a list of {ref_id, ann_id, image_id, split, sentences: [{sent}]}"
IMAGE_DIRS = ["train2014", "images/train2014", "images/mscoco/images/train2014", "images", ""]
CONVERT_COMMAND = "python -m robustlab.datasets.refcoco FOLDER"  # FOLDER: the folder of refer's refs(*).p files
REFER_DIRS = ("refcoco", "refcoco+", "refcocog")


def refs_from_parquet(path: Path, who: str) -> list[dict]:
    """Rows of a parquet export of the refs as dicts (pandas + pyarrow)."""
    try:
        import pandas as pd
    except ImportError:
        raise DatasetError(f"{who}: reading {shown_path(path)!r} needs pandas and pyarrow (pip install pandas "
                           "pyarrow), or give the refs as JSON") from None
    try:  # the checked file's bytes (stat-ed against the annotation limit, opened by open_fd), never the name again
        data = io_files.read_file_capped(path, io_files.MAX_ANNOTATION_BYTES, Path(path).name,
                                         io_files.ANNOTATION_SETTING)
    except io_files.InputError as e:
        raise DatasetError(f"{who}: {e}") from e
    try:
        df = pd.read_parquet(io.BytesIO(data))
    except ImportError as e:
        raise DatasetError(f"{who}: reading {shown_path(path)!r} needs pyarrow (pip install pyarrow), or give the "
                           f"refs as JSON ({e})") from None
    except Exception as e:  # noqa: BLE001 - any reader failure is a bad file
        raise DatasetError(f"{who}: cannot read {shown_path(path)!r} as parquet ({type(e).__name__}: "
                           f"{' '.join(str(e).split())[:200]})") from e

    def plain(v):
        if isinstance(v, np.ndarray):
            return [plain(x) for x in v.tolist()]
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v.item() if isinstance(v, np.generic) else v

    return [{k: plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def refs_from_pickle(path: Path, who: str) -> list:
    try:
        f = io_files.open_checked(path, io_files.MAX_ANNOTATION_BYTES, Path(path).name, io_files.ANNOTATION_SETTING)
    except io_files.InputError as e:
        raise DatasetError(f"{who}: {e}") from e
    try:
        with f:
            return pickle.load(f, encoding="latin1")  # refer's files were written by Python 2
    except Exception as e:  # noqa: BLE001 - any unpickling failure is a bad file
        raise DatasetError(f"{who}: cannot unpickle {shown_path(path)!r} ({type(e).__name__}: "
                           f"{' '.join(str(e).split())[:200]})") from e


def pickle_refused(path: Path, who: str) -> DatasetError:
    js = path.with_suffix(".json")
    conv = (f"{Path(sys.executable).name} -c \"import json,pickle; json.dump(pickle.load(open('{path.name}','rb'), "
            f"encoding='latin1'), open('{js.name}','w'))\"")
    cmd = CONVERT_COMMAND.replace("FOLDER", shown_path(path.parent))
    return DatasetError(f"{who}: {shown_path(path)!r} is a Python pickle, which can run code when loaded, so robustlab "
                        f"does not open it by default: convert it once to JSON in its folder ({cmd}, or {conv}) or, "
                        "if you trust the file, pass trust_pickle=True (CLI --trust-pickle)")


def _plain(o):
    """json.dump's fallback for what a refs pickle may hold besides plain types (NumPy scalars, Python 2 bytes)."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (bytes, bytearray)):
        return bytes(o).decode("latin1")
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"a {type(o).__name__} has no JSON form")


def convert_refs(folder: str | Path) -> list[tuple[Path, Path | None, str]]:
    """Convert refer's pickled refs files (``refs(unc).p``, ``refs(umd).p``, ``refs(google).p``) in ``folder`` and
    in its ``refcoco/``, ``refcoco+/``, ``refcocog/`` sub-folders once to JSON beside each (``refs(unc).json``:
    what :class:`RefCOCOBase` reads by default). This **unpickles** them: run it only on files you trust (refer's
    own, from its zip). A JSON file already there is kept. Returns ``(pickle, json written or None, what
    happened)`` per file; DatasetError (one line) when the folder holds none or a file can't be converted."""
    who = "refcoco convert"
    base = Path(folder).expanduser()
    if not is_dir(base):
        raise DatasetError(f"{who}: {shown_path(base)!r} is not a folder")
    found = [p for d in (base, *(base / s for s in REFER_DIRS)) if is_dir(d)
             for p in sorted(d.glob("refs(*).p")) if is_file(p)]
    if not found:
        raise DatasetError(f"{who}: no refs(*).p in {shown_path(base)!r} nor in its {', '.join(REFER_DIRS)} "
                           f"sub-folders ({REFER_GET})")
    out = []
    for src in found:
        dst = src.with_suffix(".json")
        if dst.exists():
            out.append((src, None, f"kept: {dst.name} is already there"))
            continue
        refs = refs_from_pickle(src, who)
        if isinstance(refs, dict) and isinstance(refs.get("refs"), list):
            refs = refs["refs"]
        if not isinstance(refs, list):
            raise DatasetError(f"{who}: {shown_path(src)!r} holds a {type(refs).__name__}, not a list "
                               f"(expected {REFS_FORMAT})")
        tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(refs, f, default=_plain)
            os.replace(tmp, dst)
        except (OSError, TypeError, ValueError) as e:
            tmp.unlink(missing_ok=True)
            raise DatasetError(f"{who}: cannot write {shown_path(dst)!r} ({type(e).__name__}: "
                               f"{' '.join(str(e).split())[:200]})") from None
        out.append((src, dst, f"wrote {dst.name}: {len(refs)} refs"))
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m robustlab.datasets.refcoco FOLDER...``: :func:`convert_refs` on each folder, one line per file."""
    import argparse  # only the operator's command line needs it

    ap = argparse.ArgumentParser(prog="python -m robustlab.datasets.refcoco",
                                 description="Convert refer's pickled refs(unc).p / refs(umd).p / refs(google).p to "
                                             "JSON beside them (what robustlab and the dashboard read). This unpickles "
                                             "the files: run it only on files you trust.")
    ap.add_argument("folders", nargs="+", metavar="FOLDER",
                    help="a folder holding refs(*).p, or refer's data/ folder (refcoco/, refcoco+/, refcocog/ in it)")
    args = ap.parse_args(argv)
    rc = 0
    for folder in args.folders:
        try:
            for src, _dst, what in convert_refs(folder):
                print(f"{src}: {what}")
        except DatasetError as e:
            print(f"error: {e}", file=sys.stderr)
            rc = 1
    return rc


class RefCOCOBase(Dataset):
    """RefCOCO, RefCOCO+ and RefCOCOg (``name``, ``kind``, ``tasks`` and ``splits`` from each one's registration)."""

    positives = "item"
    dirname = ""  # refer's folder: refcoco, refcoco+, refcocog
    split_by: dict[str, tuple[str, ...]] = {}  # split_by -> splits
    default_split_by = "unc"

    def __init__(self, root, split: str = "val", n: int | None = None, split_by: str | None = None,
                 trust_pickle: bool = False, refs_file: str | Path | None = None,
                 instances_file: str | Path | None = None, image_dir: str | Path | None = None):
        who = self.name
        split_by = split_by or self.default_split_by
        if split_by not in self.split_by:
            raise DatasetError(f"{who} has no split_by {split_by!r}; choose {', '.join(self.split_by)}")
        if split not in self.split_by[split_by]:
            raise DatasetError(f"{who} ({split_by}) has no split {split!r}; splits: "
                               f"{', '.join(self.split_by[split_by])}")
        n = check_n(n, who)
        super().__init__(split=split, root=root, n=n, split_by=split_by if split_by != self.default_split_by else None,
                         refs_file=str(refs_file) if refs_file else None,
                         instances_file=str(instances_file) if instances_file else None,
                         image_dir=str(image_dir) if image_dir else None)
        root = self.root
        self.ann_dir = root / self.dirname if is_dir(root / self.dirname) else root
        self.refs_file = self._refs_path(refs_file, split_by)
        self.instances_file = self._path(instances_file) if instances_file else self.ann_dir / "instances.json"
        if not is_file(self.instances_file) or not visible(self.instances_file):  # outside the data roots: missing
            raise DatasetError(f"{who}: missing {shown_path(self.instances_file)!r} (COCO boxes); {REFER_GET}")

        # the refs of this split
        suffix = self.refs_file.suffix.lower()
        if suffix in (".p", ".pkl", ".pickle"):
            if trust_pickle is not True:  # only an explicit True opens a pickle ("false", 1... do not)
                raise pickle_refused(self.refs_file, who)
            refs = refs_from_pickle(self.refs_file, who)
        elif suffix == ".parquet":
            refs = refs_from_parquet(self.refs_file, who)
        else:
            refs = read_json(self.refs_file, who)
        where = self.refs_file.name
        if isinstance(refs, dict) and isinstance(refs.get("refs"), list):
            refs = refs["refs"]
        if not isinstance(refs, list):
            raise DatasetError(f"{who}: {where} is a {type(refs).__name__}, not a list (expected {REFS_FORMAT})")
        by_image: dict[int, list[tuple[dict, list]]] = {}
        ann_ids: set[int] = set()
        for k, r in enumerate(refs):
            at = f"{where}[{k}]"
            if str(need(r, "split", at, who, REFS_FORMAT)) != split:
                continue
            img = need_int(r, "image_id", at, who, REFS_FORMAT)
            if n is not None and img not in by_image and len(by_image) >= n:
                continue
            ann = need_int(r, "ann_id", at, who, REFS_FORMAT)
            sents = []
            for j, s in enumerate(need_list(r, "sentences", at, who, REFS_FORMAT)):
                text = s if isinstance(s, str) else need(s, ("sent", "raw"), f"{at}.sentences[{j}]", who,
                                                         REFS_FORMAT)
                text = " ".join(str(text).split())
                if text:
                    sents.append((text, s.get("sent_id") if isinstance(s, dict) else None))
            by_image.setdefault(img, []).append(({"ref_id": r.get("ref_id"), "ann_id": ann,
                                                  "category_id": r.get("category_id")}, sents))
            ann_ids.add(ann)
        if not by_image:
            raise DatasetError(f"{who}: {shown_path(self.refs_file)!r} has no ref in split {split!r}")

        # boxes and file names from instances.json
        inst = read_json(self.instances_file, who)
        iwhere = self.instances_file.name
        files, boxes = {}, {}
        for k, im in enumerate(need_list(inst, "images", iwhere, who, INSTANCES_FORMAT)):
            iid = need_int(im, "id", f"{iwhere} images[{k}]", who, INSTANCES_FORMAT)
            if iid in by_image:
                files[iid] = str(need(im, "file_name", f"{iwhere} images[{k}]", who, INSTANCES_FORMAT))
        for k, a in enumerate(need_list(inst, "annotations", iwhere, who, INSTANCES_FORMAT)):
            aid = need_int(a, "id", f"{iwhere} annotations[{k}]", who, INSTANCES_FORMAT)
            if aid in ann_ids:
                bb = need(a, "bbox", f"{iwhere} annotations[{k}]", who, INSTANCES_FORMAT)
                try:
                    x, y, w, h = (float(v) for v in bb)
                except (TypeError, ValueError):
                    raise DatasetError(f"{who}: {iwhere} annotations[{k}]['bbox'] is {bb!r}, not [x, y, w, h]") \
                        from None
                boxes[aid] = (x, y, x + w, y + h)
        lost_img = [i for i in by_image if i not in files]
        if lost_img:
            raise DatasetError(f"{who}: image_id {lost_img[0]} of {where} is not in {iwhere} images[] "
                               f"({len(lost_img)} missing; is it the {self.dirname} instances.json?)")
        lost_ann = sorted(ann_ids - set(boxes))
        if lost_ann:
            raise DatasetError(f"{who}: ann_id {lost_ann[0]} of {where} is not in {iwhere} annotations[] "
                               f"({len(lost_ann)} missing; is it the {self.dirname} instances.json?)")

        self.records = []
        for iid, rs in by_image.items():
            out = [Ref(text, boxes[m["ann_id"]], {**m, "sent_id": sid}) for m, sents in rs for text, sid in sents]
            self.records.append({"id": str(iid), "file_name": files[iid], "refs": out})
        self.image_dir = self._path(image_dir) if image_dir else \
            pick_dir(root, IMAGE_DIRS, self.records[0]["file_name"])

    def _path(self, p) -> Path:
        p = Path(p).expanduser()
        return p if p.is_absolute() else self.root / p

    def _refs_path(self, refs_file, split_by: str) -> Path:
        if refs_file:
            p = self._path(refs_file)
            if not is_file(p) or not visible(p):  # outside the dashboard's data roots: as missing
                raise DatasetError(f"{self.name}: refs file {shown_path(p)!r} does not exist ({REFER_GET})")
            return p
        names = [f"refs({split_by}).json", f"refs({split_by}).parquet"]
        if split_by == self.default_split_by:
            names += ["refs.json", "refs.parquet"]
        names += [f"refs({split_by}).p"]  # refused unless trusted, so looked for last
        for name in names:
            if is_file(self.ann_dir / name) and visible(self.ann_dir / name):  # outside the roots: as missing
                return self.ann_dir / name
        raise DatasetError(f"{self.name}: missing {shown_path(self.ann_dir / names[0])!r} "
                           f"(or {', '.join(names[1:])}) — "
                           f"the referring expressions; {REFER_GET}")

    def __len__(self) -> int:
        return len(self.records)

    def image_path(self, i: int) -> Path:
        return self.image_dir / self.records[i]["file_name"]

    def item(self, i: int) -> Item:
        r = self.records[i]
        return Item(id=r["id"], refs=[Ref(x.expression, x.box, dict(x.meta)) for x in r["refs"]],
                    meta={"path": rel(self.image_path(i), self.root), "file_name": r["file_name"]},
                    load=lambda i=i: self.visual(i))

    def visual(self, i: int) -> np.ndarray:
        return read_image(self.image_path(i), self.name, IMAGES_GET)

    def describe(self) -> dict:
        return {**super().describe(), "expressions": sum(len(r["refs"]) for r in self.records),
                "objects": len({x.meta["ann_id"] for r in self.records for x in r["refs"]}),
                "refs_file": str(self.refs_file), "instances": str(self.instances_file),
                "images_dir": str(self.image_dir)}


_PAPER_UNC = "Yu et al., Modeling Context in Referring Expressions (ECCV 2016)"
def _markers(d: str, refs: str) -> tuple[str, ...]:
    """The referring-expression files that tell a RefCOCO-family folder (discovery in the dashboard): every refs
    file the loader opens by default, in ``d/`` or the folder itself."""
    return tuple(f"{sub}{n}" for sub in (f"{d}/", "") for n in (f"refs({refs}).json", f"refs({refs}).parquet",
                                                                   "refs.json", "refs.parquet"))


def _pickles(d: str, refs: str) -> tuple[str, ...]:
    """refer's original pickled refs file, in ``d/`` or the folder itself: a folder that needs CONVERT_COMMAND."""
    return (f"{d}/refs({refs}).p", f"refs({refs}).p")


_NEEDS = ("instances.json and {refs} (or refs.json / .parquet; the original {p}: converted once with "
          f"{CONVERT_COMMAND}, or read with trust_pickle=True), in "
          "{d}/ or the folder itself, and the COCO train2014 images in train2014/ (or images/train2014/)")


@register_dataset("refcoco", kind="image", tasks=("grounding",), splits=("val", "testA", "testB", "train"),
                  default_split="val", description="RefCOCO referring expressions (UNC split): grounding",
                  needs=_NEEDS.format(refs="refs(unc).json", p="refs(unc).p", d="refcoco"),
                  markers=_markers("refcoco", "unc"),
                  convert_markers=_pickles("refcoco", "unc"), convert=CONVERT_COMMAND,
                  paper=_PAPER_UNC)
class RefCOCO(RefCOCOBase):
    dirname = "refcoco"
    split_by = {"unc": ("val", "testA", "testB", "train")}


@register_dataset("refcoco+", kind="image", tasks=("grounding",), splits=("val", "testA", "testB", "train"),
                  default_split="val",
                  description="RefCOCO+ referring expressions (UNC split, no location words): grounding",
                  needs=_NEEDS.format(refs="refs(unc).json", p="refs(unc).p", d="refcoco+"),
                  markers=_markers("refcoco+", "unc"),
                  convert_markers=_pickles("refcoco+", "unc"), convert=CONVERT_COMMAND,
                  paper=_PAPER_UNC)
class RefCOCOPlus(RefCOCOBase):
    dirname = "refcoco+"
    split_by = {"unc": ("val", "testA", "testB", "train")}


@register_dataset("refcocog", kind="image", tasks=("grounding",), splits=("val", "test", "train"),
                  default_split="val",
                  description="RefCOCOg referring expressions (UMD split; split_by='google' for Google's): grounding",
                  needs=_NEEDS.format(refs="refs(umd).json", p="refs(umd).p", d="refcocog"),
                  markers=_markers("refcocog", "umd"),
                  convert_markers=_pickles("refcocog", "umd"), convert=CONVERT_COMMAND,
                  paper="Mao et al., Generation and Comprehension of Unambiguous Object Descriptions (CVPR 2016); "
                        "UMD split: Nagaraja et al., Modeling Context Between Objects (ECCV 2016)")
class RefCOCOg(RefCOCOBase):
    dirname = "refcocog"
    split_by = {"umd": ("val", "test", "train"), "google": ("val", "train")}
    default_split_by = "umd"


__all__ = ["RefCOCO", "RefCOCOPlus", "RefCOCOg", "RefCOCOBase", "pickle_refused", "convert_refs", "CONVERT_COMMAND"]


if __name__ == "__main__":
    sys.exit(main())
