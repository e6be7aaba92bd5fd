"""Whole-clip codecs: which severities give byte-identical outputs, and lazy vs eager per clip, in one run.

    python benchmarks/bench_codec_sharing.py [--clips 3] [--frames 300] [--px 224] [--n 12] [--repeats 2]
                                             [--ops codec1,codec1/mpeg1video,codec2,mlvp_h264] [--identity-only]

1. **Byte identity, measured**: every op × variant at severities 1–5 on ``--clips`` built-in event clips at their
   native 64 px and on the same clips upscaled and slowed to ``--frames`` frames at ``--px``² (H.264 files, as
   ``bench_sweep_scale.py`` writes them); the output hashes are grouped into severities with equal outputs, next to
   the groups the registry derives from the effective parameters (:func:`robustlab.perturb.share.share_groups`),
   sharing switched off so every severity is really encoded.
2. **Lazy vs eager per clip** (the 224² files; a model sampling ``--n`` frames), each severity 1–5 of one op in turn
   for a clip, as a page or a clip-major loop asks:

   * eager: decode the whole clip once, ``perturb`` it at each severity, sample (no sharing: the papers' order of
     work in memory);
   * lazy (before): ``perturb_sampled`` on the file at each severity with the memos off (each call decodes the
     whole clip and encodes it);
   * lazy (now): ``perturb_sampled`` with the memos on (the decoded clip and the outputs of severities with equal
     effective parameters shared), started from empty memos for each clip.

   The three run in turn per clip and repeat (``--repeats``); every lazy output is checked equal to the eager one.
   Seconds are the process's CPU seconds by default (``--clock cpu``: the work is single-threaded, and CPU time
   stays put on a machine shared with other jobs, where wall time does not).
Results: benchmarks/results/codec_sharing.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


CLOCK = time.process_time  # --clock: CPU seconds of this process (all its threads) or wall seconds


def identity(ops, clips, label: str) -> dict:
    """{op: {"groups_measured": [[sev...]...], "groups_declared": ...}} on the given clips."""
    from robustlab.perturb import perturb, share
    from robustlab.perturb.record import hash_value

    out = {}
    with share.disabled():
        for op in ops:
            hashes = {s: [] for s in range(1, 6)}
            for clip in clips:
                for s in range(1, 6):
                    hashes[s].append(hash_value(perturb(clip, op, s, seed=s).output))
            groups: dict = {}
            for s in range(1, 6):
                groups.setdefault(tuple(hashes[s]), []).append(s)
            name, _, variant = op.partition("/")
            out[op] = {"clips": label, "groups_measured": sorted(groups.values()),
                       "groups_declared": [list(g) for g in share.share_groups(name, variant or None)]}
            print(f"{op:22s} {label:12s} measured {out[op]['groups_measured']} declared "
                  f"{out[op]['groups_declared']}", flush=True)
    return out


def lazy_vs_eager(op: str, paths, n: int, repeats: int) -> dict:
    import numpy as np

    from robustlab.datasets._clips import ClipSource
    from robustlab.models.protocols import sample_frame_indices
    from robustlab.perturb import perturb, share
    from robustlab.perturb.lazy import perturb_sampled
    from robustlab.perturb.registry import get_perturbation

    name, _, variant = op.partition("/")
    variant = variant or None

    def sampler(t):
        return sample_frame_indices(t, n)

    def whole(p):
        src = ClipSource(p)
        return src.read(np.arange(src.n_frames))

    spec = get_perturbation(name)
    fn = spec.fn

    def counted(f, calls):
        def run(*a, **k):
            calls.append(1)
            return f(*a, **k)
        return run

    encodes: list = []
    keys = ("eager_decode_once", "eager_per_call", "lazy_before", "lazy_now", "one_call_eager", "one_call_lazy")
    tot = {k: [] for k in keys}
    ok = True
    for _ in range(repeats):
        row = dict.fromkeys(keys, 0.0)
        for p in paths:
            share.clear()
            with share.disabled():
                t0 = CLOCK()  # eager, the strongest form: the clip decoded once for the 5 severities
                clip = whole(p)
                ref = {s: perturb(clip, name, s, seed=s, variant=variant).output[sampler(len(clip))]
                       for s in range(1, 6)}
                row["eager_decode_once"] += CLOCK() - t0
                t0 = CLOCK()  # eager per call (bench_lazy_video's): decode, perturb, sample
                for s in range(1, 6):
                    c = whole(p)
                    ok &= bool(np.array_equal(perturb(c, name, s, seed=s, variant=variant).output[sampler(len(c))],
                                              ref[s]))
                row["eager_per_call"] += CLOCK() - t0
                # the lazy path before this change was exactly this per call (read whole, perturb, sample, hash)
                t0 = CLOCK()
                for s in range(1, 6):
                    c = whole(p)
                    r = perturb(c, name, s, seed=s, variant=variant)
                    out = np.ascontiguousarray(r.output[sampler(len(c))])
                    _ = share._rec.hash_value(out)
                row["lazy_before"] += CLOCK() - t0
                t0 = CLOCK()
                c = whole(p)
                _ = perturb(c, name, 3, seed=3, variant=variant).output[sampler(len(c))]
                row["one_call_eager"] += CLOCK() - t0
            share.clear()
            t0 = CLOCK()
            ok &= bool(np.array_equal(perturb_sampled(ClipSource(p), name, 3, seed=3, variant=variant,
                                                      indices=sampler).output, ref[3]))
            row["one_call_lazy"] += CLOCK() - t0
            share.clear()
            calls: list = []
            spec.fn = counted(fn, calls)
            t0 = CLOCK()
            try:
                for s in range(1, 6):
                    ok &= bool(np.array_equal(perturb_sampled(ClipSource(p), name, s, seed=s, variant=variant,
                                                              indices=sampler).output, ref[s]))
            finally:
                spec.fn = fn
            row["lazy_now"] += CLOCK() - t0
            encodes.append(len(calls))
            share.clear()
        for k in tot:
            tot[k].append(row[k] / len(paths))
    med = {k: round(float(np.median(v)), 3) for k, v in tot.items()}
    res = {"per_clip_s_median": med, "per_clip_s_runs": {k: [round(x, 3) for x in v] for k, v in tot.items()},
           "lazy_now_vs_eager_decode_once": round(med["lazy_now"] / med["eager_decode_once"], 3),
           "lazy_before_vs_eager_decode_once": round(med["lazy_before"] / med["eager_decode_once"], 3),
           "one_call_lazy_vs_eager": round(med["one_call_lazy"] / med["one_call_eager"], 3),
           "encodes_per_clip_now": sorted(set(encodes)), "outputs_equal": ok}
    print(f"{op:20s} per clip, s1-5: eager (decode once) {med['eager_decode_once']:.2f}s, per call "
          f"{med['eager_per_call']:.2f}s; lazy before {med['lazy_before']:.2f}s "
          f"(x{res['lazy_before_vs_eager_decode_once']:.2f}), now {med['lazy_now']:.2f}s "
          f"(x{res['lazy_now_vs_eager_decode_once']:.2f}); one call: eager {med['one_call_eager']:.2f}s lazy "
          f"{med['one_call_lazy']:.2f}s (x{res['one_call_lazy_vs_eager']:.2f}); equal={ok}", flush=True)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clips", type=int, default=3)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--px", type=int, default=224)
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ops", default="codec1,codec1/mpeg1video,codec2,mlvp_h264")
    ap.add_argument("--identity-only", action="store_true")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu (default): the process's CPU seconds, steady on a shared machine; wall: elapsed")
    ap.add_argument("--timing-only", action="store_true", help="keep the identity part of --out, redo the timings")
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "codec_sharing.json"))
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter

    import numpy as np

    from bench_sweep_scale import write_msrvtt
    from robustlab.datasets import build
    from robustlab.datasets._clips import ClipSource

    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    data = Path(args.data or tempfile.mkdtemp(prefix="codec_sharing_"))
    if not (data / "MSRVTT_JSFUSION_test.csv").exists():
        write_msrvtt(data, args.clips, args.frames, args.px)
    paths = [data / "videos" / f"video{i}.mp4" for i in range(args.clips)]
    res = {"clips": args.clips, "frames": args.frames, "px": args.px, "n_sampled": args.n, "repeats": args.repeats,
           "cpus": os.cpu_count(), "clock": args.clock}
    if args.timing_only and Path(args.out).exists():
        old = json.loads(Path(args.out).read_text())
        res.update(identity=old["identity"], identity_clips=old.get("identity_clips", old.get("clips")))
    else:
        small = [np.asarray(build("builtin-videos", split="test", n=args.clips).visual(i)) for i in range(args.clips)]
        big = [ClipSource(p).read(np.arange(ClipSource(p).n_frames)) for p in paths]
        res["identity_clips"] = args.clips
        res["identity"] = {"builtin_64px": identity(ops, small, "64px"),
                           f"{args.px}px_{args.frames}f": identity(ops, big, f"{args.px}px")}
    if not args.identity_only:
        res["lazy_vs_eager"] = {op: lazy_vs_eager(op, paths, args.n, args.repeats) for op in ops}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
