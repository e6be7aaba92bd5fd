"""robustlab dashboard: ``streamlit run app.py``.

The entry point: a global sidebar (model, dataset, device) and st.navigation over the views in pages/.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

st.set_page_config(page_title="robustlab", page_icon="🧪", layout="wide")

from robustlab.engine.device import describe_devices  # noqa: E402
from robustlab.perturb.allocator import tune_allocator  # noqa: E402
from robustlab.models import list_models  # noqa: E402
import ui  # noqa: E402

HERE = Path(__file__).resolve().parent
tune_allocator()  # process-wide, once: keep freed NumPy temporaries (glibc) for the per-frame perturbations
# (file, title, icon): one thin file per view
VIEWS = [
    ("pages/retrieval.py", "Retrieval", "🔎"),
    ("pages/grounding.py", "Grounding", "🎯"),
    ("pages/hubness.py", "Hubness", "🕸️"),
    ("pages/embeddings.py", "Embeddings", "🗺️"),
    ("pages/perturb.py", "Perturb", "🧪"),
    ("pages/export.py", "Export", "📦"),
]
PAGES = [st.Page(f, title=t, icon=i, default=(f == "pages/retrieval.py")) for f, t, i in VIEWS if (HERE / f).exists()]

with st.sidebar:
    st.title("robustlab")
    st.caption("How vision-language models break under real-world perturbations.")
    builtin = [m["spec"] for m in list_models() if m["task"] in ("retrieval", "video-retrieval")]
    options = builtin + ["other (open_clip / hf / path)…"]
    choice = st.selectbox("Model", options, index=0, key="model_choice",
                          help="Built-in models run offline. Hub models need network access or a local checkpoint.")
    if choice == options[-1]:
        spec = st.text_input("Model spec", value=st.session_state.get("custom_spec", "open_clip:ViT-B-32/openai"),
                             key="custom_spec",
                             help="open_clip:ARCH/TAG, open_clip:ARCH/path/to/weights, hf:REPO_ID or a local folder")
        st.session_state["model_spec"] = spec.strip() or ui.DEFAULT_MODEL
    else:
        st.session_state["model_spec"] = choice
    n_up = len(st.session_state.get("upload_gallery") or [])
    st.radio("Dataset", ["builtin", "upload"], key="dataset", horizontal=True,
             format_func=lambda d: f"Built-in demo ({ui.DEMO_N})" if d == "builtin" else f"My uploads ({n_up})")
    st.selectbox("Device", ["auto"] + describe_devices(), key="device",
                 help="auto = CUDA when there is a GPU, else CPU")

st.navigation(PAGES).run()
