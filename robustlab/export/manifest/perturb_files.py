"""Perturbing files into an export folder (the CLI's ``robustlab perturb``): the inputs collected from files and
folders, and :class:`FilePerturber`, which writes each file's examples and manifest lines as it goes. Part of
:mod:`robustlab.export.manifest`."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from robustlab.export.basket import Example, file_source
from robustlab.export.manifest.common import (
    IMAGE_EXTS, MANIFEST, TEXT_EXTS, VIDEO_EXTS, describe_write_error, disk_full,
)
from robustlab.export.manifest.writer import DirSink, _entry, _tag, write_example
from robustlab.io import media
from robustlab.io.files import MAX_UPLOAD_BYTES, InputError, load_image, parse_captions
from robustlab.io.names import safe_component
from robustlab.perturb import get_perturbation, perturb


# ---- perturbing files (the CLI's ``robustlab perturb``) ---------------------------------------------------
def kind_of(path: str | os.PathLike) -> str | None:
    ext = Path(path).suffix.lower()
    return "image" if ext in IMAGE_EXTS else "video" if ext in VIDEO_EXTS else "text" if ext in TEXT_EXTS else None


def collect_inputs(inputs: Iterable[str | os.PathLike],
                   kinds: Iterable[str]) -> tuple[list[Path], list[str], list[str]]:
    """Expand files and folders (recursively, sorted, hidden files skipped) into the files to perturb.

    Returns (files, errors, notes): explicitly named files of an unknown type or of a kind the perturbation
    does not accept are errors; such files found inside folders are only counted in a note.
    """
    kinds = set(kinds)
    files, errors, notes = [], [], []
    skipped_type = skipped_kind = 0
    seen = set()
    for raw in inputs:
        p = Path(raw)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if not f.is_file() or any(part.startswith(".") for part in f.relative_to(p).parts):
                    continue
                k = kind_of(f)
                if k is None:
                    skipped_type += 1
                elif k not in kinds:
                    skipped_kind += 1
                elif f.resolve() not in seen:
                    seen.add(f.resolve())
                    files.append(f)
        elif p.is_file():
            k = kind_of(p)
            if k is None:
                errors.append(f"{p}: not an image, video or caption file (by its extension)")
            elif k not in kinds:
                errors.append(f"{p}: a {k} file, and this perturbation applies to {', '.join(sorted(kinds))}")
            elif p.resolve() not in seen:
                seen.add(p.resolve())
                files.append(p)
        else:
            errors.append(f"{p}: no such file or folder")
    if skipped_type:
        notes.append(f"skipped {skipped_type} file(s) in folders that are not images, videos or caption files")
    if skipped_kind:
        notes.append(f"skipped {skipped_kind} file(s) in folders that this perturbation does not apply to")
    return files, errors, notes


def _file_sha256(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            n += len(chunk)
    return "sha256:" + h.hexdigest(), n


@dataclasses.dataclass
class FileResult:
    path: Path
    entries: list[dict]
    error: str = ""
    fatal: bool = False  # the output folder can take no more (a full disk): the batch should stop


class FilePerturber:
    """Perturbs files one by one into an output folder, writing ``manifest.jsonl`` as it goes.

    Example i (counting every image, video and caption line, in order) gets seed ``seed + i`` unless
    ``same_seed``; the manifest records each example's seed.
    """

    def __init__(self, out: str | os.PathLike, name: str, severity: int, seed: int = 0, variant: str | None = None,
                 same_seed: bool = False, max_side: int | None = None):
        self.spec = get_perturbation(name)
        self.spec.params(severity, variant)  # validates severity and variant
        if not self.spec.available:
            raise RuntimeError(f"perturbation {name!r} is unavailable: {self.spec.reason}")
        self.name, self.severity, self.seed, self.variant = name, severity, int(seed), variant
        self.same_seed, self.max_side = same_seed, max_side
        self.sink = DirSink(out)
        self.out = Path(out)
        self._n_files = 0
        self._n_examples = 0
        self._manifest = open(self.out / MANIFEST, "w", encoding="utf-8")

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.spec.applies_to)

    def _next_seed(self) -> int:
        s = self.seed if self.same_seed else self.seed + self._n_examples
        self._n_examples += 1
        return s

    def _load(self, path: Path):
        kind = kind_of(path)
        if kind == "image":
            return kind, load_image(path), None
        if kind == "text":
            data = path.read_bytes()
            if len(data) > MAX_UPLOAD_BYTES:
                raise InputError(f"{path}: {len(data) / 1e6:.0f} MB is over the {MAX_UPLOAD_BYTES // 2**20} MB limit")
            return kind, [c for _, c in parse_captions(data, path.name)], None
        v = media.read_video(str(path), max_side=self.max_side, name=str(path))
        return kind, np.asarray(v.frames), float(v.fps)

    def add(self, path: str | os.PathLike) -> FileResult:
        """Perturb one file; errors (bad input) are returned, never raised."""
        path = Path(path)
        mark, size = self.sink.mark(), self._manifest.tell()
        try:
            kind, data, fps = self._load(path)
            digest, nbytes = _file_sha256(path)
            self._n_files += 1
            fidx = f"{self._n_files:04d}"
            stem = safe_component(path.stem, default=kind)
            entries = []
            if kind in ("image", "video"):
                seed = self._next_seed()
                res = perturb(data, self.name, self.severity, seed=seed, variant=self.variant)
                ex = Example(kind=kind, clean=data, output=res.output, record=res.record, fps=fps,
                             source=file_source(str(path), digest, nbytes), label=path.name)
                entries.append(write_example(self.sink, ex, fidx))
            else:
                outs = []
                for cap in data:
                    outs.append(perturb(cap, self.name, self.severity, seed=self._next_seed(), variant=self.variant))
                one_line = [("\n" not in r.output and "\r" not in r.output) for r in outs]
                clean_rel = f"clean/{fidx}_{stem}.txt"
                pert_rel = f"perturbed/{fidx}_{stem}__{_tag({**outs[0].record, 'seed': self.seed})}.txt"
                clean_ref = self.sink.ref(clean_rel, ("\n".join(data) + "\n").encode("utf-8"), "txt")
                body = "\n".join(r.output if ok else "" for r, ok in zip(outs, one_line)) + "\n"
                pert_ref = self.sink.ref(pert_rel, body.encode("utf-8"), "txt")
                for i, (cap, res, ok) in enumerate(zip(data, outs, one_line)):
                    ex = Example(kind="text", clean=cap, output=res.output, record=res.record,
                                 source=file_source(str(path), digest, nbytes, line=i), label=f"{path.name}:{i + 1}")
                    eid = f"{fidx}-{i + 1:04d}"
                    if ok:
                        pref = {**pert_ref, "line": i}
                    else:  # a line break in the output: it gets a file of its own
                        pref = self.sink.ref(f"perturbed/{eid}_{stem}__{_tag(res.record)}.txt",
                                             res.output.encode("utf-8"), "txt", line=None)
                    entries.append(_entry(eid, ex, {**clean_ref, "line": i}, pref))
            for e in entries:
                self._manifest.write(json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n")
            self._manifest.flush()
            return FileResult(path, entries)
        except Exception as e:  # noqa: BLE001 - one bad file must never stop a batch; it is reported
            if disk_full(e):  # the output side is full: take this file's part back, the manifest stays whole
                self._take_back(mark, size)
                return FileResult(path, [], f"{path}: {describe_write_error(e, self.out)}", fatal=True)
            msg = str(e) if isinstance(e, (InputError, OSError)) else f"{type(e).__name__}: {e}"
            if str(path) not in msg and path.name not in msg:
                msg = f"{path}: {msg}"
            return FileResult(path, [], msg)

    def _take_back(self, mark: int, size: int) -> None:
        """Remove this file's outputs and any part of its manifest lines (a write that failed half-way)."""
        self.sink.rollback(mark)
        try:
            self._manifest.truncate(size)
            self._manifest.seek(size)
        except (OSError, ValueError):
            pass

    def close(self):
        try:
            self._manifest.close()
        except OSError:  # the last flush failed (a full disk): what could be written is whole lines
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
