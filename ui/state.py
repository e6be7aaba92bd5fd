"""The names pages, app.py and the tests know as ``ui.state``: the sidebar (:mod:`ui.sidebar_panel`), the cached
loaders and the choices the pages read (:mod:`ui.loaders`), the model that follows the data (:mod:`ui.follow`) and
the widget state (:mod:`ui.widget_state`). Issue 46 split the 555-line module that held all of them (and sat in an
import cycle with ui.compare, ui.folders and ui.widgets); modules of ui import from those modules, never from this
one, so that no ui module imports back into a module that imports it."""
from __future__ import annotations

from ui.follow import (KEEP, KEEP_BASELINE, UNDO_LABEL, VIDEO_BUILTIN, VIDEO_SIBLING, counterpart,  # noqa: F401
                       follow_data, mismatch)
from ui.loaders import (CUSTOM_EXAMPLE, DATASETS, DEFAULT_MODEL, DEMO_N, EMPTY_HINT, OTHER_MODEL,  # noqa: F401
                        RANDOM_WEIGHTS, SWEEP_GALLERY, SWEEP_GALLERY_MAX_N, TASK_LABELS, VIDEO_DEMO_N, Bench, can_do,
                        current_bench, current_dataset, current_model, default_model, get_bench, get_builtin_gallery,
                        get_builtin_video_gallery, get_folder_dataset, get_model, get_sweep_gallery, load, models_for,
                        offered_models, random_weights, refusal, sidebar_models, spec_device, sweep_gallery,
                        sweep_gallery_back, sweep_gallery_counts, sweep_gallery_of, task_label, task_model)
from ui.sidebar_panel import preset_grounding, preset_retrieval, sidebar  # noqa: F401
from ui.widget_state import begin_run, clamp, end_run, initial, remount, valid  # noqa: F401
