"""``robustlab failures``: breaking points — per example and perturbation, the lowest severity at which the example
fails (:mod:`robustlab.failures`). A sweep of the same cells as ``robustlab bench`` (resumable, ``--engine ray``);
``--json`` prints the failure map as one object, ``--out DIR`` keeps the cells and ``failures.json``."""
from __future__ import annotations

import json
import sys

from tqdm.auto import tqdm

from robustlab.bench import SweepCancelled, SweepError
from robustlab.cli.common import err, msg
from robustlab.failures import FailureMap, failures


def cmd_failures(args) -> int:
    # the flags that need no work first: one line, nothing written
    if not 1 <= args.refine_steps <= 20:
        return err(f"--refine-steps must be in 1..20, got {args.refine_steps}")
    if args.k is not None and args.k < 1:
        return err(f"--k must be at least 1 (the ground truth fails when it leaves the top k), got {args.k}")
    if args.n is not None and args.n < 1:
        return err("--n must be at least 1")
    if not args.perturbations and not args.protocol:
        return err("pass --perturbations LIST (names, name/variant, category:NAME, all) or --protocol NAME")
    bars: list = []

    def progress(st):
        if not bars:
            bars.append(tqdm(total=0, desc="failures", unit="cell", disable=args.quiet or args.json,
                             file=sys.stderr, bar_format="{l_bar}{bar}| {n:.2f}/{total} cells [{elapsed}<{remaining}]"))
        bar = bars[0]
        bar.total = st["total"]
        bar.n = round(st["fraction"] * st["total"], 2)
        bar.update(0)
    try:
        fmap = failures(args.model, args.dataset, task=args.task, perturbations=args.perturbations,
                        severities=args.severities, protocol=args.protocol, direction=args.direction, k=args.k,
                        baseline=args.baseline, root=args.root, split=args.split, n=args.n, seed=args.seed,
                        options={"trust_pickle": True} if args.trust_pickle else None, out=args.out,
                        engine=args.engine, perturb_seed=args.perturb_seed, device=args.device,
                        progress=progress, address=args.address, num_cpus=args.num_cpus, refine=args.refine,
                        refine_steps=args.refine_steps, slices=not args.no_slices)
    except (SweepError, SweepCancelled, KeyError, ValueError) as e:
        return err(msg(e))
    finally:
        for bar in bars:
            bar.close()
    st = fmap.status
    if st is not None:
        print(f"{st.done} cells run, {st.skipped} already there, {st.total} in the sweep ({st.seconds:.1f} s, engine "
              f"{st.engine}) -> {st.out}" + (f"; {len(st.invalid)} damaged cell file(s) recomputed"
                                              if st.invalid else ""), file=sys.stderr)
    if args.out:
        print(f"wrote {fmap.out}/failures.json", file=sys.stderr)
    if args.json:
        print(json.dumps(fmap.to_json()))
    else:
        print("\n".join(lines(fmap, top=args.top)))
    return 0


def lines(fmap: FailureMap, top: int = 5) -> list[str]:
    """The failure map in words: per perturbation, how many examples break and where, and the first few."""
    what = (f"its ground truth leaves the top {fmap.k} ({fmap.direction})" if fmap.metric == "rank"
            else "IoU <= 0.5")
    out = [f"{fmap.model} on {fmap.dataset['name']} ({fmap.examples} examples, {fmap.task}): an example fails when "
           f"{what}" + (f"; baseline {fmap.baseline}" if fmap.baseline else "")]
    sev = ", ".join(f"s{s}" for s in fmap.severities)
    for s in fmap.summary:
        by = ", ".join(f"s{k}: {v}" for k, v in s["by_severity"].items())
        med = f"median s{s['median_breaks_at']:g}" if s["median_breaks_at"] is not None else "none breaks"
        out.append(f"{s['perturbation']} ({s['axis']}, {sev}): {s['broken']} of {s['examples']} break ({by}; "
                   f"{med}), {s['holding']} hold, {s['clean_failures']} fail clean"
                   + (f"; breaks for the model only {s['breaks_for']['model']}, the baseline only "
                      f"{s['breaks_for']['baseline']}" if s.get("breaks_for") else ""))
        broken = [it for it in fmap.items if it["perturbation"] == s["perturbation"] and it["axis"] == s["axis"]
                  and it["breaks_at"]]
        for it in sorted(broken, key=lambda it: (it["breaks_at"], it["item"]))[:max(int(top), 0)]:
            vals = it.get("ranks") or it.get("scores") or {}
            path = " ".join(f"{v}" if v is not None else "-" for v in vals.values())
            thief = ""
            if it.get("thief") is not None:
                thief = (f"; thief {it['thief_id']} (k-occurrence {it['thief_k_occurrence']}"
                         + (", a hub)" if it.get("thief_is_hub") else ")"))
            out.append(f"  {it['id']}: breaks at s{it['breaks_at']} ({'rank' if fmap.metric == 'rank' else 'IoU'} "
                       f"s0..: {path}){thief}")
    return out
