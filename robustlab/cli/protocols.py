"""``robustlab protocols [NAME]``: the papers' benchmark protocols (:mod:`robustlab.bench.protocol`)."""
from __future__ import annotations

import json

from robustlab.bench.protocol import ProtocolError, load_protocol, shipped
from robustlab.cli.common import err


def _summary(p) -> dict:
    out = {"name": p.name, "title": p.title, "paper": p.paper, "layout": p.layout, "source": p.source,
           "tasks": p.data["tasks"], "directions": p.data.get("directions"), "models": p.data.get("models", []),
           "dataset": p.dataset, "headline": p.report.get("headline"),
           "visual": {c: m for c, m in p.categories("visual").items()},
           "text": {c: m for c, m in p.categories("text").items()},
           "text_types": p.types("text"), "pairs": len(p.pairs()),
           "interventions": p.data.get("interventions", []),
           "adapt": (p.data.get("adapt") or {}).get("methods", []), "not_run": p.not_run()}
    return out


def cmd_protocols(args) -> int:
    try:
        ps = [load_protocol(args.name)] if args.name else [load_protocol(n) for n in shipped()]
    except ProtocolError as e:
        return err(str(e))
    if args.json:
        print(json.dumps([_summary(p) for p in ps], indent=2))
        return 0
    for p in ps:
        s = _summary(p)
        nv = sum(len(m) for m in s["visual"].values())
        nt = sum(len(m) for m in s["text"].values())
        what = [f"{nv} visual in {len(s['visual'])} categories" if nv else "",
                f"{nt} text in {len(s['text'])} categories" if nt else "",
                f"{s['pairs']} pairs" if s["pairs"] else "",
                f"{len(s['interventions'])} interventions" if s["interventions"] else "",
                f"adapt {','.join(s['adapt'])}" if s["adapt"] else ""]
        print(f"{p.name:<13} {p.title}")
        print(f"    {p.paper}")
        print(f"    {'; '.join(w for w in what if w) or ', '.join(s['tasks'])} · dataset {s['dataset']['name']} · "
              f"headline {s['headline'] or '-'}"
              + (f" · {len(s['not_run'])} not runnable here" if s["not_run"] else ""))
        if args.name:
            for axis in ("visual", "text"):
                for cat, members in s[axis].items():
                    print(f"    {axis} {cat} ({len(members)}): {', '.join(members)}")
            for t, members in s["text_types"].items():
                print(f"    text type {t}: {len(members)}")
            for x in s["not_run"]:
                print(f"    not runnable here: {x['perturbation']}: {x['reason']}")
    return 0
