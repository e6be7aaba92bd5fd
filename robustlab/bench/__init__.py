"""Robustness sweeps: every (model, task, condition set) cell of a grid over one dataset, one Result JSON per cell.

A sweep is a :class:`SweepSpec` (models, one dataset, tasks, a list of condition sets) run into a folder::

    runs/NAME/
      sweep.json            the spec (what the report reads back), the union of every run into this folder
      cells/<cellkey>.json  one robustlab.tasks.result.Result per cell; extra: cell, seconds, worst examples
      thumbs/<cellkey>/...  thumbnails of the worst examples (regenerated from their records), thumbs/clean/...

The parts, lowest first: :mod:`~robustlab.bench.spec` (the spec, its cells, the grid parsers and :func:`build_spec`,
the one builder ``robustlab bench`` and the Benchmark page share), :mod:`~robustlab.bench.sources` (decode once),
:mod:`~robustlab.bench.cells` (check a sweep, run one group of cells, write and read cells),
:mod:`~robustlab.bench.runner` (:func:`run_sweep`: local, or on Ray through :mod:`~robustlab.bench.ray_runner`) and
the report (:mod:`~robustlab.bench.report`: data, figures, summary, HTML; needs pandas and plotly).

Conditions are a general grid of axes (``visual``, ``text``, model interventions and test-time adaptation
methods), never a perturbation-only loop: :func:`condition_grid` builds the usual one, anything else can be passed.
An adaptation cell is ``{<one single-axis shift>, "adapt": <method>}``: the retrieval task runs the method
(:mod:`robustlab.adapt`) on that side's queries, in the directions those queries go (visual: i2t / v2t, text: t2i /
t2v); "no adaptation" is the shifted cell itself. What a task shares across a group of cells (retrieval: one bench
of clean embeddings) is the task's :meth:`~robustlab.tasks.task.Task.sweep_options`, not the sweep's.

Resumable: a cell's file is written atomically when the cell is done, with a SHA-256 checksum of its content
(:mod:`~robustlab.bench.cellfile`), so a run killed at any moment loses at most the cells in flight; the rerun skips
a cell whose file passes the cell schema and its checksum (a file without one, from an older robustlab, on its schema
alone), recomputes one that does not (truncated, empty, malformed, edited, another cell's; one log line each), and
the final files are the same as an uninterrupted run's (every number is a function of the spec: seeds are
``condition.seed + item``). A write that fails (a full disk) stops the sweep with one line (SweepError); the cells
finished before it stay.

Each visual is decoded once per sweep process (:class:`DecodedOnce`), each perturbed input is encoded once (the
embedding cache, keyed by the model's weights fingerprint, the content and the perturbation record). The local and
the Ray runner run the same :func:`run_group` on groups of cells and the driver writes what comes back, so their
outputs are identical.
"""
from __future__ import annotations

from robustlab.bench.cells import (CellOutput, build_dataset, cell_path, check, load, load_results, run_group,
                                   write_output)
from robustlab.bench.runner import SweepStatus, pending, run_sweep
from robustlab.bench.sources import CachedSource, DecodedOnce, FrameCache
from robustlab.bench.spec import (ENGINES, SCHEMA, Cell, SweepCancelled, SweepError, SweepSpec, build_spec,
                                  condition_grid, parse_adapt, parse_interventions, parse_perturbations,
                                  parse_severities)

__all__ = ["SweepSpec", "Cell", "CellOutput", "SweepStatus", "SweepError", "SweepCancelled", "DecodedOnce",
           "FrameCache", "CachedSource", "condition_grid", "parse_perturbations", "parse_severities", "parse_adapt",
           "parse_interventions", "build_spec", "run_sweep", "run_group", "pending", "check", "load_results",
           "write_output", "cell_path", "build_dataset", "load", "ENGINES", "SCHEMA"]
