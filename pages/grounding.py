"""Grounding: where does a model put a referring expression's box, clean vs perturbed, and across severities."""
from __future__ import annotations

import streamlit as st

import ui
import ui.compare
from robustlab.export.basket import combined_example, typed_source
from robustlab.io.files import InputError
from robustlab.perturb.record import hash_value
from robustlab.tasks.grounding import grounding_compare, grounding_sweep
from ui.inputs import grounding_input
from ui.media import safe_md
from ui.panels import sweep_chart
from ui.peeling import atcr_view, extraction_view, peeling_panel
from ui.cache import shared

st.header("Grounding — where does the model find the expression?")
st.caption("A referring expression (\u201cthe small red circle\u201d) and an image: the model's box on the clean "
           "input and on the perturbed one, IoU to the ground truth (when the dataset has boxes), and a sweep over "
           "severities.")


# cached per model, image content, expression and perturbation (the underscored arguments are not hashed)
@shared("results")
def compare(spec, device, _image, image_hash, expression, gt, img_p, img_s, txt_p, txt_s, seed):
    return grounding_compare(ui.get_model(spec, device), _image, expression, gt_box=gt, perturb=img_p,
                             severity=img_s, text_perturb=txt_p, text_severity=txt_s, seed=seed)


@shared("results")
def sweep(spec, device, _image, image_hash, expression, gt, img_p, txt_p, seed):
    return grounding_sweep(ui.get_model(spec, device), _image, expression, gt_box=gt, perturb=img_p,
                           text_perturb=txt_p, seed=seed)


got = ui.task_model("grounding", "ground", key="gr_model")
if got is None:
    st.stop()
spec, device = got[0], ui.spec_device()[1]

# ---- input: an item of the sidebar's dataset (its expressions and boxes, when it has them) or one uploaded image --
picked = grounding_input()
if picked is None:
    st.stop()
image, expr, gt, source, label, src = picked

# ---- perturbations, the two boxes, IoU -----------------------------------------------------------------------
p1, p2 = st.columns([6, 1])
seed = int(p2.number_input("Seed", 0, 2**31 - 1, key="gr_seed", **ui.initial("gr_seed", value=0)))
with p1:
    ic, tc = ui.condition_row("image", "gr_", seed, {"image": ("gaussian_noise", 3), "text": (None, 2)})
image_hash = hash_value(image)
try:
    with st.spinner("Grounding…"):
        res = compare(spec, device, image, image_hash, expr, gt, ic.name, ic.severity, tc.name, tc.severity, seed)
except (ValueError, RuntimeError, InputError) as e:
    st.error(f"Cannot ground this input: {e}")
    st.stop()
left, right = st.columns(2)
left.markdown("**Clean**")
left.image(ui.boxed(image, gt, res["clean_box"]), width="stretch")
left.text(f"\u201c{expr}\u201d")
right.markdown(f"**Perturbed · {safe_md(res['label'])}**")  # what was computed, not the pickers
right.image(ui.boxed(res["perturbed_image"], gt, res["perturbed_box"], ui.PERT, "perturbed"), width="stretch")
right.text(f"\u201c{res['perturbed_text']}\u201d")
noop = [c for c in res["conditions"] if c["no_op"]]
if noop:  # a perturbation that changed nothing is a no-op: said so, never read as robustness
    what = " and ".join(f"{c['label']} changed nothing in the {'expression' if c['modality'] == 'text' else 'image'}"
                        for c in noop)
    real = [c["label"] for c in res["conditions"] if not c["no_op"]]
    with st.container(key="gr_no_op"):
        st.info(safe_md(f"No-op: {what}, so it says nothing about robustness to it. " + (
            f"The perturbed result is {' + '.join(real)} alone." if real else
            "Nothing was perturbed: the perturbed result is the clean one.")))
m1, m2, m3 = st.columns(3)
if gt:
    m1.metric("IoU to ground truth, clean", f"{res['iou_clean']:.2f}")
    m2.metric("IoU to ground truth, perturbed", f"{res['iou_perturbed']:.2f}",
              delta=f"{res['iou_perturbed'] - res['iou_clean']:+.2f}")
m3.metric("IoU clean vs perturbed box", f"{res['iou_clean_vs_perturbed']:.2f}")
st.caption("Boxes: green = ground truth, blue = clean prediction, red = perturbed prediction. A box counts as "
           "correct at IoU > 0.5.")

st.subheader("Severity sweep 0–5")
if ic.name or tc.name:
    with st.spinner("Sweeping severities 0–5…"):
        rows = sweep(spec, device, image, image_hash, expr, gt, ic.name, tc.name, seed)
    sweep_chart(rows, None, "gr_sweep")  # the conditions' names and no-ops come from the rows
else:
    st.info("Pick an image or a text perturbation to sweep its severities.")

ui.compare.grounding_panel(spec, res, lambda other: compare(other, device, image, image_hash, expr, gt, ic.name,
                                                            ic.severity, tc.name, tc.severity, seed), gt)

# ---- PEELING on the clean input: a shorter expression that still names the object, perturbed, grounded again ---
peeling_panel(spec, device, got[1], image, image_hash, expr, gt, source, label, src, seed)

# ---- basket: the perturbed image and expression with the model's boxes and IoUs, one example per condition -------
b1, b2 = st.columns([1, 3])
if b1.button("Add to basket", key="gr_add", type="primary", icon=":material/shopping_basket:",
             disabled=not res["changed"],
             help="Keeps the perturbed image and expression (one example: the IoUs were computed on both together) "
                  "with the model's boxes and IoUs, for export. A perturbation that changed nothing (a no-op) is "
                  "not exported as one."):
    info = {"id": spec, "view": "grounding", "expression": expr, "ground_truth": list(gt) if gt else None,
            "condition": res["label"], "conditions": res["conditions"],
            "scores": {k: res[k] for k in ("iou_clean", "iou_perturbed", "iou_clean_vs_perturbed")},
            "clean_box": list(res["clean_box"].as_tuple()), "perturbed_box": list(res["perturbed_box"].as_tuple())}
    tsrc = typed_source(expression_of=label) if src == "upload" else {**source, "field": "expression"}
    ex = combined_example([("image", image, res["image_result"], source, label),
                           ("text", expr, res["text_result"], tsrc, f"{label}-expression")], model=info)
    if ex is not None and ui.basket().add(ex):
        st.success(f"Added to the basket ({len(ui.basket())} example(s)).")
    else:
        st.info("This example is already in the basket.")
if res["conditions"] and not res["changed"]:
    b1.caption("Nothing to export: the perturbation changed nothing (a no-op).")
with b2:
    ui.export_link()

# ---- PEELING's evaluations: extraction quality (RQ4) and the ATCR of tests a person labels -----------------------
st.divider()
extraction_view()
atcr_view(spec, device, got[1])
