"""Streamlit glue shared by app.py and the pages (kept out of ``robustlab/``: the core is UI-free).

- :mod:`ui.state`: the sidebar (model, dataset, device), cached model / dataset / bench loaders
- :mod:`ui.widget_state`: what the browser shows is what the page uses (valid / clamp / initial / remount)
- :mod:`ui.uploads`: the "My uploads" gallery form (images or videos, with captions)
- :mod:`ui.widgets`: perturbation picker, condition row, encode-with-progress, ranked grid, metrics and recall chart
- :mod:`ui.media`: images, video players, boxes, user text shown literally
- :mod:`ui.attention`, :mod:`ui.clavi`, :mod:`ui.peeling`, :mod:`ui.bench`, :mod:`ui.adaptation`, :mod:`ui.panels`,
  :mod:`ui.charts`, :mod:`ui.inputs`: the pieces of one page each (QUAG heatmaps, CLAVI tables, the Grounding page's
  PEELING panel, the Benchmark page, the Adaptation page, shared panels and charts, input pickers)
"""
import importlib

# the names pages use as ``ui.NAME``, by the module that defines them: imported on first use (PEP 562), so that a
# light part of ui (ui.operator, ui.warmup's settings) imports without PyTorch; ``ui.SUBMODULE`` imports it too
_EXPORTS = {
    "ui.media": ("GT", "CLEAN", "PERT", "boxed", "diff_markdown", "fps_of", "md_escape", "show_visual", "video_mp4"),
    "ui.state": ("DATASETS", "DEFAULT_MODEL", "DEMO_N", "EMPTY_HINT", "VIDEO_DEMO_N", "Bench", "clamp",
                 "current_bench", "current_dataset", "current_model", "can_do", "get_bench", "get_builtin_gallery",
                 "get_builtin_video_gallery", "get_model", "initial", "load", "models_for", "sidebar", "spec_device",
                 "task_model", "valid"),
    "ui.widgets": ("NONE", "basket", "compute", "int_slider", "condition_row", "export_link", "gallery_metrics",
                   "metrics_table", "param_inputs", "perturbation_catalogue", "perturbation_names",
                   "perturbation_picker", "ranked_captions", "ranked_grid", "recall_chart"),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    mod = _WHERE.get(name)
    if mod is not None:
        value = getattr(importlib.import_module(mod), name)
        globals()[name] = value  # looked up once
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"ui.{name}")  # (importing it also sets it as an attribute)
        except ModuleNotFoundError as e:
            if e.name != f"ui.{name}":
                raise
    raise AttributeError(f"module 'ui' has no attribute {name!r}")
