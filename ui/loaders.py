"""Cached loaders and the sidebar's choices as the pages read them: models, datasets (built-in, uploads, a local
folder, a sweep's own gallery) and the bench the pages share (split from ui.state, issue 46: the sidebar itself is
:mod:`ui.sidebar_panel`, not ``ui.sidebar``, the function app.py calls; a model that follows the data:
:mod:`ui.follow`).

Every loader is cached per process, in the shared pools of :mod:`ui.cache` (bounded in bytes, out of a viewer's
reach); every failure is a one-line message on the page and ``None`` back, never a traceback.
"""
from __future__ import annotations

import inspect
from typing import NamedTuple

import streamlit as st

from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import build, get_entry
from robustlab.datasets.synthetic.datasets import builtin_gallery, builtin_video_gallery
from robustlab.models import ModelUnavailable, list_models, load_model
from robustlab.tasks.retrieval_bench import RetrievalBench
from ui import operator
from ui.follow import follow_data
from ui.folders import choice as folder_choice
from ui.media import safe_md
from ui.widget_state import valid
from ui.cache import shared

DEMO_N, VIDEO_DEMO_N = 300, 200
DEFAULT_MODEL = "builtin:tiny-vit-clip"  # degrades gradually and adapts on both sides: the demo model (issue 27)
OTHER_MODEL = "other (open_clip / hf / path)…"
DATASETS = {"builtin": "Built-in images", "builtin-videos": "Built-in videos", "upload": "My uploads",
            "folder": "Local folder"}
EMPTY_HINT = ("Your gallery is empty: upload images or videos with captions above, or pick a built-in dataset in "
              "the sidebar.")


def models_for(task: str) -> list[str]:
    """Specs of the registered models that can do ``task`` ("retrieval", "grounding", "vqa", ...): the model
    registry's task filter (:func:`robustlab.models.list_models`)."""
    return [m["spec"] for m in list_models(task=task)]


def can_do(spec: str, task: str) -> bool:
    """Whether model ``spec`` can do ``task``, without loading it: a registered model by :func:`models_for`, a
    typed spec by the tasks its backend declares."""
    from robustlab.models.registry import get_backend, parse_spec

    if spec in {m["spec"] for m in list_models()}:
        return spec in models_for(task)
    try:
        return task in get_backend(parse_spec(spec)[0]).tasks
    except (ValueError, KeyError):
        return False


def default_model() -> str:
    """The model a session opens with (:func:`ui.operator.default_model`: the operator's, else DEFAULT_MODEL)."""
    return operator.default_model(DEFAULT_MODEL)


def sidebar_models() -> list[str]:
    """The sidebar's model choices: the default first, the other retrieval models, then the other registered
    models."""
    first = default_model()
    ret = models_for("retrieval")
    ret = [m for m in ret if m == first] + [m for m in ret if m != first]
    return ret + [m["spec"] for m in list_models() if m["spec"] not in ret]


# ---- cached loaders ---------------------------------------------------------------------------------------
@shared("models", spinner="Loading model…")
def get_model(spec: str, device: str):
    """One model instance per (spec, device) per process."""
    __import__("logging").getLogger("robustlab.ui").warning("model load: %s on %s", spec, device)  # bench_concurrency
    return load_model(spec, device=None if device == "auto" else device)


@shared("models", spinner="Generating the built-in gallery (first run only)…")
def get_builtin_gallery(n: int = DEMO_N):
    return builtin_gallery(n)


@shared("models", spinner="Generating the built-in video gallery (first run only)…")
def get_builtin_video_gallery(n: int = VIDEO_DEMO_N):
    return builtin_video_gallery(n)


@shared("models", spinner="Reading the dataset…")
def get_folder_dataset(name: str, root: str, split: str, n: int):
    """A registered dataset read from a local folder (its first ``n`` items when n > 0). DatasetError when it
    can't be built (not cached: fixing the folder and rerunning tries again)."""
    kw = {}
    if n > 0:
        params = inspect.signature(get_entry(name)["builder"]).parameters
        arg = next((a for a in ("n", "max_items") if a in params), None)
        if arg is None and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            raise DatasetError(f"{name} cannot be limited to {n} items: leave max items at 0")
        kw[arg or "n"] = int(n)
    return build(name, root=root, split=split, **kw)


@shared("models", grows=True)
def get_bench(spec: str, device: str, dataset_id: str, _dataset) -> RetrievalBench:
    """A RetrievalBench per model and dataset: memoises perturbed visuals, captions and their embeddings."""
    return RetrievalBench(get_model(spec, device), _dataset)


# ---- the sidebar's choices --------------------------------------------------------------------------------
CUSTOM_EXAMPLE = "open_clip:ViT-B-32/openai"  # a placeholder, never a default: a default would be loaded


def spec_device() -> tuple[str, str]:
    """The sidebar's model spec and device, read from its widgets' state (so a page run on its own, as AppTest's
    switch_page does, sees the same choice)."""
    s = st.session_state
    choice = s.get("model_choice", default_model())
    spec = (s.get("custom_spec") or "").strip() or default_model() if choice == OTHER_MODEL else choice
    return spec, s.get("device", "auto")


def offered_models() -> list[str]:
    """The models the sidebar lists: the built-ins (retrieval first), then the operator's ``ui_models``."""
    first = default_model()
    return list(dict.fromkeys([first] + sidebar_models() + list(operator.config().offered_models)))


def refusal(spec: str) -> str | None:
    """Why the operator's rules keep this viewer from loading ``spec`` (:func:`ui.operator.spec_refusal`), or None;
    the sidebar's and the task pages' listed models count as offered, anything else as typed."""
    from robustlab.models.registry import KNOWN_MODELS

    known = set(offered_models()) | {m for ms in KNOWN_MODELS.values() for m in ms}
    return operator.spec_refusal(spec, typed=spec not in known)


def load(spec: str, what: str = "Model"):
    """The model ``spec`` on the sidebar's device, or None after saying why it can't be loaded (the operator's
    rules first: a viewer's typed spec, local path or hub download is checked before anything is opened)."""
    from robustlab.models.registry import OFFLINE_ALTERNATIVES

    why = refusal(spec) or random_weights(spec)
    if why:
        st.error(f"{what} **{safe_md(spec)}** can't be loaded here: {why}; {OFFLINE_ALTERNATIVES}.")
        return None
    device = spec_device()[1]
    try:
        model = get_model(spec, device)
    except (ModelUnavailable, ValueError, RuntimeError, OSError) as e:
        st.error(f"{what} **{safe_md(spec)}** can't be loaded here: "
                 f"{safe_md(_one_line(e, limit=None), hide=True)}")  # whole: it ends on a hint
        return None
    except Exception as e:  # noqa: BLE001 -- a damaged checkpoint, a backend bug: a banner, never a traceback
        st.error(f"{what} **{safe_md(spec)}** failed to load ({type(e).__name__}: {safe_md(_one_line(e), hide=True)}). "
                 f"The other pages "
                 f"and models still work; pick another model in the sidebar.")
        return None
    if getattr(model, "random_init", False):  # found only on loading (a folder without weights): not kept either
        get_model.forget(spec, device)
        st.error(f"{what} **{safe_md(spec)}** can't be loaded here: {RANDOM_WEIGHTS}; {OFFLINE_ALTERNATIVES}.")
        return None
    return model


RANDOM_WEIGHTS = ("it would load random weights (an architecture without a checkpoint), which the dashboard never "
                  "shows; the CLI keeps such models for timing, labelled random-init")


def random_weights(spec: str) -> str | None:
    """One line when ``spec`` names an architecture alone (random initialisation), known from the spec without
    loading anything (:func:`robustlab.models.registry.spec_source`); None otherwise."""
    from robustlab.models.registry import spec_source

    try:
        return RANDOM_WEIGHTS if spec_source(spec)[0] == "random" else None
    except (ValueError, KeyError):
        return None  # a bad spec: load_model says why


def _one_line(e: BaseException, limit: int | None = 300) -> str:
    """An exception as one line (of at most ``limit`` characters when given): a banner, not a traceback."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


def current_model():
    """The sidebar's model, or None after showing why it can't be loaded."""
    return load(spec_device()[0])


TASK_LABELS = {"vqa": "VQA", "clavi": "CLAVI", "itm": "ITM", "grounding": "Grounding", "retrieval": "Retrieval",
               "video-retrieval": "Video retrieval", "reasoning": "Reasoning", "entailment": "Entailment"}


def task_label(task: str) -> str:
    """A task's name as a person writes it ("VQA model", not "Vqa model")."""
    return TASK_LABELS.get(task, task.replace("-", " ").capitalize())


def task_model(task: str, method: str, key: str):
    """(spec, model) for a page of one ``task`` ("grounding"): the sidebar's model when it can do it, else (after
    one line saying so) a model picked here among those that can; None after saying why there is none."""
    from robustlab.models.registry import KNOWN_MODELS, availability

    spec = spec_device()[0]
    if not can_do(spec, task):
        st.info(f"The sidebar's model {safe_md(spec)} cannot do {task}: pick a {task} model here (or in the sidebar).")
        capable = models_for(task)
        options = capable + [s for s in KNOWN_MODELS.get(task, []) if s not in capable]
        spec = st.selectbox(f"{task_label(task)} model", options, key=key, **valid(key, options),
                            help="Built-in models run offline; hub models need network access or a local copy.")
    if not spec.startswith("builtin:"):
        why = refusal(spec)
        ok, why = (False, why) if why else availability(spec)
        if not ok:
            st.warning(f"**{safe_md(spec)}** is unavailable here: {safe_md(why)}. The offline alternative is "
                       f"**{(models_for(task) or ['none'])[0]}**.")
            return None
        st.caption(f"{safe_md(spec)}: {safe_md(why)}")
    model = load(spec, f"{task_label(task)} model")
    if model is None:
        return None
    if not callable(getattr(model, method, None)):
        st.error(f"{safe_md(spec)} has no {task} head; pick {(models_for(task) or ['another model'])[0]}.")
        return None
    return spec, model


def current_dataset(kind: str | None = None):
    """(dataset id, dataset) for the sidebar's choice, or None after saying why there is none (empty uploads, a
    folder that can't be read). ``kind`` ("image"): a page that needs images says so when the choice is not."""
    choice = st.session_state.get("dataset", "builtin")
    sub = sweep_gallery(choice)  # a Benchmark example opened here: the sweep's own built-in gallery
    if sub is not None:
        got = sub
    elif choice == "builtin-videos":
        got = (f"builtin-videos-{VIDEO_DEMO_N}", get_builtin_video_gallery(VIDEO_DEMO_N))
    elif choice == "upload":
        from ui.uploads import upload_section

        upload_section()
        g = st.session_state.get("upload_gallery")
        if g is None or len(g) == 0:
            st.info(EMPTY_HINT)
            return None
        got = (st.session_state.get("upload_gallery_id", "upload"), g)
    elif choice == "folder":
        got = _folder_dataset()
        if got is None:
            return None
    else:
        got = (f"builtin-{DEMO_N}", get_builtin_gallery(DEMO_N))
    if kind and got[1].kind != kind:
        st.warning(f"This page works on {kind}s; the sidebar's dataset holds {got[1].kind}s. Pick a dataset of "
                   f"{kind}s in the sidebar.")
        return None
    return got


def _folder_dataset():
    got = folder_choice()
    if got is None:
        return None
    name, root, split = got
    n = int(st.session_state.get("folder_max") or 0)
    try:
        ds = get_folder_dataset(name, root, split, n)
    except (DatasetError, OSError) as e:
        st.error(safe_md(_one_line(e, limit=None), hide=True))
        return None
    if len(ds) == 0:
        st.warning(f"{name} in that folder has no items.")
        return None
    skipped = list(getattr(ds, "load_errors", None) or ())
    if skipped:  # files the dataset refused or could not read: said once, by name (never a full server path)
        shown = skipped[:5] + ([f"… and {len(skipped) - 5} more"] if len(skipped) > 5 else [])
        st.warning(safe_md(f"{len(skipped)} file(s) of that folder were left out: " + "; ".join(shown)))
    return f"folder|{ds.id}", ds


class Bench(NamedTuple):
    spec: str
    device: str
    gid: str
    dataset: object
    bench: RetrievalBench


def current_bench() -> Bench | None:
    """The sidebar's model and dataset as a RetrievalBench, or None after saying why not (model unavailable,
    empty gallery, a model that can't retrieve, a dataset without captions)."""
    if current_model() is None:
        return None
    got = current_dataset()
    if got is None:
        return None
    spec, device = spec_device()
    spec = follow_data(spec, got[1].kind)
    if spec != spec_device()[0] and load(spec) is None:
        return None
    try:
        bench = get_bench(spec, device, got[0], got[1])
    except ValueError as e:
        st.warning(str(e))
        return None
    if bench.kind == "video" and not getattr(bench.model, "num_frames", None):
        st.caption(f"{safe_md(spec)} has no temporal model: a video is the mean of its frame embeddings (every "
                   "frame).")
    st.caption(f"Model **{safe_md(spec)}** · dataset {safe_md(got[1].name if hasattr(got[1], 'name') else got[0])}"
               f" ({len(got[1])} {got[1].kind}s)")
    return Bench(spec, device, got[0], got[1], bench)


# ---- a sweep's own gallery: Benchmark's worst examples open on the items the sweep ran on ------------------------
# A sweep over a built-in dataset runs on its first n items (of its split); the sidebar's built-in choice is the
# 300-image (200-video) demo gallery. A rank depends on the gallery, so a worst example ("rank 1 → 7" of 20) opened
# on Retrieval / Grounding uses the sweep's gallery: the preset records it under SWEEP_GALLERY, current_dataset()
# honours it for that built-in choice, the sidebar says so ("Built-in images (first 20, from a sweep)") with a
# button back to the demo gallery, and picking another dataset drops it.
SWEEP_GALLERY = "sweep_gallery"  # session key: {"name", "split", "n", "seed"} of a sweep's built-in dataset
SWEEP_GALLERY_MAX_N = 10_000  # a larger built-in "gallery" from a run folder is not generated on the dashboard


def sweep_gallery_of(dataset: dict | None) -> dict | None:
    """The built-in gallery a SweepSpec dataset dict names, as the sweep built it (split, first n items, seed), or
    None: not a built-in, the sidebar's own demo gallery already, or one the dashboard does not generate (options,
    more than SWEEP_GALLERY_MAX_N items)."""
    d = dataset if isinstance(dataset, dict) else {}
    name = d.get("name")
    if name not in ("builtin", "builtin-videos") or d.get("options"):
        return None
    try:
        split = str(d.get("split") or get_entry(name)["default_split"])
        n = int(d["n"]) if d.get("n") is not None else None
        seed = int(d["seed"]) if d.get("seed") is not None else None
    except (TypeError, ValueError, KeyError):
        return None
    if split not in get_entry(name)["splits"] or (n is not None and not 1 <= n <= SWEEP_GALLERY_MAX_N):
        return None
    if split == "demo" and seed is None and n in (None, DEMO_N if name == "builtin" else VIDEO_DEMO_N):
        return None
    return {"name": name, "split": split, "n": n, "seed": seed}


@shared("models", spinner="Generating the sweep's gallery…")
def get_sweep_gallery(name: str, split: str, n: int | None, seed: int | None):
    """A built-in dataset exactly as a sweep builds it (robustlab.bench.build_dataset: split, n, seed)."""
    return build(name, split=split, **{k: v for k, v in (("n", n), ("seed", seed)) if v is not None})


def sweep_gallery(choice: str):
    """(dataset id, dataset) of the sweep's gallery when one was opened for the sidebar's built-in ``choice``."""
    sub = st.session_state.get(SWEEP_GALLERY)
    if not isinstance(sub, dict) or sub.get("name") != choice:
        return None
    try:
        ds = get_sweep_gallery(sub["name"], sub["split"], sub["n"], sub["seed"])
    except (DatasetError, OSError, ValueError, TypeError, KeyError) as e:
        st.warning(f"The sweep's gallery can't be generated here ({safe_md(_one_line(e), hide=True)}); showing the "
                   "demo gallery instead: ranks may differ from the sweep's.")
        st.session_state.pop(SWEEP_GALLERY, None)
        return None
    seed = f"-seed{sub['seed']}" if sub["seed"] is not None else ""
    return f"{sub['name']}-{sub['split']}-{len(ds)}{seed}", ds


def sweep_gallery_counts() -> dict:
    """The sidebar label's suffix for the built-in entry showing a sweep's gallery ({} when none); a sweep's
    gallery of another dataset than the sidebar's choice is dropped (the viewer has picked another one)."""
    s = st.session_state
    sub = s.get(SWEEP_GALLERY)
    if not isinstance(sub, dict):
        return {}
    if sub.get("name") != s.get("dataset", "builtin"):
        s.pop(SWEEP_GALLERY, None)
        return {}
    n = f"first {sub['n']}" if sub.get("n") else "all"
    split = "" if sub.get("split") == "demo" else f" of the {sub['split']} split"
    seed = f", seed {sub['seed']}" if sub.get("seed") is not None else ""
    return {sub["name"]: f" ({n}{split}{seed}, from a sweep)"}


def sweep_gallery_back() -> None:
    """Under the sidebar's dataset choice while a sweep's gallery is shown: a button back to the demo gallery."""
    sub = st.session_state.get(SWEEP_GALLERY)
    if isinstance(sub, dict) and sub.get("name") == st.session_state.get("dataset", "builtin"):
        full = DEMO_N if sub["name"] == "builtin" else VIDEO_DEMO_N
        st.button(f"Back to the {full}-item demo gallery", key="sweep_gallery_back",
                  on_click=lambda: st.session_state.pop(SWEEP_GALLERY, None),
                  help="The Benchmark example opened here uses the sweep's own items, so its ranks match the sweep.")
