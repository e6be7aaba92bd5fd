"""Test-time adaptation on the built-in video retrieval models (issue 14; HAT-VTR Tables 1 and 3 layout).

For each model: v2t with shifted video queries under every available MLVP video perturbation at the chosen
severities, and t2v with shifted text queries under every available text shift of the HAT-VTR text benchmark
(Qiu et al.'s 15), each run with no adaptation, Tent, TCR, HAT-VTR, READ, SAR and EATA (their defaults; the
oracle and variants with --methods). Writes one JSON with every
run's clean / shifted / adapted R@1, R@5, R@10, the adaptation's wall time per 1,000 queries, and the means per
(model, direction, severity, method); each run also keeps every query's rank under the shifted and the adapted
scores (``ranks``), so two methods on the same queries get a paired interval (benchmarks/adapt_grid_table.py).
``--only`` takes a shift's named variant as ``name/variant`` (e.g. ``mlvp_occlusion/centre``, the box the tables
ran before occlusion covered the main object). Resumes: runs already in the output file are skipped.

    python benchmarks/bench_adapt.py --n 1000 --threads 2
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ("builtin:tiny-clip-video-seqtransf", "builtin:tiny-clip-video-meanp")
METHODS = ("none", "tent", "tcr", "hat-vtr", "read", "sar", "eata")


def shifts():
    import robustlab as rl

    video, text, missing = [], [], []
    for s in rl.list_perturbations():
        if s.name.startswith("mlvp_"):
            (video if s.available else missing).append(s.name)
        elif s.modality == "text" and "Table 8" in s.source:
            (text if s.available else missing).append(s.name)
    return video, text, missing


def parse_method(text: str) -> tuple[str, dict]:
    """``hat-vtr`` or ``hat-vtr[lr=0,steps=1]`` -> (name, params): a labelled variant (e.g. HSM's reranking alone)."""
    name, _, rest = text.partition("[")
    kw = {}
    for part in rest.rstrip("]").split(",") if rest else ():
        k, _, v = part.partition("=")
        kw[k.strip()] = float(v) if v.replace(".", "", 1).replace("e-", "", 1).isdigit() else v
    return name.strip(), kw


def summarize(runs: list) -> list:
    rows = {}
    for r in runs:
        key = (r["model"], r["direction"], r["severity"], r["method"])
        rows.setdefault(key, []).append(r)
    out = []
    for (model, d, sev, meth), rs in sorted(rows.items()):
        out.append({"model": model, "direction": d, "severity": sev, "method": meth, "n_shifts": len(rs),
                    "R@1_clean": float(np.mean([r["clean"]["R@1"] for r in rs])),
                    "R@1_shifted": float(np.mean([r["shifted"]["R@1"] for r in rs])),
                    "R@1_adapted": float(np.mean([r["adapted"]["R@1"] for r in rs])),
                    "s_per_1000_queries": float(np.mean([r["seconds"]["per_1000_queries"] for r in rs])),
                    "spread_shifted": float(np.mean([r["spread"]["shifted"] for r in rs if "spread" in r]
                                                    or [np.nan])),
                    "spread_clean": float(np.mean([r["spread"]["clean"] for r in rs if "spread" in r] or [np.nan])),
                    **{f"k_skewness_{w}": float(np.mean([r["hubness"][w]["k_skewness"] for r in rs if "hubness" in r]
                                                        or [np.nan])) for w in ("clean", "shifted", "adapted")}})
    return out


HUB_K = 15
HUB_KEEP = ("k_skewness", "robinhood", "antihub_occurrence", "hub_occurrence")


def hubness(r) -> dict:
    """The gallery's hubness under the clean, shifted and adapted queries of one run (kept arrays), k = 15."""
    from robustlab.diagnostics.hubness import k_occurrence, measures_from_nk

    clean = np.asarray(r.query_clean, np.float32) @ np.asarray(r.gallery, np.float32).T
    out = {}
    for what, scores in (("clean", clean), ("shifted", r.scores_shifted), ("adapted", r.scores_adapted)):
        nk = k_occurrence(np.asarray(scores, np.float32), k=HUB_K)
        m = measures_from_nk(nk, HUB_K)
        out[what] = {k: round(float(m[k]), 4) for k in HUB_KEEP} | {"max_n_k": int(np.max(nk))}
    return out


def dumps(doc: dict) -> str:
    """The results file: indented, with each list of numbers (a run's 1,000 ranks) on one line instead of one line
    per number, which would more than double the file."""
    text = json.dumps(doc, indent=1)
    return re.sub(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]", lambda m: "[" + re.sub(r"\s+", "", m.group(1)) + "]", text)


def query_ranks(r) -> dict:
    """Each query's rank of its best positive (1 = top) under the shifted and the adapted scores, in query order:
    what a paired interval between two methods on the same queries needs (robustlab.metrics.retrieval.ranks)."""
    from robustlab.metrics.retrieval import ranks

    return {"ranks": {w: [int(x) for x in ranks(np.asarray(sc, np.float32), r.positives)]
                      for w, sc in (("shifted", r.scores_shifted), ("adapted", r.scores_adapted))}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="comma-separated; a variant as METHOD[k=v;k=v], e.g. hat-vtr[lr=0] (HSM's reranking alone)")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--severities", default="3,5", help="video severities")
    ap.add_argument("--text-severity", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated perturbation names, a variant as name/variant "
                    "(default: all available)")
    ap.add_argument("--directions", default="v2t,t2v")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=None,
                    help="render the built-in videos at this many px (default: the dataset's 64)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "adapt_tiny_clip_video.json"))
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(a.threads)
    import robustlab as rl
    from robustlab import adapt
    from robustlab.tasks.retrieval_bench import RetrievalBench

    out = Path(a.out)
    doc = json.loads(out.read_text()) if out.exists() else {"runs": []}
    def key(r):
        return r["model"], r["direction"], r["perturbation"], r["severity"], r["method"]

    done = {key(r) for r in doc["runs"] if "hubness" in r}  # a run from before the hubness fields: run again
    video, text, missing = shifts()
    if a.only:
        keep = a.only.split(",")
        # a named variant of an available shift runs as itself, e.g. mlvp_occlusion/centre (the box the table used)
        unknown = [k for k in keep if k.partition("/")[0] not in video + text]
        if unknown:
            raise SystemExit(f"--only: {', '.join(unknown)} is not an available shift of this benchmark "
                             f"({', '.join(video + text)}; a variant as name/variant)")
        video = [k for k in keep if k.partition("/")[0] in video]
        text = [k for k in keep if k.partition("/")[0] in text]
    sevs = [int(s) for s in a.severities.split(",")]
    methods = [m.replace(";", ",") for m in a.methods.split(",")]
    if doc["runs"] and doc.get("size") != a.size:
        raise SystemExit(f"{out} holds runs on videos of another size ({doc.get('size') or 'the default'}); "
                         "give another --out")
    px = f", {a.size} px" if a.size else ""
    doc.update({"n": a.n, "dataset": f"builtin-videos (test, world seed 1000{px})", "size": a.size,
                "threads": a.threads,
                "machine": platform.machine(), "cpus": os.cpu_count(), "unavailable_shifts": missing,
                "methods": methods})
    for spec in a.models.split(","):
        model = rl.load_model(spec)
        # the runs of a file belong to one checkpoint: a retrained model's results go to another file
        fp, known = model.fingerprint, doc.setdefault("checkpoints", {}).get(spec)
        if known not in (None, fp) and any(r["model"] == spec for r in doc["runs"]):
            raise SystemExit(f"{out} holds runs of another checkpoint of {spec} ({known}, now {fp}); "
                             "give another --out")
        doc["checkpoints"][spec] = fp
        ds = rl.datasets.build("builtin-videos", n=a.n, **({"size": a.size} if a.size else {}))
        bench = RetrievalBench(model, ds, lazy=True)
        plan = []
        if "v2t" in a.directions:
            plan += [("v2t", p, s) for p in video for s in sevs]
        if "t2v" in a.directions:
            plan += [("t2v", p, a.text_severity) for p in text]
        for d, pert, sev in plan:
            todo = [m for m in methods if (spec, d, pert, sev, m) not in done]
            if not todo:
                continue
            t0 = time.perf_counter()
            for meth in todo:
                name, kw = parse_method(meth)
                r = adapt.run(model, ds, name, d, f"{pert}:{sev}", bench=bench, keep_arrays=True, **kw)
                row = {"model": spec, "direction": d, "perturbation": pert, "severity": sev, "method": meth,
                       "spread": r.spread,
                       "clean": r.metrics["clean"], "shifted": r.metrics["shifted"], "adapted": r.metrics["adapted"],
                       "seconds": r.seconds, "params": r.params, "adapted_parameters": r.adapted_parameters,
                       "final_loss": (r.loss_curve()[-1] if r.losses else None), "hubness": hubness(r),
                       **query_ranks(r)}
                doc["runs"] = [old for old in doc["runs"] if key(old) != key(row)] + [row]  # replaces an older record
                print(f"{spec} {d} {pert}:{sev} {meth:8s} R@1 {r.metrics['shifted']['R@1']:.3f} -> "
                      f"{r.metrics['adapted']['R@1']:.3f} ({r.seconds['per_1000_queries']:.1f} s/1k), k_skewness "
                      f"{row['hubness']['shifted']['k_skewness']:.2f} -> {row['hubness']['adapted']['k_skewness']:.2f}",
                      flush=True)
                del r
            doc["summary"] = summarize(doc["runs"])
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(dumps(doc))
            print(f"  {d} {pert}:{sev} done in {time.perf_counter() - t0:.0f} s", flush=True)
            # free the perturbed inputs and embeddings of this shift (keep the clean ones)
            from robustlab.perturb.condition import Condition

            ck = Condition().key()
            bench._visuals = {k: v for k, v in bench._visuals.items() if k == ck}
            bench._texts = {k: v for k, v in bench._texts.items() if k == ck}
    for row in doc.get("summary", []):
        print(f"{row['model']:36s} {row['direction']} s{row['severity']} {row['method']:8s} "
              f"clean {row['R@1_clean']:.3f} shifted {row['R@1_shifted']:.3f} adapted {row['R@1_adapted']:.3f} "
              f"({row['n_shifts']} shifts, {row['s_per_1000_queries']:.1f} s/1k)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
