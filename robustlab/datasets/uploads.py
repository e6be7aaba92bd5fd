"""Uploads: the images, videos and captions a user gives, as a dataset (``build("upload", ...)`` or, in the
dashboard, the sidebar's "My uploads").

:func:`ingest_uploads` adds files to a :class:`Gallery` (kept intact on bad input: a bad file is reported and
skipped, never loses what is there); a gallery holds images *or* videos — each page picks the kind it needs, and a
mixed upload keeps both in two galleries (:class:`Uploads`). Videos are decoded once at upload (at most
``MAX_UPLOAD_FRAMES`` frames sampled uniformly, long side at most ``MAX_UPLOAD_SIDE`` px) so every page and task
reads the same frames. Captions come from a file (CSV ``name,caption``, JSON, ``name.png, caption`` lines, or one
per line) or typed lines, and pair with files by name; plain lines (no names) pair in order only when there are
exactly as many as files given (a refused file takes its own caption with it), else nothing is added and one line
asks for named captions (:func:`robustlab.io.files.pair_captions`). An item without a caption is a distractor only.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robustlab.datasets.base import DatasetError, InMemoryDataset
from robustlab.datasets.registry import register_dataset
from robustlab.io import (
    files as io_files,  # by module: the upload limits are read (and patched) at call time
)
from robustlab.io.confined import shown_path, visible
from robustlab.io.uploads import load_upload

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
VIDEO_SUFFIXES = (".mp4", ".webm", ".mov", ".avi", ".mkv", ".m4v", ".mpg", ".mpeg", ".ogv")
MAX_UPLOAD_FRAMES = 64  # frames kept per uploaded video (uniformly sampled)
MAX_UPLOAD_SIDE = 256  # long side of an uploaded video's frames, px
UPLOAD_VIDEO_FPS = 8.0  # how uploaded videos are played back after sampling


class Gallery(InMemoryDataset):
    """Images or videos in memory, with a caption each (None: a distractor). The built-in demo and uploads."""

    def __init__(self, images=None, captions=None, names=None, source: str = "upload", meta=None, *, videos=None,
                 kind: str | None = None, name: str | None = None, **kw):
        visuals = videos if videos is not None else images
        if visuals is None:
            raise DatasetError("a gallery needs images or videos")
        kind = kind or ("video" if videos is not None else "image")
        super().__init__(visuals, list(captions if captions is not None else [None] * len(visuals)), names,
                         name=name or source, kind=kind, meta=meta, source=source, **kw)


def kind_of_name(name: str) -> str | None:
    s = Path(name).suffix.lower()
    return "image" if s in IMAGE_SUFFIXES else "video" if s in VIDEO_SUFFIXES else None


def _load(kind: str, name: str, data: bytes) -> np.ndarray:
    if kind == "image":
        return load_upload("image", name, data).data
    return load_upload("video", name, data, num_frames=MAX_UPLOAD_FRAMES, max_side=MAX_UPLOAD_SIDE).data


@dataclass
class IngestReport:
    gallery: Gallery | None
    added: int
    errors: list[str]
    warnings: list[str]


def _read_captions(caption_file: tuple[str, bytes] | None, caption_lines: str):
    """(pairs or None, the captions' label, the one-line error when they can't be read or None)."""
    if caption_file is None and not (caption_lines or "").strip():
        return None, "", None
    label = caption_file[0] if caption_file is not None else "typed captions"
    try:
        if caption_file is not None:
            return io_files.parse_captions(caption_file[1], caption_file[0]), label, None
        return io_files.parse_captions(caption_lines, label), label, None
    except io_files.InputError as e:
        return None, label, str(e)


def _positions(files: list[tuple[str, bytes]], given: list[str]) -> list[int]:
    """The index in ``given`` of each file (``files`` in the order of ``given``, some left out)."""
    out, j = [], 0
    for name, _ in files:
        while j < len(given) and given[j] != name:
            j += 1
        if j == len(given):
            raise ValueError(f"given must name every file, in the files' order; {name!r} is not there")
        out.append(j)
        j += 1
    return out


def ingest_uploads(files: list[tuple[str, bytes]], caption_file: tuple[str, bytes] | None = None,
                   caption_lines: str = "", existing: Gallery | None = None, max_items: int = 2000,
                   kind: str = "image", given: list[str] | None = None) -> IngestReport:
    """Add uploaded files of ``kind`` ("image" or "video"; with captions from a file or typed lines) to
    ``existing`` (kept intact).

    Bad files are reported in ``errors`` and skipped; everything already loaded stays. Items already in the
    gallery (same name and content) are not added twice; a name given twice in one upload adds its first file only.

    Captions pair with files by :func:`robustlab.io.files.pair_captions`: by file name (a CSV/TSV file column, JSON,
    ``name.png, caption`` lines); plain lines by position, and only when there are exactly as many lines as files
    ``given``: the names of every file the user gave, in order, those refused before this call included (too big,
    another kind; default: the names of ``files``), so a refused file takes its own caption with it. When plain
    lines and files differ in number nothing is added (``errors`` has the one line asking for named captions) and
    the gallery stays as it was. A caption file that can't be read is one error; the files are added uncaptioned.
    """
    from robustlab.engine.cache import content_hash  # torch: importing the uploads module stays light

    if kind not in ("image", "video"):
        raise ValueError(f"kind must be image or video, got {kind!r}")
    if existing is not None and existing.kind != kind:
        raise ValueError(f"cannot add {kind}s to a gallery of {existing.kind}s")
    given = [n for n, _ in files] if given is None else list(given)
    pos = _positions(files, given)
    errors: list[str] = []
    warns: list[str] = []

    pairs, cap_label, cap_error = _read_captions(caption_file, caption_lines)
    if cap_error:
        errors.append(cap_error)
    caps_given: list[str | None] = [None] * len(given)
    if pairs is not None and given:
        pairing = io_files.pair_captions(given, pairs, cap_label)
        if pairing.error:  # nothing is guessed: the upload is refused as a whole, the gallery stays as it was
            return IngestReport(gallery=existing, added=0, errors=errors + [pairing.error + "; nothing was added"],
                                warnings=warns)
        caps_given = pairing.captions
        warns += pairing.warnings

    images = list(existing.items_) if existing else []
    caps = list(existing.captions) if existing else []
    names = list(existing.names) if existing else []
    meta = list(existing.meta) if existing else []
    seen = {(m.get("name"), m.get("hash")) for m in meta}

    counts: dict[str, int] = {}
    for name, _ in files:
        counts[name] = counts.get(name, 0) + 1
    taken: set[str] = set()
    new_imgs, new_names, new_hashes, new_caps = [], [], [], []
    for (name, data), i in zip(files, pos):
        if name in taken:
            continue
        taken.add(name)
        if counts[name] > 1:
            k, them = counts[name] - 1, "them" if counts[name] > 2 else "it"
            errors.append(f"{name}: {counts[name]} files of this name in one upload; the first was used, the "
                          f"other{'s' if k > 1 else ''} not added (rename {them} to add {them})")
        try:
            arr = _load(kind, name, data)
        except io_files.InputError as e:
            errors.append(str(e))
            continue
        h = content_hash(arr)
        if (name, h) in seen:
            warns.append(f"{name}: already in the gallery, skipped")
            continue
        seen.add((name, h))
        new_imgs.append(arr)
        new_names.append(name)
        new_hashes.append(h)
        new_caps.append(caps_given[i])

    if (pairs is not None or cap_error) and new_imgs:
        missing = [n for n, c in zip(new_names, new_caps) if c is None]
        if missing:
            warns.append(f"{len(missing)} item(s) without a caption are used as distractors only: "
                         + ", ".join(missing[:5]) + (" …" if len(missing) > 5 else ""))
    elif new_imgs:
        warns.append("no captions given: the new items are distractors only until captions are added")

    room = max_items - len(images)
    if len(new_imgs) > room:
        errors.append(f"the gallery holds at most {max_items} items; {len(new_imgs) - room} {kind}(s) were not added")
        new_imgs, new_names, new_caps, new_hashes = (new_imgs[:room], new_names[:room], new_caps[:room],
                                                      new_hashes[:room])
    images += new_imgs
    caps += new_caps
    names += new_names
    meta += [{"name": n, "hash": h, "shape": list(im.shape)} for n, h, im in zip(new_names, new_hashes, new_imgs)]
    gal = Gallery(images, caps, names, "upload", meta, kind=kind) if images else existing
    return IngestReport(gallery=gal, added=len(new_imgs), errors=errors, warnings=warns)


def set_captions(gallery: Gallery, caption_file: tuple[str, bytes] | None = None,
                 caption_lines: str = "") -> IngestReport:
    """Attach captions to an existing uploaded gallery by the upload rules (:func:`ingest_uploads`): by file name,
    or plain lines in the gallery's order when there are exactly as many lines as items. The gallery is not changed
    when the captions can't be read or paired (one error line)."""
    pairs, label, err = _read_captions(caption_file, caption_lines)
    if pairs is None:
        return IngestReport(gallery=gallery, added=0, errors=[err or "typed captions: no captions found"], warnings=[])
    pairing = io_files.pair_captions(list(gallery.names), pairs, label, noun="gallery item",
                                     among="the gallery's items")
    if pairing.error:
        return IngestReport(gallery=gallery, added=0, errors=[pairing.error + "; no caption was changed"],
                            warnings=[])
    caps = pairing.captions
    merged = [c if c is not None else old for c, old in zip(caps, gallery.captions)]
    g = Gallery(gallery.items_, merged, gallery.names, gallery.source, gallery.meta, kind=gallery.kind)
    n = sum(c is not None for c in caps)
    warns = list(pairing.warnings) or ([] if n else ["no caption matched an item of the gallery"])
    return IngestReport(gallery=g, added=0, errors=[], warnings=warns)


@dataclass
class Uploads:
    """What one user uploaded in a session: an image gallery and a video gallery (either may be None)."""

    image: Gallery | None = None
    video: Gallery | None = None
    errors: list[str] = field(default_factory=list)

    def gallery(self, kind: str) -> Gallery | None:
        return self.image if kind == "image" else self.video


def split_by_kind(files: list[tuple[str, bytes]]) -> tuple[dict[str, list], list[str]]:
    """Files grouped by kind from their suffix, and one error line per file of neither kind."""
    by: dict[str, list] = {"image": [], "video": []}
    errors = []
    for name, data in files:
        k = kind_of_name(name)
        if k is None:
            errors.append(f"{name}: not an image or video file (images: {' '.join(IMAGE_SUFFIXES)}; "
                          f"videos: {' '.join(VIDEO_SUFFIXES)})")
        else:
            by[k].append((name, data))
    return by, errors


@register_dataset("upload", kind="any", tasks=("retrieval", "grounding"), splits=("all",), needs_root=True,
                  description="your own images or videos with captions (a folder here; in the dashboard, uploads)",
                  needs="images or videos, and optionally captions.txt / captions.csv (name,caption) / "
                        "captions.json matched by file name (a captions.txt of plain lines: one per file, "
                        "in name order)", markers=("<media>",))
def from_folder(root, split: str = "all", kind: str | None = None, captions: str | None = None,
                max_items: int = 2000, n: int | None = None) -> Gallery:
    """A folder of images or videos (``kind`` picks one when both are present) with an optional captions file;
    ``n``: only the first n files (by name).

    Size before read: at most ``ROBUSTLAB_MAX_FOLDER_FILES`` entries of the folder are looked at, and every file
    (media and captions alike) is stat-ed against the upload limit (``ROBUSTLAB_MAX_UPLOAD_MB``) before it is
    read, so an over-limit file costs no memory. A file that cannot be used is one line naming it (relative to
    the folder); those lines are the DatasetError when nothing could be read, else the gallery's
    ``load_errors``."""
    root = Path(root)
    try:
        files = io_files.scan_folder(root, suffixes=IMAGE_SUFFIXES + VIDEO_SUFFIXES)
    except io_files.InputError as e:
        raise DatasetError(f"upload: {e}") from e
    by = {"image": [p for p in files if kind_of_name(p.name) == "image"],
          "video": [p for p in files if kind_of_name(p.name) == "video"]}
    if kind is None:
        kind = "video" if by["video"] and not by["image"] else "image"
    if not by[kind]:
        raise DatasetError(f"upload: no {kind} files in {shown_path(root)!r} "
                           f"(looked for {' '.join(IMAGE_SUFFIXES if kind == 'image' else VIDEO_SUFFIXES)})")
    capfile = Path(captions) if captions else next((root / n for n in ("captions.txt", "captions.csv",
                                                                       "captions.json") if visible(root / n)
                                                                       and os.path.exists(root / n)), None)
    cf = None
    if capfile is not None:
        try:  # a captions file follows the upload limit too; one that can't be read stops here, before any media
            cf = (capfile.name, io_files.read_file_capped(capfile, label=_name_in(capfile, root)))
        except io_files.InputError as e:
            raise DatasetError(f"upload: {e}") from e
    given = [p.name for p in by[kind]]  # captions pair over every file of the kind (sorted), before n or refusals
    if cf is not None:  # plain lines that don't pair one to one with the files stop here, before any media
        pairs, label, _ = _read_captions(cf, "")
        pairing = io_files.pair_captions(given, pairs, label, noun=f"{kind} file") if pairs is not None else None
        if pairing is not None and pairing.error:
            raise DatasetError(f"upload: {pairing.error}")
    chosen = by[kind][:int(n)] if n is not None else by[kind]
    errors: list[str] = []
    data: list[tuple[str, bytes]] = []
    for p in chosen:
        try:
            # stat first: an over-limit file is never read
            data.append((p.name, io_files.read_file_capped(p, label=p.name)))
        except io_files.InputError as e:
            errors.append(str(e))
    rep = ingest_uploads(data, cf, existing=None, max_items=max_items, kind=kind, given=given)
    del data
    errors += rep.errors
    if rep.gallery is None:
        shown = errors[:8] + ([f"… and {len(errors) - 8} more"] if len(errors) > 8 else [])
        raise DatasetError("upload: " + ("; ".join(shown) or f"no readable {kind} in {shown_path(root)!r}"))
    rep.gallery.split, rep.gallery.root = split, root
    rep.gallery.load_errors = errors  # one line per file that was refused or could not be read
    return rep.gallery


def _name_in(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it lies under it, else its bare name (never a full server path)."""
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return Path(path).name


__all__ = ["Gallery", "Uploads", "IngestReport", "ingest_uploads", "set_captions", "split_by_kind", "kind_of_name",
           "from_folder", "MAX_UPLOAD_FRAMES", "MAX_UPLOAD_SIDE", "UPLOAD_VIDEO_FPS"]
