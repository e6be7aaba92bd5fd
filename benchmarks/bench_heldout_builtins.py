"""Held-out severity curves of the built-in retrieval models: clean and every visual perturbation × severity.

    python benchmarks/bench_heldout_builtins.py --kind image [--models builtin:tiny-clip,builtin:tiny-vit-clip]
    python benchmarks/bench_heldout_builtins.py --kind video --severities 1,3,5
    python benchmarks/bench_heldout_builtins.py --kind image --report   # table + figures from the JSON only

A fresh world seed (2027 by default: not the training world 1, the validation world 2, the demo world 7 or the
held-out world 1000 the checkpoints' own numbers use), ``--n`` items (1,000 by default): built-in scenes (128 px)
for ``--kind image``, built-in event videos (64 px) for ``--kind video``; ``--size`` renders them at another size
(``--size 128``: the videos at the images' size, as the ViT video models are held out). Every model runs through
the library's own path (``robustlab.tasks.get("retrieval").evaluate`` with one RetrievalBench per model, so clean
embeddings are computed once; videos are perturbed at the frames the model samples). The text→visual R@1 (t2i /
t2v) is the headline, as in the papers' tables; visual→text R@1 and the order numbers are kept in the JSON.

Checks, per model and perturbation (what issue 27 asks of a model that "breaks like the papers' models"):

* **monotone**: R@1 never rises from one severity to the next by more than the noise of a difference of two
  R@1 on ``n`` queries, 2·sqrt(2·p(1−p)/n) (about 0.03 at p = 0.7, n = 1,000);
* **s1 ≥ half**: R@1 at severity 1 is at least half of clean R@1.

Results are written after every condition (``--out``, resumable: a condition already in the file is not run
again). ``--report`` writes a Markdown table (``--md``) and one severity-curve figure per perturbation family
(``--figures DIR``).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_MODELS = {
    "image": "builtin:tiny-clip,builtin:tiny-vit-clip",
    "video": "builtin:tiny-clip-video-meanp,builtin:tiny-clip-video-seqtransf,"
             "builtin:tiny-vit-clip-video-meanp,builtin:tiny-vit-clip-video-seqtransf",
}
DATASET = {"image": "builtin", "video": "builtin-videos"}
HEADLINE = {"image": "t2i", "video": "t2v"}


def perturbations(kind: str) -> list:
    """Every available visual perturbation that applies to ``kind``, registry order: (name, category)."""
    from robustlab.perturb.registry import list_perturbations

    return [(p.name, p.category) for p in list_perturbations()
            if p.modality != "text" and kind in p.applies_to and p.available]


def unavailable(kind: str) -> list:
    from robustlab.perturb.registry import list_perturbations

    return [(p.name, p.reason) for p in list_perturbations()
            if p.modality != "text" and kind in p.applies_to and not p.available]


def run(args) -> dict:
    import torch

    from robustlab.datasets import build
    from robustlab.engine.cache import EmbeddingCache
    from robustlab.models import load_model
    from robustlab.perturb.condition import Condition
    from robustlab.tasks.registry import get
    from robustlab.tasks.retrieval_bench import RetrievalBench

    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    res = json.loads(out.read_text()) if out.exists() else {}
    cats = dict(perturbations(args.kind))
    names = args.perturbations or list(cats)  # NAME or NAME/VARIANT (e.g. shot_noise/schiappa_video)
    meta = res.setdefault("meta", dict(kind=args.kind, n=args.n, seed=args.seed, dataset=DATASET[args.kind],
                                       severities=args.severities, unavailable=dict(unavailable(args.kind)),
                                       categories={}, **({"size": args.size} if args.size else {})))
    if (meta["kind"], meta["n"], meta["seed"], meta.get("size")) != (args.kind, args.n, args.seed, args.size or None):
        raise SystemExit(f"{out} holds another run (kind, n, world seed, size = {meta['kind']}, {meta['n']}, "
                         f"{meta['seed']}, {meta.get('size')}); give another --out")
    meta["categories"].update({p: cats[p.split("/")[0]] for p in names})
    meta["severities"] = sorted(set(meta["severities"]) | set(args.severities))
    ds = build(DATASET[args.kind], split="test", n=args.n, seed=args.seed,
               **({"size": args.size} if args.size else {}))
    task = get("retrieval")
    plan = [(None, 0)] + [(p, s) for p in names for s in args.severities]
    for spec in args.models:
        model = load_model(spec, device="cpu")
        bench = RetrievalBench(model, ds, cache=EmbeddingCache(enabled=False), lazy=True)
        # a condition is resumed only for the same weights: a retrained checkpoint starts its rows again
        fp = model.fingerprint  # the weights' identity (robustlab.models.base.Fingerprinted)
        # rows without a recorded fingerprint (files older than the fingerprints) are not trusted either
        if res.get("checkpoints", {}).get(spec) != fp and spec in res.get("models", {}):
            print(f"{spec}: checkpoint changed ({res.get('checkpoints', {}).get(spec, 'not recorded')} -> {fp}); "
                  f"its rows are run again", flush=True)
            res["models"].pop(spec)
            res.get("seconds", {}).pop(spec, None)
        res.setdefault("checkpoints", {})[spec] = fp
        rows = res.setdefault("models", {}).setdefault(spec, {})
        t_model = time.time()
        for name, sev in plan:
            label = "clean" if name is None else f"{name}:{sev}"
            if label in rows:
                continue
            t = time.time()
            cond = {} if name is None else {"visual": Condition(name, sev, args.perturb_seed)}
            r = task.evaluate(model, ds, [cond], bench=bench)[0]
            flat = {k: round(v, 4) for k, v in r.flat().items() if isinstance(v, float)}
            rows[label] = {**flat, "seconds": round(time.time() - t, 2)}
            out.write_text(json.dumps(res, indent=1))
            print(f"{spec:38s} {label:30s} {HEADLINE[args.kind]} R@1 {flat.get(HEADLINE[args.kind] + '_R@1'):.3f}"
                  f"  ({time.time() - t:.1f}s)", flush=True)
        res.setdefault("seconds", {})[spec] = round(res.get("seconds", {}).get(spec, 0) + time.time() - t_model, 1)
        out.write_text(json.dumps(res, indent=1))
    return res


def tolerance(p: float, n: int) -> float:
    return 2 * math.sqrt(2 * max(p * (1 - p), 1e-6) / n)


def checks(rows: dict, name: str, sevs: list, n: int, key: str) -> dict:
    clean = rows["clean"][key]
    ys = [rows.get(f"{name}:{s}", {}).get(key) for s in sevs]
    if any(y is None for y in ys):
        return {"values": ys, "monotone": None, "half": None}
    mono = all(b <= a + tolerance(a, n) for a, b in zip(ys, ys[1:]))
    return {"values": ys, "monotone": mono, "half": ys[0] >= 0.5 * clean}


def report(res: dict, md: Path | None, figures: Path | None) -> str:
    meta = res["meta"]
    kind, n, sevs = meta["kind"], meta["n"], meta["severities"]
    key = HEADLINE[kind] + "_R@1"
    models = list(res["models"])
    short = [m.split(":", 1)[1] for m in models]
    px = f" rendered at {meta['size']} px" if meta.get("size") else ""
    lines = [f"Held-out {HEADLINE[kind]} R@1, {n} {meta['dataset']} items of world seed {meta['seed']}{px} "
             f"(severities {', '.join(map(str, sevs))}); ✓/✗: monotone within noise · severity 1 ≥ half of clean", ""]
    head = "| perturbation | " + " | ".join(short) + " |"
    lines += [head, "|" + "---|" * (len(models) + 1)]
    lines.append("| clean | " + " | ".join(f"**{res['models'][m]['clean'][key]:.3f}**" for m in models) + " |")
    summary = {m: {"monotone": 0, "half": 0, "of": 0} for m in models}
    for name, cat in meta["categories"].items():
        cells = []
        for m in models:
            c = checks(res["models"][m], name, sevs, n, key)
            if c["monotone"] is None:
                cells.append("—")
                continue
            summary[m]["of"] += 1
            summary[m]["monotone"] += c["monotone"]
            summary[m]["half"] += c["half"]
            cells.append(" / ".join(f"{v:.2f}" for v in c["values"])
                         + f" {'✓' if c['monotone'] else '✗'}{'✓' if c['half'] else '✗'}")
        if any(c != "—" for c in cells):  # a perturbation no model ran is left out
            lines.append(f"| {name} ({cat}) | " + " | ".join(cells) + " |")
    lines += ["", "| model | clean | monotone | s1 ≥ half clean | mean R@1 over all perturbed cells | seconds |",
              "|---|---|---|---|---|---|"]
    for m, s in zip(models, short):
        rows = res["models"][m]
        pert = [v[key] for k, v in rows.items() if k != "clean"]
        lines.append(f"| {s} | {rows['clean'][key]:.3f} | {summary[m]['monotone']}/{summary[m]['of']} | "
                     f"{summary[m]['half']}/{summary[m]['of']} | {sum(pert) / max(len(pert), 1):.3f} | "
                     f"{res.get('seconds', {}).get(m, '')} |")
    if meta.get("unavailable"):
        lines += ["", "Not run here: " + "; ".join(f"{k} ({v})" for k, v in meta["unavailable"].items())]
    text = "\n".join(lines) + "\n"
    if md:
        md.write_text(text)
    if figures:
        _figures(res, figures, key)
    return text


def _figures(res: dict, folder: Path, key: str) -> None:
    """One figure per perturbation family (the report's own severity-curve small multiples, plotly), written as
    HTML and, when Chromium and Playwright are here, as a PNG screenshot for the docs."""
    import shutil

    import pandas as pd

    from robustlab.bench.report_figures import severity_curves

    meta = res["meta"]
    folder.mkdir(parents=True, exist_ok=True)
    fams: dict = {}
    for name, cat in meta["categories"].items():
        fams.setdefault(cat, []).append(name)
    pages = []
    for cat, names in fams.items():
        rows = []
        for m, cells in res["models"].items():
            short = m.split(":", 1)[1]
            base = dict(model=short, text=None, text_severity=0, metric=key)
            rows.append(dict(base, axes="clean", visual=None, visual_severity=0, score=cells["clean"][key]))
            rows += [dict(base, axes="visual", visual=name, visual_severity=s, score=cells[f"{name}:{s}"][key])
                     for name in names for s in meta["severities"] if f"{name}:{s}" in cells]
        if not any(r["axes"] == "visual" for r in rows):
            continue
        px = f", {meta['size']} px" if meta.get("size") else ""
        fig = severity_curves(pd.DataFrame(rows), title=f" · {meta['kind']} {cat} (n={meta['n']}, world seed "
                                                        f"{meta['seed']}{px})", cols=min(4, len(names)))
        fig.update_yaxes(range=[0, 1])
        path = folder / f"heldout-{meta['kind']}-{cat}.html"
        fig.write_html(str(path), include_plotlyjs=True, full_html=True)
        pages.append(path)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright  # the [test] extra; only the PNGs need it
    except ImportError:
        return
    if not chromium:
        return
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 700})
        for path in pages:
            page.goto(path.resolve().as_uri())
            page.wait_for_timeout(800)
            page.locator(".plotly-graph-div").first.screenshot(path=str(path.with_suffix(".png")))
        browser.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=("image", "video"), default="image")
    ap.add_argument("--models", default=None, help="comma-separated specs (default: the built-ins of that kind)")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--severities", default="1,2,3,4,5")
    ap.add_argument("--perturbations", default="", help="comma-separated (default: every available one)")
    ap.add_argument("--perturb-seed", type=int, default=0)
    ap.add_argument("--size", type=int, default=None,
                    help="render the world at this many px (default: the dataset's, 128 images / 64 videos)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", default=None, help="JSON (default benchmarks/results/heldout_<kind>.json)")
    ap.add_argument("--md", default=None)
    ap.add_argument("--figures", default=None)
    ap.add_argument("--report", action="store_true", help="only write the table and figures from --out")
    a = ap.parse_args(argv)
    a.models = (a.models or DEFAULT_MODELS[a.kind]).split(",")
    a.severities = [int(s) for s in a.severities.split(",")]
    a.perturbations = [p for p in a.perturbations.split(",") if p]
    px = f"_{a.size}px" if a.size else ""
    a.out = a.out or str(ROOT / "benchmarks" / "results" / f"heldout_{a.kind}{px}.json")
    res = json.loads(Path(a.out).read_text()) if a.report else run(a)
    print(report(res, Path(a.md) if a.md else None, Path(a.figures) if a.figures else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
