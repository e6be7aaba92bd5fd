"""The global sidebar (app.py): model, baseline, dataset, device; and the presets by which another page
(Benchmark's worst examples) opens Retrieval or Grounding on one example (split from ui.state, issue 46)."""
from __future__ import annotations

import streamlit as st

from ui import operator
from ui.compare import picker
from ui.folders import REQUEST, sidebar_section
from ui.loaders import (CUSTOM_EXAMPLE, DATASETS, DEMO_N, OTHER_MODEL, SWEEP_GALLERY, VIDEO_DEMO_N, offered_models,
                        sweep_gallery_back, sweep_gallery_counts, sweep_gallery_of)
from ui.media import safe_md
from ui.widget_state import initial, valid


def sidebar() -> None:
    """The global sidebar: model, dataset, device (app.py)."""
    from robustlab.engine.device import describe_devices

    st.title("robustlab")
    st.caption("How vision-language models break under real-world perturbations.")
    cfg = operator.config()
    for p in cfg.problems[:3]:
        st.warning(f"Operator configuration: {safe_md(p)}")
    options = offered_models() + ([OTHER_MODEL] if cfg.typed_specs else [])
    choice = st.selectbox("Model", options, key="model_choice", **valid("model_choice", options),
                          help="Built-in models run offline; the operator decides which other models this dashboard "
                               "offers.")
    if choice == OTHER_MODEL:
        st.text_input("Model spec", key="custom_spec", max_chars=500, placeholder=CUSTOM_EXAMPLE,
                      **initial("custom_spec", value=""),
                      help="open_clip:ARCH/TAG, open_clip:ARCH/path/to/weights, hf:REPO_ID, hf-grounding:REPO_ID or "
                           "a local folder -- as far as the operator allows (hub downloads: "
                           f"{'on' if cfg.allow_hub else 'off'})")
    picker(offered_models())
    g = st.session_state.get("upload_gallery")
    counts = {"builtin": f" ({DEMO_N})", "builtin-videos": f" ({VIDEO_DEMO_N})",
              "upload": f" ({len(g) if g else 0}{' videos' if g is not None and g.kind == 'video' else ''})"}
    counts.update(sweep_gallery_counts())
    labels = [DATASETS[d] + counts.get(d, "") for d in DATASETS]
    if st.session_state.get("dataset_labels", labels) != labels and "dataset" in st.session_state:
        # the radio's value is its label: once "My uploads (0)" reads "(6)", send the choice again, or the browser keeps
        # the old label, shows nothing selected and the next run falls back to the built-in images
        st.session_state["dataset"] = st.session_state["dataset"]
    st.session_state["dataset_labels"] = labels
    st.radio("Dataset", list(DATASETS), key="dataset", format_func=lambda d: DATASETS[d] + counts.get(d, ""),
             **initial("dataset", list(DATASETS), index=0))
    sweep_gallery_back()
    if st.session_state.get("dataset") == "folder":
        sidebar_section()
    devices = ["auto"] + describe_devices()
    st.selectbox("Device", devices, key="device", **valid("device", devices),
                 help="auto = CUDA when there is a GPU, else CPU")


# ---- presets: another page (Benchmark's worst examples) opens Retrieval / Grounding on one example ----------
def _preset_common(model: str, dataset: dict | None) -> None:
    """The sidebar's model and dataset for a preset (a button callback: it runs before the sidebar is drawn)."""
    s = st.session_state
    before = s.get("model_choice")
    if s.get("baseline") == model and before not in (None, model, OTHER_MODEL):
        s["baseline"] = before  # the example's model was the baseline: the comparison stays, the other way round
    if model in offered_models():
        s["model_choice"] = model
    else:  # checked by the operator's rules when it loads (a typed spec)
        s["model_choice"], s["custom_spec"] = OTHER_MODEL, model
    name = (dataset or {}).get("name")
    s.pop(SWEEP_GALLERY, None)
    if name in ("builtin", "builtin-videos"):
        s["dataset"] = name
        sub = sweep_gallery_of(dataset)  # the sweep's first n items (not the 300-item demo): its ranks hold here
        if sub is not None:
            s[SWEEP_GALLERY] = sub
    elif name and (dataset or {}).get("root"):
        s["dataset"], s[REQUEST] = "folder", (name, str(dataset["root"]), dataset.get("split"))
        s["folder_max"] = int(dataset.get("n") or 0)  # the sweep's first n items, as it ran


def _pert(prefix: str, short: str, cond: dict | None) -> None:
    cond = cond or {}
    st.session_state[f"{prefix}{short}_pert"] = cond.get("name") or "(none)"
    if cond.get("name"):
        st.session_state[f"{prefix}{short}_sev"] = int(cond.get("severity") or 0)


def preset_retrieval(model: str, visual: dict | None, text: dict | None, query, direction: str | None,
                     dataset: dict | None = None) -> None:
    """Set the Retrieval page's state to one example, then ``st.switch_page("pages/retrieval.py")``. Call it from a
    button's ``on_click`` (widget keys can only be set before their widgets are drawn in a run).

    ``visual`` / ``text``: condition dicts ``{"name", "severity", "seed"}`` (None: clean); ``query``: the item
    (t2i/t2v: its first caption is the query; i2t/v2t: it is the query); ``direction``: "t2i", "i2t", "t2v",
    "v2t"; ``dataset``: a SweepSpec dataset dict, mapped to the sidebar's choice. The keys set are the Retrieval
    page's own widget keys: ``model_choice``, ``dataset`` (and ``folder_*``), ``direction``, ``query_mode`` +
    ``query_idx`` or ``query_visual``, ``seed``, ``img_pert``/``vid_pert`` and ``txt_pert`` with their ``_sev``."""
    s = st.session_state
    _preset_common(model, dataset)
    kind = "video" if (direction or "").endswith("v") or (direction or "").startswith("v") else "image"
    _pert("", "vid" if kind == "video" else "img", visual)
    _pert("", "txt", text)
    s["seed"] = int((visual or {}).get("seed") or (text or {}).get("seed") or 0)
    if direction:
        s["direction"] = direction
    if query is not None:
        if direction and direction[0] == "t":
            s["query_mode"], s["query_idx"] = "gallery caption", int(query)
        else:
            s["query_visual"] = int(query)


def preset_grounding(model: str, visual: dict | None, text: dict | None, item, dataset: dict | None = None) -> None:
    """Set the Grounding page's state to one item of the dataset and one condition (a button's ``on_click``, as
    :func:`preset_retrieval`): ``gr_model``, ``gr_source``, ``gr_scene``, ``gr_seed``, ``gr_img_pert``/``gr_txt_pert``
    and their ``_sev``."""
    s = st.session_state
    _preset_common(model, dataset)
    s["gr_model"] = model
    _pert("gr_", "img", visual)
    _pert("gr_", "txt", text)
    s["gr_seed"] = int((visual or {}).get("seed") or (text or {}).get("seed") or 0)
    if item is not None:
        s["gr_source"], s["gr_scene"] = "dataset", int(item)


__all__ = ["sidebar", "preset_retrieval", "preset_grounding"]
