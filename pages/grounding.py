"""Grounding: where does a model put a referring expression's box, clean vs perturbed, and across severities."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from robustlab.export.basket import Basket, builtin_source, load_upload, make_example, typed_source
from robustlab.datasets.synthetic import world
from robustlab.io.files import InputError
from robustlab.tasks.evaluate_fusion import draw_boxes, grounding_compare, grounding_sweep
from robustlab.models import ModelUnavailable, load_model
from robustlab.models.registry import KNOWN_MODELS, availability
from robustlab.perturb import list_perturbations
from robustlab.perturb.record import hash_value

DEFAULT = "builtin:tiny-vilt"
OTHER = "other hf-grounding spec…"
BUILTIN_SCENES = 300
NONE = "(none)"
GT, CLEAN, PERT = (40, 200, 80), (30, 120, 255), (240, 60, 40)

st.header("Grounding — where does the model find the expression?")
st.caption("A referring expression (\u201cthe small red circle\u201d) and an image: the model's box on the clean "
           "input and on the perturbed one, IoU to the ground truth (built-in scenes), and a sweep over severities.")


@st.cache_resource(show_spinner="Loading the grounding model…", max_entries=4)
def get_model(spec: str, device: str):
    return load_model(spec, device=None if device == "auto" else device)


@st.cache_data(show_spinner=False, max_entries=64)
def builtin_scene(index: int):
    sc = world.sample_scene(world.DEMO_SEED, index)
    return sc, world.render_scene(sc, 128)


@st.cache_resource(show_spinner=False, max_entries=32)
def compare(spec, device, _image, image_hash, expression, gt, img_p, img_s, txt_p, txt_s, seed):
    return grounding_compare(get_model(spec, device), _image, expression, gt_box=gt, perturb=img_p, severity=img_s,
                             text_perturb=txt_p, text_severity=txt_s, seed=seed)


@st.cache_data(show_spinner=False, max_entries=32)
def sweep(spec, device, _image, image_hash, expression, gt, img_p, txt_p, seed):
    return grounding_sweep(get_model(spec, device), _image, expression, gt_box=gt, perturb=img_p,
                           text_perturb=txt_p, seed=seed)


# ---- model ---------------------------------------------------------------------------------------------------
options = [DEFAULT] + KNOWN_MODELS["grounding"] + [OTHER]
c1, c2 = st.columns([2, 3])
with c1:
    choice = st.selectbox("Grounding model", options, key="gr_model",
                          help="builtin:tiny-vilt runs offline; hf-grounding models need the hub or a local copy.")
with c2:
    if choice == OTHER:
        spec = st.text_input("hf-grounding spec", "hf-grounding:google/owlvit-base-patch32", key="gr_spec",
                             help="hf-grounding:REPO_ID or hf-grounding:/path/to/a/local/folder").strip()
    else:
        spec = choice
if not spec.startswith(("builtin:", "hf-grounding:")):
    st.error(f"{spec!r} is not a grounding model spec: use builtin:tiny-vilt or hf-grounding:REPO_ID")
    st.stop()
if spec.startswith("hf-grounding:"):
    ok, why = availability(spec)
    if not ok:
        st.warning(f"**{spec}** is unavailable here: {why}. The offline alternative is **{DEFAULT}**.")
        st.stop()
    st.caption(f"{spec}: {why}")
device = st.session_state.get("device", "auto")
try:
    model = get_model(spec, device)
except (ModelUnavailable, ValueError, RuntimeError, OSError) as e:
    st.error(f"Model **{spec}** can't be loaded here: {e}")
    st.stop()
if not callable(getattr(model, "ground", None)):
    st.error(f"{spec} has no grounding head; pick {DEFAULT}.")
    st.stop()
if getattr(model, "random_init", False):
    st.warning(f"{spec} is randomly initialised: plumbing only, its boxes are not results.")

# ---- input -----------------------------------------------------------------------------------------------------
with st.container(border=True):
    src = st.radio("Image", ["builtin", "upload"], key="gr_source", horizontal=True,
                   format_func=lambda s: "Built-in scene" if s == "builtin" else "Upload")
    gt = None
    if src == "builtin":
        i1, i2 = st.columns([1, 3])
        with i1:
            idx = int(st.number_input("Built-in scene", 0, BUILTIN_SCENES - 1, 0, key="gr_scene"))
        scene, image = builtin_scene(idx)
        with i2:
            target = st.selectbox("Target object", range(len(scene.objects)), key=f"gr_target_{idx}",
                                  format_func=lambda k: scene.objects[k].phrase())
        ref = world.referring_expression(scene, int(target), 128)
        expr = st.text_input("Referring expression", ref["expression"], key=f"gr_expr_{idx}_{target}",
                             help="The built-in scene's expression for the target; edit it freely (the IoU stays "
                                  "against the chosen target's box).")
        gt = tuple(float(v) for v in ref["box"])
        source = builtin_source("gallery", world.DEMO_SEED, idx, f"scene-{world.DEMO_SEED}-{idx:05d}",
                                target=int(target))
        label = f"scene-{idx}"
        st.caption(f"#{idx} · \u201c{scene.caption}\u201d")
    else:
        f = st.file_uploader("Image file", type=["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"],
                             key="gr_upload", help="Any image Pillow reads, up to 50 MB and 40 megapixels.")
        if f is not None and st.session_state.get("gr_upload_id") != f.file_id:
            st.session_state["gr_upload_id"] = f.file_id
            try:
                st.session_state["gr_item"] = load_upload("image", f.name, f.getvalue())
                st.session_state.pop("gr_error", None)
            except InputError as e:
                st.session_state["gr_error"] = str(e)
        if st.session_state.get("gr_error"):
            st.error(st.session_state["gr_error"])
        item = st.session_state.get("gr_item")
        if item is None:
            st.info("Upload an image, or pick a built-in scene.")
            st.stop()
        image, source, label = item.data, item.source, item.label
        st.caption(f"{item.label}: {item.note} · no ground truth for an upload (IoU is to the clean prediction)")
        expr = st.text_input("Referring expression", "the red circle", key="gr_expr_upload")
    expr = expr.strip()
    if not expr:
        st.error("Type a referring expression (e.g. \u201cthe small red circle\u201d).")
        st.stop()

# ---- perturbations ------------------------------------------------------------------------------------------
img_specs = [s.name for s in list_perturbations("image") if s.modality == "image" and s.available]
txt_specs = [s.name for s in list_perturbations("text") if s.available]
p1, p2, p3, p4, p5 = st.columns([3, 2, 3, 2, 1])
with p1:
    img_p = st.selectbox("Image perturbation", [NONE] + img_specs, key="gr_img_pert",
                         index=1 + img_specs.index("gaussian_noise") if "gaussian_noise" in img_specs else 0)
with p2:
    img_s = st.slider("Image severity", 0, 5, 3, key="gr_img_sev")
with p3:
    txt_p = st.selectbox("Text perturbation", [NONE] + txt_specs, key="gr_txt_pert")
with p4:
    txt_s = st.slider("Text severity", 0, 5, 0, key="gr_txt_sev")
with p5:
    seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, key="gr_seed"))
img_p = None if img_p == NONE else img_p
txt_p = None if txt_p == NONE else txt_p

image_hash = hash_value(image)
try:
    with st.spinner("Grounding…"):
        res = compare(spec, device, image, image_hash, expr, gt, img_p, img_s if img_p else 0, txt_p,
                      txt_s if txt_p else 0, seed)
except (ValueError, RuntimeError, InputError) as e:
    st.error(f"Cannot ground this input: {e}")
    st.stop()

left, right = st.columns(2)
with left:
    st.markdown("**Clean**")
    marks = ([(gt, GT, "truth")] if gt else []) + [(res["clean_box"], CLEAN, "clean")]
    st.image(draw_boxes(image, marks), width="stretch")
    st.caption(f"\u201c{expr}\u201d")
with right:
    desc = " + ".join(x for x in ([f"{img_p} s{img_s}"] if img_p and img_s else [])
                      + ([f"{txt_p} s{txt_s}"] if txt_p and txt_s else [])) or "no perturbation (severity 0)"
    st.markdown(f"**Perturbed · {desc}**")
    marks = ([(gt, GT, "truth")] if gt else []) + [(res["perturbed_box"], PERT, "perturbed")]
    st.image(draw_boxes(res["perturbed_image"], marks), width="stretch")
    st.caption(f"\u201c{res['perturbed_text']}\u201d")
m1, m2, m3 = st.columns(3)
if gt:
    m1.metric("IoU to ground truth, clean", f"{res['iou_clean']:.2f}")
    m2.metric("IoU to ground truth, perturbed", f"{res['iou_perturbed']:.2f}",
              delta=f"{res['iou_perturbed'] - res['iou_clean']:+.2f}")
m3.metric("IoU clean vs perturbed box", f"{res['iou_clean_vs_perturbed']:.2f}")
st.caption("Boxes: green = ground truth, blue = clean prediction, red = perturbed prediction. A box counts as "
           "correct at IoU > 0.5.")

# ---- severity sweep -------------------------------------------------------------------------------------------
st.subheader("Severity sweep 0–5")
if not img_p and not txt_p:
    st.info("Pick an image or a text perturbation to sweep its severities.")
else:
    with st.spinner("Sweeping severities 0–5…"):
        rows = sweep(spec, device, image, image_hash, expr, gt, img_p, txt_p, seed)
    df = pd.DataFrame(rows)
    fig = go.Figure()
    names = {"image": f"image: {img_p}", "text": f"text: {txt_p}", "both": "both"}
    for cond, g in df.groupby("condition", sort=False):
        fig.add_trace(go.Scatter(x=g["severity"], y=g["iou"], mode="lines+markers", name=names[cond]))
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="IoU 0.5 (correct above)")
    fig.update_layout(xaxis_title="severity", yaxis_title=f"IoU to the {rows[0]['reference']}", height=300,
                      yaxis_range=[-0.02, 1.02], margin=dict(t=20, b=20))
    st.plotly_chart(fig, key="gr_sweep")
    with st.expander("Sweep table"):
        st.dataframe(df, hide_index=True, key="gr_sweep_table")

# ---- basket ------------------------------------------------------------------------------------------------------
basket = st.session_state.setdefault("basket", Basket())
b1, b2 = st.columns([1, 3])
with b1:
    add = st.button("Add to basket", key="gr_add", type="primary", icon="🧺",
                    disabled=res["image_result"] is None and res["text_result"] is None,
                    help="Keeps the perturbed image (and the perturbed expression, when a text perturbation is on) "
                         "with the model's boxes and IoUs, for export.")
if add:
    info = {"id": spec, "view": "grounding", "expression": expr,
            "scores": {"iou_clean": res["iou_clean"], "iou_perturbed": res["iou_perturbed"],
                       "iou_clean_vs_perturbed": res["iou_clean_vs_perturbed"]},
            "clean_box": list(res["clean_box"].as_tuple()), "perturbed_box": list(res["perturbed_box"].as_tuple()),
            "ground_truth": list(gt) if gt else None}
    added = 0
    if res["image_result"] is not None:
        added += basket.add(make_example("image", image, res["image_result"], source, label=label, model=info))
    if res["text_result"] is not None:
        tsrc = typed_source(expression_of=label) if src == "upload" else {**source, "field": "expression"}
        added += basket.add(make_example("text", expr, res["text_result"], tsrc, label=f"{label}-expression",
                                         model=info))
    if added:
        st.success(f"Added to the basket ({len(basket)} example(s)).")
    else:
        st.info("This example is already in the basket.")
with b2:
    st.page_link("pages/export.py", label=f"Export the basket ({len(basket)})", icon="📦")
