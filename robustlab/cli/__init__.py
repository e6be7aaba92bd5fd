"""The ``robustlab`` command line.

    robustlab models [PATTERN] [--task T] [--backends] built-in models (and whether their weights are here) and
                                                       the backend prefixes; PATTERN a wildcard ("*video*"),
                                                       T a task (retrieval, grounding, vqa, ...)
    robustlab perturbations [--modality image|text]    the perturbation registry with severity tables
    robustlab train tiny-clip [--seed S] [--out PATH]  train the built-in model on the synthetic world
    robustlab datasets [PATTERN] [--task T]            the datasets and what each needs
    robustlab tasks                                    the evaluation tasks
    robustlab eval TASK --model M [--dataset NAME --root PATH --split S --n N] [--perturb NAME --severity K]
                        [--text-perturb NAME --text-severity K] [--out DIR] [--json]
    robustlab perturb INPUT... --name NAME --severity K [--seed S] [--variant V] --out DIR
                                                       perturb images, videos and caption files (and folders
                                                       of them) into DIR with a manifest.jsonl
    robustlab regenerate EXPORT [--out DIR]            rebuild an export (zip, folder or manifest.jsonl) bit
                                                       for bit and verify it; exit 1 on any mismatch
    robustlab hubness --model M [--dataset NAME --root PATH --split S --n N] --k 15 [--direction t2i|i2t|t2v|v2t]
                      [--perturb NAME --severity K] [--reduce dsl|qbnorm|hsm] [--json]
                                                       k-occurrence hubness indices and R@K, clean vs perturbed
    robustlab bench --models M1,M2 --dataset D [--root R --split S --n N] --tasks retrieval[,...]
                    --perturbations all|category:NAME|NAME,... [--text-perturbations ...] --severities 1-5
                    [--interventions quag:unimodal,input:language-only,...] [--directions t2v,v2t]
                    [--adapt none,tent,tcr,hat-vtr [--adapt-param KEY=VALUE ...]]
                    --out runs/NAME [--engine local|ray [--address auto]]
                                                       a robustness sweep: one Result JSON per (model, task,
                                                       condition) cell; rerun to resume
    robustlab bench report runs/NAME [--metric M]      results.csv and a self-contained report.html
    robustlab failures --model M [--baseline M2] [--dataset D --root R --split S --n N] [--task grounding]
                       --perturbations LIST | --protocol NAME [--severities 1-5] [--direction t2i|i2t|t2v|v2t]
                       [--k 1] [--json] [--out DIR] [--engine local|ray]
                                                       breaking points: per example and perturbation, the lowest
                                                       failing severity, the ranks, the thief and its hubness
    robustlab adapt --model M [--dataset D --root R --split S --n N --seed S] --direction t2v|v2t|t2i|i2t
                    --perturb NAME --severity K [--method hat-vtr] [--param KEY=VALUE ...] [--json] [--out FILE]
                                                       test-time adaptation of the query side under a query
                                                       shift: clean / shifted / adapted R@K and the time
    robustlab adapt --list [--json]                    the adaptation methods, their parameters and defaults
    robustlab quag-sim [--alphas 0.05,...] [--config quick|paper]  QUAG's simulation study (Rawal et al. Fig. 2)
    robustlab clavi-distance --model M [--pairs N] [--qtypes BA]   CLAVI complement-pair attention distance (B.7)
    robustlab peeling extraction [--labels FILE]       PEELING's extraction precision / recall / F1 (RQ4)
    robustlab peeling atcr LABELS.json                 the ATCR of tests labelled on the Grounding page

Layout: :mod:`~robustlab.cli.parser` (every flag and help text), one module per command or small group, each thin
over the library (:mod:`~robustlab.cli.listing` for models / perturbations / datasets / tasks, ``train``,
``evaluate``, ``perturb``, ``regenerate``, ``hubness``, ``bench`` with ``bench report``, ``adapt``),
:mod:`~robustlab.cli.inputs` (the dataset and model of eval / hubness / adapt) and :mod:`~robustlab.cli.common`
(the one-line error, messages, the progress bar). A command's module is imported only when that command runs.
"""
from __future__ import annotations

import importlib
import sys
import types

from robustlab.cli.common import err, os_message, out_problem
from robustlab.cli.parser import build_parser
from robustlab.perturb import allocator

# command -> "module:function" under robustlab.cli; the module is imported only when its command runs (measured
# start-up: `robustlab --help`, the listings of perturbations and datasets, perturb and regenerate never import torch)
COMMANDS = {
    "models": "listing:cmd_models", "perturbations": "listing:cmd_perturbations",
    "datasets": "listing:cmd_datasets", "tasks": "listing:cmd_tasks", "train": "train:cmd_train",
    "eval": "evaluate:cmd_eval", "perturb": "perturb:cmd_perturb", "regenerate": "regenerate:cmd_regenerate",
    "hubness": "hubness:cmd_hubness", "bench": "bench:cmd_bench", "bench-report": "bench:cmd_bench_report",
    "failures": "failures:cmd_failures", "search": "search:cmd_search",
    "adapt": "adapt:cmd_adapt", "protocols": "protocols:cmd_protocols",
    "quag-sim": "analyses:cmd_quag_sim", "clavi-distance": "analyses:cmd_clavi_distance",
    "peeling": "peeling:cmd_peeling",
}
# names robustlab.cli had as one module -> where they live now ("module:name"); read and set through the package
# (a test that replaces robustlab.cli._load replaces what the commands call)
_MOVED = {
    **{home.partition(":")[2]: home for home in COMMANDS.values()},  # cmd_models, cmd_eval, ...
    "_msg": "common:msg", "_err": "common:err", "_split": "common:split", "_bar": "common:counting_bar",
    "_build_dataset": "inputs:build_dataset", "_load": "inputs:load_model", "_resolve": "train:_resolve",
    "_add_dataset_args": "parser:add_dataset_args", "_bench_parser": "parser:_bench_parser",
    "TRAIN_RECIPES": "train:TRAIN_RECIPES",
    "_filename": "evaluate:_filename", "_list_methods": "adapt:_list_methods",
}


def _home(where: str):
    mod, _, name = where.partition(":")
    return importlib.import_module(f"robustlab.cli.{mod}"), name


# what each command's --out names: a folder it fills, or one file it writes (checked before any work)
OUT_KINDS = {"eval": "folder", "perturb": "folder", "regenerate": "folder", "bench": "folder", "failures": "folder",
             "bench-report": "folder", "search": "folder", "adapt": "file", "quag-sim": "file",
             "clavi-distance": "file", "train": "file"}


def _precheck(args) -> str | None:
    """The flags every command shares, checked before the command does any work: ``--out`` (a file where a folder
    goes, a path under a file...) and ``--device`` (``tpu:9``, ``cuda:9`` on a one-GPU machine). One line or None."""
    out, kind = getattr(args, "out", None), OUT_KINDS.get(args.cmd)
    if out and kind and not getattr(args, "dry_run", False) and not getattr(args, "list", False):
        why = out_problem(out, kind)
        if why:
            return why
    if getattr(args, "device", None) is not None:
        from robustlab.engine.device import (  # torch: only the commands that take --device (they import it anyway)
            DeviceError, resolve_device)

        try:
            resolve_device(args.device)
        except DeviceError as e:
            return f"--device: {e}"
    return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["bench", "report"]:  # `robustlab bench report DIR`
        argv = ["bench-report"] + argv[2:]
    args = build_parser().parse_args(argv)
    why = _precheck(args)
    if why:
        return err(why)
    allocator.tune_allocator()  # keep freed NumPy temporaries (glibc): zoom blur, brightness, elastic up to 3x faster
    try:
        mod, name = _home(COMMANDS[args.cmd])
        return getattr(mod, name)(args)
    except KeyboardInterrupt:
        return err("interrupted", 130)
    except OSError as e:  # a full disk, a folder made read-only meanwhile: one line, never a traceback
        return err(os_message(e))


class _Package(types.ModuleType):
    """robustlab.cli, whose old module-level names (:data:`_MOVED`) are read from and set on their new modules."""

    def __getattr__(self, name: str):
        if name not in _MOVED:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        mod, attr = _home(_MOVED[name])
        return getattr(mod, attr)

    def __setattr__(self, name: str, value) -> None:
        if name not in _MOVED:
            return super().__setattr__(name, value)
        mod, attr = _home(_MOVED[name])
        setattr(mod, attr, value)


sys.modules[__name__].__class__ = _Package

__all__ = ["main", "build_parser", "COMMANDS"]
