"""The Benchmark page's Protocol mode: one of the papers' shipped protocols (robustlab.bench.protocol) run on the
sidebar's dataset — its perturbations with variants and severities, combinations, adaptation methods and report
layout — with every condition set and its resolved parameters shown before the run."""
from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
from ui.media import safe_md
from robustlab.bench import SweepError, SweepSpec
from robustlab.datasets.registry import get_entry
from robustlab.bench.protocol import condition_rows, load_protocol, native_kind, shipped
from robustlab.tasks.registry import get
from ui import bench
from ui.multiselect_state import kept_list


def _runs_on(p, dataset: dict, kind: str) -> bool:
    tasks = get_entry(dataset["name"])["tasks"]
    return native_kind(p) == kind and all(kind in get(t).kinds and (get(t).dataset_task or t) in tasks
                                          for t in p.data["tasks"])


def configure() -> tuple[SweepSpec, str] | None:
    """The protocol's widgets -> (spec, run name), or None after one line saying what is missing."""
    got = bench.sweep_dataset()
    if got is None:
        return None
    dataset, kind = got
    protos = {n: load_protocol(n, allow_files=False) for n in shipped()}  # a viewer picks shipped ones only
    fits = [n for n, p in protos.items() if _runs_on(p, dataset, kind)]
    if not fits:
        st.warning(f"No shipped protocol's task runs on {dataset['name']}: pick another dataset in the sidebar.")
        return None
    name = st.selectbox("Protocol", fits, key="bench_protocol", format_func=lambda n: f"{n} — {protos[n].title}",
                        **ui.valid("bench_protocol", fits))
    p = protos[name]
    st.caption(f"{p.paper}. The paper's data: {p.dataset.get('paper') or p.dataset['name']}; this run uses the "
               f"sidebar's dataset ({dataset['name']}). Headline metric: {p.report.get('headline') or '—'}.")
    c1, c2, c3 = st.columns([2, 1, 1])
    task = p.data["tasks"][0]
    models = ui.models_for("video-retrieval" if task == "retrieval" and kind == "video" else task)
    default = [m for m in p.data.get("models", []) if m in models] or models[:1]
    chosen = c1.multiselect("Models", models, key=f"bench_protocol_models_{name}",
                            **kept_list(f"bench_protocol_models_{name}", models, default))
    if dataset["name"] in bench.BUILTIN:
        hi = ui.DEMO_N if kind == "image" else ui.VIDEO_DEMO_N
        ui.clamp("bench_protocol_n", 2, hi, default_value=50)
        n = int(c2.number_input("Items", 2, hi, key="bench_protocol_n", **ui.initial("bench_protocol_n", value=50)))
    else:
        ui.clamp("bench_protocol_n", 0, 10**7)
        n = int(c2.number_input("Items (0 = all)", 0, 10**7, step=100, key="bench_protocol_n",
                                **ui.initial("bench_protocol_n", value=0))) or None
    pairs = c3.checkbox("Combinations", key="bench_protocol_pairs", **ui.initial("bench_protocol_pairs", value=True),
                        help="The protocol's visual × text pairs (Schiappa et al.'s 66).") if p.pairs() else False
    run_name = st.text_input("Run name", key="bench_protocol_run",
                             **ui.initial("bench_protocol_run", value=bench.default_run_name(dataset["name"], name)),
                             max_chars=64, help=f"{bench.RUN_NAME_RULE}. The same name again resumes the run.")
    device = ui.spec_device()[1]
    if not chosen:
        st.warning(f"Pick at least one model that can do {task}.")
        return None
    try:
        spec = p.build_spec(models=chosen, dataset={**dataset, "n": n}, combine=None if pairs else "none",
                            device=None if device == "auto" else device)
    except SweepError as e:
        st.warning(f"{e}.")
        return None
    nr = spec.protocol.get("not_run") or []
    if nr:
        st.info(f"{len(nr)} of the protocol's perturbations cannot run here and are left out (the report lists "
                "them): " + "; ".join(f"{x['perturbation']} — {safe_md(x['reason'], hide=True)}" for x in nr))
    st.caption(f"{len(spec.cells())} cells: {len(chosen)} model(s) × {len(spec.conditions)} condition sets on "
               f"{n or 'all'} items.")
    with st.expander("Every condition set with its resolved parameters"):
        rows = [{"#": r["index"], **{f"{q['axis']}": q["perturbation"] + (f" s{q['severity']}" if "severity" in q
                                                                          else "") for q in r["parts"]},
                 "category": " + ".join(str(q.get("category") or "") for q in r["parts"]),
                 "parameters": "; ".join(str(q["params"]) for q in r["parts"])} for r in condition_rows(spec, p)]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    return spec, run_name
