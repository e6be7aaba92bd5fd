"""AppTest of the Grounding page, issue 45 items 5 and 6.

5. A perturbation that changed nothing (OCR on "the ring") is labelled a no-op on the page, in the sweep chart and
   in the basket, never counted as robustness; a combined image + text condition goes to the basket as one example
   with its combined IoUs, and exports and regenerates as one.
6. The referring expression belongs to the input it was derived or typed for: switching the sidebar's dataset to
   My uploads, another item, or another upload starts from that input's own expression; PEELING names its input
   (a COCO folder item is not "this upload").
"""
import io
import json
import zipfile

import numpy as np
import pytest
from PIL import Image

import apptest_helpers

from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")
TIMEOUT = 240


def fresh(**state):
    return apptest_helpers.fresh("pages/grounding.py", timeout=TIMEOUT, **state)


def pick(at, img=None, img_sev=0, txt=None, txt_sev=0):
    at.selectbox(key="gr_img_pert").set_value(img or "(none)").run()
    if img:
        at.slider(key="gr_img_sev").set_value(img_sev).run()
    at.selectbox(key="gr_txt_pert").set_value(txt or "(none)").run()
    if txt:
        at.slider(key="gr_txt_sev").set_value(txt_sev).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def sweep_traces(at) -> dict:
    (chart,) = [c for c in at.get("plotly_chart") if "gr_sweep" in c.proto.id]
    out = {}
    for tr in json.loads(chart.proto.spec)["data"]:
        y = tr["y"]
        if isinstance(y, dict):  # plotly's binary encoding of a float array
            y = np.frombuffer(__import__("base64").b64decode(y["bdata"]), dtype=y["dtype"]).tolist()
        out[tr["name"]] = {"x": tr["x"] if not isinstance(tr["x"], dict) else np.frombuffer(
            __import__("base64").b64decode(tr["x"]["bdata"]), dtype=tr["x"]["dtype"]).tolist(), "y": y,
            "marker": tr.get("marker") or {}}
    return out


def png(img) -> bytes:
    b = io.BytesIO()
    Image.fromarray(img).save(b, format="PNG")
    return b.getvalue()


# ---- item 5: a no-op is labelled as one, never counted as robustness --------------------------------------------
def test_ocr_no_op_on_the_ring_is_labelled_and_exports_one_example(tmp_path):
    """Item 0 "the ring", gaussian_noise s5 + ocr s4: OCR leaves "the ring" unchanged. Before: the page said nothing,
    the sweep drew a flat "text: ocr" line, and the basket got two examples with the combined IoU (the zip held
    "the ring → the ring · IoU perturbed 0.000"). Now: the no-op is named on the page and under the chart, drawn as
    hollow grey no-op markers, and the basket holds one example: gaussian_noise s5 with its IoUs, the OCR no-op
    named in its model info; the export regenerates bit for bit."""
    from robustlab.export.manifest import build_zip, regenerate_export

    at = pick(fresh(), "gaussian_noise", 5, "ocr", 4)
    assert at.text_input(key="gr_expr_0_0").value == "the ring"
    assert any(m.value == "**Perturbed · gaussian_noise s5 + ocr s4 (no-op)**" for m in at.markdown)
    (line,) = [i.value for i in at.info if i.value.startswith("No-op")]
    assert "ocr s4 changed nothing in the expression" in line and "gaussian_noise s5 alone" in line
    # the sweep: no flat robust "text: ocr" line; its severities 1-5 are no-op markers, and one line names them
    tr = sweep_traces(at)
    text_y = tr["text: ocr"]["y"]
    assert not np.isnan(text_y[0]) and all(np.isnan(v) for v in text_y[1:]), text_y
    noop = tr["no-op: changed nothing"]
    assert sorted(noop["x"]) == [1, 2, 3, 4, 5] and noop["marker"]["symbol"] == "circle-open"
    assert not any(np.isnan(v) for v in tr["image: gaussian_noise"]["y"])
    (cap,) = [c.value for c in at.caption if c.value.startswith("No-op")]
    assert "text: ocr at s1–5" in cap and "both: its text part at s1–5" in cap
    # the basket: one example, the image perturbation, with the IoUs that were computed
    at.button(key="gr_add").click().run()
    assert not at.exception
    assert any("Added to the basket (1 example(s))." in s.value for s in at.success)
    (ex,) = at.session_state["basket"].items
    assert ex.kind == "image" and ex.record["name"] == "gaussian_noise" and ex.record["severity"] == 5
    assert not ex.parts
    assert ex.model["no_op"] == [{"modality": "text", "perturbation": "ocr", "variant": ex.model["no_op"][0]["variant"],
                                  "severity": 4, "seed": 0}]
    assert ex.model["condition"] == "gaussian_noise s5 + ocr s4 (no-op)"
    m = {x.label: x.value for x in at.metric}
    assert f"{ex.model['scores']['iou_perturbed']:.2f}" == m["IoU to ground truth, perturbed"]
    zpath = tmp_path / "export.zip"
    zpath.write_bytes(build_zip(at.session_state["basket"]))
    with zipfile.ZipFile(zpath) as z:
        entries = [json.loads(x) for x in z.read("manifest.jsonl").decode().splitlines()]
        assert not [n for n in z.namelist() if n.endswith(".txt") and n.startswith("perturbed/")]
    assert [e["perturbation"] for e in entries] == ["gaussian_noise"] and "parts" not in entries[0]
    assert [r.status for r in regenerate_export(zpath)] == ["OK"]


def test_only_a_no_op_cannot_go_to_the_basket():
    """ocr s4 alone on "the ring": nothing changed, so the perturbed IoU is the clean one: the page says so and the
    basket refuses it (before: a "perturbed" text example identical to the clean one)."""
    at = pick(fresh(), None, 0, "ocr", 4)
    assert any(m.value == "**Perturbed · ocr s4 (no-op)**" for m in at.markdown)
    (line,) = [i.value for i in at.info if i.value.startswith("No-op")]
    assert "Nothing was perturbed" in line
    assert at.button(key="gr_add").disabled
    assert any("Nothing to export" in c.value for c in at.caption)
    (cap,) = [c.value for c in at.caption if c.value.startswith("No-op")]
    assert "text: ocr at s1–5" in cap


def test_combined_condition_is_one_example_with_its_parts(tmp_path):
    """defocus_blur s5 + keyboard s2 (both change their input): one basket example whose IoUs are the combined ones,
    the keyboard expression its part; the zip has one manifest line (with ``parts``) and regenerates bit for bit."""
    from robustlab.export.manifest import build_zip, regenerate_export

    at = fresh()
    at.number_input(key="gr_scene").set_value(5).run()
    pick(at, "defocus_blur", 5, "keyboard", 2)
    assert not [i for i in at.info if i.value.startswith("No-op")]
    assert not [c for c in at.caption if c.value.startswith("No-op")]
    at.button(key="gr_add").click().run()
    assert any("Added to the basket (1 example(s))." in s.value for s in at.success)
    (ex,) = at.session_state["basket"].items
    assert ex.kind == "image" and ex.record["name"] == "defocus_blur"
    (part,) = ex.parts
    assert part.kind == "text" and part.record["name"] == "keyboard" and part.record["severity"] == 2
    assert part.clean == ex.model["expression"] and part.output != part.clean
    assert ex.model["condition"] == "defocus_blur s5 + keyboard s2" and "no_op" not in ex.model
    at.button(key="gr_add").click().run()  # the same condition again: already there
    assert any("already in the basket" in i.value for i in at.info) and len(at.session_state["basket"]) == 1
    zpath = tmp_path / "export.zip"
    zpath.write_bytes(build_zip(at.session_state["basket"]))
    with zipfile.ZipFile(zpath) as z:
        (entry,) = [json.loads(x) for x in z.read("manifest.jsonl").decode().splitlines()]
    assert entry["perturbation"] == "defocus_blur" and entry["model"]["scores"]["iou_perturbed"] is not None
    assert [p["perturbation"] for p in entry["parts"]] == ["keyboard"]
    (res,) = regenerate_export(zpath, out=tmp_path / "rebuilt")
    assert res.ok and [p.status for p in res.parts] == ["OK"], res.line()
    assert "defocus_blur s5 + keyboard s2" in res.line()
    assert [r.status for r in regenerate_export(tmp_path / "rebuilt")] == ["OK"]


# ---- item 6: the expression belongs to its input; PEELING names its input ----------------------------------------
def test_expression_follows_the_dataset_and_item():
    """Built-in item 0 grounds "the ring"; after switching the sidebar to My uploads, item 0 grounds its own caption
    (before: still "the ring") and item 2 its own (before: "the red circle"); back on the built-in scenes, item 0 is
    "the ring" again, and a typed expression stays with its item."""
    from robustlab.datasets.synthetic.datasets import builtin_gallery
    from robustlab.datasets.uploads import ingest_uploads

    at = fresh()
    assert at.text_input(key="gr_expr_0_0").value == "the ring"
    g = builtin_gallery(3)
    files = [(f"mine{i}.png", png(im)) for i, im in enumerate(g.images)]
    caps = ["a green triangle on the left", "a blue star", "a small blue square at the top"]
    at.session_state["upload_gallery"] = ingest_uploads(files, caption_lines="\n".join(caps)).gallery
    at.session_state["upload_gallery_id"] = "up-3"
    at.session_state["dataset"] = "upload"  # the sidebar's Dataset radio (key "dataset")
    at.run()
    assert not at.exception and not at.error
    assert at.text_input(key="gr_expr_0_0").value == caps[0]
    assert any(t.value == f"\u201c{caps[0]}\u201d" for t in at.text)  # what the page grounded
    at.number_input(key="gr_scene").set_value(2).run()
    assert at.text_input(key="gr_expr_2_0").value == caps[2]
    assert any(t.value == f"\u201c{caps[2]}\u201d" for t in at.text)
    assert not any("the red circle" in t.value or "the ring" in t.value for t in at.text)
    at.text_input(key="gr_expr_2_0").input("the blue square").run()
    assert any(t.value == "\u201cthe blue square\u201d" for t in at.text)
    at.number_input(key="gr_scene").set_value(0).run()
    at.session_state["dataset"] = "builtin"
    at.run()
    assert not at.exception and at.text_input(key="gr_expr_0_0").value == "the ring"


def test_a_new_upload_starts_from_an_empty_expression():
    """Upload A, type "the star"; upload B: the box is empty again and the page asks for B's expression (before: B was
    grounded with A's "the star")."""
    from robustlab.datasets.synthetic import world

    at = fresh()
    at.radio(key="gr_source").set_value("upload").run()
    at.file_uploader(key="gr_upload").set_value(
        ("a.png", png(world.render_scene(world.sample_scene(1000, 2), 128)), "image/png")).run()
    assert not at.error
    at.text_input(key="gr_expr_upload").input("the star").run()
    assert any(t.value == "\u201cthe star\u201d" for t in at.text)
    at.file_uploader(key="gr_upload").set_value(
        ("b.png", png(world.render_scene(world.sample_scene(1000, 3), 128)), "image/png")).run()
    assert not at.exception and not at.error
    assert not any("the star" in t.value for t in at.text)
    assert at.text_input(key="gr_expr_upload").value == ""
    assert any("Type a referring expression" in i.value for i in at.info)


def _coco_folder(root):
    from robustlab.datasets.synthetic.datasets import builtin_gallery

    g = builtin_gallery(2)
    imgs = []
    for k, im in enumerate(g.images, start=1):
        name = f"COCO_val2014_{k:012d}.jpg"
        (root / "coco" / "val2014").mkdir(parents=True, exist_ok=True)
        Image.fromarray(im).save(root / "coco" / "val2014" / name, quality=95)
        imgs.append({"filename": name, "filepath": "val2014", "split": "test", "cocoid": k,
                     "sentences": [{"raw": f"{g.captions[k - 1]} {j}", "tokens": []} for j in range(5)]})
    (root / "coco" / "dataset_coco.json").write_text(json.dumps({"dataset": "coco", "images": imgs}))


def test_peeling_names_a_coco_folder_item_not_an_upload(tmp_path, monkeypatch):
    """A COCO folder item has captions and no box: PEELING asks for a box "on this item of coco (“1”)" (before: "on
    this upload"); an upload is still "this upload"."""
    _coco_folder(tmp_path)
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(tmp_path))
    at = fresh(dataset="folder", model_choice="builtin:tiny-vilt")
    assert not at.error, [e.value for e in at.error]
    assert at.text_input(key="gr_expr_0_0").value.startswith("there is") or at.text_input(key="gr_expr_0_0").value
    at.toggle(key="gr_pl_run").set_value(True).run()
    assert not at.exception
    (line,) = [i.value for i in at.info if i.value.startswith("PEELING needs a ground-truth box")]
    assert "this upload" not in line and "this item of coco" in line, line
    at.radio(key="gr_source").set_value("upload").run()
    at.file_uploader(key="gr_upload").set_value(("a.png", png(np.full((32, 32, 3), 200, np.uint8)), "image/png")).run()
    at.text_input(key="gr_expr_upload").input("the thing").run()
    (line,) = [i.value for i in at.info if i.value.startswith("PEELING needs a ground-truth box")]
    assert line.endswith("to run it on this upload.")
