"""The Grounding page's PEELING panel (:mod:`robustlab.diagnostics.peeling`): a shorter expression that a VQA model
says still names exactly one object (P1), perturbed (P2: back-translation, a synonym, a keyboard typo), grounded
again on the same image; IoU ≤ 0.5 to the ground truth is an issue. Each test can go to the basket (a
``peeling_p2`` text example that the export regenerates and writes in the paper's CSV / OFA TSV layouts).

Also the page's two PEELING evaluations: :func:`extraction_view` (precision / recall / F1 of the object & property
extraction against labelled expressions, the paper's RQ4) and :func:`atcr_view` (a person labels a sample of
generated tests valid / invalid; the ATCR comes from those labels; labels download as JSON and load back)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from robustlab.diagnostics import peeling as P
from robustlab.export.basket import peeling_example
from robustlab.io.files import InputError, uploaded_bytes
from robustlab.models import ModelUnavailable
from ui.media import CLEAN, PERT, boxed, md_escape
from ui.loaders import current_dataset, get_model
from ui.widget_state import clamp, initial, valid
from ui.widgets import basket
from ui.cache import shared
from ui.server_guard import arrived, current_session_id

VQA_FALLBACK = "builtin:tiny-vilt"
REDUCED = (150, 60, 200)  # box colour of the reduced expression's prediction (purple)
STAGES = {"back_translation": ("Back-translation", "gr_pl_bt", "EN→DE→EN with the WMT19 models (sentence level)"),
          "synonym": ("Synonym", "gr_pl_syn", "one word replaced by a WordNet synonym (word level)"),
          "keyboard": ("Keyboard typo", "gr_pl_kb", "one character replaced by a neighbouring key (character level)")}
SKIPS = {"plural": "the object looks plural, and PEELING skips plural objects (the released code's rule)",
         "no_unique_candidate": "no shorter expression was judged to name exactly one object (the VQA model's "
                                "answers to the three uniqueness questions)",
         "extraction_empty": "no object could be extracted from the expression"}
ERRORS = (ValueError, RuntimeError, InputError, ModelUnavailable, OSError)


def _can_answer(model) -> bool:
    return callable(getattr(model, "vqa_batch", None)) or callable(getattr(model, "vqa", None))


@shared("results")
def run_peel(spec, device, vqa_spec, _image, image_hash, expr, gt, stages, wide, compat, seed, image_id, world):
    """peel() cached per grounding model, VQA model, device, image content, expression, box and options;
    ``world``: (world seed, scene index, target) of a built-in scene, for the world-truth check."""
    objects = target = None
    if world is not None:
        from robustlab.datasets.synthetic import world as W

        objects, target = W.sample_scene(world[0], world[1]).objects, world[2]
    vqa = None if vqa_spec == spec else get_model(vqa_spec, device)
    return P.peel(get_model(spec, device), _image, expr, gt, vqa_model=vqa, objects=objects, target=target,
                  image_id=image_id, stages=stages, wide=wide, compat=compat, seed=seed)


def input_name(source: dict, src: str, label: str) -> str:
    """The page's input in words, from where it came from (Markdown-safe): "this upload", "this item of My uploads
    (“a.png”)", "this item of coco (“123”)"."""
    if src == "upload":
        return "this upload"
    if source.get("type") == "upload":
        return f"this item of My uploads (“{md_escape(str(label))}”)"
    if source.get("type") == "builtin":
        return f"this built-in scene (“{md_escape(str(label))}”)"
    dataset = md_escape(str(source.get("dataset") or "the sidebar’s dataset"))
    return f"this item of {dataset} (“{md_escape(str(label))}”)"


def _typed_box(image, where: str = "this input", owner=None):
    """PEELING needs a ground truth: an upload or a dataset item without boxes has none, so the user types one (None
    after saying why not). ``where``: the input in words (:func:`input_name`); ``owner``: the input the box is typed
    for (another input starts with an empty box)."""
    if owner is not None:
        if st.session_state.get("_gr_pl_box_owner", owner) != owner and st.session_state.get("gr_pl_box"):
            st.session_state["gr_pl_box"] = ""  # a box typed for another image
        st.session_state["_gr_pl_box_owner"] = owner
    txt = st.text_input("Ground-truth box for PEELING (x0, y0, x1, y1 in pixels)", key="gr_pl_box",
                        **initial("gr_pl_box", value=""),
                        placeholder="e.g. 10, 12, 54, 60", help="The box of the object the expression names.")
    if not txt.strip():
        st.info(f"PEELING needs a ground-truth box: type the object's box above to run it on {where}.")
        return None
    h, w = image.shape[:2]
    try:
        box = tuple(float(v) for v in txt.replace(";", ",").split(","))
        if len(box) != 4 or not (0 <= box[0] < box[2] <= w and 0 <= box[1] < box[3] <= h):
            raise ValueError
    except ValueError:
        st.error(f"The box must be four numbers x0, y0, x1, y1 with 0 ≤ x0 < x1 ≤ {w} and 0 ≤ y0 < y1 ≤ {h}.")
        return None
    return box


def _vqa_spec(spec: str, model, device: str) -> str | None:
    """Who answers the uniqueness questions: the grounding model when it can, else tiny-vilt; None after one line."""
    if _can_answer(model):
        st.caption(f"Uniqueness questions answered by {md_escape(spec)} (the grounding model).")
        return spec
    try:
        ok = _can_answer(get_model(VQA_FALLBACK, device))
    except Exception:  # noqa: BLE001 -- any failure to load the fallback: PEELING says it is not run
        ok = False
    if not ok:
        st.info(f"No model here can answer PEELING's uniqueness questions ({md_escape(spec)} cannot, and "
                f"{VQA_FALLBACK} is unavailable): PEELING is not run.")
        return None
    st.caption(f"Uniqueness questions answered by {VQA_FALLBACK} ({md_escape(spec)} cannot answer questions).")
    return VQA_FALLBACK


def _controls(seed: int) -> dict:
    reason = P.back_translation_reason()
    on = []
    for col, (stage, (name, key, what)) in zip(st.columns(3), STAGES.items()):
        off = stage == "back_translation" and bool(reason)
        if col.checkbox(f"P2 · {name}", key=key, disabled=off, help=f"P2: {what}.",
                        **initial(key, value=not off)) and not off:
            on.append(stage)
    cols = st.columns(2)
    wide = cols[0].checkbox("Wider candidate subsets", key="gr_pl_wide", **initial("gr_pl_wide", value=False),
                            help="Also the object with any larger proper subset of its properties (the paper's "
                                 "wording), not only the object alone and the object with one property.")
    compat = cols[1].checkbox("Released-code answer parsing", key="gr_pl_compat",
                              **initial("gr_pl_compat", value=False),
                              help="The released code's substring tests ('someone' counts as one, 'snow' as no) "
                                   "and its third question string.")
    if reason:
        st.caption(f"Back-translation is off: {reason}")
    return {"stages": tuple(on), "wide": wide, "compat": compat, "seed": int(seed)}


def _stage_words(stages: list[dict]) -> str:
    out = []
    for s in stages:
        why = str(s.get("reason") or "")
        if s.get("skipped"):
            out.append(f"{s['stage']}: {'off' if why == 'switched off' else why.split(':')[0] or 'skipped'}")
        elif s.get("changed"):
            out.append(f"{s['stage']}: “{s['input']}” → “{s['output']}”")
        else:
            out.append(f"{s['stage']}: unchanged")
    return "; ".join(out)


def _details(item) -> None:
    with st.expander("How PEELING read the expression"):
        ex = item.extraction
        st.dataframe(pd.DataFrame([{"object": ex.get("object", ""),
                                    "properties": " | ".join(ex.get("properties", []))}]),
                     hide_index=True, width="stretch", key="gr_pl_extraction")
        if item.judged:
            rows = [{"candidate": j["x"], "strategy": j["strategy"], "VQA verdict": "unique" if j["unique"] else
                     "not unique", "asked": "asked" if j["asked"] else "inherited from the object",
                     "world truth": {True: "unique ✓", False: "not unique", None: "unknown"}[j["world_valid"]]}
                    for j in item.judged]
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="gr_pl_judged")


def _uniqueness(u: dict, k: int) -> None:
    rows = [{"question": u[q]["question"], "answer": u[q]["answer"], "check": "✓" if u[q]["ok"] else "✗"}
            for q in P.QUERIES if isinstance(u.get(q), dict)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=f"gr_pl_vqa_{k}")
    how = "" if u.get("asked", True) else " — the object's answers: a unique object stays unique with its property"
    st.caption(f"Verdict: {'unique' if u.get('unique') else 'not unique'} (all three checks must pass){how}.")


def _add(examples) -> None:
    added = sum(basket().add(e) for e in examples)
    if added:
        st.success(f"Added {added} PEELING test(s) to the basket ({len(basket())} example(s)).")
    else:
        st.info("Already in the basket.")


def _test(k: int, t, image, gt, make) -> None:
    with st.container(border=True, key=f"gr_pl_test_{k}"):
        st.markdown(f"**Test {k + 1}** · {t.strategy} · seed {t.seed}")
        st.dataframe(pd.DataFrame([
            {"step": "original", "expression": t.rawtext, "IoU to ground truth": round(t.orig_iou, 3),
             "how": "as given"},
            {"step": "reduced (P1)", "expression": t.Reducetext, "IoU to ground truth": round(t.reduce_iou, 3),
             "how": "kept: " + (" | ".join(t.properties) or "the object alone")},
            {"step": "final (P2)", "expression": t.MRtext, "IoU to ground truth": round(t.iou, 3),
             "how": _stage_words(t.stages)}]), hide_index=True, width="stretch", key=f"gr_pl_exprs_{k}")
        cols = st.columns(3)
        for col, (name, box, iou, colour) in zip(cols, (("original", t.orig_box, t.orig_iou, CLEAN),
                                                        ("reduced", t.reduce_box, t.reduce_iou, REDUCED),
                                                        ("final", t.pred_box, t.iou, PERT))):
            col.image(boxed(image, gt, tuple(box), colour, name), caption=f"{name.capitalize()} expression · IoU "
                      f"{iou:.2f}", width="stretch")
        _uniqueness(t.uniqueness, k)
        if t.world_valid is not None:
            st.caption("World truth: the reduced expression " + ("singles out the target ✓" if t.world_valid else
                                                                 "does not single out the target (a VQA error)"))
        c1, c2 = st.columns([3, 1])
        if t.issue:
            c1.markdown(f":red-background[**issue**] IoU {t.iou:.2f} ≤ 0.5: the model loses the object on the final "
                        "expression.")
        else:
            c1.markdown(f"✓ IoU {t.iou:.2f} > 0.5: the model still finds the object.")
        if c2.button("Add to basket", key=f"gr_pl_add_{k}", icon=":material/shopping_basket:",
                     help="Keeps this test (reduced and final expression, its P2 record, boxes, IoUs, the VQA "
                          "answers and the image) for export."):
            _add([make(k, t)])


def peeling_panel(spec: str, device: str, model, image, image_hash: str, expr: str, gt, source: dict, label: str,
                  src: str, seed: int) -> None:
    """The PEELING block of the Grounding page, on the page's clean input (the perturbation pickers do not apply),
    set apart from the page's own basket row by a divider."""
    _panel(spec, device, model, image, image_hash, expr, gt, source, label, src, seed)
    st.divider()


def _panel(spec, device, model, image, image_hash, expr, gt, source, label, src, seed) -> None:
    st.subheader("PEELING — does a shorter expression that still names the object break the model?")
    st.caption("P1 drops properties the object does not need (a VQA model must say the shorter phrase names exactly "
               "one object), P2 perturbs it; the model grounds it again on the clean image: IoU ≤ 0.5 is an issue.")
    opts = _controls(seed)
    if not st.toggle("Run PEELING on this input", key="gr_pl_run", **initial("gr_pl_run", value=False),
                     help="Extracts the object and its properties, asks the VQA model three questions per shorter "
                          "candidate, perturbs and grounds every test (cached per input and options)."):
        return
    if gt is None and (gt := _typed_box(image, input_name(source, src, label), (src, image_hash))) is None:
        return
    vqa_spec = _vqa_spec(spec, model, device)
    if vqa_spec is None:
        return
    world = None
    if source.get("type") == "builtin" and source.get("collection") == "gallery" and "target" in source:
        world = (int(source["seed"]), int(source["index"]), int(source["target"]))
    try:
        with st.spinner("PEELING: extracting, asking the uniqueness questions, perturbing, grounding…"):
            run = run_peel(spec, device, vqa_spec, image, image_hash, expr, tuple(gt), opts["stages"], opts["wide"],
                           opts["compat"], opts["seed"], str(label), world)
    except ERRORS as e:
        st.error(f"PEELING cannot run on this input: {md_escape(str(e))}")
        return
    item = run.items[0]
    if not run.tests:
        st.info(f"No test from this expression: {SKIPS.get(item.status, item.status.replace('_', ' '))}.")
        _details(item)
        return
    issues = [k for k, t in enumerate(run.tests) if t.issue]
    st.caption(f"{len(run.tests)} test(s) · {len(issues)} issue(s) · {run.vqa_queries} uniqueness question(s) asked "
               "· boxes: green = ground truth, blue = original, purple = reduced, red = final expression.")
    _details(item)
    field = "typed expression" if src == "upload" else "expression"

    def make(k, t):
        return peeling_example(t, run.config, image=image, source={**source, "field": field}, model_id=spec,
                               vqa_model=vqa_spec, label=f"{label}-peeling-{k}")

    for k, t in enumerate(run.tests):
        _test(k, t, image, tuple(gt), make)
    if st.button(f"Add all issues ({len(issues)})", key="gr_pl_add_issues", disabled=not issues,
                 icon=":material/shopping_basket:"):
        _add([make(k, run.tests[k]) for k in issues])


# ---- extraction quality (the paper's RQ4): precision / recall / F1 against labelled expressions --------------------
@shared("results")
def _extraction_score(data: bytes | None, name: str, match: str) -> dict:
    labels = None if data is None else P.parse_labels(data, name)
    return P.score_extraction(labels, match=match, name=None if data is None else name).to_dict()


def extraction_view() -> None:
    """Precision, recall and F1 of PEELING's object & property extraction on the shipped labelled expressions or on
    the user's own (JSON or CSV), as the paper's Table V."""
    st.subheader("PEELING — how well are the object and its properties extracted?")
    st.caption("The paper's RQ4 (Table V): precision, recall and F1 of the extracted object and properties against "
               "labelled expressions. PEELING (ChatGPT) on the paper's 80 expressions: objects 96.0 / 96.0 / 96.0, "
               "properties 95.7 / 94.0 / 94.8. Here: robustlab's offline extractor (spaCy rules).")
    if not st.toggle("Score the extraction", key="gr_ex_run", **initial("gr_ex_run", value=False),
                     help="Runs the extractor on every labelled expression (cached per labels and matching)."):
        return
    c1, c2 = st.columns([3, 2])
    up = c1.file_uploader("Your labels (optional): JSON or CSV", type=["json", "csv"], key="gr_ex_labels",
                          help="JSON: a list of {expression, object, properties: [...]}; CSV: columns expression, "
                               "object, properties (separated by |). Optional pred_object / pred_properties are "
                               "scored instead of running the extractor. Without a file: the shipped 40 expressions.")
    match = c2.radio("Property match", list(P.MATCHES), key="gr_ex_match", horizontal=True,
                     **valid("gr_ex_match", list(P.MATCHES)),
                     help="exact: equal after lower-casing and dropping a leading article and end punctuation; "
                          "overlap: also when one's words are a run of the other's ('hat' for 'in a hat').")
    if up is not None:
        arrived(current_session_id(), [up.name])  # not one the upload form should miss (ui.uploads.left_out)
    try:
        data = None if up is None else uploaded_bytes(up)
        with st.spinner("Extracting…"):
            res = _extraction_score(data, getattr(up, "name", "labels"), match)
    except InputError as e:
        st.error(f"Cannot read those labels: {md_escape(str(e))}")
        return
    except (ValueError, RuntimeError) as e:
        st.error(f"Cannot score the extraction: {md_escape(str(e))}")
        return
    st.caption(f"{res['n']} labelled expression(s) · labels: {md_escape(res['labels'])} · predictions: "
               f"{md_escape(res['extractor'])} · {res['match']} match.")
    rows = []
    for target in ("objects", "properties", "overall"):
        s = res[target]
        pct = {k: None if s[v] is None else round(100 * s[v], 1) for k, v in (("P %", "precision"), ("R %", "recall"),
                                                                              ("F1 %", "f1"))}
        rows.append({"target": target, **pct, "correct": s["tp"], "predicted": s["predicted"], "labelled": s["gold"]})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="gr_ex_table")
    wrong = [r for r in res["rows"] if not r["object_ok"] or r["missed"] or r["extra"]]
    with st.expander(f"Expressions with an extraction error ({len(wrong)})"):
        st.dataframe(pd.DataFrame([{"expression": r["expression"], "object (label)": r["object"],
                                    "object (extracted)": r["predicted_object"], "missed": " | ".join(r["missed"]),
                                    "extra": " | ".join(r["extra"])} for r in wrong]),
                     hide_index=True, width="stretch", key="gr_ex_wrong")


# ---- ATCR: a person labels generated tests valid / invalid ----------------------------------------------------------
PAGE = 10  # tests shown per page of the labelling view
CHOICES = ("unlabelled",) + P.LABELS


@shared("models")
def _batch(spec, device, vqa_spec, dataset_id, _dataset, n, seed):
    """peel_many() on the first ``n`` items, cached per models, device, dataset, n and seed."""
    vqa = None if vqa_spec == spec else get_model(vqa_spec, device)
    return P.peel_many(get_model(spec, device), _dataset, n, vqa_model=vqa, seed=seed)


@shared("models")
def _builtin_refs(n: int):
    from robustlab.datasets import build  # here: only the labelling view needs the over-specified expressions

    return build("builtin-refs", split="demo", n=n)


def _label_dataset(n: int):
    """(id, dataset): the sidebar's dataset when it has referring expressions (RefCOCO...), else the built-in
    scenes with their over-specified expressions (builtin-refs)."""
    if st.session_state.get("dataset") == "folder":  # (uploads have no boxes; the built-in ones are not over-said)
        got = current_dataset()
        if got is not None and {"peeling", "grounding"} & set(getattr(got[1], "tasks", ())):
            return got
    ds = _builtin_refs(n)
    return ds.id, ds


def _load_labels(run_key: str, sample, store: dict) -> None:
    up = st.file_uploader("Load labels (a JSON file downloaded here)", type=["json"], key="gr_at_upload")
    if up is None or st.session_state.get("gr_at_loaded") == (run_key, up.file_id):
        return
    arrived(current_session_id(), [up.name])  # not one the upload form should miss (ui.uploads.left_out)
    try:
        loaded = P.parse_atcr_labels(uploaded_bytes(up), up.name)
    except InputError as e:
        st.error(f"Cannot load those labels: {md_escape(str(e))}")
        return
    got = P.apply_labels(sample, loaded)
    store.update(got.labels)
    for t in sample:  # the radios show the loaded labels
        st.session_state.pop(f"gr_at_lab_{t.uniq_id}", None)
    st.session_state["gr_at_loaded"] = (run_key, up.file_id)
    st.success(f"Loaded {got.matched} label(s)" + (f"; {got.stale} were given for different expressions (another "
                                                   "run or seed) and were left out" if got.stale else "")
               + (f"; {got.unknown} are of tests not in this sample" if got.unknown else "") + ".")


def _set_label(store: dict, uid: str) -> None:
    v = st.session_state.get(f"gr_at_lab_{uid}")
    if v in P.LABELS:
        store[uid] = v
    else:
        store.pop(uid, None)


def _label_one(t, image, store: dict) -> None:
    with st.container(border=True, key=f"gr_at_case_{t.uniq_id}"):
        c1, c2 = st.columns([1, 3])
        c1.image(boxed(image, tuple(t.region)), caption="ground truth (green)", width="stretch")
        c2.dataframe(pd.DataFrame([{"step": "original", "expression": t.rawtext},
                                   {"step": "reduced (P1)", "expression": t.Reducetext},
                                   {"step": "test (P2)", "expression": t.MRtext}]),
                     hide_index=True, width="stretch", key=f"gr_at_exprs_{t.uniq_id}")
        c2.radio(f"Test {md_escape(t.uniq_id)}: does the test expression still name this object, and only it?", CHOICES,
                 key=f"gr_at_lab_{t.uniq_id}",
                 **valid(f"gr_at_lab_{t.uniq_id}", CHOICES, store.get(t.uniq_id, "unlabelled")),
                 horizontal=True, on_change=_set_label, args=(store, t.uniq_id))


def atcr_view(spec: str, device: str, model) -> None:
    """The ATCR labelling view: PEELING on the first items of a dataset, a seeded sample of its tests, each labelled
    valid / invalid by the user; the ATCR computed from those labels; labels downloadable and re-loadable."""
    st.subheader("PEELING — label the tests: ATCR")
    st.caption("ATCR (Adversarial Tests Correct Rate, the paper's §IV-F) = tests a person judges valid / tests "
               "labelled. A test is valid when its final expression still names the ground-truth object and no "
               "other. The paper labels 100 random tests per dataset (ATCR 90.0 / 93.3 / 96.0 % on RefCOCO / "
               "RefCOCO+ / RefCOCOg).")
    if not st.toggle("Generate tests to label", key="gr_at_run", **initial("gr_at_run", value=False),
                     help="Runs PEELING on the first items of the sidebar's dataset with referring expressions (the "
                          "built-in over-specified expressions otherwise), cached per models, items and seed."):
        return
    c1, c2, c3 = st.columns(3)
    n = int(c1.number_input("Items", 1, 500, key="gr_at_n", help="PEELING runs on the first N items.",
                            **initial("gr_at_n", value=20)))
    size = int(c2.number_input("Tests to label", 1, 1000, key="gr_at_size", **initial("gr_at_size", value=P.SAMPLE),
                               help="A random sample of the generated tests (the paper: 100)."))
    seed = int(c3.number_input("Seed", 0, 2**31 - 1, key="gr_at_seed", help="PEELING's seed and the sample's.",
                               **initial("gr_at_seed", value=0)))
    vqa_spec = _vqa_spec(spec, model, device)
    if vqa_spec is None:
        return
    ds_id, ds = _label_dataset(n)
    try:
        with st.spinner("PEELING on the first items: extracting, asking, perturbing, grounding…"):
            run = _batch(spec, device, vqa_spec, ds_id, ds, n, seed)
    except ERRORS as e:
        st.error(f"PEELING cannot run on this dataset: {md_escape(str(e))}")
        return
    sample = P.sample_tests(run.tests, size, seed)
    if not sample:
        st.info(f"PEELING made no test from the first {n} item(s) of {md_escape(ds.name)}: try more items.")
        return
    run_key = f"{spec}|{vqa_spec}|{ds_id}|{n}|{seed}|{size}"
    store = st.session_state.setdefault("gr_at_labels", {}).setdefault(run_key, {})
    _load_labels(run_key, sample, store)
    res = P.compute_atcr({t.uniq_id: store.get(t.uniq_id) for t in sample})
    m1, m2, m3 = st.columns(3)
    m1.metric("ATCR", "—" if res.atcr is None else f"{100 * res.atcr:.1f} %")
    m2.metric("Labelled", f"{res.labelled} / {res.labelled + res.unlabelled}")
    m3.metric("Valid · invalid", f"{res.valid} · {res.invalid}")
    if res.interval:
        st.caption(f"ATCR {100 * res.atcr:.1f} % of {res.labelled} labelled test(s) · 95 % Wilson interval "
                   f"{100 * res.interval[0]:.1f}–{100 * res.interval[1]:.1f} % · {len(sample)} of {len(run.tests)} "
                   f"test(s) from {len(run.items)} expression(s) of {md_escape(ds.name)}.")
    meta = {"model": spec, "vqa_model": vqa_spec, "dataset": ds_id, "items": n, "seed": seed, "sample": size,
            "tests": len(run.tests), "config": run.config.to_dict()}
    st.download_button("Download labels (JSON)", P.labels_json(sample, store, meta), "peeling_atcr_labels.json",
                       "application/json", key="gr_at_download", icon=":material/download:")
    pages = (len(sample) + PAGE - 1) // PAGE
    clamp("gr_at_page", 1, pages)
    page = int(st.number_input(f"Page (of {pages}, {PAGE} tests each)", 1, pages, key="gr_at_page",
                               **initial("gr_at_page", value=1))) - 1
    for t in sample[page * PAGE:(page + 1) * PAGE]:
        _label_one(t, run.image_of(t.item), store)
