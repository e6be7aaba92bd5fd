"""Reading exports: a manifest entry's schema check (:func:`validate_entry`), :class:`ExportReader` (a zip, a
folder or a manifest path) and a clean input decoded from its file. Part of :mod:`robustlab.export.manifest`."""
from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Iterator

from robustlab.export.basket import PEELING_P2
from robustlab.export.manifest.common import (
    MANIFEST, MANIFEST_SCHEMA, MAX_MEMBER_BYTES, REQUIRED_KEYS, decode_npz, decode_png,
)
from robustlab.io.names import safe_member


def validate_entry(entry: dict) -> list[str]:
    """Problems with a manifest entry's schema ([] when it is well formed)."""
    probs = [f"missing {k!r}" for k in REQUIRED_KEYS if k not in entry]
    if probs:
        return probs
    if entry["manifest"] != MANIFEST_SCHEMA:
        probs.append(f"unsupported manifest schema {entry['manifest']!r} (this robustlab reads {MANIFEST_SCHEMA})")
    if entry["kind"] not in ("image", "video", "text"):
        probs.append(f"unknown kind {entry['kind']!r}")
    for k in ("clean", "perturbed", "clean_preview"):
        ref = entry.get(k)
        if k == "clean_preview" and ref is None:
            continue
        if not isinstance(ref, dict) or not {"path", "format", "sha256"} <= set(ref):
            probs.append(f"{k!r} must be an object with path, format and sha256"
                         + (" (or null)" if k == "clean_preview" else ""))
            continue
        try:
            safe_member(ref["path"])
        except ValueError as e:
            probs.append(str(e))
        line = ref.get("line")
        if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line < 0):
            probs.append(f"{k}.line must be null or a line number (an integer >= 0), got {line!r}")
    record = entry["record"]
    if not isinstance(record, dict) or record.get("name") != entry["perturbation"]:
        probs.append("'record' must be the perturbation record of 'perturbation'")
    else:
        need = ("seed",) if entry["perturbation"] == PEELING_P2 else ("variant", "severity", "seed")
        missing = [k for k in need if k not in record]
        if missing:
            probs.append(f"'record' lacks {', '.join(map(repr, missing))}")
    video = entry.get("video")
    if entry["kind"] == "video" and not (isinstance(video, dict) and video.get("fps")):
        probs.append("a video entry needs video.fps")
    if entry["perturbation"] == PEELING_P2:
        if entry["kind"] != "text":
            probs.append("a peeling_p2 entry is a text entry")
        if entry["severity"] is not None:
            probs.append("a peeling_p2 entry has no severity (null)")
        if not isinstance(entry["params"], dict) or not isinstance(entry["params"].get("stages"), list):
            probs.append("a peeling_p2 entry needs params.stages (the P2 stages to re-run)")
    if entry["model"] is not None and not (isinstance(entry["model"], dict) and "id" in entry["model"]):
        probs.append("'model' must be null or an object with an 'id'")
    parts = entry.get("parts")
    if parts is not None:
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            probs.append("'parts' must be null or a list of entries (the other parts of a combined condition)")
        else:
            for j, p in enumerate(parts, start=1):
                if p.get("parts") is not None:
                    probs.append(f"part {j} has parts of its own")
                    continue
                probs += [f"part {j}: {x}" for x in validate_entry(p)]
    return probs


# ---- reading exports ------------------------------------------------------------------------------------
class ExportReader:
    """Reads a manifest and the files it names from a zip, a folder, or a manifest.jsonl path."""

    def __init__(self, src: str | os.PathLike):
        p = Path(src)
        self.zf: zipfile.ZipFile | None = None
        self.prefix = ""
        if not p.exists():
            raise FileNotFoundError(f"{src}: no such file or folder")
        if p.is_dir():
            self.root = p
            if not (p / MANIFEST).is_file():
                raise FileNotFoundError(f"{src}: no {MANIFEST} in this folder")
            self.manifest_text = _manifest_text((p / MANIFEST).read_bytes(), f"{src}: {MANIFEST}")
        elif zipfile.is_zipfile(p):
            try:
                self.zf = zipfile.ZipFile(p)
            except Exception as e:  # noqa: BLE001 - BadZipFile, EOFError... from a damaged zip
                raise ValueError(f"{src}: a damaged zip ({type(e).__name__}: {e})") from e
            names = [n for n in self.zf.namelist() if n == MANIFEST or n.endswith("/" + MANIFEST)]
            names.sort(key=lambda n: n.count("/"))
            if not names:
                raise FileNotFoundError(f"{src}: the zip has no {MANIFEST}")
            self.prefix = names[0][: -len(MANIFEST)]
            if self.prefix:
                safe_member(self.prefix.rstrip("/"))
            self.manifest_text = _manifest_text(self._zip_read(names[0]), f"{src}: {names[0]}")
        else:
            self.root = p.parent
            self.manifest_text = _manifest_text(p.read_bytes(), str(src))

    def _zip_read(self, name: str) -> bytes:
        info = self.zf.getinfo(name)
        if info.file_size > MAX_MEMBER_BYTES:
            raise ValueError(f"{name}: {info.file_size / 1e9:.1f} GB uncompressed is over the limit")
        try:
            return self.zf.read(info)
        except Exception as e:  # noqa: BLE001 - BadZipFile (CRC), zlib.error, EOFError... from a damaged member
            raise ValueError(f"{name}: damaged in the zip ({type(e).__name__}: {' '.join(str(e).split())})") from e

    def entries(self) -> Iterator[tuple[int, dict | None, str]]:
        """(line number, entry or None, error message) for every non-blank manifest line."""
        for n, line in enumerate(self.manifest_text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError as err:
                yield n, None, f"manifest line {n}: not valid JSON ({err.msg})"
                continue
            except (ValueError, RecursionError) as err:  # a number over the 4300-digit limit, nesting too deep
                yield n, None, f"manifest line {n}: not JSON robustlab can read ({type(err).__name__})"
                continue
            if not isinstance(e, dict):
                yield n, None, f"manifest line {n}: expected a JSON object"
                continue
            yield n, e, ""

    def read(self, rel: str) -> bytes:
        rel = safe_member(rel)
        if self.zf is not None:
            try:
                return self._zip_read(self.prefix + rel)
            except KeyError:
                raise FileNotFoundError(f"{rel}: not in the zip") from None
        root = self.root.resolve()
        p = root.joinpath(*rel.split("/")).resolve()
        if not p.is_relative_to(root):
            raise ValueError(f"unsafe path in export: {rel!r} leaves the export folder")
        try:
            return p.read_bytes()
        except OSError as e:
            raise FileNotFoundError(f"{rel}: {e.strerror or e}") from e

    def close(self):
        if self.zf is not None:
            self.zf.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _manifest_text(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:  # a damaged or foreign file: say which, in one line
        raise ValueError(f"{label} is not a UTF-8 manifest ({e.reason} at byte {e.start})") from None


def _read_text(data: bytes, line, label: str) -> str:
    text = data.decode("utf-8")
    if line is None:
        return text
    lines = text.split("\n")
    if not isinstance(line, int) or not 0 <= line < len(lines):
        raise ValueError(f"{label}: line {line!r} is not in the file ({len(lines)} lines)")
    return lines[line]


def load_clean(entry: dict, data: bytes):
    """-> (clean input, fps or None) from the clean file's bytes."""
    kind, ref = entry["kind"], entry["clean"]
    if kind == "image":
        return decode_png(data, ref["path"]), None
    if kind == "video":
        return decode_npz(data)
    return _read_text(data, ref.get("line"), ref["path"]), None
