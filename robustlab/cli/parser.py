"""The argument parser of every command: flags, defaults and help texts, and nothing that runs a command.

``eval`` and ``adapt`` add their arguments on first use (parsing or help): their choices come from the task and
adaptation registries, which import torch, so ``robustlab --help`` and the light commands never do.
"""
from __future__ import annotations

import argparse

from robustlab.training import RECIPES as TRAIN_RECIPES


class _Parser(argparse.ArgumentParser):
    """A subcommand's parser whose arguments ``build(parser)`` adds the first time it parses or formats help."""

    def __init__(self, *args, build=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._build = build

    def _ready(self) -> None:
        if self._build is not None:
            build, self._build = self._build, None
            build(self)

    def parse_known_args(self, args=None, namespace=None):
        self._ready()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._ready()
        return super().format_usage()

    def format_help(self) -> str:
        self._ready()
        return super().format_help()


def add_dataset_args(p, default: str | None = "builtin") -> None:
    p.add_argument("--dataset", default=default, help="a dataset name (see `robustlab datasets`)")
    p.add_argument("--root", default=None, help="the dataset's folder (datasets on disk)")
    p.add_argument("--split", default=None, help="the split (default: the dataset's test split)")
    p.add_argument("--n", type=int, default=None, help="use the first N items (built-in: generate N)")
    p.add_argument("--seed", type=int, default=None, help="built-in world seed (default: the split's)")
    p.add_argument("--trust-pickle", action="store_true",
                   help="allow reading a pickle annotation file (RefCOCO's refs(*).p): only for files you trust")


def _bench_parser(sub) -> None:
    b = sub.add_parser("bench", help="a robustness sweep (one Result per cell, resumable); "
                                     "`robustlab bench report DIR` writes its report")
    b.add_argument("--protocol", default=None, metavar="NAME|FILE",
                   help="a paper's protocol (`robustlab protocols`) or a protocol file: its datasets, perturbations "
                        "with variants and severities, combinations and report; the options below override it")
    b.add_argument("--dry-run", action="store_true", help="print every cell with its resolved parameters, run nothing")
    b.add_argument("--models", default=None,
                   help="comma-separated model specs (see `robustlab models`; default: the protocol's)")
    add_dataset_args(b, default=None)
    b.add_argument("--tasks", default=None, help="comma-separated tasks (see `robustlab tasks`; default retrieval)")
    b.add_argument("--perturbations", default=None,
                   help="visual perturbations: all | category:NAME | tag:NAME | NAME[/VARIANT],... | none "
                        "(default all; with --protocol: the protocol's)")
    b.add_argument("--text-perturbations", default=None, help="text perturbations, same forms (default none)")
    b.add_argument("--interventions", default=None,
                   help="model interventions, each a condition on clean inputs: quag:unimodal|crossmodal|video|text"
                        "|VV+TV..., quag-attention:video-avg|text-avg|text-video-avg[/multiplicative], "
                        "input:language-only|video-only, or all (default none)")
    b.add_argument("--adapt", default=None,
                   help="test-time adaptation methods (robustlab.adapt; `robustlab adapt --list`): tent, tcr, hat-vtr, "
                        "read, sar, eata (and the diagnostic oracle), e.g. none,tent,eata, or all (every method "
                        "but the oracle): each adds, for every shift of one side, a cell with that method adapting "
                        "that side's queries (visual: i2t/v2t, text: t2i/t2v); none is the shifted cell itself "
                        "(default none)")
    b.add_argument("--adapt-param", action="append", metavar="KEY=VALUE",
                   help="an adaptation parameter, repeatable: KEY=VALUE for every --adapt method that has it, "
                        "METHOD.KEY=VALUE for one (e.g. steps=1, hat-vtr.capacity=50)")
    b.add_argument("--severities", default=None, help="e.g. 1-5 or 1,3,5 (default 1-5; with --protocol: its own)")
    b.add_argument("--text-severities", default=None, help="default: --severities")
    b.add_argument("--mix-severities", action="store_true",
                   help="MLVP Table 17: per swept perturbation, one more cell whose items each draw a severity from "
                        "--severities (--text-severities); with --corrupt-fraction, the corrupted items draw theirs")
    b.add_argument("--corrupt-fraction", default=None, metavar="P[,P...]",
                   help="MLVP Table 18: cells with exactly round(P*N) items corrupted by a type drawn from the swept "
                        "perturbations of each axis, e.g. 0.2,0.4,0.6,0.8 (or 20%%,40%%)")
    b.add_argument("--combine", default=None,
                   help="visual × text pairs when both are swept: auto (at severity 3, the default), all, none, or a "
                        "severity; with --protocol: the protocol's pairs, or none")
    b.add_argument("--directions", default=None, help="retrieval directions to report, e.g. t2v,v2t (default all)")
    b.add_argument("--perturb-seed", type=int, default=0)
    b.add_argument("--worst", type=int, default=3, help="worst examples kept per perturbed cell and direction")
    b.add_argument("--out", default=None, help="the run folder (rerun with the same folder to resume)")
    b.add_argument("--engine", default="local", choices=["local", "ray"])
    b.add_argument("--address", default=None, help="Ray: 'auto' or a cluster address (default: start a local Ray)")
    b.add_argument("--num-cpus", type=int, default=None, help="Ray: CPUs of the local Ray it starts")
    b.add_argument("--device", default=None)
    b.add_argument("--report", action="store_true", help="write the report when the sweep is done")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    r = sub.add_parser("bench-report", help=argparse.SUPPRESS)
    r.add_argument("run", help="a run folder written by `robustlab bench`")
    r.add_argument("--metric", default=None, help="the γ metric as a column of results.csv (e.g. t2v_R@5)")
    r.add_argument("--headline", default=None,
                   help="the retrieval headline: R@1, R@5, R@10, MdR or RSUM (default: the sweep's or protocol's, "
                        "else R@1 of the first direction)")
    r.add_argument("--out", default=None, help="where to write (default: the run folder)")


def _failures_parser(sub) -> None:
    f = sub.add_parser("failures", help="breaking points: the lowest severity at which each example fails, per "
                                        "perturbation (a sweep of the same cells, resumable)",
                       description="For every example of a dataset and every perturbation, the lowest severity at "
                                   "which it fails (retrieval: its ground truth leaves the top k in --direction; "
                                   "grounding: IoU <= 0.5), its rank (or IoU) at each severity and the item that "
                                   "took its place, with that item's k-occurrence (hubness). It runs the sweep of "
                                   "the same cells as `robustlab bench` (cached embeddings, lazy video, resumable, "
                                   "--engine ray); --out DIR keeps the cells and failures.json (docs/failures.md).")
    f.add_argument("--model", required=True, help="a model spec (see `robustlab models`)")
    f.add_argument("--baseline", default=None, help="a second model: each example also says whether it breaks for "
                                                    "one model and not the other")
    add_dataset_args(f, default=None)
    f.add_argument("--task", default="retrieval", help="retrieval (default), grounding or vqa")
    f.add_argument("--protocol", default=None, metavar="NAME|FILE",
                   help="a paper's protocol (`robustlab protocols`): its perturbations with variants and severities "
                        "(--perturbations / --severities narrow or override them)")
    f.add_argument("--perturbations", default=None,
                   help="NAME[/VARIANT],... | category:NAME | tag:NAME | all: visual and text perturbations (a name "
                        "of the dataset's kind perturbs the visuals, a text one the captions or expressions)")
    f.add_argument("--severities", default=None, help="e.g. 1-5 or 1,3,5 (default 1-5; with --protocol: its own)")
    f.add_argument("--direction", default=None, choices=["t2i", "i2t", "t2v", "v2t"],
                   help="retrieval: who queries whom (default t2i, or t2v for videos)")
    f.add_argument("--k", type=int, default=1, help="retrieval: the example fails when its ground truth leaves the "
                                                    "top k (default 1)")
    f.add_argument("--refine", action="store_true", help="bisect each broken example between its last holding and "
                                                         "first failing severity to the breaking parameter value")
    f.add_argument("--refine-steps", type=int, default=6, help="--refine: bisection steps (default 6)")
    f.add_argument("--no-slices", action="store_true", help="skip the slices (groups of items that break together)")
    f.add_argument("--perturb-seed", type=int, default=0, help="item i gets seed S + i")
    f.add_argument("--out", default=None, help="the run folder: the sweep's cells and failures.json (rerun with the "
                                               "same folder to resume; default a folder in the cache)")
    f.add_argument("--engine", default="local", choices=["local", "ray"])
    f.add_argument("--address", default=None, help="Ray: 'auto' or a cluster address (default: start a local Ray)")
    f.add_argument("--num-cpus", type=int, default=None, help="Ray: CPUs of the local Ray it starts")
    f.add_argument("--device", default=None)
    f.add_argument("--top", type=int, default=5, help="without --json: examples listed per perturbation (default 5)")
    f.add_argument("--json", action="store_true", help="print the failure map as one JSON object on stdout")
    f.add_argument("--quiet", action="store_true", help="no progress bar")


def _search_parser(sub) -> None:
    s = sub.add_parser("search", help="the weakest change that breaks each example: a budgeted search over the "
                                      "catalogue (single perturbations, visual x text pairs, gated text edits)",
                       description="For every example (a query that holds clean; grounding: an expression whose "
                                   "box is a hit), the weakest change of its own inputs that breaks it, weakest = "
                                   "lowest largest severity, then sum, then fewer parts; ranked; --out DIR exports "
                                   "the broken ones as a suite that `robustlab regenerate DIR` rebuilds bit for bit "
                                   "and re-scores (docs/failures.md).")
    s.add_argument("--model", default="builtin:tiny-clip",
                   help="a model spec (image or video retrieval; grounding: e.g. builtin:tiny-vilt)")
    add_dataset_args(s, default=None)
    s.add_argument("--task", default="retrieval", choices=["retrieval", "grounding"],
                   help="retrieval (images or videos; default) or grounding (fails when IoU <= 0.5)")
    s.add_argument("--direction", default=None, choices=["t2i", "i2t", "t2v", "v2t"],
                   help="retrieval: who queries whom (default t2i, or t2v for videos)")
    s.add_argument("--k", type=int, default=1, help="retrieval: an example breaks when its ground truth leaves the "
                                                    "top k")
    s.add_argument("--visual", default=None, help="image or video perturbations to search (default: the ImageNet-C "
                                                  "set; videos: corruptions and Schiappa et al.'s temporal ones)")
    s.add_argument("--text", default=None, help="text edits to search (default: the gated EDA edits)")
    s.add_argument("--pair-max", type=int, default=2, help="visual x text pairs up to this severity each (0: none)")
    s.add_argument("--budget", type=int, default=5000, help="model evaluations at most (default 5000)")
    s.add_argument("--perturb-seed", type=int, default=0)
    s.add_argument("--out", default=None, help="export the broken examples as a suite into this folder")
    s.add_argument("--top", type=int, default=None, help="--out: only the TOP weakest")
    s.add_argument("--list", type=int, default=10, help="without --json: broken examples listed (default 10)")
    s.add_argument("--device", default=None)
    s.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    s.add_argument("--quiet", action="store_true", help="no progress bar")


def _eval_args(e) -> None:
    from robustlab.tasks.registry import names as task_names  # start-up: the task modules import torch

    e.add_argument("task", choices=task_names())
    e.add_argument("--model", default="builtin:tiny-clip")
    add_dataset_args(e, default=None)
    e.add_argument("--perturb", default=None, help="image or video perturbation of the dataset's visuals")
    e.add_argument("--severity", type=int, default=3, choices=range(1, 6), metavar="K", help="1..5")
    e.add_argument("--text-perturb", default=None, help="text perturbation of captions / questions / expressions")
    e.add_argument("--text-severity", type=int, default=3, choices=range(1, 6), metavar="K", help="1..5")
    e.add_argument("--perturb-seed", type=int, default=0)
    e.add_argument("--device", default=None)
    e.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="a task option, repeatable (`robustlab tasks --options` lists them; e.g. clavi: "
                        "method=render, peeling: wide=true)")
    e.add_argument("--out", default=None, help="write each Result as JSON into this folder")
    e.add_argument("--json", action="store_true")


def _adapt_args(ad) -> None:
    from robustlab.adapt import METHODS, QUERY_SIDE  # start-up: robustlab.adapt imports torch

    ad.description = ("Adapt the LayerNorms of the query side online (robustlab.adapt: "
                      f"{', '.join(METHODS)}) on a dataset's queries under a perturbation of that "
                      "side and print R@1/5/10, MdR and MnR on clean, shifted and adapted queries, "
                      "and the time per 1,000 queries. The model itself is never changed. "
                      "`robustlab adapt --list` gives every method's parameters and defaults.")
    ad.add_argument("--list", action="store_true", help="list the methods with their parameters and defaults")
    ad.add_argument("--model", default=None, help="a retrieval model (see `robustlab models --task retrieval`)")
    add_dataset_args(ad, default=None)
    ad.add_argument("--direction", default=None, metavar="|".join(QUERY_SIDE),
                    help="t2v / t2i adapt text queries, v2t / i2t visual ones (default: t2v, or t2i for images); "
                         "the dataset defaults to builtin-videos, or builtin for t2i / i2t")
    ad.add_argument("--perturb", default=None, help="the query shift: a perturbation of the query side (text for "
                                                    "t2*, image / video for *2t; default: clean queries)")
    ad.add_argument("--severity", type=int, default=3, metavar="K", help="1..5 (default 3)")
    ad.add_argument("--perturb-seed", type=int, default=0, help="query i gets seed S + i")
    ad.add_argument("--method", default="hat-vtr", metavar="|".join(METHODS), help="default hat-vtr")
    ad.add_argument("--param", action="append", metavar="KEY=VALUE",
                    help="a method parameter, repeatable (e.g. --param steps=1 --param lr=1e-4)")
    ad.add_argument("--mdr", default="median", choices=("median", "lower"),
                    help="median-rank convention: median (default) or lower, the lower middle rank as HAT-VTR's "
                         "released code (torch.median)")
    ad.add_argument("--severities", default=None, metavar="LIST",
                    help="R@K before and after adaptation at each severity of --perturb (e.g. 1,2,3,4,5)")
    ad.add_argument("--query", type=int, default=None, metavar="I",
                    help="print query I's top-k before and after adaptation")
    ad.add_argument("--top-k", type=int, default=5, metavar="K", help="with --query: how many items (default 5)")
    ad.add_argument("--heatmap", type=int, default=None, metavar="N",
                    help="add the first N queries' score matrix (shifted and adapted) to the JSON")
    ad.add_argument("--device", default=None)
    ad.add_argument("--json", action="store_true", help="print the result as JSON (with the per-step losses)")
    ad.add_argument("--out", default=None, metavar="FILE", help="also write the result as JSON to FILE")


def _peeling_parser(sub) -> None:
    pl = sub.add_parser("peeling", help="PEELING's extraction P/R/F1 (RQ4) and the ATCR of labelled tests",
                        description="`robustlab peeling extraction [--labels FILE]`: precision, recall and F1 of "
                                    "the object & property extraction against labelled expressions (default the "
                                    "shipped set; FILE: JSON or CSV with expression, object, properties and "
                                    "optionally pred_object / pred_properties). `robustlab peeling atcr "
                                    "LABELS.json`: the ATCR of tests labelled valid / invalid on the Grounding "
                                    "page (its exported labels file).")
    pl.add_argument("what", choices=["extraction", "atcr"])
    pl.add_argument("file", nargs="?", default=None, help="atcr: the labels file exported by the Grounding page")
    pl.add_argument("--labels", default=None, help="extraction: a labelled JSON or CSV file (default: shipped set)")
    pl.add_argument("--match", default="exact", choices=["exact", "overlap"],
                    help="extraction: properties equal after normalising (exact) or by contained words (overlap)")
    pl.add_argument("--rows", action="store_true", help="extraction: also list the expressions with an error")
    pl.add_argument("--json", action="store_true")


def _analysis_parsers(sub) -> None:
    """QUAG's simulation study and CLAVI's complement-pair attention distance (Rawal et al.)."""
    qs = sub.add_parser("quag-sim", help="QUAG's simulation study: the %% increase in test MSE after a "
                                         "short-circuit vs the crossmodal coupling α (Rawal et al. Fig. 2)",
                        description="Train a small transformer on α-coupled two-modality data for each α and print "
                                    "its test MSE, clean and after each short-circuit (Rawal et al. §3, App. A.5).")
    qs.add_argument("--alphas", default="0.05,0.15,0.25,0.35,0.45", help="coupling coefficients in [0, 0.5)")
    qs.add_argument("--config", default="quick", choices=["quick", "paper"],
                    help="quick: a reduced setting (minutes on a CPU); paper: App. A.5 (40k samples, 2000 epochs)")
    qs.add_argument("--epochs", type=int, default=None, help="override the config's epochs")
    qs.add_argument("--samples", type=int, default=None, help="override the config's sample count")
    qs.add_argument("--shortcircuits", default="crossmodal", help="comma list: crossmodal, unimodal, video, text "
                                                                  "or quadrants like VV+TV")
    qs.add_argument("--seed", type=int, default=0)
    qs.add_argument("--threads", type=int, default=None, help="torch CPU threads while it runs")
    qs.add_argument("--device", default=None, help="cpu (default) or cuda")
    qs.add_argument("--json", action="store_true")
    qs.add_argument("--out", default=None, metavar="FILE", help="also write the result as JSON to FILE")
    cd = sub.add_parser("clavi-distance", help="CLAVI: attention distance of complement pairs, correct vs wrong "
                                               "(Rawal et al. App. B.7, Table 16)",
                        description="Align a fusion model's attention on each CLAVI complement pair (linear sum "
                                    "assignment) and report the L2 distance, mean and variance for consistently "
                                    "correct and for wrongly answered pairs.")
    cd.add_argument("--model", default="builtin:tiny-vilt", help="a fusion VQA model (builtin:tiny-vilt, hf-vilt:...)")
    add_dataset_args(cd, default="builtin-videos")
    cd.add_argument("--pairs", type=int, default=20, help="CLAVI pairs to measure")
    cd.add_argument("--qtypes", default="BA", help="question types: BA (the paper's Table 16), BE or BA,BE")
    cd.add_argument("--method", default="swap", choices=["swap", "render"],
                    help="swap: the paper's complement; render: the built-in world re-rendered (not in the paper)")
    cd.add_argument("--pair-seed", type=int, default=0, help="the seed of the random extensions")
    cd.add_argument("--same-modality", action="store_true", help="match text tokens only with text tokens (not in "
                                                                 "the paper)")
    cd.add_argument("--device", default=None)
    cd.add_argument("--json", action="store_true")
    cd.add_argument("--out", default=None, metavar="FILE", help="also write the result (every pair) as JSON to FILE")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="robustlab", description="Perturb, compare and diagnose vision-language models.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    m = sub.add_parser("models", help="list built-in models and backends")
    m.add_argument("pattern", nargs="?", default=None, help='a wildcard on the spec or name, e.g. "*video*"')
    m.add_argument("--task", default=None, help="only models declaring this task (retrieval, video-retrieval, "
                                                "grounding, vqa, clavi, itm, entailment, reasoning)")
    m.add_argument("--backends", action="store_true", help="with --json: list the backend prefixes too")
    m.add_argument("--json", action="store_true")

    q = sub.add_parser("perturbations", help="list the perturbation registry")
    q.add_argument("--modality", choices=["image", "video", "text"])
    q.add_argument("--json", action="store_true")

    t = sub.add_parser("train", help="train a built-in model on the synthetic world")
    t.add_argument("model", help="one of: " + ", ".join(TRAIN_RECIPES))
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--n-train", type=int, default=None, help="training examples (default: the recipe's)")
    t.add_argument("--epochs", type=int, default=None, help="epochs (default: the recipe's)")
    t.add_argument("--eval-n", type=int, default=1000)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--out", default=None, help="checkpoint path (default: assets/NAME.safetensors)")
    t.add_argument("--stage3-from", default=None, metavar="CHECKPOINT",
                   help="tiny-vilt, tiny-vit-clip-video: run only the last stage on a stage-2 checkpoint (tiny-vilt: "
                        "PEELING's uniqueness questions; the video model: meanP's own frame head)")
    t.add_argument("--stage2-from", default=None, metavar="CHECKPOINT",
                   help="tiny-vit-clip, tiny-vit-clip-video: run the second stage on the stage 1 of CHECKPOINT "
                        "(the image model: the projection of the class and patch tokens over the frozen trunk; the "
                        "video model: the videos and their diverse copies, then its third stage)")

    pr = sub.add_parser("protocols", help="list the papers' benchmark protocols (robustlab bench --protocol NAME)")
    pr.add_argument("name", nargs="?", default=None, help="show one protocol (a shipped name or a .toml/.json file)")
    pr.add_argument("--json", action="store_true")

    d = sub.add_parser("datasets", help="list the datasets and what each needs")
    d.add_argument("pattern", nargs="?", default=None, help="a wildcard, e.g. 'ref*'")
    d.add_argument("--task", default=None, help="only datasets for this task")
    d.add_argument("--json", action="store_true")

    tk = sub.add_parser("tasks", help="list the evaluation tasks")
    tk.add_argument("pattern", nargs="?", default=None)
    tk.add_argument("--json", action="store_true")
    tk.add_argument("--options", action="store_true", help="also list each task's options (eval --option)")

    sub.add_parser("eval", help="evaluate a model on a dataset, clean and perturbed",
                   description="Evaluate a model on a dataset (built-in by default: the held-out test split, "
                               "1000 items) with a task; prints the metrics of the clean run, or of the "
                               "perturbed run with --perturb / --text-perturb (item i gets seed "
                               "--perturb-seed + i). --out DIR writes one JSON Result per run.",
                   build=_eval_args)

    pp = sub.add_parser("perturb", help="perturb image, video and caption files (and folders) into a folder",
                        description="Perturb files and folders (images, videos, caption .txt/.csv/.json files; "
                                    "folders recursively). Writes clean/ and perturbed/ copies and a "
                                    "manifest.jsonl that `robustlab regenerate` rebuilds. Bad files are reported "
                                    "and skipped (exit code 1). Example i gets seed S+i unless --same-seed.")
    pp.add_argument("inputs", nargs="+", metavar="INPUT", help="files or folders")
    pp.add_argument("--name", required=True, help="perturbation name (see `robustlab perturbations`)")
    pp.add_argument("--severity", type=int, required=True, choices=range(0, 6), metavar="K", help="0..5")
    pp.add_argument("--seed", type=int, default=0)
    pp.add_argument("--variant", default=None, help="a named variant (default: the perturbation's default)")
    pp.add_argument("--same-seed", action="store_true", help="use --seed for every example instead of seed+i")
    pp.add_argument("--max-side", type=int, default=None, help="downscale videos to this long side (px)")
    pp.add_argument("--out", required=True, help="output folder")
    pp.add_argument("--quiet", action="store_true", help="no progress bar")

    rg = sub.add_parser("regenerate", help="rebuild an export bit for bit and verify it",
                        description="Re-run every example of an export (a zip from the dashboard, a folder from "
                                    "`robustlab perturb`, or a manifest.jsonl) on its clean input and verify the "
                                    "output hashes. Prints OK / MISMATCH / ERROR per example; exit code 1 if any "
                                    "example does not match.")
    rg.add_argument("export", metavar="MANIFEST_OR_ZIP")
    rg.add_argument("--out", default=None, help="write the rebuilt export here")
    rg.add_argument("--json", action="store_true")
    rg.add_argument("--quiet", action="store_true", help="no progress bar")

    hb = sub.add_parser("hubness", help="k-occurrence hubness of retrieval, clean vs perturbed",
                        description="Hubness of a model's text-image or text-video retrieval on a dataset: the "
                                    "k-occurrence N_k of every gallery item (how many queries rank it in their "
                                    "top k) and its skewness, truncated-normal skewness, Atkinson, Robin Hood and "
                                    "Gini indices, antihub and hub occurrence, with R@1/5/10, clean and (with "
                                    "--perturb) perturbed; --reduce adds the scores after a hubness reduction.")
    hb.add_argument("--model", default="builtin:tiny-clip")
    add_dataset_args(hb)
    hb.add_argument("--k", type=int, default=15, help="top-k of the k-occurrence (HAT-VTR uses 15)")
    hb.add_argument("--direction", choices=["t2i", "i2t", "t2v", "v2t"], default=None,
                    help="t2i: captions query images (N_k per image); i2t: images query captions; t2v / v2t for "
                         "a video dataset (default: t2i, or t2v for videos)")
    hb.add_argument("--perturb", default=None, help="an image / video or text perturbation, applied to that "
                                                    "modality")
    hb.add_argument("--perturb-seed", type=int, default=0)
    hb.add_argument("--severity", type=int, default=3, choices=range(1, 6), metavar="K", help="1..5")
    hb.add_argument("--reduce", default=None, choices=["dsl", "qbnorm", "hsm"],
                    help="also report the scores after this hubness reduction (default parameters)")
    hb.add_argument("--device", default=None)
    hb.add_argument("--json", action="store_true")
    _bench_parser(sub)
    _failures_parser(sub)
    _search_parser(sub)
    _analysis_parsers(sub)
    _peeling_parser(sub)

    sub.add_parser("adapt", help="test-time adaptation of a retrieval model's query side under a query shift",
                   build=_adapt_args)
    return p
