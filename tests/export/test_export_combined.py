"""Issue 45 item 5: a combined image + text condition is one basket example (its parts exported and regenerated with
it, bit for bit); a part that changed nothing (a no-op) is never exported as a perturbed example."""
import io
import json
import zipfile

import pytest

from robustlab.cli import main
from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.export.basket import Basket, builtin_source, combined_example, is_no_op, make_example
from robustlab.export.manifest import MANIFEST, build_zip, export_dir, regenerate_export, validate_entry
from robustlab.perturb import perturb

SCORES = {"iou_clean": 0.81, "iou_perturbed": 0.12, "iou_clean_vs_perturbed": 0.1}


@pytest.fixture(scope="module")
def item():
    g = builtin_gallery(3)
    return g.images[1], g.names[1]


def _parts(item, expr, txt_name="keyboard", txt_sev=2, img_sev=4):
    img, name = item
    src = builtin_source("gallery", 7, 1, name)
    return [("image", img, perturb(img, "gaussian_noise", img_sev, seed=0) if img_sev else None, src, name),
            ("text", expr, perturb(expr, txt_name, txt_sev, seed=0) if txt_sev else None,
             {**src, "field": "expression"}, f"{name}-expression")]


def _model():
    return {"id": "builtin:tiny-vilt", "view": "grounding", "scores": dict(SCORES)}


def _manifest(z: bytes) -> list[dict]:
    with zipfile.ZipFile(io.BytesIO(z)) as zf:
        return [json.loads(x) for x in zf.read(MANIFEST).decode().splitlines() if x.strip()]


def test_no_op_record():
    assert is_no_op(perturb("the ring", "ocr", 4, seed=0).record)
    assert not is_no_op(perturb("the ring", "ocr", 0, seed=0).record)  # severity 0: clean, not a no-op
    assert not is_no_op(perturb("the red circle", "keyboard", 2, seed=0).record)
    assert not is_no_op(None)


def test_combined_condition_exports_as_one_example_and_regenerates(item, tmp_path):
    ex = combined_example(_parts(item, "the red circle on the left"), model=_model())
    assert ex.kind == "image" and ex.record["name"] == "gaussian_noise" and ex.model["scores"] == SCORES
    (part,) = ex.parts
    assert part.kind == "text" and part.record["name"] == "keyboard" and part.model is None
    assert "keyboard" in ex.title()
    b = Basket()
    assert b.add(ex) and not b.add(combined_example(_parts(item, "the red circle on the left"), model=_model()))
    # the image alone (same record) is another example than the combined condition
    assert b.add(make_example("image", ex.clean, (ex.output, ex.record), ex.source, model=_model()))
    z = build_zip(b)
    entries = _manifest(z)
    assert len(entries) == 2 and [p["perturbation"] for p in entries[0]["parts"]] == ["keyboard"]
    assert "parts" not in entries[1] and validate_entry(entries[0]) == []
    assert entries[0]["parts"][0]["id"] == "0001-1" and entries[0]["model"]["scores"] == SCORES
    (tmp_path / "x.zip").write_bytes(z)
    res = regenerate_export(tmp_path / "x.zip", out=tmp_path / "rebuilt")
    assert [r.status for r in res] == ["OK", "OK"], [r.line() for r in res]
    assert [p.status for p in res[0].parts] == ["OK"] and "gaussian_noise s4 + keyboard s2" in res[0].line()
    assert (tmp_path / "rebuilt" / entries[0]["parts"][0]["perturbed"]["path"]).read_text() == part.output
    assert [r.status for r in regenerate_export(tmp_path / "rebuilt")] == ["OK", "OK"]
    # a folder export too
    assert len(export_dir(b, tmp_path / "dir")) == 2
    assert [r.status for r in regenerate_export(tmp_path / "dir")] == ["OK", "OK"]


def test_a_tampered_part_fails_its_example(item, tmp_path, capsys):
    ex = combined_example(_parts(item, "the red circle on the left"), model=_model())
    z = build_zip([ex])
    (entry,) = _manifest(z)
    txt = entry["parts"][0]["perturbed"]["path"]
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(z)) as src, zipfile.ZipFile(buf, "w") as dst:
        for n in src.namelist():
            data = src.read(n)
            dst.writestr(n, data + b"!" if n == txt else data)
    (tmp_path / "t.zip").write_bytes(buf.getvalue())
    (r,) = regenerate_export(tmp_path / "t.zip")
    assert r.status == "MISMATCH" and "part 0001-1 (keyboard s2)" in r.message and r.parts[0].status == "MISMATCH"
    assert main(["regenerate", str(tmp_path / "t.zip"), "--quiet"]) == 1
    assert "0/1 example(s)" in capsys.readouterr().out
    bad = dict(entry, parts=[dict(entry["parts"][0], parts=[])])
    assert any("part 1 has parts of its own" in p for p in validate_entry(bad))
    assert any("'parts' must be" in p for p in validate_entry(dict(entry, parts="x")))
    assert any(p.startswith("part 1: missing 'record'") for p in validate_entry(
        dict(entry, parts=[{k: v for k, v in entry["parts"][0].items() if k != "record"}])))


def test_a_no_op_part_is_left_out_and_named(item):
    """gaussian_noise s4 + ocr s4 on "the ring": OCR changed nothing, so the example is the image alone (its IoUs
    were computed on the same input as without OCR), the no-op named in the model info; OCR alone is no example."""
    ex = combined_example(_parts(item, "the ring", "ocr", 4), model=_model())
    assert ex.kind == "image" and ex.parts is None
    assert ex.model["no_op"] == [{"modality": "text", "perturbation": "ocr", "variant": ex.model["no_op"][0]["variant"],
                                  "severity": 4, "seed": 0}]
    assert combined_example(_parts(item, "the ring", "ocr", 4, img_sev=0), model=_model()) is None
    only_text = combined_example(_parts(item, "the red circle", img_sev=0), model=_model())
    assert only_text.kind == "text" and only_text.parts is None and "no_op" not in only_text.model
    assert [e["kind"] for e in _manifest(build_zip([ex, only_text]))] == ["image", "text"]
