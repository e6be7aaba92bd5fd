"""Issue 45 item 5, in the result objects the Grounding page reads: grounding_compare and grounding_sweep say which
perturbation changed nothing (OCR on "the ring"), so the page labels it a no-op instead of reading robustness."""
import pytest

from robustlab.datasets.synthetic import world
from robustlab.tasks.grounding import grounding_compare, grounding_sweep


@pytest.fixture(scope="module")
def setup():
    from vilt_helpers import _tiny_vilt

    sc = world.sample_scene(world.DEMO_SEED, 0)
    ref = world.referring_expression(sc, 0, 128)
    assert ref["expression"] == "the ring"
    return _tiny_vilt(), world.render_scene(sc, 128), ref


def test_compare_flags_the_no_op_part(setup):
    model, img, ref = setup
    r = grounding_compare(model, img, "the ring", ref["box"], "gaussian_noise", 5, "ocr", 4)
    assert r["perturbed_text"] == "the ring"
    assert r["no_op"] == {"image": False, "text": True} and r["changed"]
    assert r["label"] == "gaussian_noise s5 + ocr s4 (no-op)"
    assert [(c["modality"], c["label"], c["no_op"]) for c in r["conditions"]] == [
        ("image", "gaussian_noise s5", False), ("text", "ocr s4", True)]
    only = grounding_compare(model, img, "the ring", ref["box"], None, 0, "ocr", 4)
    assert not only["changed"] and only["no_op"] == {"image": None, "text": True}
    assert only["iou_perturbed"] == only["iou_clean"]
    clean = grounding_compare(model, img, "the ring", ref["box"], "gaussian_noise", 0, None, 0)
    assert clean["conditions"] == [] and not clean["changed"] and clean["label"] == "no perturbation (severity 0)"
    real = grounding_compare(model, img, "the ring", ref["box"], None, 0, "keyboard", 3)
    assert real["changed"] and real["no_op"]["text"] is False and real["perturbed_text"] != "the ring"


def test_sweep_rows_say_what_changed_nothing(setup):
    model, img, ref = setup
    rows = grounding_sweep(model, img, "the ring", ref["box"], "gaussian_noise", "ocr")
    by = {(r["condition"], r["severity"]): r for r in rows}
    assert {r["perturbation"] for r in rows} == {"gaussian_noise", "ocr", "gaussian_noise + ocr"}
    assert [by["text", k]["no_op"] for k in range(6)] == [False] + [True] * 5  # severity 0 is clean, not a no-op
    assert [by["image", k]["no_op"] for k in range(6)] == [False] * 6
    assert [by["both", k]["no_op"] for k in range(6)] == [False] * 6  # the image part changed
    assert [by["both", k]["unchanged"] for k in range(6)] == [""] + ["text"] * 5
    assert all(by["both", k]["iou"] == by["image", k]["iou"] for k in range(6))  # "both" is the image alone here
