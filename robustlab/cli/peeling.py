"""``robustlab peeling extraction`` (precision / recall / F1 of the object & property extraction, the paper's RQ4)
and ``robustlab peeling atcr LABELS.json`` (the ATCR of manually labelled tests)."""
from __future__ import annotations

import json

from robustlab.cli.common import err
from robustlab.diagnostics import peeling as P
from robustlab.io.files import InputError


def _pct(v) -> str:
    return "  -  " if v is None else f"{100 * v:5.1f}"


def cmd_peeling(args) -> int:
    return _extraction(args) if args.what == "extraction" else _atcr(args)


def _extraction(args) -> int:
    if args.file:
        return err("`peeling extraction` takes its labels with --labels FILE")
    try:
        labels = P.read_labels(args.labels) if args.labels else None
        res = P.score_extraction(labels, match=args.match, name=args.labels or None)
    except (InputError, ValueError, RuntimeError) as e:
        return err(str(e))
    if args.json:
        d = res.to_dict()
        if not args.rows:
            d.pop("rows")
        print(json.dumps(d, indent=1))
        return 0
    print(f"extraction: {res.extractor} on {res.labels} ({res.n} expressions, {res.match} match)")
    print(f"{'target':<10} {'P':>5} {'R':>5} {'F1':>5}   tp / predicted / labelled")
    for name, s in (("object", res.objects), ("property", res.properties), ("overall", res.overall)):
        print(f"{name:<10} {_pct(s.precision)} {_pct(s.recall)} {_pct(s.f1)}   {s.tp} / {s.predicted} / {s.gold}")
    print("paper (Table V, ChatGPT on its 80-expression split): object 96.0 / 96.0 / 96.0, property "
          "95.7 / 94.0 / 94.8, overall 95.9 / 95.0 / 95.4")
    if args.rows:
        for r in res.rows:
            if r["object_ok"] and not r["missed"] and not r["extra"]:
                continue
            print(f"- {r['expression']!r}: object {r['predicted_object']!r} (label {r['object']!r}); "
                  f"missed {r['missed']}; extra {r['extra']}")
    return 0


def _atcr(args) -> int:
    if not args.file:
        return err("`peeling atcr` needs a labels file: robustlab peeling atcr LABELS.json")
    try:
        loaded = P.read_atcr_labels(args.file)
    except InputError as e:
        return err(str(e))
    res = P.compute_atcr({k: v["label"] for k, v in loaded.items()})
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
        return 0
    if res.atcr is None:
        print(f"ATCR: no test labelled yet ({res.unlabelled} unlabelled)")
        return 0
    lo, hi = res.interval
    print(f"ATCR {100 * res.atcr:.1f} % ({res.valid} valid / {res.labelled} labelled; 95 % interval "
          f"{100 * lo:.1f}-{100 * hi:.1f} %; {res.unlabelled} unlabelled)")
    return 0
