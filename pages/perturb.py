"""Perturb: any perturbation on an image, a video or a caption; every severity at a glance; keep examples."""
from __future__ import annotations

import streamlit as st

import ui
from robustlab.export.basket import make_example
from robustlab.io.files import InputError
from robustlab.perturb import perturb
from robustlab.perturb.record import hash_value
from ui.inputs import KINDS, choose_input
from ui.media import mp4_source
from ui.panels import caption_diff, severity_strip
from ui.cache import shared

st.header("Perturb — see exactly what a perturbation does")


# cached by content hash (the underscored argument is not hashed)
@shared("results")
def run_perturbation(_x, input_hash: str, name: str, severity: int, seed: int, variant: str):
    return perturb(_x, name, severity, seed=seed, variant=variant)


@shared("results")
def mp4_bytes(_frames, frames_hash: str, fps: float) -> bytes:
    from robustlab.io.media import write_mp4

    return write_mp4(_frames, fps)


kind = st.radio("Input", list(KINDS), key="pt_kind", horizontal=True, format_func=KINDS.get,
                **ui.valid("pt_kind", list(KINDS)))
with st.container(border=True):
    item = choose_input(kind)
if item is None:
    st.stop()
x = item.data[0] if kind == "text" else item.data
x_hash = hash_value(x)

# ---- the catalogue: every perturbation that accepts this input, by modality and category -------------------
picked = ui.perturbation_catalogue(kind)
if picked is None:
    st.stop()
spec, variant, seed = picked
name = spec.name

bar = st.progress(0.0, text=f"Applying {name} at severities 1–5…")
try:
    strip = {}
    for k in range(1, 6):
        strip[k] = run_perturbation(x, x_hash, name, k, seed, variant)
        bar.progress(k / 5, text=f"Applying {name}… severity {k} of 5")
except Exception as e:  # noqa: BLE001 - one perturbation failing must not take the page down
    st.error(f"{name} cannot run on this input: {e}" if isinstance(e, (InputError, ValueError, TypeError, RuntimeError))
             else f"{name} failed on this input ({type(e).__name__}: {e})")
    st.stop()
finally:
    bar.empty()
severity_strip(kind, x, [strip[k].output for k in range(1, 6)])

# ---- one severity, side by side ---------------------------------------------------------------------------
severity = st.slider("Severity (0 = clean)", 0, 5, key="pt_severity", **ui.initial("pt_severity", value=3))
res = strip[severity] if severity else run_perturbation(x, x_hash, name, 0, seed, variant)
left, right = st.columns(2)
left.markdown("**Clean**")
right.markdown(f"**{name} · {variant} · severity {severity}**")
if kind == "image":
    left.image(x, width="stretch")
    right.image(res.output, width="stretch")
elif kind == "video":
    try:
        left.video(mp4_source(mp4_bytes(x, x_hash, item.fps)))  # a data: URL: never a 404 (see ui.media)
        right.video(mp4_source(mp4_bytes(res.output, res.record["output_hash"], item.fps)))
    except (ImportError, ValueError, RuntimeError) as e:
        st.error(f"Cannot encode the video for playback: {e}")
else:
    caption_diff(x, res.output, left, right)
if res.record.get("note"):
    st.info(res.record["note"])
p1, p2 = st.columns([1, 2])
with p1:
    st.markdown("**Resolved parameters**")
    st.json(res.record["params"] or {"severity 0": "clean pass-through"}, expanded=True)
with p2.expander("Record (regenerates this output bit for bit)"):
    st.json(res.record)

# ---- basket ---------------------------------------------------------------------------------------------------
b1, b2 = st.columns([1, 3])
if b1.button("Add to basket", key="pt_add", type="primary", icon=":material/shopping_basket:"):
    ex = make_example(kind, x, res, item.source, label=item.label, fps=item.fps)
    if ui.basket().add(ex):
        st.toast(f"Added {ex.title()}")
        st.success(f"Added to the basket ({len(ui.basket())} example(s)).")
    else:
        st.info("This example is already in the basket.")
with b2:
    ui.export_link()
