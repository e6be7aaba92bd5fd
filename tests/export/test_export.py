"""Export → regenerate round trips, path sanitisation, manifest schema, and the perturb/regenerate CLI."""
import io
import json
import zipfile

import numpy as np
import pytest
from PIL import Image

from robustlab.export.basket import Basket, builtin_source, make_example, typed_source, upload_source
from robustlab.cli import main
from robustlab.datasets.synthetic import world
from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.export.manifest import (MANIFEST, REQUIRED_KEYS, ExportReader, build_zip, regenerate_export,
                                       safe_component, safe_member, validate_entry)
from robustlab.perturb import list_perturbations, perturb


def _png(arr) -> bytes:
    b = io.BytesIO()
    Image.fromarray(arr).save(b, format="PNG")
    return b.getvalue()


def _manifest(zbytes: bytes) -> list[dict]:
    with zipfile.ZipFile(io.BytesIO(zbytes)) as zf:
        return [json.loads(line) for line in zf.read(MANIFEST).decode().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def gallery():
    return builtin_gallery(6)


@pytest.fixture(scope="module")
def basket(gallery):
    b = Basket()
    img = gallery.images[2]
    b.add(make_example("image", img, perturb(img, "gaussian_noise", 3, seed=11),
                       builtin_source("gallery", 7, 2, gallery.names[2])))
    up = (np.arange(37 * 23 * 3) % 251).astype(np.uint8).reshape(37, 23, 3)  # odd size, "uploaded"
    b.add(make_example("image", up, perturb(up, "pixelate", 5, seed=0), upload_source("my photo (1).PNG", _png(up)),
                       model={"id": "builtin:tiny-clip", "view": "retrieval",
                              "scores": {"clean": 0.31, "perturbed": 0.12}}))
    cap = gallery.captions[2]
    b.add(make_example("text", cap, perturb(cap, "keyboard", 4, seed=3),
                       builtin_source("gallery", 7, 2, gallery.names[2], field="caption")))
    typed = "Ünïcödé [caption] with *markdown* & a trailing space "
    b.add(make_example("text", typed, perturb(typed, "char_swap", 2, seed=1), typed_source()))
    return b


def test_image_and_text_round_trip_identical_bytes(basket, tmp_path):
    z = build_zip(basket)
    (tmp_path / "export.zip").write_bytes(z)
    out = tmp_path / "rebuilt"
    results = regenerate_export(tmp_path / "export.zip", out=out)
    assert [r.status for r in results] == ["OK"] * 4, [r.line() for r in results]
    with zipfile.ZipFile(io.BytesIO(z)) as zf:
        for e in _manifest(z):
            for ref in (e["clean"], e["perturbed"]):
                assert (out / ref["path"]).read_bytes() == zf.read(ref["path"]), ref["path"]
    # the rebuilt folder is itself an export that regenerates
    assert all(r.ok for r in regenerate_export(out))
    # and the text files hold exactly the texts (no newline added, UTF-8)
    entries = _manifest(z)
    typed = [e for e in entries if e["source"]["type"] == "typed"][0]
    assert (out / typed["clean"]["path"]).read_text("utf-8") == basket[3].clean
    assert (out / typed["perturbed"]["path"]).read_text("utf-8") == basket[3].output


def test_video_round_trip_identical_bytes(tmp_path):
    media = pytest.importorskip("robustlab.io.media", reason="robustlab.io.media (video I/O) has not landed")
    frames = world.render_video(world.sample_video(7, 3), 48)
    b = Basket()
    names = ["gaussian_noise"] + [s.name for s in list_perturbations("video")
                                  if s.modality == "video" and s.available and s.category.lower() == "temporal"][:1]
    for name in names:
        b.add(make_example("video", frames, perturb(frames, name, 3, seed=2), builtin_source("video", 7, 3), fps=8.0))
    z = build_zip(b)
    (tmp_path / "v.zip").write_bytes(z)
    results = regenerate_export(tmp_path / "v.zip", out=tmp_path / "out")
    assert all(r.ok for r in results), [r.line() for r in results]
    with zipfile.ZipFile(io.BytesIO(z)) as zf:
        for e in _manifest(z):
            assert e["kind"] == "video" and e["video"]["fps"] == 8.0 and e["video"]["frames"] == len(frames)
            assert e["clean"]["format"] == "npz" and e["clean_preview"]["format"] == "mp4"
            assert e["perturbed"]["path"].endswith(".mp4")
            assert zf.read(e["clean_preview"]["path"]) == media.write_mp4(frames, 8.0)
            for ref in (e["clean"], e["perturbed"]):
                assert (tmp_path / "out" / ref["path"]).read_bytes() == zf.read(ref["path"])


MALICIOUS = ["../../etc/passwd", "/etc/shadow", "C:\\Windows\\system32\\x.png", "..", ".", "", ".bashrc",
             "con.png", "NUL", "a/b/../../c.png", "x\x00y.png", "név with spaces & ümlauts.png", "a" * 500,
             "evil\n.png", "~/.ssh/id_rsa", "%2e%2e%2fescape"]


@pytest.mark.parametrize("name", MALICIOUS)
def test_safe_component_neutralises(name):
    s = safe_component(name)
    assert safe_member(s) == s  # a valid single component
    assert "/" not in s and "\\" not in s and ".." not in s and not s.startswith(".") and len(s) <= 60


@pytest.mark.parametrize("path", ["../x.png", "/abs/x.png", "clean/../../x.png", "C:/x.png", "clean\\x.png",
                                  "clean//x.png", "clean/.hidden", "clean/x\x00.png", "clean/con", ""])
def test_safe_member_refuses(path):
    with pytest.raises(ValueError, match="unsafe path"):
        safe_member(path)


def test_malicious_names_make_a_safe_zip(gallery, tmp_path):
    b = Basket()
    img = gallery.images[0]
    for i, bad in enumerate(MALICIOUS[:8]):
        res = perturb(img, "gaussian_noise", 1, seed=i)
        b.add(make_example("image", img, res, upload_source(bad, _png(img)), label=bad))
    z = build_zip(b)
    with zipfile.ZipFile(io.BytesIO(z)) as zf:
        for n in zf.namelist():
            assert safe_member(n) == n
    (tmp_path / "z.zip").write_bytes(z)
    assert all(r.ok for r in regenerate_export(tmp_path / "z.zip", out=tmp_path / "o"))
    assert {p.parent.name for p in (tmp_path / "o").rglob("*.png")} == {"clean", "perturbed"}


def test_regenerate_refuses_paths_escaping_the_export(basket, tmp_path):
    """A hand-edited manifest pointing outside the export is an error for that item, and nothing is read or
    written outside."""
    z = build_zip(basket)
    entries = _manifest(z)
    secret = tmp_path / "secret.png"
    secret.write_bytes(_png(np.zeros((4, 4, 3), np.uint8)))
    entries[0]["clean"]["path"] = "../secret.png"
    entries[1]["perturbed"]["path"] = "/tmp/evil.png"
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(z)) as src, zipfile.ZipFile(buf, "w") as dst:
        for n in src.namelist():
            if n != MANIFEST:
                dst.writestr(n, src.read(n))
        dst.writestr(MANIFEST, "".join(json.dumps(e) + "\n" for e in entries) + "not json\n")
        dst.writestr("../outside.txt", "x")  # a hostile member the manifest does not name: never extracted
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "evil.zip").write_bytes(buf.getvalue())
    res = regenerate_export(tmp_path / "sub" / "evil.zip", out=tmp_path / "sub" / "out")
    status = [r.status for r in res]
    assert status == ["ERROR", "ERROR", "OK", "OK", "ERROR"], [r.line() for r in res]
    assert "unsafe path" in res[0].message and "unsafe path" in res[1].message and "not valid JSON" in res[4].message
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "sub" / "outside.txt").exists()
    written = [p.relative_to(tmp_path / "sub" / "out").as_posix() for p in (tmp_path / "sub" / "out").rglob("*")
               if p.is_file()]
    assert all(safe_member(p) == p for p in written)


def test_manifest_schema(basket):
    entries = _manifest(build_zip(basket))
    assert len(entries) == 4 and [e["id"] for e in entries] == ["0001", "0002", "0003", "0004"]
    for e, ex in zip(entries, basket):
        assert validate_entry(e) == [], validate_entry(e)
        assert set(REQUIRED_KEYS) <= set(e)
        assert e["perturbation"] == ex.record["name"] and e["variant"] == ex.record["variant"]
        assert e["severity"] == ex.record["severity"] and e["seed"] == ex.record["seed"]
        assert e["params"] == ex.record["params"] and e["record"] == json.loads(json.dumps(ex.record))
        assert {"robustlab", "numpy", "python", "pillow"} <= set(e["versions"])
        assert e["clean"]["sha256"].startswith("sha256:") and e["perturbed"]["sha256"].startswith("sha256:")
        assert e["clean"]["path"].startswith("clean/") and e["perturbed"]["path"].startswith("perturbed/")
    img, up, cap, typed = entries
    assert img["source"] == {"type": "builtin", "collection": "gallery", "seed": 7, "index": 2,
                             "name": "scene-7-00002"}
    assert up["source"]["type"] == "upload" and up["source"]["name"] == "my photo (1).PNG"
    assert up["source"]["sha256"].startswith("sha256:") and up["source"]["bytes"] > 0
    assert up["model"] == {"id": "builtin:tiny-clip", "view": "retrieval", "scores": {"clean": 0.31, "perturbed": 0.12}}
    assert img["model"] is None and cap["kind"] == "text" and cap["source"]["field"] == "caption"
    assert typed["source"]["type"] == "typed"
    bad = dict(img, manifest=99, model="x")
    del bad["seed"]
    assert validate_entry(bad) == ["missing 'seed'"]
    assert any("schema" in p for p in validate_entry(dict(img, manifest=99)))


def test_cli_perturb_folder_with_bad_file_then_regenerate(gallery, tmp_path, capsys):
    src = tmp_path / "in"
    (src / "nested").mkdir(parents=True)
    for i in range(2):
        (src / f"scene {i}.png").write_bytes(_png(gallery.images[i]))
    (src / "nested" / "gray16.png").write_bytes(_png((np.arange(400).reshape(20, 20) * 150).astype(np.uint16)))
    (src / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    (src / "notes.md").write_text("not an input")
    (src / "captions.txt").write_text("\n".join(gallery.captions[:3]) + "\n", "utf-8")
    (src / "latin1.txt").write_bytes("café au lait".encode("latin-1"))
    out = tmp_path / "out"
    rc = main(["perturb", str(src), "--name", "gaussian_noise", "--severity", "2", "--seed", "5", "--out", str(out),
               "--quiet"])
    cap = capsys.readouterr()
    assert rc == 1 and "broken.png" in cap.err and "3 example(s) from 3 file(s)" in cap.out
    entries = [json.loads(line) for line in (out / MANIFEST).read_text().splitlines()]
    assert [e["seed"] for e in entries] == [5, 6, 7] and all(e["source"]["type"] == "file" for e in entries)
    assert all(validate_entry(e) == [] for e in entries)
    assert main(["regenerate", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.count("OK ") == 3

    # captions: one example per line, the bad (non-UTF-8) file skipped
    out_t = tmp_path / "out_text"
    rc = main(["perturb", str(src), "--name", "keyboard", "--severity", "3", "--out", str(out_t), "--quiet"])
    cap = capsys.readouterr()
    assert rc == 1 and "latin1.txt" in cap.err and "UTF-8" in cap.err
    entries = [json.loads(line) for line in (out_t / MANIFEST).read_text().splitlines()]
    assert [e["clean"]["line"] for e in entries] == [0, 1, 2]
    lines = (out_t / entries[0]["perturbed"]["path"]).read_text("utf-8").split("\n")
    assert lines[:3] == [perturb(c, "keyboard", 3, seed=e["seed"]).output for e, c in zip(entries, gallery.captions)]
    assert main(["regenerate", str(out_t / MANIFEST), "--out", str(tmp_path / "again"), "--quiet"]) == 0
    capsys.readouterr()
    assert (tmp_path / "again" / entries[0]["perturbed"]["path"]).read_bytes() == \
        (out_t / entries[0]["perturbed"]["path"]).read_bytes()

    # usage errors are one line, exit 2
    assert main(["perturb", str(src), "--name", "no_such", "--severity", "2", "--out", str(out)]) == 2
    assert main(["perturb", str(src), "--name", "gaussian_noise", "--severity", "2", "--variant", "nope",
                 "--out", str(out)]) == 2
    assert main(["regenerate", str(tmp_path / "missing.zip")]) == 2
    err = capsys.readouterr().err
    assert "no_such" in err and "nope" in err and "missing.zip" in err


def test_regenerate_detects_tampering(basket, tmp_path, capsys):
    z = build_zip(basket)
    (tmp_path / "ok.zip").write_bytes(z)
    assert main(["regenerate", str(tmp_path / "ok.zip"), "--quiet"]) == 0
    capsys.readouterr()
    entries = _manifest(z)
    img_path = entries[0]["perturbed"]["path"]

    def rezip(name, mutate_member=None, mutate_manifest=None):
        buf = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(z)) as src, zipfile.ZipFile(buf, "w") as dst:
            for n in src.namelist():
                data = src.read(n)
                if mutate_member and n in mutate_member:
                    data = mutate_member[n](data)
                if n == MANIFEST and mutate_manifest:
                    data = mutate_manifest(data)
                dst.writestr(n, data)
        (tmp_path / name).write_bytes(buf.getvalue())
        return tmp_path / name

    def flip_pixel(data):
        a = np.array(Image.open(io.BytesIO(data)))
        a[0, 0, 0] ^= 1
        return _png(a)

    # 1. a perturbed image changed by one bit
    p = rezip("t1.zip", {img_path: flip_pixel})
    assert main(["regenerate", str(p), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH 0001" in out and "OK       0002" in out and "3/4 example(s)" in out
    # 2. ... and the manifest's SHA-256 updated to match: the content check still catches it
    tampered = flip_pixel(zipfile.ZipFile(io.BytesIO(z)).read(img_path))

    def fix_sha(data):
        from robustlab.export.basket import sha256

        es = [json.loads(line) for line in data.decode().splitlines()]
        es[0]["perturbed"]["sha256"] = sha256(tampered)
        return "".join(json.dumps(e) + "\n" for e in es).encode()

    p = rezip("t2.zip", {img_path: lambda d: tampered}, fix_sha)
    res = regenerate_export(p)
    assert res[0].status == "MISMATCH" and "not the regenerated output" in res[0].message
    # 3. a tampered caption and a tampered clean input
    txt_path, clean_path = entries[2]["perturbed"]["path"], entries[1]["clean"]["path"]
    p = rezip("t3.zip", {txt_path: lambda d: d.replace(b"a", b"4", 1), clean_path: flip_pixel})
    res = regenerate_export(p)
    assert [r.status for r in res] == ["OK", "MISMATCH", "MISMATCH", "OK"]
    assert "clean input" in res[1].message
    # 4. a tampered record (different seed) no longer matches its output hash
    p = rezip("t4.zip", mutate_manifest=lambda d: d.replace(b'"seed": 11', b'"seed": 12'))
    assert main(["regenerate", str(p), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["status"] == "MISMATCH" and [r["status"] for r in rows[1:]] == ["OK"] * 3


def test_export_reader_sources(basket, tmp_path):
    from robustlab.export.manifest import export_dir

    entries = export_dir(basket, tmp_path / "dir")
    assert len(entries) == 4
    with ExportReader(tmp_path / "dir") as r1, ExportReader(tmp_path / "dir" / MANIFEST) as r2:
        assert r1.manifest_text == r2.manifest_text
        assert r1.read(entries[0]["clean"]["path"]) == (tmp_path / "dir" / entries[0]["clean"]["path"]).read_bytes()
    with pytest.raises(FileNotFoundError):
        ExportReader(tmp_path)
    (tmp_path / "empty.zip").write_bytes(build_zip([]))
    assert regenerate_export(tmp_path / "empty.zip") == []


def test_cli_perturb_videos_and_regenerate(tmp_path, capsys):
    media = pytest.importorskip("robustlab.io.media", reason="robustlab.io.media (video I/O) has not landed")
    temporal = [s.name for s in list_perturbations("video") if s.modality == "video" and s.available
                and s.category.lower() == "temporal"]
    name = temporal[0] if temporal else "gaussian_noise"
    src = tmp_path / "videos"
    src.mkdir()
    for i in range(2):
        (src / f"clip{i}.mp4").write_bytes(media.write_mp4(world.render_video(world.sample_video(7, i, 12), 32), 8.0))
    (src / "truncated.mp4").write_bytes((src / "clip0.mp4").read_bytes()[:300])
    out = tmp_path / "out"
    assert main(["perturb", str(src), "--name", name, "--severity", "4", "--out", str(out), "--quiet"]) == 1
    cap = capsys.readouterr()
    assert "truncated.mp4" in cap.err and "2 example(s) from 2 file(s)" in cap.out
    entries = [json.loads(line) for line in (out / MANIFEST).read_text().splitlines()]
    assert [e["source"]["name"] for e in entries] == ["clip0.mp4", "clip1.mp4"]
    assert all(e["kind"] == "video" and e["video"]["fps"] == 8.0 and e["video"]["frames"] == 12 for e in entries)
    assert all((out / e["perturbed"]["path"]).read_bytes()[4:8] == b"ftyp" for e in entries)
    assert main(["regenerate", str(out), "--out", str(tmp_path / "again"), "--quiet"]) == 0
    capsys.readouterr()
    for e in entries:
        assert (tmp_path / "again" / e["perturbed"]["path"]).read_bytes() == (out / e["perturbed"]["path"]).read_bytes()


def test_regenerate_detects_a_tampered_video(tmp_path):
    media = pytest.importorskip("robustlab.io.media", reason="robustlab.io.media (video I/O) has not landed")
    frames = world.render_video(world.sample_video(7, 5, 10), 32)
    b = Basket([make_example("video", frames, perturb(frames, "gaussian_noise", 2, seed=0),
                             builtin_source("video", 7, 5), fps=8.0)])
    z = build_zip(b)
    e = _manifest(z)[0]
    other = media.write_mp4(frames[::-1].copy(), 8.0)
    for member in (e["perturbed"]["path"], e["clean_preview"]["path"], e["clean"]["path"]):
        buf = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(z)) as src, zipfile.ZipFile(buf, "w") as dst:
            for n in src.namelist():
                dst.writestr(n, other if n == member else src.read(n))
        (tmp_path / "t.zip").write_bytes(buf.getvalue())
        res = regenerate_export(tmp_path / "t.zip")
        assert res[0].status == "MISMATCH", (member, res[0].line())
