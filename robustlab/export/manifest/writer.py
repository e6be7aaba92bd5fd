"""Writing exports: the sinks (a zip, a folder written atomically), one example's files and manifest
entry, PEELING's files, and :func:`build_zip` / :func:`export_dir` / :func:`save_zip`. Part of
:mod:`robustlab.export.manifest`."""
from __future__ import annotations

import datetime as _dt
import io
import json
import os
import tempfile
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Iterable

import numpy as np

from robustlab.io.atomic import atomic_write
from robustlab.diagnostics.peeling import export_tests
from robustlab.export.basket import Example, sha256
from robustlab.export.manifest.common import (
    MANIFEST, MANIFEST_SCHEMA, PEELING_CSV, PEELING_TSV, ExportWriteError, describe_write_error, encode_mp4,
    encode_npz, encode_png,
)
from robustlab.io.names import safe_component, safe_member
from robustlab.perturb.record import _dist_version


def _versions_for(kind: str, record: dict) -> dict:
    v = dict(record.get("versions") or {})
    v.setdefault("robustlab", _dist_version("robustlab"))
    v.setdefault("numpy", np.__version__)
    v["pillow"] = v.get("pillow") or _dist_version("pillow")
    if kind == "video":
        try:
            import av

            v["av"] = av.__version__
        except ImportError:  # pragma: no cover
            v["av"] = None
    return v


# ---- sinks: where an export is written --------------------------------------------------------------------
class _Sink:
    def write(self, rel: str, data: bytes) -> dict:
        raise NotImplementedError

    def ref(self, rel: str, data: bytes, fmt: str, **extra) -> dict:
        rel = safe_member(rel)
        self.write(rel, data)
        return {"path": rel, "format": fmt, "sha256": sha256(data), **extra}


class ZipSink(_Sink):
    """Writes members with a fixed timestamp (1980-01-01) so exports of the same basket are byte-identical."""

    _STORED = (".png", ".mp4", ".npz")

    def __init__(self, zf: zipfile.ZipFile):
        self.zf = zf
        self.names: set[str] = set()

    def write(self, rel: str, data: bytes) -> None:
        rel = safe_member(rel)
        if rel in self.names:
            return  # a caption file shared by several examples
        self.names.add(rel)
        zi = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_STORED if rel.endswith(self._STORED) else zipfile.ZIP_DEFLATED
        zi.external_attr = 0o644 << 16
        self.zf.writestr(zi, data)


class DirSink(_Sink):
    """Writes each file atomically (temp file + ``os.replace``: a crash or a full disk never leaves half a file)
    and remembers what it created, so a failed export can be taken back (:meth:`rollback`): the files and folders
    it added go, the ones that were there before stay."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._created: list[Path] = []  # files and folders this sink added, in creation order
        self._mkdirs(self.root)

    def _mkdirs(self, d: Path) -> None:
        missing = []
        while not d.exists() and d != d.parent:
            missing.append(d)
            d = d.parent
        for m in reversed(missing):
            m.mkdir(exist_ok=True)
            self._created.append(m)

    def write(self, rel: str, data: bytes) -> None:
        rel = safe_member(rel)
        p = self.root.joinpath(*rel.split("/"))
        self._mkdirs(p.parent)
        existed = p.exists()
        atomic_write(p, data)  # a full disk leaves no temporary file and no half file behind
        if not existed:
            self._created.append(p)

    def mark(self) -> int:
        """A point to roll back to (see :meth:`rollback`)."""
        return len(self._created)

    def rollback(self, to: int = 0) -> None:
        """Remove what was created since ``mark()`` returned ``to`` (everything by default), newest first."""
        while len(self._created) > to:
            q = self._created.pop()
            try:
                q.rmdir() if q.is_dir() else q.unlink()
            except OSError:
                pass


# ---- writing examples -----------------------------------------------------------------------------------
def _stem(ex: Example) -> str:
    return safe_component(Path(ex.label or ex.source.get("name") or ex.kind).stem or ex.kind, default=ex.kind)


def _tag(record: dict) -> str:
    sev = "" if record.get("severity") is None else f"-s{record.get('severity')}"  # PEELING's P2 has no severity
    return safe_component(f"{record.get('name')}-{record.get('variant')}{sev}"
                          f"-seed{record.get('seed')}", default="perturbed", max_len=100)


def _entry(idx: str, ex: Example, clean: dict, perturbed: dict, preview: dict | None = None) -> dict:
    r = ex.record
    video = None
    if ex.kind == "video":
        t, h, w = (int(x) for x in np.shape(ex.clean)[:3])
        video = {"fps": float(ex.fps), "frames": t, "height": h, "width": w}
    return {
        "manifest": MANIFEST_SCHEMA, "id": idx, "kind": ex.kind,
        "perturbation": r.get("name"), "variant": r.get("variant"), "severity": r.get("severity"),
        "seed": r.get("seed"), "params": r.get("params", {}), "versions": _versions_for(ex.kind, r),
        "record": r, "source": ex.source, "clean": clean, "clean_preview": preview, "perturbed": perturbed,
        "video": video, "model": ex.model, "label": ex.label,
        "exported": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "exported_by": f"robustlab {_versions_for('image', r).get('robustlab')}",
    }


def write_example(sink: _Sink, ex: Example, idx: str) -> dict:
    """Write one example's files into ``sink``; return its manifest entry. The parts of a combined condition
    (``ex.parts``) are written beside it (ids ``<idx>-1``, ``<idx>-2``...) and listed in the entry's ``parts``."""
    entry = _write_one(sink, ex, idx)
    if ex.parts:
        entry["parts"] = [_write_one(sink, p, f"{idx}-{j}") for j, p in enumerate(ex.parts, start=1)]
    return entry


def _write_one(sink: _Sink, ex: Example, idx: str) -> dict:
    stem, tag = f"{idx}_{_stem(ex)}", _tag(ex.record)
    if ex.kind == "image":
        clean = sink.ref(f"clean/{stem}.png", encode_png(ex.clean), "png", line=None)
        pert = sink.ref(f"perturbed/{stem}__{tag}.png", encode_png(ex.output), "png", line=None)
        return _entry(idx, ex, clean, pert)
    if ex.kind == "video":
        clean = sink.ref(f"clean/{stem}.npz", encode_npz(ex.clean, ex.fps), "npz", line=None)
        preview = sink.ref(f"clean/{stem}.mp4", encode_mp4(ex.clean, ex.fps), "mp4")
        pert = sink.ref(f"perturbed/{stem}__{tag}.mp4", encode_mp4(ex.output, ex.fps), "mp4", line=None)
        return _entry(idx, ex, clean, pert, preview)
    clean = sink.ref(f"clean/{stem}.txt", ex.clean.encode("utf-8"), "txt", line=None)
    pert = sink.ref(f"perturbed/{stem}__{tag}.txt", ex.output.encode("utf-8"), "txt", line=None)
    return _entry(idx, ex, clean, pert)


def _manifest_bytes(entries: Iterable[dict]) -> bytes:
    return "".join(json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n" for e in entries).encode("utf-8")


def peeling_files(examples: Iterable[Example], entries: Iterable[dict]) -> dict[str, bytes]:
    """The PEELING tests among ``examples`` in the paper's layouts ({} when there are none): ``peeling/tests.csv``
    (``uniq_id,rawtext,Reducetext,MRtext``) and ``peeling/tests.tsv`` (OFA: ``uniq_id, image_id, text (MRtext),
    region "x0,y0,x1,y1", image_base64``; the tests whose image is attached), written by
    ``robustlab.diagnostics.peeling.export_tests`` itself. A uniq_id that repeats (two expressions of one image)
    gets its manifest id appended."""
    tests, images, seen = [], [], set()
    for ex, e in zip(examples, entries):
        if not ex.is_peeling:
            continue
        m = ex.model or {}
        uid = str(m.get("uniq_id") or e["id"])
        if uid in seen:
            uid = f"{uid}-{e['id']}"
        seen.add(uid)
        im = (ex.attachments or {}).get("image")
        tests.append(SimpleNamespace(uniq_id=uid, image_id=str(m.get("image_id") or ""), rawtext=m.get("rawtext", ""),
                                     Reducetext=ex.clean, MRtext=ex.output, region=list(m.get("region") or []),
                                     item=len(images) if im is not None else None))
        if im is not None:
            images.append(im)
    if not tests:
        return {}
    out = {}
    with tempfile.TemporaryDirectory() as d:
        out[PEELING_CSV] = export_tests(tests, d, name="tests", formats=("csv",))["csv"].read_bytes()
        with_image = [t for t in tests if t.item is not None and len(t.region) == 4]
        if with_image:
            p = export_tests(with_image, d, name="tests", formats=("tsv",), image_of=images.__getitem__)["tsv"]
            out[PEELING_TSV] = p.read_bytes()
    return out


def _readme(has_peeling: bool) -> bytes:
    return (README_TEXT + (README_PEELING if has_peeling else "")).encode()


def build_zip(examples: Iterable[Example], progress: Callable[[int, int], None] | None = None) -> bytes:
    """The export zip of ``examples`` (a Basket or any iterable of Example) as bytes."""
    examples = list(examples)
    buf = io.BytesIO()
    entries = []
    with zipfile.ZipFile(buf, "w") as zf:
        sink = ZipSink(zf)
        for i, ex in enumerate(examples, start=1):
            entries.append(write_example(sink, ex, f"{i:04d}"))
            if progress:
                progress(i, len(examples))
        sink.write(MANIFEST, _manifest_bytes(entries))
        extra = peeling_files(examples, entries)
        for rel, data in extra.items():
            sink.write(rel, data)
        sink.write("README.txt", _readme(bool(extra)))
    return buf.getvalue()


def export_dir(examples: Iterable[Example], out: str | os.PathLike) -> list[dict]:
    """Write the export into folder ``out`` (same layout as the zip); returns the manifest entries.

    All or nothing: when a write fails (a full disk, a read-only folder) everything this call added to ``out``
    is removed again and an ``OSError`` says what happened (files that were there before are left alone)."""
    examples = list(examples)
    sink = DirSink(out)
    try:
        entries = [write_example(sink, ex, f"{i:04d}") for i, ex in enumerate(examples, start=1)]
        for rel, data in peeling_files(examples, entries).items():
            sink.write(rel, data)
        sink.write(MANIFEST, _manifest_bytes(entries))  # last: a folder with a manifest is a complete export
    except OSError as e:
        sink.rollback()
        raise ExportWriteError(e.errno, describe_write_error(e, out) + "; nothing was left there") from e
    return entries


def save_zip(examples: Iterable[Example], path: str | os.PathLike,
             progress: Callable[[int, int], None] | None = None) -> int:
    """Write the export zip of ``examples`` to ``path`` atomically; returns its size in bytes.

    The zip is built in memory, written to a temporary file beside ``path`` and renamed into place: a full disk
    or a crash leaves no half-written zip at ``path`` (an older file there stays as it was), and the
    ``OSError`` says what happened."""
    data = build_zip(examples, progress=progress)
    path = Path(path)
    if not path.parent.is_dir():  # (atomic_write would create it: an export never makes the folder of a zip)
        e = FileNotFoundError(2, "No such file or directory", str(path.parent))
        raise ExportWriteError(e.errno, describe_write_error(e, path)) from e
    try:
        atomic_write(path, data)  # a temporary file beside path, renamed into place; removed if the write fails
    except OSError as e:
        raise ExportWriteError(e.errno, describe_write_error(e, path) + "; no partial zip was left") from e
    return len(data)


README_TEXT = """robustlab export
================
manifest.jsonl   one JSON object per example: perturbation, variant, severity, seed, resolved parameters,
                 library versions, the full perturbation record, the source item, file paths and SHA-256s,
                 and (when the example came from a model view) the model id and scores
clean/           the clean inputs exactly as perturbed (PNG images, NPZ video frames + an MP4 to watch, TXT)
perturbed/       the perturbed outputs (PNG, MP4, TXT)

An example of a combined condition (an image and its expression perturbed together, scored together) is one
manifest line whose "parts" list the other perturbed parts, each with its own record and files (ids 0001-1...).

Rebuild and verify every example bit for bit:   robustlab regenerate THIS.zip [--out DIR]
"""
README_PEELING = """
PEELING tests (perturbation "peeling_p2": clean = the reduced expression, perturbed = the final expression MRtext;
regenerated by re-running P2 from the record's seed and params; the model field holds the original expression,
the boxes, IoUs and the VQA uniqueness answers):
peeling/tests.csv   the paper's layout: uniq_id,rawtext,Reducetext,MRtext
peeling/tests.tsv   OFA's RefCOCO layout, no header: uniq_id, image_id, text (MRtext), region "x0,y0,x1,y1",
                    the image as URL-safe base64 PNG
"""
