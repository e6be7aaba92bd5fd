"""PEELING tests in the basket and the export: the ``peeling_p2`` record, the manifest entry, the paper's
``peeling/tests.csv`` and OFA ``peeling/tests.tsv``, regeneration (and tampering), and exports without PEELING
tests left as they were. Deterministic: a fixed-box grounder and a world-truth VQA oracle stand in for the models."""
from __future__ import annotations

import base64
import csv
import io
import json
import re
import zipfile

import numpy as np
import pytest
from PIL import Image

from robustlab.cli import main
from robustlab.datasets import build
from robustlab.diagnostics import peeling as P
from robustlab.export.basket import PEELING_P2, Basket, builtin_source, make_example, peeling_example
from robustlab.export.manifest import (MANIFEST, PEELING_CSV, PEELING_TSV, README_TEXT, build_zip, export_dir,
                                       regenerate_export, validate_entry)
from robustlab.models.protocols import Box
from robustlab.perturb import perturb
from robustlab.perturb.record import hash_value


class FixedGrounder:
    """Every expression grounds to one box (far from most targets: issues)."""

    model_id = "fixed-grounder"

    def ground_batch(self, images, texts):
        return [Box(0, 0, 10, 10) for _ in texts]


def _parse_q(q: str) -> tuple[int, str]:
    """(which question, X in the singular: the first two ask in the plural, "How many red circles are in the
    image?")."""
    for k, pre in enumerate(("How many ", "Are there many ", "Is there a reflected ")):
        if q.startswith(pre):
            x = re.sub(r"( are)? ?in the image\?$", "", q[len(pre):])
            return k, re.sub(r"\b(circle|square|triangle|diamond|star|ring|object)s\b", r"\1", x)
    raise AssertionError(q)


class WorldOracle:
    """Answers PEELING's three questions from the scene's objects (a perfect VQA model for the built-in world)."""

    def __init__(self, objects):
        self.objects = objects

    def __call__(self, images, questions):
        out = []
        for q in questions:
            k, x = _parse_q(q)
            n = len(P.world_matches(x, self.objects) or [])
            out.append([str(n), "yes" if n >= 2 else "no", "no"][k])
        return out


@pytest.fixture(scope="module")
def refs():
    return build("builtin-refs", split="test", n=6)


def _run(ds, i, **opts):
    it, objs = ds.item(i), ds.scene(i).objects
    ref = it.refs[0]
    run = P.peel(FixedGrounder(), ds.visual(i), ref.expression, ref.box, vqa_model=WorldOracle(objs), objects=objs,
                 target=ref.meta["target"], image_id=it.id, **{"stages": ("synonym", "keyboard"), **opts})
    return run, it


def _examples(ds, i, **opts):
    run, it = _run(ds, i, **opts)
    src = {**builtin_source("gallery", ds.seed, i, it.id), "field": "expression"}
    return [peeling_example(t, run.config, image=ds.visual(i), source=src, model_id="fixed-grounder",
                            vqa_model="world-oracle", label=f"{it.id}-peeling-{k}") for k, t in enumerate(run.tests)]


@pytest.fixture(scope="module")
def peel_basket(refs):
    b = Basket()
    for i in (1, 3):  # "the small pink ring", "the small blue triangle at the top right": several tests each
        for ex in _examples(refs, i):
            assert b.add(ex)
    assert len(b) >= 3
    return b


def _zip_members(z: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(z)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_peeling_example_record_and_model(refs, peel_basket):
    ex = peel_basket[0]
    r, m = ex.record, ex.model
    assert ex.kind == "text" and ex.is_peeling and r["name"] == PEELING_P2 and r["severity"] is None
    assert r["variant"] == "synonym+keyboard" and r["params"]["requested_stages"] == ["synonym", "keyboard"]
    assert set(r["params"]) >= {"stages", "synonym_mode", "synonym_scorer", "synonym_threshold", "short_len"}
    assert ex.clean == m["Reducetext"] and ex.output == m["MRtext"]
    assert r["input_hash"] == hash_value(ex.clean) and r["output_hash"] == hash_value(ex.output)
    assert [s["stage"] for s in r["stages"]] == list(P.P2_STAGES) and r["versions"]["numpy"]
    assert {"id", "view", "rawtext", "Reducetext", "MRtext", "region", "pred_box", "iou", "issue", "reduce_iou",
            "orig_iou", "uniqueness", "image_id", "uniq_id", "vqa_model"} <= set(m)
    assert m["view"] == "peeling" and m["rawtext"] == refs.item(1).refs[0].expression and m["issue"] is True
    assert m["uniqueness"]["unique"] and m["uniqueness"]["how_many"]["question"].startswith("How many ")
    assert ex.attachments["image"].shape == (128, 128, 3)
    json.dumps(r), json.dumps(m)  # plain JSON
    # p2_chain regenerates the final expression from the reduced one with the record's seed and params
    p = r["params"]
    again = P.p2_chain(ex.clean, r["seed"], p["stages"], synonym_mode=p["synonym_mode"],
                       synonym_scorer=p["synonym_scorer"], synonym_threshold=p["synonym_threshold"],
                       short_len=p["short_len"])
    assert again.text == ex.output


def test_basket_keys_keep_distinct_tests_apart(refs, peel_basket):
    # the same test again is one example; the same seed and reduced text from another image is another
    again = _examples(refs, 1)
    assert not any(peel_basket.add(e) for e in again)
    a, b = _examples(refs, 0)[0], _examples(refs, 5)[0]  # "star" from two images: same Reducetext, same seed
    assert a.clean == b.clean == "star" and a.record["seed"] == b.record["seed"]
    assert a.key != b.key
    # an ordinary example keeps its key (no attachments)
    cap = refs.item(0).texts[0]
    ex = make_example("text", cap, perturb(cap, "keyboard", 2, seed=1), builtin_source("gallery", 1000, 0))
    assert ex.attachments is None and len(ex.key) == 5


def _check_peeling_files(files: dict[str, bytes], basket):
    tests = [e for e in basket if e.is_peeling]
    rows = list(csv.reader(io.StringIO(files[PEELING_CSV].decode("utf-8"))))
    assert rows[0] == ["uniq_id", "rawtext", "Reducetext", "MRtext"]
    assert rows[1:] == [[e.model["uniq_id"], e.model["rawtext"], e.clean, e.output] for e in tests]
    lines = files[PEELING_TSV].decode("utf-8").splitlines()
    assert len(lines) == len(tests)
    for line, e in zip(lines, tests):
        uid, iid, text, region, b64 = line.split("\t")
        assert (uid, iid, text) == (e.model["uniq_id"], e.model["image_id"], e.output)
        assert [float(v) for v in region.split(",")] == pytest.approx(e.model["region"], abs=0.01)
        im = np.asarray(Image.open(io.BytesIO(base64.urlsafe_b64decode(b64))).convert("RGB"))
        assert np.array_equal(im, e.attachments["image"])


def test_zip_export_manifest_files_and_regenerate(peel_basket, tmp_path, capsys):
    z = build_zip(peel_basket)
    files = _zip_members(z)
    entries = [json.loads(x) for x in files[MANIFEST].decode().splitlines()]
    assert len(entries) == len(peel_basket)
    for e, ex in zip(entries, peel_basket):
        assert validate_entry(e) == [], validate_entry(e)
        assert e["perturbation"] == PEELING_P2 and e["severity"] is None and e["kind"] == "text"
        assert e["model"]["view"] == "peeling" and e["model"]["MRtext"] == ex.output
        assert files[e["clean"]["path"]].decode() == ex.clean and files[e["perturbed"]["path"]].decode() == ex.output
        assert "sNone" not in e["perturbed"]["path"]
    _check_peeling_files(files, peel_basket)
    readme = files["README.txt"].decode()
    assert readme.startswith(README_TEXT) and "peeling/tests.csv" in readme and "peeling/tests.tsv" in readme
    (tmp_path / "p.zip").write_bytes(z)
    res = regenerate_export(tmp_path / "p.zip", out=tmp_path / "rebuilt")
    assert [r.status for r in res] == ["OK"] * len(peel_basket), [r.line() for r in res]
    assert "sNone" not in res[0].line() and "peeling_p2" in res[0].line()
    assert (tmp_path / "rebuilt" / PEELING_CSV).read_bytes() == files[PEELING_CSV]
    assert all(r.ok for r in regenerate_export(tmp_path / "rebuilt"))
    assert main(["regenerate", str(tmp_path / "p.zip"), "--quiet"]) == 0
    capsys.readouterr()


def test_folder_export_and_a_mixed_basket(refs, peel_basket, tmp_path):
    b = Basket(list(peel_basket))
    img = refs.visual(2)
    b.add(make_example("image", img, perturb(img, "gaussian_noise", 2, seed=4), builtin_source("gallery", 1000, 2)))
    entries = export_dir(b, tmp_path / "dir")
    assert all(validate_entry(e) == [] for e in entries) and entries[-1]["perturbation"] == "gaussian_noise"
    files = {p: (tmp_path / "dir" / p).read_bytes() for p in (PEELING_CSV, PEELING_TSV)}
    _check_peeling_files(files, b)
    assert len(files[PEELING_TSV].decode().splitlines()) == len(peel_basket)  # the image example is not a test
    res = regenerate_export(tmp_path / "dir")
    assert [r.status for r in res] == ["OK"] * len(b), [r.line() for r in res]


def test_tampered_final_expression_is_a_mismatch(peel_basket, tmp_path):
    z = build_zip(peel_basket)
    entries = [json.loads(x) for x in _zip_members(z)[MANIFEST].decode().splitlines()]
    target = entries[1]["perturbed"]["path"]

    def rezip(name, mutate, fix_sha=False):
        buf = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(z)) as src, zipfile.ZipFile(buf, "w") as dst:
            for n in src.namelist():
                data = src.read(n)
                if n == target:
                    data = mutate(data)
                    tampered = data
                dst.writestr(n, data)
        out = buf.getvalue()
        if fix_sha:  # the manifest's SHA-256 updated too: the content check still catches it
            from robustlab.export.basket import sha256

            es = [dict(e) for e in entries]
            es[1]["perturbed"] = {**es[1]["perturbed"], "sha256": sha256(tampered)}
            buf = io.BytesIO()
            with zipfile.ZipFile(io.BytesIO(out)) as src, zipfile.ZipFile(buf, "w") as dst:
                for n in src.namelist():
                    dst.writestr(n, "".join(json.dumps(e) + "\n" for e in es).encode() if n == MANIFEST
                                 else src.read(n))
            out = buf.getvalue()
        (tmp_path / name).write_bytes(out)
        return tmp_path / name

    res = regenerate_export(rezip("t1.zip", lambda d: d + b"!"))
    assert [r.status for r in res] == ["OK", "MISMATCH"] + ["OK"] * (len(entries) - 2)
    res = regenerate_export(rezip("t2.zip", lambda d: d + b"!", fix_sha=True))
    assert res[1].status == "MISMATCH" and "not the regenerated output" in res[1].message
    # a record whose seed was changed no longer regenerates its output
    es = [dict(e) for e in entries]
    es[1]["record"] = {**es[1]["record"], "seed": es[1]["record"]["seed"] + 1}
    es[1]["seed"] = es[1]["record"]["seed"]
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(z)) as src, zipfile.ZipFile(buf, "w") as dst:
        for n in src.namelist():
            dst.writestr(n, "".join(json.dumps(e) + "\n" for e in es).encode() if n == MANIFEST else src.read(n))
    (tmp_path / "t3.zip").write_bytes(buf.getvalue())
    res = regenerate_export(tmp_path / "t3.zip")
    changed = P.p2_chain(entries[1]["record"]["stages"][0]["input"], es[1]["seed"],
                         es[1]["params"]["stages"]).text != peel_basket[1].output
    assert res[1].status == ("MISMATCH" if changed else "OK")


def test_validate_entry_peeling_rules(peel_basket):
    e = json.loads(_zip_members(build_zip(peel_basket))[MANIFEST].decode().splitlines()[0])
    assert validate_entry(e) == []
    assert any("severity" in p for p in validate_entry(dict(e, severity=3)))
    assert any("params.stages" in p for p in validate_entry(dict(e, params={})))


def test_unavailable_stage_is_left_out_of_the_regeneration_params(peel_basket):
    from robustlab.export.basket import peeling_record

    ex = peel_basket[0]
    t = {**ex.model, "seed": ex.record["seed"], "stages": [
        {"stage": "back_translation", "input": ex.clean, "output": ex.clean, "skipped": True, "details": {},
         "reason": "back_translation unavailable: no weights"}] + ex.record["stages"][1:]}
    rec = peeling_record(t, {"stages": ["back_translation", "synonym", "keyboard"]})
    assert rec["variant"] == "back_translation+synonym+keyboard"
    assert rec["params"]["stages"] == ["synonym", "keyboard"] and "unavailable" in rec["note"]


def test_exports_without_peeling_tests_are_unchanged(refs, tmp_path):
    b = Basket()
    img = refs.visual(0)
    b.add(make_example("image", img, perturb(img, "gaussian_noise", 3, seed=11), builtin_source("gallery", 1000, 0)))
    cap = refs.item(0).texts[0]
    b.add(make_example("text", cap, perturb(cap, "keyboard", 4, seed=3), builtin_source("gallery", 1000, 0)))
    files = _zip_members(build_zip(b))
    assert files["README.txt"] == README_TEXT.encode()
    assert not any(n.startswith("peeling/") for n in files)
    assert sorted(files) == sorted([MANIFEST, "README.txt"] + [n for n in files if n.startswith(("clean/",
                                                                                                  "perturbed/"))])
    assert any(n.endswith("__gaussian_noise-default-s3-seed11.png") or "-s3-seed11" in n for n in files)
    export_dir(b, tmp_path / "d")
    assert not (tmp_path / "d" / "peeling").exists()


def test_two_expressions_of_one_image_keep_distinct_ids_in_the_paper_files(refs):
    it, objs = refs.item(1), refs.scene(1).objects
    ref = it.refs[0]
    b = Basket()
    assert ref.expression == "the small pink ring"
    for expr in (ref.expression, "the pink small ring"):  # same image, same uniq_ids from peel()
        run = P.peel(FixedGrounder(), refs.visual(1), expr, ref.box, vqa_model=WorldOracle(objs), image_id=it.id,
                     stages=("keyboard",))
        for t in run.tests:
            b.add(peeling_example(t, run.config, image=refs.visual(1), source=builtin_source("gallery", 1000, 1)))
    ids = [row[0] for row in csv.reader(io.StringIO(_zip_members(build_zip(b))[PEELING_CSV].decode()))][1:]
    assert len(ids) == len(b) >= 2 and len(set(ids)) == len(ids)
