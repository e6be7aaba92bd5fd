"""Time every text perturbation: median milliseconds per caption, end to end through ``robustlab.perturb.perturb``.

    python benchmarks/bench_text.py [--n 30] [--severity 3] [--variants default|all] [--json out.json]

Each op (its default variant; with ``--variants all`` every variant, gated ones included) runs once on each of
``n`` distinct captions (seed = caption index) after one warm-up call that pays the lazy loads (spaCy, WordNet,
MiniLM, lemminflect). spaCy's per-text tag cache is cleared before every call, so POS-based ops pay their tagging
each time, as they do on a new caption. Ops whose resources are missing are listed with the reason. Single
process; the numbers are wall-clock on whatever else the machine is doing.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings

# Written for robustlab: MSRVTT/COCO-style captions (people, gendered words, verbs, several lengths).
CAPTIONS = [
    "A man in a red shirt is riding a brown horse along the sandy beach at sunset.",
    "Two young girls are playing soccer in a green park while their mother watches them.",
    "An orange metal bowl strainer filled with apples.",
    "A chef slices vegetables quickly and puts them into a large boiling pot.",
    "A woman is talking to a group of students about the history of the old city.",
    "The black dog jumps over the fence and runs across the garden toward the children.",
    "a boy plays a guitar on a stage",
    "People are dancing at a wedding party under colorful lights.",
    "A cat sleeps on a laptop keyboard next to a cup of coffee.",
    "He explains how to fix a flat tire on a mountain bike.",
    "A group of men are pushing a car out of the snow.",
    "She is cooking pasta in the kitchen and talking to the camera.",
    "Cars drive slowly through a busy street in the rain.",
    "A little girl does gymnastics in the living room.",
    "A news anchor reports on the weather from the studio.",
    "Two teams compete in a basketball game while the crowd cheers loudly.",
    "A man and his son are fishing from a small wooden boat on the lake.",
    "Someone pours milk into a bowl of cereal.",
    "A woman in a blue dress sings a song on television.",
    "The players shake hands after the tennis match.",
    "A person is folding paper to make an origami bird.",
    "Kids are swimming in a pool on a sunny day.",
    "A man demonstrates a new smartphone and its camera features.",
    "An old lady feeds pigeons in the city square.",
    "A cartoon character runs away from a large monster.",
    "The soldiers march across the field carrying flags.",
    "A girl is brushing her hair in front of a mirror.",
    "Workers build a house with bricks and cement.",
    "A dog catches a frisbee in the park.",
    "A man is explaining a math problem on a whiteboard to his students.",
]


def _ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def run(n: int = 30, severity: int = 3, variants: str = "default") -> list[dict]:
    from robustlab.perturb import list_perturbations, perturb
    from robustlab.perturb.text import resources as R

    caps = (CAPTIONS * (n // len(CAPTIONS) + 1))[:n]
    rows = []
    for spec in list_perturbations("text"):
        vs = [spec.default_variant] if variants == "default" else list(spec.variants)
        for v in vs:
            gated = bool(spec.variants[v][1].get("gate"))
            row = {"name": spec.name, "variant": v, "category": spec.category, "gated": gated}
            if not spec.available:
                rows.append({**row, "ms_median": None, "note": spec.reason})
                continue
            perturb("A warm-up caption about a man walking a dog.", spec.name, severity, seed=0, variant=v)
            times = []
            for i, c in enumerate(caps):
                R.tag.cache_clear()
                times.append(_ms(lambda: perturb(c, spec.name, severity, seed=i, variant=v)))
            rows.append({**row, "ms_median": round(statistics.median(times), 3),
                         "ms_p90": round(sorted(times)[int(0.9 * (len(times) - 1))], 3), "n": len(times),
                         "note": ""})
    return rows


def markdown(rows: list[dict], severity: int) -> str:
    lines = [f"Text perturbations, severity {severity}: median ms per caption (p90), end to end "
             f"(`perturb`), Python {platform.python_version()}, {os.cpu_count()} CPU cores.", "",
             "| perturbation | variant | category | ms / caption (median) | p90 | note |",
             "|---|---|---|---:|---:|---|"]
    for r in rows:
        ms = "—" if r["ms_median"] is None else f"{r['ms_median']:.2f}"
        p90 = "—" if r["ms_median"] is None else f"{r['ms_p90']:.2f}"
        note = r["note"] or ("similarity gate (MiniLM)" if r["gated"] else "")
        lines.append(f"| {r['name']} | {r['variant']} | {r['category']} | {ms} | {p90} | {note} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=30, help="distinct captions per op (default 30)")
    ap.add_argument("--severity", type=int, default=3)
    ap.add_argument("--variants", choices=("default", "all"), default="default")
    ap.add_argument("--json", help="also write the rows as JSON here")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    rows = run(a.n, a.severity, a.variants)
    print(markdown(rows, a.severity))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fp:
            json.dump({"severity": a.severity, "n": a.n, "python": sys.version.split()[0], "rows": rows}, fp, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
