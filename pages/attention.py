"""Attention: does the model fuse the modalities? QUAG-ablated attention maps and Table 1 (Rawal et al.)."""
from __future__ import annotations

import streamlit as st

import ui
from robustlab.datasets import build
from robustlab.diagnostics import quag
from robustlab.diagnostics.attention_view import ablation_view
from robustlab.models.interventions import names as intervention_names
from robustlab.perturb.record import hash_value
from ui.attention import answer_bars, heatmaps, rank_section, token_overlay
from ui.attention_table1 import table1_section
from ui.inputs import upload
from ui.multiselect_state import kept_list
from ui.quag_sim import simulation_section
from ui.cache import shared

st.header("Attention — does the model fuse the modalities?")
st.caption("QUAG (Rawal et al.) averages quadrants of every fusion layer's attention — VV, VT (visual queries × "
           "text keys), TV, TT — and asks how much the answer depends on them. Before / after on one colour scale; "
           "white lines: quadrant boundaries; grey bands: padding.")
st.caption("Its own input, not the sidebar's dataset: a question with its answer needs the built-in QA scenes and "
           "videos, or an image or video you upload here with your question.")


@shared("models")
def qa_data(name: str):
    return build(name, split="test", n=300 if name == "builtin" else 200)


@shared("results")
def view_of(spec, device, _visual, visual_hash, question, ablations):
    return ablation_view(ui.get_model(spec, device), _visual, question, list(ablations))


got = ui.task_model("vqa", "forward_with_attention", key="at_model")
if got is None:
    st.stop()
spec, model = got
device = ui.spec_device()[1]
if not callable(getattr(model, "forward_with_attention", None)):
    st.error(f"{spec} exposes no fusion attention: pick builtin:tiny-vilt or an hf-vilt model.")
    st.stop()

# ---- input: a built-in scene or event video with its question, or an upload -------------------------------------
SOURCES = {"scene": "Built-in scene", "video": "Built-in video", "image": "Upload an image",
           "upload_video": "Upload a video"}
src = st.radio("Input", list(SOURCES), key="at_source", horizontal=True, format_func=SOURCES.get,
               **ui.valid("at_source", list(SOURCES)))
question, answer = "", None
with st.container(border=True):
    if src in ("scene", "video"):
        ds = qa_data("builtin" if src == "scene" else "builtin-videos")
        ui.clamp(f"at_item_{src}", 0, len(ds) - 1)
        i = int(st.number_input("Item", 0, len(ds) - 1, key=f"at_item_{src}", **ui.initial(f"at_item_{src}", value=0)))
        visual, qas = ds.visual(i), ds.item(i).questions
        if qas:
            question, answer = qas[0].question, qas[0].answer
    else:
        item = upload("image" if src == "image" else "video")
        if item is None:
            st.stop()
        visual = item.data
        question = "is there a red circle?" if src == "image" else "what happens first?"
    # one question box per input: the digest after hash_value's "xxh3_128:" prefix (its first 8 characters were the
    # prefix itself, so every item shared one box and kept the first item's question)
    q_key = f"at_q_{src}_{hash_value(visual).split(':')[-1][:16]}"
    question = st.text_input("Question", key=q_key, **ui.initial(q_key, value=question))
    if answer is not None:
        st.caption(f"Dataset answer: **{answer}**")
if not question.strip():
    st.info("Type a question about the input.")
    st.stop()

c1, c2, c3 = st.columns([3, 1, 1])
options = list(quag.PRESETS) + ["VV", "VT", "TV", "TT"] + [n for n in intervention_names()
                                                              if n.startswith("quag-attention:")]
if not getattr(model, "supports_quag_attention", False):
    options = [o for o in options if not o.startswith("quag-attention:")]
ablations = c1.multiselect("Ablations (every fusion layer)", options, key="at_abl",
                           **kept_list("at_abl", options, list(quag.PRESETS)),
                           help="The paper's four short-circuits, single quadrants, or QUAG-attention (fusion models).")
try:
    with st.spinner("Running the model with each ablation…"):
        view = view_of(spec, device, visual, hash_value(visual), question.strip(), tuple(ablations))
except (ValueError, RuntimeError) as e:
    st.error(f"Cannot run this input: {e}")
    st.stop()
st.session_state.setdefault("at_layer", min(1, view.n_layers - 1))  # Rawal et al.'s Fig. 5: the second layer
ui.clamp("at_layer", 0, view.n_layers - 1)
layer = int(c2.selectbox("Layer", range(view.n_layers), key="at_layer",
                         **ui.initial("at_layer", range(view.n_layers), index=0)))
heads = ["mean"] + list(range(view.n_heads))
head_opt = c3.selectbox("Head", heads, key="at_head", **ui.valid("at_head", heads))
head = None if head_opt == "mean" else int(head_opt)
shown = ["baseline"] + list(ablations)

st.plotly_chart(heatmaps(view, layer, head, shown), key="at_heat", width="stretch",
                config={"toImageButtonOptions": {"format": "svg"}})
a0 = view.answer("baseline")
st.dataframe({"ablation": shown, "answer": [view.answer(n) for n in shown],
              f"P({a0}) (the baseline's answer)": [round(view.captures[n].outputs.get("vqa_scores", view.captures[
                  n].outputs.get("scores", {})).get(a0, 0.0), 4) for n in shown],
              "attention change (L1 per row)": [round(view.change(n, layer, head), 4) for n in shown],
              "what the ablation does": [view.notes.get(n, "") or "—" for n in shown]}, hide_index=True,
             width="stretch")
mass = view.quadrant_mass("baseline", layer, head)
st.caption("Attention mass per quadrant in this layer (mean over valid queries, baseline): "
           + ", ".join(f"{q} {mass[q]:.2f}" for q in quag.QUADRANTS)
           + ". QUAG keeps each row's mass per quadrant and flattens it, so a change here comes from earlier layers.")

# ---- one text token's attention on the image or frames ------------------------------------------------------------
toks = view.text_tokens()
t1, t2 = st.columns(2)
tok_label = lambda p: dict(toks).get(p, str(p))  # noqa: E731
pos = t1.selectbox("Query token", [p for p, _ in toks], key="at_tok", format_func=tok_label,
                   **ui.valid("at_tok", [p for p, _ in toks], format_func=tok_label))
cmp_opts = list(ablations) or ["baseline"]
ui.valid("at_cmp", cmp_opts)
st.session_state.setdefault("at_cmp", "crossmodal" if "crossmodal" in cmp_opts else cmp_opts[0])
other = t2.selectbox("Compare with", cmp_opts, key="at_cmp", **ui.initial("at_cmp", cmp_opts, index=0))
st.plotly_chart(token_overlay(view, list(dict.fromkeys(["baseline", other])), layer, head, int(pos), visual),
                key="at_overlay", width="stretch")
st.subheader("Answers before and after")
st.plotly_chart(answer_bars(view, shown), key="at_answers", width="stretch")
st.download_button("Attention numbers (CSV)", view.csv(layer, head), file_name=f"attention_layer{layer}.csv",
                   mime="text/csv", key="at_csv", icon=":material/download:")
with st.expander("Rank of the attention before and after the short-circuits (Lemma 2.2)"):
    rank_section(view, layer, head)

table1_section(model, spec)  # Rawal et al.'s Table 1 over built-in items (ui/attention_table1.py)

simulation_section()  # Rawal et al. §3, Fig. 2: α-coupled tokens, MSE vs α (a toy model, not the sidebar's)
