"""Uploads: the images, videos and captions a user gives, as a dataset (``build("upload", ...)`` or, in the
dashboard, the sidebar's "My uploads").

:func:`ingest_uploads` adds files to a :class:`Gallery` (kept intact on bad input: a bad file is reported and
skipped, never loses what is there); a gallery holds images *or* videos — each page picks the kind it needs, and a
mixed upload keeps both in two galleries (:class:`Uploads`). Videos are decoded once at upload (at most
``MAX_UPLOAD_FRAMES`` frames sampled uniformly, long side at most ``MAX_UPLOAD_SIDE`` px) so every page and task
reads the same frames. Captions come from a file (one per line, CSV ``name,caption`` or JSON) matched by file
name, or typed lines in order; an item without a caption is a distractor only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robustlab.datasets.base import DatasetError, InMemoryDataset
from robustlab.io.access import visible
from robustlab.datasets.registry import register_dataset

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
    from robustlab.export.basket import load_upload

    if kind == "image":
        return load_upload("image", name, data).data
    return load_upload("video", name, data, num_frames=MAX_UPLOAD_FRAMES, max_side=MAX_UPLOAD_SIDE).data


@dataclass
class IngestReport:
    gallery: Gallery | None
    added: int
    errors: list[str]
    warnings: list[str]


def ingest_uploads(files: list[tuple[str, bytes]], caption_file: tuple[str, bytes] | None = None,
                   caption_lines: str = "", existing: Gallery | None = None, max_items: int = 2000,
                   kind: str = "image") -> IngestReport:
    """Add uploaded files of ``kind`` ("image" or "video"; with captions from a file or typed lines) to
    ``existing`` (kept intact).

    Bad files are reported in ``errors`` and skipped; everything already loaded stays. Items already in the
    gallery (same name and content) are not added twice.
    """
    from robustlab.io.files import InputError, match_captions, parse_captions
    from robustlab.engine.cache import content_hash

    if kind not in ("image", "video"):
        raise ValueError(f"kind must be image or video, got {kind!r}")
    if existing is not None and existing.kind != kind:
        raise ValueError(f"cannot add {kind}s to a gallery of {existing.kind}s")
    errors: list[str] = []
    warns: list[str] = []
    images = list(existing.items_) if existing else []
    caps = list(existing.captions) if existing else []
    names = list(existing.names) if existing else []
    meta = list(existing.meta) if existing else []
    seen = {(m.get("name"), m.get("hash")) for m in meta}

    new_imgs, new_names, new_hashes = [], [], []
    for name, data in files:
        try:
            arr = _load(kind, name, data)
        except InputError as e:
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

    pairs = None
    if caption_file is not None:
        try:
            pairs = parse_captions(caption_file[1], caption_file[0])
        except InputError as e:
            errors.append(str(e))
    elif caption_lines.strip():
        try:
            pairs = parse_captions(caption_lines, "typed captions")
        except InputError as e:
            errors.append(str(e))
    new_caps: list[str | None] = [None] * len(new_imgs)
    if pairs is not None and new_imgs:
        new_caps = match_captions(new_names, pairs)
        missing = [n for n, c in zip(new_names, new_caps) if c is None]
        if missing:
            warns.append(f"{len(missing)} item(s) without a caption are used as distractors only: "
                         + ", ".join(missing[:5]) + (" …" if len(missing) > 5 else ""))
        if not any(p[0] for p in pairs) and len(pairs) > len(new_imgs):
            warns.append(f"{len(pairs)} captions for {len(new_imgs)} new items: the extra captions were ignored")
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


def set_captions(gallery: Gallery, caption_file: tuple[str, bytes] | None = None, caption_lines: str = "") -> IngestReport:
    """Attach captions to an existing uploaded gallery (by file name, or in order). The gallery is not changed
    when the captions can't be read."""
    from robustlab.io.files import InputError, match_captions, parse_captions

    try:
        if caption_file is not None:
            pairs = parse_captions(caption_file[1], caption_file[0])
        else:
            pairs = parse_captions(caption_lines, "typed captions")
    except InputError as e:
        return IngestReport(gallery=gallery, added=0, errors=[str(e)], warnings=[])
    caps = match_captions(gallery.names, pairs)
    merged = [c if c is not None else old for c, old in zip(caps, gallery.captions)]
    g = Gallery(gallery.items_, merged, gallery.names, gallery.source, gallery.meta, kind=gallery.kind)
    n = sum(c is not None for c in caps)
    return IngestReport(gallery=g, added=0, errors=[], warnings=[] if n else ["no caption matched an image"])


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
                        "captions.json matched by file name", markers=("<media>",))
def from_folder(root, split: str = "all", kind: str | None = None, captions: str | None = None,
                max_items: int = 2000, n: int | None = None) -> Gallery:
    """A folder of images or videos (``kind`` picks one when both are present) with an optional captions file;
    ``n``: only the first n files (by name).

    Size before read: at most ``ROBUSTLAB_MAX_FOLDER_FILES`` entries of the folder are looked at, and every file
    (media and captions alike) is stat-ed against the upload limit (``ROBUSTLAB_MAX_UPLOAD_MB``) before it is
    read, so an over-limit file costs no memory. A file that cannot be used is one line naming it (relative to
    the folder); those lines are the DatasetError when nothing could be read, else the gallery's
    ``load_errors``."""
    from robustlab.io.files import InputError, read_file_capped, scan_folder

    root = Path(root)
    try:
        files = scan_folder(root, suffixes=IMAGE_SUFFIXES + VIDEO_SUFFIXES)
    except InputError as e:
        raise DatasetError(f"upload: {e}") from e
    by = {"image": [p for p in files if kind_of_name(p.name) == "image"],
          "video": [p for p in files if kind_of_name(p.name) == "video"]}
    if kind is None:
        kind = "video" if by["video"] and not by["image"] else "image"
    if not by[kind]:
        raise DatasetError(f"upload: no {kind} files in {str(root)!r} (looked for {' '.join(IMAGE_SUFFIXES if kind == 'image' else VIDEO_SUFFIXES)})")
    capfile = Path(captions) if captions else next((root / n for n in ("captions.txt", "captions.csv",
                                                                       "captions.json") if visible(root / n)
                                                                       and (root / n).exists()), None)
    cf = None
    if capfile is not None:
        try:  # a captions file follows the upload limit too; one that can't be read stops here, before any media
            cf = (capfile.name, read_file_capped(capfile, label=_name_in(capfile, root)))
        except InputError as e:
            raise DatasetError(f"upload: {e}") from e
    chosen = by[kind][:int(n)] if n is not None else by[kind]
    errors: list[str] = []
    data: list[tuple[str, bytes]] = []
    for p in chosen:
        try:
            data.append((p.name, read_file_capped(p, label=p.name)))  # stat first: an over-limit file is never read
        except InputError as e:
            errors.append(str(e))
    rep = ingest_uploads(data, cf, existing=None, max_items=max_items, kind=kind)
    del data
    errors += rep.errors
    if rep.gallery is None:
        shown = errors[:8] + ([f"… and {len(errors) - 8} more"] if len(errors) > 8 else [])
        raise DatasetError("upload: " + ("; ".join(shown) or f"no readable {kind} in {str(root)!r}"))
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
