"""Fuzzing the readers of user files: media readers (``robustlab.io``), the upload loader
(``robustlab.export.basket.load_upload``, ``robustlab.datasets.uploads``), the local dataset loaders and the export
manifest reader (``ExportReader``, ``validate_entry``, ``regenerate_export``).

Inputs: small real files made here (PNG, JPEG, GIF, BMP, TIFF, WebP, MP4, WebM, AVI, MKV, caption files, dataset
annotation files, an export zip), then -- from a fixed seed, a fixed number of cases per reader -- random bytes,
truncations, bit flips, byte overwrites, chunk splices, and, for JSON, structural mutations (a value swapped for one
of another type, a key dropped, deep nesting, huge numbers, ``../`` and absolute paths).

Property: only the documented one-line exceptions come out -- ``InputError`` (a ValueError) from the media readers,
caption parser and upload loader; ``DatasetError`` (a ValueError) from the dataset loaders, never a Python error
re-labelled (its cause is not a TypeError from inside the loader); ``OSError`` / ``ValueError`` from a whole export
that cannot be opened, and per-example ``ERROR`` / ``MISMATCH`` results otherwise -- never another exception type,
never a hang (each case runs under a timer), and nothing written outside the folder given (the process runs in an
empty working folder that must stay empty; a sentinel folder that malicious paths point at stays empty).
"""
from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import random
import signal
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.datasets import DatasetError, build
from robustlab.io.files import InputError, load_image, parse_captions

CASE_SECONDS = 20  # one case running longer than this is a hang
# Pillow warns about the corrupt TIFF/EXIF metadata these files are made of: expected here, not a finding
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:PIL")


class Hang(BaseException):
    """Raised by the timer (a BaseException: no ``except Exception`` in the code under test swallows it)."""


@contextlib.contextmanager
def no_hang(what: str):
    def on_alarm(signum, frame):
        raise Hang(f"{what}: still running after {CASE_SECONDS} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Fuzz:
    """Runs the cases of one test and collects what went wrong, so a failure lists every distinct problem (the
    first cases of each kind) instead of only the first one."""

    def __init__(self):
        self.problems: dict[str, list[str]] = {}
        self.outcomes: dict[str, int] = {}  # "returned" / exception type name -> count (shown with -s)

    def problem(self, kind: str, what: str) -> None:
        self.problems.setdefault(kind, []).append(what)

    def expect(self, allowed: tuple, what: str, fn, *a, **kw):
        """``fn(*a, **kw)``; an exception in ``allowed`` is returned (its message must be one line), anything else
        is recorded as a problem (and None returned)."""
        try:
            with no_hang(what):
                out = fn(*a, **kw)
            self.outcomes["returned"] = self.outcomes.get("returned", 0) + 1
            return out
        except allowed as e:
            self.outcomes[type(e).__name__] = self.outcomes.get(type(e).__name__, 0) + 1
            msg = str(e)
            if isinstance(e, UnicodeDecodeError):  # Python's own wording: names no file, says nothing to do
                self.problem("a bare UnicodeDecodeError", f"{what}: {msg}")
            if not msg or "\n" in msg:
                self.problem(f"{type(e).__name__} without a one-line message", f"{what}: {msg!r}")
            return e
        except Hang as e:
            self.problem("hang", str(e))
        except Exception as e:  # noqa: BLE001 - this is what the test is about
            self.problem(f"unexpected {type(e).__name__}", f"{what}: {str(e)[:300]}")
        return None

    def done(self) -> None:
        print(f"fuzz outcomes: {self.outcomes}")
        if self.problems:
            lines = [f"{k} ({len(v)} case(s)): " + " | ".join(v[:3]) for k, v in self.problems.items()]
            pytest.fail("\n".join(lines), pytrace=False)


@pytest.fixture
def fuzz():
    return Fuzz()


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """An empty working folder (relative writes would land here) that must stay empty."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield cwd
    left = sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*"))
    assert left == [], f"files written to the working folder: {left[:10]}"


# ---- mutators (seeded) ----------------------------------------------------------------------------------------
def mutate(data: bytes, r: random.Random) -> tuple[str, bytes]:
    """One random mutation of ``data``: (what was done, the mutated bytes)."""
    n = len(data)
    how = r.choice(["random", "truncate", "truncate", "flip", "flip", "flip", "overwrite", "splice", "header"])
    if how == "random" or n == 0:
        k = r.choice([0, 1, 2, 7, 64, 513, 4096])
        return f"random {k} bytes", bytes(r.getrandbits(8) for _ in range(k))
    if how == "truncate":
        k = r.randrange(0, n)
        return f"truncated to {k}/{n} bytes", data[:k]
    b = bytearray(data)
    if how == "flip":
        k = r.choice([1, 1, 2, 4, 16])
        for _ in range(k):
            i = r.randrange(n)
            b[i] ^= 1 << r.randrange(8)
        return f"{k} bit flip(s)", bytes(b)
    if how == "overwrite":
        k = r.choice([1, 4, 8])
        for _ in range(k):
            b[r.randrange(n)] = r.choice([0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE])
        return f"{k} byte(s) overwritten", bytes(b)
    if how == "splice":
        i, j = sorted(r.randrange(n) for _ in range(2))
        if r.random() < 0.5:
            return f"bytes {i}:{j} repeated", bytes(b[:j] + b[i:j] + b[j:])
        return f"bytes {i}:{j} cut out", bytes(b[:i] + b[j:])
    k = min(n, r.choice([4, 16, 64]))  # a real header on random bytes
    tail = bytes(r.getrandbits(8) for _ in range(r.choice([0, 9, 300])))
    return f"first {k} bytes + random tail", bytes(b[:k]) + tail


ODD_VALUES = [None, True, False, 0, -1, 7, 2**63, 1e308, -1e308, 0.5, float("inf"), float("nan"), "", " ", "x",
              "test", "val", "../../escape", "/etc/passwd", "C:\\Windows\\x", "a\x00b", "🙂" * 3, [], [1, "a"], {},
              {"a": 1}, [[[]]], {"raw": None}]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def mutate_json(obj, r: random.Random):
    """A structural mutation of a JSON value: one node replaced by an odd value, or a key dropped, or a list
    emptied (a deep copy; the original is unchanged)."""
    obj = copy.deepcopy(obj)
    paths = list(_paths(obj))
    path = r.choice(paths)
    if not path:
        v = r.choice(ODD_VALUES)
        return f"whole document -> {v!r}", copy.deepcopy(v)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    how = r.random()
    if how < 0.2 and isinstance(parent, dict):
        del parent[key]
        return f"dropped {list(path)}", obj
    if how < 0.3 and isinstance(parent[key], list):
        parent[key] = []
        return f"emptied {list(path)}", obj
    v = r.choice(ODD_VALUES)
    parent[key] = copy.deepcopy(v)
    return f"{list(path)} -> {v!r}", obj


def json_text_cases(obj, r: random.Random, n: int) -> list[tuple[str, bytes]]:
    """``n`` fuzzed versions of a JSON document: structural mutations, byte mutations, deep nesting, huge ints."""
    text = json.dumps(obj).encode()
    out = [("nested 100000 deep", b"[" * 100_000 + b"]" * 100_000),
           ("nested objects 50000 deep", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
           ("a 5000-digit integer", text[:1] + b'"x": ' + b"9" * 5000 + b", " + text[1:] if text[:1] == b"{"
            else b"[" + b"9" * 5000 + b"]"),
           ("UTF-16 with BOM", json.dumps(obj).encode("utf-16")),
           ("not UTF-8", b"\xff\xfe\xfd" + text)]
    while len(out) < n:
        if r.random() < 0.6:
            what, m = mutate_json(obj, r)
            out.append((what, json.dumps(m, allow_nan=True).encode()))
        else:
            out.append(mutate(text, r))
    return out[:n]


# ---- real files ------------------------------------------------------------------------------------------------
def _img(size=(12, 10), seed=0, mode="RGB") -> Image.Image:
    a = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    return Image.fromarray(a).convert(mode)


def image_bytes(fmt: str, mode: str = "RGB", **kw) -> bytes:
    b = io.BytesIO()
    im = _img(mode=mode)
    if fmt == "GIF" and kw.pop("animated", False):
        im.save(b, format="GIF", save_all=True, append_images=[_img(seed=1, mode=mode)], duration=100, loop=0)
    else:
        im.save(b, format=fmt, **kw)
    return b.getvalue()


def tiny_frames(t=4, h=8, w=10, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (t, h, w, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def real_images() -> dict[str, bytes]:
    return {"png": image_bytes("PNG"), "png_rgba": image_bytes("PNG", "RGBA"), "png_gray": image_bytes("PNG", "L"),
            "png_palette": image_bytes("PNG", "P"), "png16": image_bytes("PNG", "I;16"), "jpeg": image_bytes("JPEG"),
            "jpeg_progressive": image_bytes("JPEG", progressive=True), "gif": image_bytes("GIF", animated=True),
            "bmp": image_bytes("BMP"), "tiff": image_bytes("TIFF"), "webp": image_bytes("WEBP")}


@pytest.fixture(scope="module")
def real_videos(tmp_path_factory) -> dict[str, bytes]:
    from robustlab.io.media import write_video

    d = tmp_path_factory.mktemp("videos")
    out = {}
    for ext in (".mp4", ".webm", ".avi", ".mkv"):
        out[ext] = write_video(tiny_frames(), d / f"v{ext}", fps=8.0).read_bytes()
    return out


def _cases(seeds: dict[str, bytes], n: int, seed: int) -> list[tuple[str, bytes]]:
    r = random.Random(seed)
    names = sorted(seeds)
    cases = []
    for k in range(n):
        src = names[k % len(names)]
        what, data = mutate(seeds[src], r)
        cases.append((f"{src}: {what} (case {k})", data))
    return cases


# ---- media readers and the upload loader --------------------------------------------------------------------------
def test_fuzz_load_image(real_images, fuzz, sandbox):
    for what, data in _cases(real_images, 400, seed=1):
        res = fuzz.expect((InputError,), f"load_image {what}", load_image, data, name="fuzz.png")
        if isinstance(res, np.ndarray) and not (res.dtype == np.uint8 and res.ndim == 3 and res.shape[2] == 3
                                                and min(res.shape) >= 1):
            fuzz.problem("not an H×W×3 uint8 image", f"{what}: {res.dtype} {res.shape}")
    fuzz.done()


def test_fuzz_read_video(real_videos, fuzz, sandbox):
    from robustlab.io.media import Video, read_video

    for what, data in _cases(real_videos, 100, seed=2):
        v = fuzz.expect((InputError,), f"read_video {what}", read_video, data, max_side=32, max_frames=16,
                        name="fuzz")
        if isinstance(v, Video):
            f = v.frames
            if not (f.dtype == np.uint8 and f.ndim == 4 and f.shape[-1] == 3 and min(f.shape) >= 1
                    and len(v.indices) == len(f) and np.isfinite(v.fps) and v.fps > 0):
                fuzz.problem("not a T×H×W×3 uint8 video", f"{what}: {f.dtype} {f.shape} fps={v.fps}")
    fuzz.done()


def test_fuzz_read_video_from_a_path(real_videos, tmp_path, fuzz, sandbox):
    from robustlab.io.media import read_video

    p = tmp_path / "clip.mp4"
    for what, data in _cases(real_videos, 12, seed=3):
        p.write_bytes(data)
        fuzz.expect((InputError,), f"read_video(path) {what}", read_video, p, num_frames=4, name="clip.mp4")
    fuzz.done()


def test_fuzz_load_upload(real_images, real_videos, fuzz, sandbox):
    from robustlab.export.basket import LoadedInput, load_upload

    caps = {"txt": b"a man rides a horse\nA dog.\n", "csv": b"image,caption\na.png,a man\nb.png,a dog\n",
            "json": json.dumps([{"image": "a.png", "caption": "a man"}, "a dog"]).encode()}
    plan = [("image", "x.png", real_images, 50), ("video", "x.mp4", real_videos, 16),
            ("text", "c.txt", caps, 20), ("text", "c.csv", caps, 20), ("text", "c.json", caps, 20)]
    for k, (kind, name, seeds, n) in enumerate(plan):
        for what, data in _cases(seeds, n, seed=10 + k):
            res = fuzz.expect((InputError,), f"load_upload({kind}) {what}", load_upload, kind, name, data,
                              num_frames=4 if kind == "video" else None, max_side=32 if kind == "video" else None)
            if isinstance(res, LoadedInput) and not (res.kind == kind and res.source["sha256"].startswith("sha256:")):
                fuzz.problem("wrong LoadedInput", f"{what}: {res.kind} {res.source}")
    with pytest.raises(ValueError, match="kind must be one of"):
        load_upload("audio", "x.wav", b"RIFF")
    fuzz.done()


CAPTION_SEEDS = {
    "c.txt": "a man rides a horse\nA dog runs.\n\n  spaced   out  \n".encode(),
    "c.csv": b"image,caption\na.png,a man\nb.png,\"a dog, running\"\n",
    "c.tsv": b"filename\ttext\na.png\ta man\n",
    "c.json": json.dumps({"annotations": [{"image": "a.png", "caption": ["a man", "a guy"]},
                                          {"caption": "x"}]}).encode(),
}


def test_fuzz_parse_captions(fuzz, sandbox):
    r = random.Random(4)
    cases = []
    for name, data in CAPTION_SEEDS.items():
        if name.endswith(".json"):
            cases += [(name, w, d) for w, d in json_text_cases(json.loads(data), r, 40)]
        for _ in range(25):
            cases.append((name, *mutate(data, r)))
        cases.append((name, "50 MB + 1 byte of text", b"a" * (50 * 2**20 + 1)))
    for name, what, data in cases:
        res = fuzz.expect((InputError,), f"parse_captions {name} {what}", parse_captions, data, name)
        if isinstance(res, list) and not (res and all(isinstance(c, str) and c and (i is None or isinstance(i, str))
                                                      for i, c in res)):
            fuzz.problem("not a list of (name, caption) pairs", f"{name} {what}: {res[:3]!r}")
    fuzz.done()


def test_fuzz_ingest_uploads_keeps_what_it_has(real_images, fuzz, sandbox):
    """Bad files and bad caption files are reported in ``errors`` and skipped; good ones are added; nothing raises."""
    from robustlab.datasets.uploads import IngestReport, ingest_uploads

    good = [("good.png", real_images["png"])]
    r = random.Random(5)
    for k in range(12):
        files = good + [(f"bad{j}.png", mutate(real_images[r.choice(sorted(real_images))], r)[1]) for j in range(3)]
        what, capdata = mutate(CAPTION_SEEDS["c.csv"], r)
        rep = fuzz.expect((), f"ingest_uploads case {k} ({what})", ingest_uploads, files, ("captions.csv", capdata))
        if isinstance(rep, IngestReport):
            assert rep.gallery is not None and rep.added >= 1, k  # the good file is always in
            assert all(isinstance(e, str) and e and "\n" not in e for e in rep.errors + rep.warnings), rep.errors
    fuzz.done()


def test_fuzz_upload_folder(real_images, real_videos, tmp_path, fuzz, sandbox):
    """``build("upload", root=folder)`` on folders of fuzzed images, videos and caption files: a gallery of what
    could be read, or one DatasetError."""
    from robustlab.datasets.base import Dataset

    r = random.Random(6)
    for k in range(10):
        root = tmp_path / f"up{k}"
        root.mkdir()
        for j in range(3):
            (root / f"img{j}.png").write_bytes(mutate(real_images[r.choice(sorted(real_images))], r)[1])
        (root / "clip.mp4").write_bytes(mutate(real_videos[".mp4"], r)[1])
        name = r.choice(["captions.txt", "captions.csv", "captions.json"])
        (root / name).write_bytes(mutate(CAPTION_SEEDS["c" + Path(name).suffix], r)[1])
        for kind in ("image", "video"):
            res = fuzz.expect((DatasetError,), f"upload folder {k} ({kind})", build, "upload", root=root, kind=kind)
            if isinstance(res, DatasetError) and isinstance(res.__cause__, TypeError):
                fuzz.problem("a Python error re-labelled as DatasetError", f"folder {k}: {res}")
            elif isinstance(res, Dataset):
                assert len(res) >= 1 and all(res.visual(i).dtype == np.uint8 for i in range(len(res)))
    fuzz.done()


# ---- dataset loaders ------------------------------------------------------------------------------------------------
def _png_file(path: Path, size=(8, 10), value=90):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((*size, 3), value, np.uint8)).save(path)


def _video_file(path: Path, n=6):
    from robustlab.io.media import write_video

    path.parent.mkdir(parents=True, exist_ok=True)
    write_video(tiny_frames(t=n), path, fps=4.0)


def _write_jsonl(rows) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in rows).encode()


def make_dataset(name: str, root: Path) -> tuple[dict, Path, str]:
    """A tiny valid folder for loader ``name``: (build kwargs, the annotation file to fuzz, its kind)."""
    root.mkdir(parents=True)
    if name in ("coco", "flickr30k"):
        fname = f"dataset_{name}.json"
        imgs = [{"filename": f"{k}.jpg", "split": "test", "cocoid": k, "filepath": "val2014",
                 "sentences": [{"raw": f"a cat {j}"} for j in range(5)]} for k in range(2)]
        (root / fname).write_text(json.dumps({"images": imgs}))
        for k in range(2):
            _png_file(root / ("val2014" if name == "coco" else "flickr30k-images") / f"{k}.jpg")
        return {"split": "test"}, root / fname, "json"
    if name == "msrvtt-csv":
        with open(root / "MSRVTT_JSFUSION_test.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["key", "vid_key", "video_id", "sentence"])
            w.writerows([("ret0", "msr1", "video1", "a girl sings"), ("ret1", "msr2", "video2", "a man cooks")])
        for k in (1, 2):
            _video_file(root / "videos" / "all" / f"video{k}.mp4")
        return {"split": "test", "num_frames": 3}, root / "MSRVTT_JSFUSION_test.csv", "csv"
    if name == "msrvtt-json":
        data = {"videos": [{"video_id": f"video{k}", "split": "test"} for k in (1, 2)],
                "sentences": [{"video_id": f"video{k % 2 + 1}", "caption": f"caption {k}"} for k in range(4)]}
        (root / "MSRVTT_data.json").write_text(json.dumps(data))
        for k in (1, 2):
            _video_file(root / "videos" / f"video{k}.mp4")
        return {"split": "full-test", "num_frames": 3}, root / "MSRVTT_data.json", "json"
    if name == "youcook2":
        db = {"vidA": {"subset": "validation", "annotations": [{"id": 0, "segment": [0, 1], "sentence": "cut"},
                                                               {"id": 1, "segment": [0.5, 1.5], "sentence": "fry"}]}}
        (root / "youcookii_annotations_trainval.json").write_text(json.dumps({"database": db}))
        _video_file(root / "raw_videos" / "vidA.mp4", n=8)
        return {"split": "val", "num_frames": 3}, root / "youcookii_annotations_trainval.json", "json"
    if name == "refcoco":
        d = root / "refcoco"
        d.mkdir()
        inst = {"images": [{"id": 1, "file_name": "COCO_train2014_000000000001.jpg"}],
                "annotations": [{"id": 10, "image_id": 1, "bbox": [1, 2, 3, 4]}]}
        (d / "instances.json").write_text(json.dumps(inst))
        refs = [{"ref_id": 0, "ann_id": 10, "image_id": 1, "split": "val", "category_id": 1,
                 "sentences": [{"sent": "man on the left", "sent_id": 0}, "left guy"]}]
        (d / "refs(unc).json").write_text(json.dumps(refs))
        _png_file(root / "train2014" / "COCO_train2014_000000000001.jpg", (20, 30))
        return {"split": "val"}, d / "refs(unc).json", "json"
    if name == "refcoco-instances":
        kw, _, _ = make_dataset("refcoco", root / "r")
        return {**kw, "_root": root / "r"}, root / "r" / "refcoco" / "instances.json", "json"
    if name == "snli-ve":
        rows = [{"Flikr30kID": "100.jpg", "sentence1": "dogs run", "sentence2": "animals move",
                 "gold_label": "entailment", "pairID": "p1"},
                {"Flickr30K_ID": "200", "sentence2": "a man waits", "gold_label": "neutral"}]
        (root / "snli_ve_test.jsonl").write_bytes(_write_jsonl(rows))
        _png_file(root / "flickr30k-images" / "100.jpg")
        _png_file(root / "flickr30k-images" / "200.jpg")
        return {"split": "test"}, root / "snli_ve_test.jsonl", "jsonl"
    if name == "nlvr2":
        rows = [{"identifier": "dev-1-0-0", "sentence": "two dogs", "label": "True", "directory": 3},
                {"identifier": "dev-1-0-1", "sentence": "one dog", "label": False, "directory": 3}]
        (root / "dev.json").write_bytes(_write_jsonl(rows))
        _png_file(root / "dev" / "3" / "dev-1-0-img0.png", (8, 8))
        _png_file(root / "dev" / "3" / "dev-1-0-img1.png", (6, 9))
        return {"split": "dev"}, root / "dev.json", "jsonl"
    raise KeyError(name)


LOADERS = {"coco": "coco", "flickr30k": "flickr30k", "msrvtt-csv": "msrvtt", "msrvtt-json": "msrvtt",
           "youcook2": "youcook2", "refcoco": "refcoco", "refcoco-instances": "refcoco", "snli-ve": "snli-ve",
           "nlvr2": "nlvr2"}


def use_dataset(name: str, root: Path, kw: dict):
    """Build it and touch everything a task would: items, texts, positives, visuals, describe()."""
    ds = build(name, root=root, **kw)
    assert len(ds) >= 1
    ds.texts(), ds.text_positives(), ds.visual_positives(), ds.describe()
    for i in range(len(ds)):
        it = ds.item(i)
        assert isinstance(it.id, str)
        v = ds.visual(i)
        assert v.dtype == np.uint8 and v.ndim in (3, 4) and v.shape[-1] == 3
        ds.item_source(i)
    if name == "nlvr2":
        ds.pair_layout(0), ds.visual_pair(0)
    return ds


def _fuzz_annotation(data: bytes, kind: str, r: random.Random, n: int) -> list[tuple[str, bytes]]:
    if kind == "json":
        return json_text_cases(json.loads(data), r, n)
    if kind == "jsonl":
        rows = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
        out = [("a line nested 100000 deep", b"[" * 100_000 + b"]" * 100_000 + b"\n"),
               ("a 5000-digit label", data + b'{"identifier": "dev-9-0-0", "label": ' + b"1" * 5000 + b"}\n")]
        while len(out) < n:
            if r.random() < 0.6:
                what, m = mutate_json(rows, r)
                lines = m if isinstance(m, list) else [m]
                out.append((what, "".join(json.dumps(x) + "\n" for x in lines).encode()))
            else:
                out.append(mutate(data, r))
        return out
    out = [("a 200 kB field", data + b"x," + b"y" * 200_000 + b"\n"), ("NUL bytes", data.replace(b",", b"\x00", 2))]
    while len(out) < n:
        out.append(mutate(data, r))
    return out


@pytest.mark.parametrize("case", list(LOADERS))
def test_fuzz_dataset_annotations(case, tmp_path, fuzz, sandbox):
    name = LOADERS[case]
    kw, ann, kind = make_dataset(case, tmp_path / "ds")
    root = kw.pop("_root", tmp_path / "ds")
    use_dataset(name, root, kw)  # the unmutated folder works
    original = ann.read_bytes()
    n = 24 if name in ("msrvtt", "youcook2") else 80
    for k, (what, data) in enumerate(_fuzz_annotation(original, kind, random.Random(zlib.crc32(case.encode())), n)):
        ann.write_bytes(data)
        res = fuzz.expect((DatasetError,), f"{case} {ann.name}: {what} (case {k})", use_dataset, name, root, kw)
        if isinstance(res, DatasetError) and isinstance(res.__cause__, TypeError):
            fuzz.problem("a Python error re-labelled as DatasetError", f"{case} {what}: {res}")
        elif isinstance(res, DatasetError) and not str(res).startswith(name):
            fuzz.problem("a DatasetError not naming the dataset", f"{case} {what}: {res}")
    ann.write_bytes(original)
    fuzz.done()


CONFUSION_VALUES = [None, [], {}, "x", float("inf"), -1, 2**70, ["test"]]


@pytest.mark.parametrize("case", [c for c in LOADERS if c != "msrvtt-csv"])
def test_type_confusion_in_annotations(case, tmp_path, fuzz, sandbox):
    """Systematically: every node of the annotation file (every field of every record) replaced in turn by a value
    of another type -- null, a list, an object, a string, inf, a negative or huge number, a list holding a valid
    value. Each is a one-line DatasetError naming the dataset, or a dataset that works."""
    name = LOADERS[case]
    kw, ann, kind = make_dataset(case, tmp_path / "ds")
    root = kw.pop("_root", tmp_path / "ds")
    original = ann.read_bytes()
    doc = [json.loads(x) for x in original.decode().splitlines() if x.strip()] if kind == "jsonl" else \
        json.loads(original)
    cases = []
    for path in list(_paths(doc))[1:]:
        for v in CONFUSION_VALUES:
            m = copy.deepcopy(doc)
            parent = m
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = copy.deepcopy(v)
            data = "".join(json.dumps(x) + "\n" for x in m) if kind == "jsonl" else json.dumps(m)
            cases.append((f"{list(path)} -> {v!r}", data.encode()))
    for what, data in cases[:: max(1, len(cases) // 240)]:  # at most ~240 cases per loader
        ann.write_bytes(data)
        res = fuzz.expect((DatasetError,), f"{case} {ann.name}: {what}", use_dataset, name, root, kw)
        if isinstance(res, DatasetError) and isinstance(res.__cause__, TypeError):
            fuzz.problem("a Python error re-labelled as DatasetError", f"{case} {what}: {res}")
        elif isinstance(res, DatasetError) and not str(res).startswith(name):
            fuzz.problem("a DatasetError not naming the dataset", f"{case} {what}: {res}")
    ann.write_bytes(original)
    fuzz.done()


@pytest.mark.parametrize("case", ["coco", "msrvtt-csv", "nlvr2"])
def test_fuzz_dataset_media_files(case, real_images, real_videos, tmp_path, fuzz, sandbox):
    """Corrupt images / videos in a dataset folder: reading the item is one DatasetError naming the file."""
    name = LOADERS[case]
    kw, _, _ = make_dataset(case, tmp_path / "ds")
    root = tmp_path / "ds"
    media = sorted(p for p in root.rglob("*") if p.suffix in (".jpg", ".png", ".mp4"))
    seeds = real_videos if case.startswith("msrvtt") else real_images
    for k, (what, data) in enumerate(_cases(seeds, 10 if case.startswith("msrvtt") else 24, seed=20)):
        target = media[k % len(media)]
        original = target.read_bytes()
        target.write_bytes(data)
        res = fuzz.expect((DatasetError,), f"{case} {target.name}: {what}", use_dataset, name, root, kw)
        target.write_bytes(original)
        if isinstance(res, DatasetError) and isinstance(res.__cause__, TypeError):
            fuzz.problem("a Python error re-labelled as DatasetError", f"{case} {what}: {res}")
    fuzz.done()


# ---- exports ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def export_zip() -> bytes:
    from robustlab.export.basket import Basket, builtin_source, make_example, typed_source
    from robustlab.export.manifest import build_zip
    from robustlab.perturb import perturb

    b = Basket()
    img = np.random.default_rng(0).integers(0, 256, (10, 12, 3), dtype=np.uint8)
    b.add(make_example("image", img, perturb(img, "gaussian_noise", 2, seed=1), builtin_source("gallery", 1, 0)))
    cap = "A man rides a brown horse on the beach."
    b.add(make_example("text", cap, perturb(cap, "keyboard", 3, seed=2), typed_source()))
    vid = tiny_frames(t=3, h=8, w=8)
    b.add(make_example("video", vid, perturb(vid, "jumble", 2, seed=3), builtin_source("video", 1, 0), fps=8.0))
    return build_zip(b)


def _members(z: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(z)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _zip(members: dict[str, bytes]) -> bytes:
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    return b.getvalue()


def _check_results(fuzz, results, what):
    if not isinstance(results, list):
        return
    for res in results:
        if res.status not in ("OK", "MISMATCH", "ERROR"):
            fuzz.problem("an unknown status", f"{what}: {res}")
        if "\n" in res.message:
            fuzz.problem("a result message over several lines", f"{what}: {res.message!r}")


def test_export_fixture_regenerates(export_zip, tmp_path, sandbox):
    from robustlab.export.manifest import regenerate_export

    (tmp_path / "e.zip").write_bytes(export_zip)
    assert [r.status for r in regenerate_export(tmp_path / "e.zip")] == ["OK"] * 3


def test_fuzz_export_zip_bytes(export_zip, tmp_path, fuzz, sandbox):
    """Bit flips, truncations, random bytes of a whole export zip."""
    from robustlab.export.manifest import ExportReader, regenerate_export

    src, out = tmp_path / "export.zip", tmp_path / "out"
    for k, (what, data) in enumerate(_cases({"zip": export_zip}, 100, seed=30)):
        src.write_bytes(data)
        res = fuzz.expect((OSError, ValueError), f"regenerate_export {what}", regenerate_export, src, out=out)
        _check_results(fuzz, res, what)
        r2 = fuzz.expect((OSError, ValueError), f"ExportReader {what}", ExportReader, src)
        if isinstance(r2, ExportReader):
            with r2:
                for n, entry, err in r2.entries():
                    assert (entry is None) == bool(err)
                    if entry is not None:
                        for ref in ("clean", "perturbed"):
                            p = (entry.get(ref) or {}).get("path") if isinstance(entry.get(ref), dict) else None
                            if isinstance(p, str):
                                fuzz.expect((OSError, ValueError), f"ExportReader.read {what}", r2.read, p)
    for p in out.rglob("*") if out.exists() else []:  # whatever was written stayed inside ``out``
        assert p.resolve().is_relative_to(out.resolve())
    fuzz.done()


MALICIOUS_PATHS = ["../escape.txt", "../../escape.txt", "/ABS/escape.txt", "clean/../../escape.txt",
                   "C:\\escape.txt", "clean\\..\\..\\escape.txt", "clean/./x.png", "clean//x.png", ".hidden/x.png",
                   "clean/con.txt", "clean/x\x00.png", "clean/" + "a" * 300, "~/escape.txt", "", "/", 5, None,
                   ["clean/x.png"], "clean/x.png\n", "perturbed/../../../../../../tmp/escape.txt"]


def _manifest_cases(export_zip: bytes, sentinel: Path, r: random.Random, n: int) -> list[tuple[str, dict]]:
    """Export members with a mutated manifest: paths pointing out of the export (at ``sentinel``), structural
    mutations of one entry, broken lines."""
    members = _members(export_zip)
    entries = [json.loads(x) for x in members["manifest.jsonl"].decode().splitlines() if x.strip()]

    def with_entries(es, extra_lines=()):
        m = dict(members)
        m["manifest.jsonl"] = ("".join(json.dumps(e) + "\n" for e in es) + "".join(extra_lines)).encode()
        return m

    cases = []
    for p in MALICIOUS_PATHS:
        p = p.replace("/ABS", str(sentinel)) if isinstance(p, str) else p
        k = r.randrange(len(entries))
        es = copy.deepcopy(entries)
        fields = ["clean", "perturbed", "clean_preview"] if es[k]["kind"] == "video" else ["clean", "perturbed"]
        field = r.choice(fields)
        es[k][field]["path"] = p
        cases.append((f"entry {k} {field}.path = {p!r}", with_entries(es)))
    cases += [("broken lines", with_entries(entries, ["{not json\n", "[1, 2]\n", "null\n", "\"x\"\n", " \n"])),
              ("a line nested 100000 deep", with_entries(entries, ["[" * 100_000 + "]" * 100_000 + "\n"])),
              ("a 5000-digit seed", with_entries(entries, ['{"manifest": 1, "seed": ' + "7" * 5000 + "}\n"])),
              ("zip-slip member names", {**members, "../evil.txt": b"x", str(sentinel / "abs.txt"): b"x"})]
    while len(cases) < n:
        k = r.randrange(len(entries))
        what, e = mutate_json(entries[k], r)
        es = list(entries)
        es[k] = e
        if not isinstance(e, dict):
            m = with_entries([x for i, x in enumerate(entries) if i != k], [json.dumps(e) + "\n"])
        else:
            m = with_entries(es)
        cases.append((f"entry {k} ({entries[k]['kind']}): {what}", m))
    return cases[:n]


def test_type_confusion_in_manifest_entries(export_zip, tmp_path, fuzz, sandbox):
    """Systematically: every field of every manifest entry (nested record fields included) replaced in turn by a value
    of another type, the entry regenerated alone into ``out``: a per-example result, never an exception."""
    from robustlab.export.manifest import regenerate_export, validate_entry

    members = _members(export_zip)
    entries = [json.loads(x) for x in members["manifest.jsonl"].decode().splitlines() if x.strip()]
    cases = []
    for k, entry in enumerate(entries):
        for path in list(_paths(entry))[1:]:
            for v in CONFUSION_VALUES:
                e = copy.deepcopy(entry)
                parent = e
                for key in path[:-1]:
                    parent = parent[key]
                parent[path[-1]] = copy.deepcopy(v)
                cases.append((f"entry {k} ({entry['kind']}) {list(path)} -> {v!r}", e))
    src, out = tmp_path / "export.zip", tmp_path / "out"
    for what, e in cases[:: max(1, len(cases) // 200)]:  # ~200 cases
        src.write_bytes(_zip({**members, "manifest.jsonl": (json.dumps(e) + "\n").encode()}))
        probs = fuzz.expect((), f"validate_entry {what}", validate_entry, e)
        if probs is not None and not (isinstance(probs, list) and all(isinstance(p, str) for p in probs)):
            fuzz.problem("validate_entry returned something else than a list of str", f"{what}: {probs!r}")
        res = fuzz.expect((OSError, ValueError), f"regenerate_export {what}", regenerate_export, src, out=out)
        _check_results(fuzz, res, what)
        if isinstance(res, list) and len(res) != 1:
            fuzz.problem("not one result per manifest line", f"{what}: {res}")
    for p in out.rglob("*") if out.exists() else []:
        assert p.resolve().is_relative_to(out.resolve())
    fuzz.done()


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
@pytest.mark.parametrize("form", ["zip", "folder"])
def test_fuzz_export_manifests(form, export_zip, tmp_path, fuzz, sandbox):
    """Malicious and mutated manifests, as a zip and as a folder, regenerated into ``out``: per-example results,
    never an exception other than OSError/ValueError, nothing written outside ``out``."""
    from robustlab.export.manifest import regenerate_export, validate_entry

    sentinel = tmp_path / "sentinel"
    sentinel.mkdir()
    r = random.Random(40 if form == "zip" else 41)
    for k, (what, members) in enumerate(_manifest_cases(export_zip, sentinel, r, 110)):
        case = tmp_path / f"case{k}"
        case.mkdir()
        if form == "zip":
            src = case / "export.zip"
            src.write_bytes(_zip(members))
        else:
            src = case / "export"
            for name, data in members.items():
                p = (src / name).resolve()
                if p.is_relative_to(src.resolve()):  # a folder cannot hold a zip-slip name
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_bytes(data)
        out = case / "out"
        res = fuzz.expect((OSError, ValueError), f"{form}: {what}", regenerate_export, src, out=out)
        _check_results(fuzz, res, what)
        for line in members["manifest.jsonl"].decode("utf-8", "replace").splitlines():
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, dict):
                probs = fuzz.expect((), f"validate_entry {what}", validate_entry, entry)
                if probs is not None and not (isinstance(probs, list) and all(isinstance(p, str) for p in probs)):
                    fuzz.problem("validate_entry returned something else than a list of str", f"{what}: {probs!r}")
        written = [p for p in case.rglob("*") if p.is_file()]
        outside = [p for p in written if not p.resolve().is_relative_to(out.resolve())
                   and not p.resolve().is_relative_to(src.resolve()) and p != src]
        assert outside == [], f"{what}: written outside {out}: {outside}"
        assert list(sentinel.iterdir()) == [], f"{what}: wrote into {sentinel}"
        assert not (tmp_path / "escape.txt").exists() and not (case / "escape.txt").exists(), what
    fuzz.done()
