"""QUAG on tiny-vilt: multiplications and wall time of QUAG-attention vs full attention, and the hooks' overhead at
S = ∅ (issue 13 target ≤ 5% over no hooks).

    python benchmarks/bench_quag.py [--items 256] [--repeats 7] [--kind image|video]

Multiplications are counted two ways: analytically (robustlab.diagnostics.quag.multiplications, per fusion layer and
sequence, scopes "core" / "attention" / "layer") and measured with torch's FlopCounterMode on the real forward
(matrix products only — linear layers and the attention products; FLOPs / 2 = multiplications), for the fusion
layers alone and for the whole model (the visual and text towers included). Times are medians of interleaved
repeats in one process. Results: benchmarks/results/quag.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--kind", default="image", choices=["image", "video"])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "quag.json"))
    args = ap.parse_args(argv)

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_num_threads(os.cpu_count() or 1)
    from robustlab.datasets import build
    from robustlab.diagnostics import quag
    from robustlab.models import load_model
    from robustlab.models.attention import intervention

    model = load_model("builtin:tiny-vilt", device="cpu")
    ds = build("builtin" if args.kind == "image" else "builtin-videos", split="test", n=args.items)
    vis = [ds.visual(i) for i in range(args.items)]
    qs = [ds.item(i).questions[0].question for i in range(args.items)]

    def run(rep):
        with intervention(rep):
            return model.vqa_batch(vis, qs, batch_size=args.items)

    conds = {"full attention": None, "S = ∅ hook": quag.replace_fn([]), "QUAG unimodal": quag.replace_fn("unimodal")}
    for mode in quag.QUAG_ATTENTION_MODES:
        conds[f"QUAG-attention {mode}"] = quag.QuagAttention(mode)

    # ---- multiplications (FlopCounterMode) ------------------------------------------------------------------
    mults = {}
    for name, rep in conds.items():
        fc = FlopCounterMode(display=False)
        with fc:
            run(rep)
        by_mod = {k: sum(v.values()) for k, v in fc.get_flop_counts().items()}
        layers = [k for k in by_mod if re.fullmatch(r".*\.layers\.\d+", k)]
        fusion = sum(by_mod[k] for k in layers)
        mlp = sum(by_mod.get(k + ".mlp", 0) for k in layers)
        mults[name] = {"model": fc.get_total_flops() // 2, "fusion_layers": fusion // 2,
                       "attention": (fusion - mlp) // 2}

    # ---- wall time: interleaved repeats ------------------------------------------------------------------------
    run(None)  # warm-up
    times = {k: [] for k in conds}
    for _ in range(args.repeats):
        for name, rep in conds.items():
            t = time.perf_counter()
            run(rep)
            times[name].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["full attention"]

    ids, mask = model.tokenize(qs[:1])
    n_text = int(ids.shape[1])
    from robustlab.models.tiny_vilt import check_visual

    vis_tokens, _ = model.visual_embed([check_visual(vis[0])])
    n_vis = int(vis_tokens.shape[1])
    cfg = model.net.cfg
    analytic = {mode: {scope: quag.multiplications(n_text, n_vis, int(cfg["width"]), int(cfg["mlp"]), mode=mode,
                                                   scope=scope)["saving"] for scope in ("core", "attention", "layer")}
                for mode in quag.QUAG_ATTENTION_MODES}
    full = mults["full attention"]
    res = {"items": args.items, "kind": args.kind, "repeats": args.repeats, "cpus": os.cpu_count(),
           "tokens": {"text": n_text, "visual": n_vis}, "width": int(cfg["width"]), "mlp": int(cfg["mlp"]),
           "layers": len(model.net.layers),
           "multiplications": mults,
           "saving_measured": {k: {"attention": 1 - v["attention"] / full["attention"],
                                   "fusion_layers": 1 - v["fusion_layers"] / full["fusion_layers"],
                                   "model": 1 - v["model"] / full["model"]} for k, v in mults.items()},
           "saving_analytic": analytic,
           "seconds_median": med, "time_ratio": {k: v / base for k, v in med.items()},
           "hook_overhead_empty_set": med["S = ∅ hook"] / base - 1}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    print(f"tiny-vilt {args.kind} VQA, {args.items} items in one batch, {n_text} text + {n_vis} visual tokens, "
          f"width {cfg['width']}, {len(model.net.layers)} layers; median of {args.repeats}")
    print("| forward | attention blocks: multiplications | saving | fusion layers (+MLP) | saving | whole model | "
          "saving | time | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in conds:
        s = res["saving_measured"][k]
        print(f"| {k} | {mults[k]['attention']:,} | {s['attention']:.1%} | {mults[k]['fusion_layers']:,} | "
              f"{s['fusion_layers']:.1%} | {mults[k]['model']:,} | {s['model']:.1%} | {med[k]:.3f} s | "
              f"{med[k] / base:.3f} |")
    print("analytic savings (core / attention / layer):",
          {m: {s: f"{v:.1%}" for s, v in d.items()} for m, d in analytic.items()})
    print(f"hooks at S = ∅: {res['hook_overhead_empty_set']:+.1%} over no hooks (target ≤ 5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
