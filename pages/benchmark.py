"""Benchmark: a robustness sweep (models × task × perturbations × severities) over the sidebar's dataset, run in the
background with progress, Cancel and Resume, or a finished run folder opened; the report's plots, the γ table,
the worst examples (each opens on the Retrieval page) and the report's downloads."""
from __future__ import annotations

import streamlit as st

import ui
from robustlab.adapt import sweep_methods
from robustlab.datasets.registry import get_entry
from robustlab.bench import SweepError, SweepSpec, build_spec
from robustlab.models.interventions import names as intervention_names
from robustlab.perturb import list_perturbations
from robustlab.tasks.registry import get, names  # (robustlab.bench registers the PEELING task)
from ui import bench, bench_protocol
from ui import page_memory
from ui.multiselect_state import kept_list

SEVS, METHODS = [1, 2, 3, 4, 5], sweep_methods()  # the adaptation methods of `robustlab bench --adapt all`
ADAPT = [m.name for m in METHODS]
FORM = ("bench_mode", "bench_task", "bench_models", "bench_n", "bench_pmode", "bench_cat", "bench_pnames", "bench_text",
        "bench_iv", "bench_adapt", "bench_sev", "bench_name", "bench_builtin", "bench_protocol", "bench_protocol_n",
        "bench_protocol_pairs", "bench_protocol_run", "bench_open", "bench_worst_cell")
page_memory.keep("benchmark", FORM, ("bench_protocol_models_",))  # back from another page: the form as it was

st.header("Benchmark — a robustness sweep")
st.caption("Every (model, perturbation, severity) cell over one dataset, one result file per cell in a run folder "
           "in the server's runs folder (resumable), then the report: heatmap, severity curves, γ per category, "
           "worst examples.")
MODES = ["New sweep", "A paper's protocol", "Open a run"]
mode = st.radio("Mode", MODES, key="bench_mode", horizontal=True, **ui.valid("bench_mode", MODES),
                label_visibility="collapsed",
                help="A paper's protocol: MSRVTT-P, Qiu et al., MLVP, HAT-VTR... with the paper's parameters, "
                     "combinations and tables (robustlab protocols).")


def configure() -> tuple[SweepSpec, str] | None:
    """The sweep's widgets -> (spec, run name), or None after one line saying what is missing."""
    got = bench.sweep_dataset()
    if got is None:
        return None
    dataset, kind = got
    runs_on = get_entry(dataset["name"])["tasks"]
    tasks = sorted((t for t in names() if kind in get(t).kinds and (get(t).dataset_task or t) in runs_on),
                   key=lambda t: t != "retrieval")
    if not tasks:
        st.warning(f"No task runs on {dataset['name']}.")
        return None
    c1, c2, c3 = st.columns([1, 2, 1])
    task = c1.selectbox("Task", tasks, key="bench_task", help="Tasks of the registry that run on this dataset.",
                        **ui.valid("bench_task", tasks))
    models = ui.models_for("video-retrieval" if task == "retrieval" and kind == "video" else task)
    side = ui.spec_device()[0]
    kept = st.session_state.get("bench_models")  # another task: keep the models that can do it
    # the default is the current choice, not an empty list: a browser that draws the box anew (a change made while
    # the page's first run was still going, on a loaded server) shows, and sends back, that choice
    default = [m for m in kept if m in models] if kept is not None else [side] if side in models else models[:1]
    chosen = c2.multiselect("Models", models, key="bench_models", **kept_list("bench_models", models, default))
    if dataset["name"] in bench.BUILTIN:
        hi = ui.DEMO_N if kind == "image" else ui.VIDEO_DEMO_N
        ui.clamp("bench_n", 2, hi, default_value=50)
        n = int(c3.number_input("Items", 2, hi, key="bench_n", **ui.initial("bench_n", value=50),
                                help="The first N items of the sidebar's built-in gallery."))
    else:
        ui.clamp("bench_n", 0, 10**7)
        n = int(c3.number_input("Items (0 = all)", 0, 10**7, step=100, key="bench_n",
                                **ui.initial("bench_n", value=0))) or None
    specs = [s for s in list_perturbations(kind) if s.available]
    texts = bench.with_variants([s for s in list_perturbations("text") if s.available])
    p1, p2 = st.columns([1, 2])
    hows = ["all", "a category", "chosen names", "none"]
    how = p1.radio("Perturbations", hows, key="bench_pmode", **ui.valid("bench_pmode", hows))
    with p2:
        if how == "a category":
            cats = list(dict.fromkeys(s.category for s in specs))
            sel = "category:" + st.selectbox(f"Category ({kind})", cats, key="bench_cat", **ui.valid("bench_cat", cats))
        elif how == "chosen names":
            chosen_names = bench.with_variants(specs)
            sel = st.multiselect(f"{kind.capitalize()} perturbations", chosen_names, key="bench_pnames",
                                 **kept_list("bench_pnames", chosen_names),
                                 help="NAME/VARIANT: another paper's parameters (e.g. shot_noise/schiappa_video).")
        elif how == "none":
            sel = ""
        else:
            sel = "all"
            st.caption(f"All {len(specs)} available {kind} perturbations.")
        text = st.multiselect("Text perturbations (optional)", texts, key="bench_text",
                              **kept_list("bench_text", texts))
        ivs = st.multiselect("Model interventions (optional; QUAG, input ablations)", intervention_names(),
                             key="bench_iv", **kept_list("bench_iv", intervention_names()),
                             help="Each one a condition on clean inputs (Rawal et al.'s Table 1); "
                             "fusion models and the tasks vqa, itm, grounding, clavi.") \
            if get(task).takes_interventions else []
        ads = st.multiselect("Test-time adaptation (optional; every shift of one side)", ADAPT,
                             key="bench_adapt", **kept_list("bench_adapt", ADAPT),
                             help=f"{', '.join(m.label for m in METHODS)} adapting the shifted side's queries "
                             "(robustlab.adapt; HAT-VTR's Tables 1–5 in the report).") if task == "retrieval" else []
    s1, s2 = st.columns([2, 1])
    sev = s1.multiselect("Severities", SEVS, key="bench_sev", **kept_list("bench_sev", SEVS, SEVS))
    name = s2.text_input("Run name", key="bench_name", max_chars=64,
                         **ui.initial("bench_name", value=bench.default_run_name(dataset["name"], task)),
                         help=f"{bench.RUN_NAME_RULE}. A folder under the runs folder; the same name again resumes "
                              "or extends it.")
    device = ui.spec_device()[1]
    try:  # the one builder robustlab bench uses
        spec = build_spec(models=chosen, dataset={**dataset, "n": n}, tasks=[task], perturbations=sel or None,
                          text_perturbations=text or None, severities=sev, interventions=",".join(ivs) or None,
                          adapt=",".join(ads) or None, device=None if device == "auto" else device, kind=kind)
    except SweepError as e:
        st.warning(f"{e}." if sev else "Pick at least one severity.")
        return None
    conds = spec.conditions
    n_vis = len({(c["visual"].name, c["visual"].variant) for c in conds if "visual" in c and "text" not in c})
    n_txt = len({(c["text"].name, c["text"].variant) for c in conds if "text" in c and "visual" not in c})
    if not n_vis and not n_txt and not ivs:
        st.warning("Pick at least one perturbation" + (" or intervention." if get(task).takes_interventions else "."))
        return None
    if not chosen:
        st.warning(f"Pick at least one model that can do {task}.")
        return None
    st.caption(f"{len(spec.cells())} cells: {len(chosen)} model(s) × {len(conds)} condition sets "
               f"(clean, {n_vis} × {len(sev)} visual, {n_txt} × {len(sev)} text"
               f"{', and their pairs' if n_vis and n_txt else ''}{f', {len(ivs)} interventions' if ivs else ''}) "
               f"on {n or 'all'} items.")
    return spec, name


if mode != "Open a run":
    got = configure() if mode == "New sweep" else bench_protocol.configure()
    job = st.session_state.get(bench.JOB)
    busy = job is not None and job.running
    out = bench.run_path(got[1]) if got else None
    if st.button("Run sweep", type="primary", key="bench_go", disabled=busy or out is None):
        why = bench.conflict(got[0], out)
        if why:
            st.error(why)
        else:
            bench.start(got[0], out)
    bench.job_panel()
    shown = None if st.session_state.get(bench.JOB) is None else st.session_state.get(bench.SHOWN)
else:
    folders = bench.run_folders()
    if not folders:
        st.info("No run folder in the runs folder yet: run a sweep first.")
    shown = st.selectbox("Run folder", folders, key="bench_open",
                         **ui.valid("bench_open", folders)) if folders else None

if shown:
    bench.show_report(bench.runs_root() / shown)
