"""PEELING's files: the tests in the paper's layouts (csv, OFA's tsv, jsonl) and the OFA tsv read back. Part of
:mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

import base64
import csv
import io
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from robustlab.diagnostics.peeling.records import PeelingRun, PeelingTest
from robustlab.io.convert import to_uint8_rgb
from robustlab.io.names import safe_member

PAPER_COLUMNS = ("uniq_id", "rawtext", "Reducetext", "MRtext")
OFA_COLUMNS = ("uniq_id", "image_id", "text", "region", "image_base64")
EXPORT_FORMATS = ("csv", "tsv", "jsonl")


def _png_b64(image) -> str:
    buf = io.BytesIO()
    Image.fromarray(to_uint8_rgb(image)).save(buf, format="PNG")
    return base64.urlsafe_b64encode(buf.getvalue()).decode("ascii")  # OFA reads urlsafe_b64decode


def _inside(directory: Path, name: str) -> Path:
    safe_member(name)
    if "/" in name:
        raise ValueError(f"unsafe path in export: {name!r}")
    root = directory.resolve()
    p = (root / name).resolve()
    if not p.is_relative_to(root) or p.parent != root:
        raise ValueError(f"export path {name!r} escapes {directory}")
    return p


def _cell(s: Any) -> str:
    return re.sub(r"[\t\r\n]+", " ", str(s))


def export_tests(run: PeelingRun | Sequence[PeelingTest], directory: str | Path, *, name: str = "peeling",
                 formats: Sequence[str] = ("csv", "tsv"), image_of: Callable[[int], Any] | None = None
                 ) -> dict[str, Path]:
    """Write the tests in the paper's layouts inside ``directory`` (created if needed; nothing is written
    elsewhere: ``name`` must be a plain file stem).

    * ``csv``: ``<name>.csv`` with a header ``uniq_id, rawtext, Reducetext, MRtext`` (the released xlsx columns);
    * ``tsv``: ``<name>.tsv``, OFA's RefCOCO layout without a header: ``uniq_id, image_id, text (= MRtext), region
      ("x0,y0,x1,y1" of the ground truth), image_base64`` (URL-safe base64 of PNG bytes, as OFA decodes it);
    * ``jsonl``: ``<name>.jsonl``, every field of every test (boxes, IoU, stage records, seeds).

    The images come from ``image_of(item)`` (a :class:`PeelingRun` carries the images it used). Returns
    ``{format: path}``."""
    tests = list(run.tests if isinstance(run, PeelingRun) else run)
    image_of = image_of or (run.image_of if isinstance(run, PeelingRun) else None)
    bad = [f for f in formats if f not in EXPORT_FORMATS]
    if bad:
        raise ValueError(f"unknown export format(s) {', '.join(bad)}; formats: {', '.join(EXPORT_FORMATS)}")
    if "tsv" in formats and image_of is None:
        raise ValueError("the OFA tsv needs the images: pass image_of=item -> image (or a PeelingRun)")
    directory = Path(directory)
    paths = {f: _inside(directory, f"{name}.{f}") for f in formats}  # check every name before writing anything
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    if "csv" in formats:
        with open(paths["csv"], "w", newline="", encoding="utf-8") as fp:
            w = csv.writer(fp)
            w.writerow(PAPER_COLUMNS)
            for t in tests:
                w.writerow([t.uniq_id, t.rawtext, t.Reducetext, t.MRtext])
        out["csv"] = paths["csv"]
    if "tsv" in formats:
        cache: dict[int, str] = {}
        with open(paths["tsv"], "w", newline="", encoding="utf-8") as fp:
            for t in tests:
                if t.item not in cache:
                    cache[t.item] = _png_b64(image_of(t.item))
                region = ",".join(f"{v:.2f}" for v in t.region)
                fp.write("\t".join([_cell(t.uniq_id), _cell(t.image_id), _cell(t.MRtext), region, cache[t.item]])
                         + "\n")
        out["tsv"] = paths["tsv"]
    if "jsonl" in formats:
        with open(paths["jsonl"], "w", encoding="utf-8") as fp:
            for t in tests:
                fp.write(json.dumps(t.to_dict(), default=str) + "\n")
        out["jsonl"] = paths["jsonl"]
    return out


def read_ofa_tsv(path: str | Path) -> list[dict]:
    """Rows of an OFA-style tsv written by :func:`export_tests` (image decoded to an array)."""
    rows = []
    with open(path, encoding="utf-8") as fp:
        for line in fp:
            uid, iid, text, region, b64 = line.rstrip("\n").split("\t")
            im = np.asarray(Image.open(io.BytesIO(base64.urlsafe_b64decode(b64))).convert("RGB"))
            rows.append({"uniq_id": uid, "image_id": iid, "text": text,
                         "region": [float(v) for v in region.split(",")], "image": im})
    return rows
