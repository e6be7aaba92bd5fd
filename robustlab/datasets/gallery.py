"""Galleries: the built-in demo gallery (generated at first use, cached on disk) and user galleries."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robustlab.datasets.synthetic import world
from robustlab.engine.cache import default_cache_dir

WORLD_VERSION = 2  # bump when the generator's output changes, so stale caches are not reused


@dataclass
class Gallery:
    """Images with one caption each (the caption is the ground truth of its image)."""

    images: list[np.ndarray]
    captions: list[str | None]  # None: an uncaptioned image (a distractor, never a query)
    names: list[str]
    source: str = "builtin"
    meta: list[dict] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.images)


def _atomic_savez(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp.npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def builtin_gallery(n: int = 300, seed: int = world.DEMO_SEED, size: int = 128, cache_dir: Path | None = None,
                    progress=None) -> Gallery:
    """The demo gallery of n synthetic scenes, rendered once and cached (``~/.cache/robustlab/gallery``)."""
    root = Path(cache_dir) if cache_dir else default_cache_dir() / "gallery"
    path = root / f"world{WORLD_VERSION}_seed{seed}_n{n}_{size}px.npz"
    scenes = world.make_scenes(n, seed)  # cheap: metadata only
    imgs = None
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as z:
                imgs = z["images"]
            if imgs.shape != (n, size, size, 3):
                imgs = None
        except (OSError, ValueError, KeyError):
            imgs = None
    if imgs is None:
        imgs = world.render_scenes(scenes, size, progress=progress)
        try:
            _atomic_savez(path, images=imgs)
        except OSError:
            pass  # a read-only cache is not fatal: the gallery is still returned
    return Gallery(images=list(imgs), captions=[s.caption for s in scenes],
                   names=[f"scene-{seed}-{s.index:05d}" for s in scenes], source="builtin",
                   meta=[{"seed": seed, "index": s.index, "objects": len(s.objects), "background": s.background}
                         for s in scenes])


@dataclass
class IngestReport:
    gallery: Gallery | None
    added: int
    errors: list[str]
    warnings: list[str]


def ingest_uploads(files: list[tuple[str, bytes]], caption_file: tuple[str, bytes] | None = None,
                   caption_lines: str = "", existing: Gallery | None = None, max_items: int = 2000) -> IngestReport:
    """Add uploaded image files (with captions from a file or typed lines) to ``existing`` (kept intact).

    Bad files are reported in ``errors`` and skipped; everything already loaded stays. Images already in the
    gallery (same name and content) are not added twice.
    """
    from robustlab.io.files import InputError, load_image, match_captions, parse_captions
    from robustlab.engine.cache import content_hash

    errors: list[str] = []
    warns: list[str] = []
    images = list(existing.images) if existing else []
    caps = list(existing.captions) if existing else []
    names = list(existing.names) if existing else []
    meta = list(existing.meta) if existing else []
    seen = {(m.get("name"), m.get("hash")) for m in meta}

    new_imgs, new_names, new_hashes = [], [], []
    for name, data in files:
        try:
            arr = load_image(data, name)
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
            warns.append(f"{len(missing)} image(s) without a caption are used as distractors only: "
                         + ", ".join(missing[:5]) + (" …" if len(missing) > 5 else ""))
        if not any(p[0] for p in pairs) and len(pairs) > len(new_imgs):
            warns.append(f"{len(pairs)} captions for {len(new_imgs)} new images: the extra captions were ignored")
    elif new_imgs:
        warns.append("no captions given: the new images are distractors only until captions are added")

    room = max_items - len(images)
    if len(new_imgs) > room:
        errors.append(f"the gallery holds at most {max_items} items; {len(new_imgs) - room} image(s) were not added")
        new_imgs, new_names, new_caps, new_hashes = (new_imgs[:room], new_names[:room], new_caps[:room],
                                                      new_hashes[:room])
    images += new_imgs
    caps += new_caps
    names += new_names
    meta += [{"name": n, "hash": h, "shape": list(im.shape)} for n, h, im in zip(new_names, new_hashes, new_imgs)]
    gal = Gallery(images=images, captions=caps, names=names, source="upload", meta=meta) if images else existing
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
    g = Gallery(images=gallery.images, captions=merged, names=gallery.names, source=gallery.source, meta=gallery.meta)
    n = sum(c is not None for c in caps)
    return IngestReport(gallery=g, added=0, errors=[], warnings=[] if n else ["no caption matched an image"])
