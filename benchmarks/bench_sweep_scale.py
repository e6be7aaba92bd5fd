"""An MSRVTT-P-sized sweep on this machine, measured on a subset of clips and projected.

    python benchmarks/bench_sweep_scale.py [--clips 100] [--frames 300] [--px 224] [--severities 1-5]
                                           [--perturbations all] [--model builtin:tiny-clip-video-meanp]

MSRVTT-P is MSR-VTT's 1,000 test videos under every video perturbation at 5 severities. This script writes ``--clips``
videos of ``--frames`` frames at ``--px``² (the built-in world's event clips, upscaled and slowed down to that length;
H.264, 30 fps, a keyframe every 12 frames as camera footage has) in MSR-VTT's layout, then runs
``robustlab bench``'s sweep over them — every available video perturbation × the severities, one model — and
measures where the time goes:

* decode: reading frames from the mp4 files (PyAV), wherever it happens;
* perturb: the perturbation functions (lazy: on the sampled frames only; whole-clip ones on the whole clip);
* encode: the model's video encoder;
* rest: metrics, records, hashing, the embedding cache, writing the cell files.

The projection to 1,000 clips scales every part linearly in the number of clips (each cell's work is per clip; the
metrics' n² part is a few ms at n = 1,000). The memo that shares byte-identical codec severities
(:mod:`robustlab.perturb.share`) is scaled to the sample (``--share-mb`` × clips / target), so the sample shares
what ``--target`` clips would with that budget. Results: benchmarks/results/sweep_scale.json.

``--protocol NAME`` (e.g. ``msrvtt-p``) runs that protocol's cells (``robustlab.bench.protocol``: its
perturbations with their variants and severities, its text perturbations and combinations) with ``--model`` on the
clips, and times **the papers' pipeline on the same cells** on ``--papers-clips`` of them: for every distinct visual
condition, decode the whole clip, perturb it whole, write an mp4 (MPEG-4 Part 2, as [C1]'s cv2 writer), decode it
and sample the model's frames; the clean clip's frames decoded once. The papers' sweep is then robustlab's with its
visual side (decoding and video perturbation) replaced by that; the text perturbations, the model, the metrics are
the same work in both. Reported: both projected to ``--target`` clips and their ratio, end to end and for the
visual side alone (results: benchmarks/results/sweep_scale_<protocol>.json).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def write_msrvtt(root: Path, clips: int, frames: int, px: int) -> None:
    """``clips`` world videos as an MSR-VTT 1k-A folder (CSV + videos/)."""
    import csv

    import av
    import cv2
    import numpy as np

    from robustlab.datasets import build

    ds = build("builtin-videos", split="test", n=clips)
    (root / "videos").mkdir(parents=True, exist_ok=True)
    with open(root / "MSRVTT_JSFUSION_test.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "vid_key", "video_id", "sentence"])
        for i in range(clips):
            w.writerow([f"ret{i}", f"msr{i}", f"video{i}", ds.item(i).texts[0]])
    for i in range(clips):
        v = ds.visual(i)
        idx = np.minimum((np.arange(frames) * len(v)) // frames, len(v) - 1)  # slowed down to `frames` frames
        path = root / "videos" / f"video{i}.mp4"
        with av.open(str(path), "w") as c:
            s = c.add_stream("libx264", rate=30, options={"g": "12", "preset": "veryfast", "crf": "20"})
            s.width = s.height = px
            s.pix_fmt = "yuv420p"
            for t in idx:
                img = cv2.resize(v[t], (px, px), interpolation=cv2.INTER_LINEAR)
                for pkt in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                    c.mux(pkt)
            for pkt in s.encode():
                c.mux(pkt)


CLOCK = time.perf_counter  # --clock wall (default) or cpu (time.process_time: every thread of this process)


class Timers:
    """Exclusive time per part: a part called inside another (decoding inside a lazy perturbation) is taken out of
    the outer one; a part called inside itself counts once."""

    def __init__(self):
        self.s = collections.Counter()
        self.stack: list = []

    def wrap(self, owner, name: str, part):
        """Time ``owner.name`` as ``part`` (a name, or ``part(*args) -> name``)."""
        fn = getattr(owner, name)
        timers = self
        which = part

        def timed(*a, **k):
            part = which(*a) if callable(which) else which
            st = timers.stack
            if st and st[-1][0] == part:
                return fn(*a, **k)
            now = CLOCK()
            if st:
                timers.s[st[-1][0]] += now - st[-1][1]
            st.append([part, now])
            try:
                return fn(*a, **k)
            finally:
                now = CLOCK()
                p, t = st.pop()
                timers.s[p] += now - t
                if st:
                    st[-1][1] = now
        setattr(owner, name, timed)


def papers_visual(conditions, paths, sampler) -> dict:
    """Seconds per clip of the papers' pipeline for each distinct visual condition of ``conditions`` (decode the whole
    clip, perturb it whole, write an mp4, decode it, sample), and of decoding the clean clip's sampled frames."""
    import numpy as np

    from bench_lazy_video import write_mp4
    from robustlab.datasets._clips import ClipSource
    from robustlab.perturb import perturb, share

    seen = {}
    for c in conditions:
        v = c.get("visual")
        if v is not None and not v.clean:
            seen.setdefault((v.name, v.variant, int(v.severity)), v)
    tmp = Path(tempfile.mkdtemp(prefix="papers_"))
    per = collections.Counter()
    clean = 0.0
    with share.disabled():  # the papers compute every severity
        for p in paths:
            t0 = CLOCK()
            src = ClipSource(p)
            src.read(sampler(src.n_frames))
            clean += CLOCK() - t0
            for (name, variant, sev), v in seen.items():
                t0 = CLOCK()
                src = ClipSource(p)
                clip = src.read(np.arange(src.n_frames))
                out = perturb(clip, name, sev, seed=int(v.seed), variant=variant).output
                write_mp4(out, tmp / "p.mp4")
                got = ClipSource(tmp / "p.mp4")
                got.read(sampler(got.n_frames))
                per[f"{name}{'/' + variant if variant else ''}"] += CLOCK() - t0
    n = len(paths)
    return {"clips": n, "conditions": len(seen), "clean_decode_s": clean / n,
            "visual_s": sum(per.values()) / n, "by_perturbation_s": {k: round(x / n, 3) for k, x in per.most_common()}}


def protocol_spec(name: str, model: str, data: Path, clips: int):
    from robustlab.bench.protocol import load_protocol

    proto = load_protocol(name)
    return proto, proto.build_spec(models=[model], dataset={"name": "msrvtt", "root": str(data), "n": clips})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clips", type=int, default=100)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--px", type=int, default=224)
    ap.add_argument("--severities", default="1-5")
    ap.add_argument("--perturbations", default="all")
    ap.add_argument("--model", default="builtin:tiny-clip-video-meanp")
    ap.add_argument("--data", default=None, help="keep the generated videos here (default: a temp folder)")
    ap.add_argument("--target", type=int, default=1000, help="clips to project to")
    ap.add_argument("--out", default=None, help="default benchmarks/results/sweep_scale[_<protocol>].json")
    ap.add_argument("--protocol", default=None, help="run a protocol's cells (e.g. msrvtt-p) and time the papers' "
                                                     "pipeline on the same cells")
    ap.add_argument("--papers-clips", type=int, default=None, help="clips the papers' pipeline is timed on "
                                                                   "(default: all)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall (default) or cpu: the process's CPU seconds, steadier on a shared machine")
    ap.add_argument("--fit-clips", type=int, default=0, help="also run the sweep on this many clips and project "
                                                                "fixed + per-clip cost (default: linear in clips)")
    ap.add_argument("--no-warmup", action="store_true", help="with --fit-clips: skip the untimed warm-up sweep")
    ap.add_argument("--share-mb", type=float, default=None, help="the sharing memo's budget at --target clips "
                                                                 "(default: the library's, ROBUSTLAB_SHARE_MB)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time
    results = ROOT / "benchmarks" / "results"
    args.out = args.out or str(results / (f"sweep_scale_{args.protocol}.json" if args.protocol else "sweep_scale.json"))

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    from robustlab.datasets import _clips
    from robustlab import bench as sw
    from robustlab.perturb import registry

    data = Path(args.data or tempfile.mkdtemp(prefix="msrvtt_p_"))
    t0 = CLOCK()
    if not (data / "MSRVTT_JSFUSION_test.csv").exists():
        write_msrvtt(data, args.clips, args.frames, args.px)
    t_write = CLOCK() - t0

    from robustlab.perturb import share

    share_mb = args.share_mb if args.share_mb is not None else share.MEMO.max_bytes / 2**20
    share.MEMO.max_bytes = int(share_mb * 2**20 * args.clips / args.target)  # the sample shares what --target would
    timers = Timers()
    timers.wrap(_clips.ClipSource, "read", "decode")
    timers.wrap(registry, "_run", lambda spec, *a: "perturb_text" if spec.modality == "text" else "perturb")
    from robustlab.perturb import lazy
    from robustlab.tasks import retrieval_bench as retrieval

    timers.wrap(lazy, "perturb_sampled", "perturb")
    if hasattr(retrieval, "perturb_sampled"):  # bound at import: the sweep calls this one
        timers.wrap(retrieval, "perturb_sampled", "perturb")
    import robustlab.models.builtin_video as bv

    for cls in vars(bv).values():
        if isinstance(cls, type) and hasattr(cls, "encode_videos") and cls.__module__ == bv.__name__:
            timers.wrap(cls, "encode_videos", "encode")
    if args.protocol:
        proto, spec = protocol_spec(args.protocol, args.model, data, args.clips)
        spec.worst = 0
        vis = sorted({c["visual"].name for c in spec.conditions if c.get("visual") is not None})
        sevs = sorted({int(c["visual"].severity) for c in spec.conditions if c.get("visual") is not None})
    else:
        vis = sw.parse_perturbations(args.perturbations, "video")
        sevs = sw.parse_severities(args.severities)
        spec = sw.SweepSpec(models=[args.model], dataset={"name": "msrvtt", "root": str(data), "split": "test",
                                                           "n": args.clips}, conditions=sw.condition_grid(vis, sevs),
                            worst=0)
    from robustlab.engine.cache import EmbeddingCache

    caches: list = []
    init = sw.FrameCache.__init__

    def cache_init(self, *a, **k):
        init(self, *a, **k)
        caches.append(self)

    sw.FrameCache.__init__ = cache_init

    def fit_spec():
        f = (protocol_spec(args.protocol, args.model, data, args.fit_clips)[1] if args.protocol
             else sw.SweepSpec(models=[args.model], dataset=dict(spec.dataset, n=args.fit_clips),
                               conditions=spec.conditions, worst=0))
        f.worst = 0
        return f

    if args.fit_clips and not args.no_warmup:  # one untimed small sweep first: imports, model loads, first calls
        warm = Path(tempfile.mkdtemp(prefix="sweep_scale_warm_"))
        sw.run_sweep(fit_spec(), warm, cache=EmbeddingCache(warm / "cache"))
        timers.s.clear()
        caches.clear()
        share.clear()
        share.MEMO.hits = share.MEMO.computed = share.MEMO.refused = 0
    out = Path(tempfile.mkdtemp(prefix="sweep_scale_"))
    t1 = CLOCK()
    status = sw.run_sweep(spec, out, cache=EmbeddingCache(out / "cache"))
    total = CLOCK() - t1
    parts = {k: round(v, 2) for k, v in timers.s.items()}
    parts["rest"] = round(total - sum(timers.s.values()), 2)
    scale = args.target / args.clips
    fit = None
    if args.fit_clips:  # the same sweep on fewer clips: cost = fixed + per_clip * clips, after the warm-up
        share_stats = (share.MEMO.hits, share.MEMO.computed, share.MEMO.refused)
        share.clear()
        share.MEMO.max_bytes = int(share_mb * 2**20 * args.fit_clips / args.target)
        before = dict(timers.s)
        spec_fit = fit_spec()
        out_fit = Path(tempfile.mkdtemp(prefix="sweep_scale_fit_"))
        t1 = CLOCK()
        sw.run_sweep(spec_fit, out_fit, cache=EmbeddingCache(out_fit / "cache"))
        total_fit = CLOCK() - t1
        side = sum(parts.get(k, 0.0) for k in ("decode", "perturb"))
        side_fit = sum(timers.s.get(k, 0.0) - before.get(k, 0.0) for k in ("decode", "perturb"))
        per_clip = (total - total_fit) / (args.clips - args.fit_clips)
        fit = {"fit_clips": args.fit_clips, "fit_seconds": round(total_fit, 1), "per_clip_s": round(per_clip, 3),
               "fixed_s": round(total - per_clip * args.clips, 1),
               "visual_per_clip_s": round((side - side_fit) / (args.clips - args.fit_clips), 3)}
        share.MEMO.hits, share.MEMO.computed, share.MEMO.refused = share_stats
    projected = total * scale if fit is None else fit["fixed_s"] + fit["per_clip_s"] * args.target
    res = {"clips": args.clips, "frames": args.frames, "px": args.px, "model": args.model,
           "perturbations": len(vis), "severities": sevs, "cells": status.total, "seconds": round(total, 1),
           "parts_s": parts, "projected_clips": args.target, "projected_s": round(projected, 1),
           "projected_h": round(projected / 3600, 2), "projection": "linear" if fit is None else fit,
           "write_videos_s": round(t_write, 1),
           "cpus": os.cpu_count(), "lazy": True, "clock": args.clock,
           "frame_cache": {"frames_decoded": sum(c.decoded for c in caches), "evicted": sum(c.evicted for c in caches),
                           "peak_mb": round(max((c.peak for c in caches), default=0) / 2**20, 1),
                           "max_mb": round(max((c.max_bytes for c in caches), default=0) / 2**20, 1)}}
    by_p = collections.Counter()
    for r in sw.load_results(out):
        by_p[r["conditions"]["visual"].get("name") or "clean"] += r["extra"].get("seconds", 0.0)
    res["seconds_by_perturbation"] = {k: round(v, 2) for k, v in by_p.most_common()}
    res["share"] = {"budget_mb_at_target": round(share_mb, 1), "hits": share.MEMO.hits,
                    "budget_mb_sample": round(share.MEMO.max_bytes / 2**20, 2), "computed": share.MEMO.computed,
                    "refused": share.MEMO.refused}
    if args.protocol:
        res.update(protocol=args.protocol, conditions=len(spec.conditions))
        res["papers"] = papers = compare_papers(spec, data, args, parts, total, projected, fit)
        print(f"{args.protocol}: robustlab {papers['robustlab_projected_h']} h, the papers' pipeline "
              f"{papers['papers_projected_h']} h for {args.target} clips: x{papers['ratio']} "
              f"(visual side x{papers['ratio_visual']})", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0


def compare_papers(spec, data: Path, args, parts: dict, total: float, projected: float, fit) -> dict:
    """The papers' pipeline on the same cells, projected: robustlab's sweep with its visual side (decode + video
    perturbation, per clip) replaced by :func:`papers_visual`'s per-clip seconds."""
    from robustlab.models import load_model
    from robustlab.models.protocols import sample_frame_indices

    model = load_model(args.model)
    sampler = getattr(model, "frame_indices", None) or (lambda t: sample_frame_indices(t, 8))
    n_p = min(args.papers_clips or args.clips, args.clips)
    pv = papers_visual(spec.conditions, [data / "videos" / f"video{i}.mp4" for i in range(n_p)], sampler)
    # the sweep's visual side, taken before the papers' run (the timers are still wrapped)
    ours_vis = (parts.get("decode", 0.0) + parts.get("perturb", 0.0)) / args.clips if fit is None \
        else fit["visual_per_clip_s"]
    theirs_vis = pv["visual_s"] + pv["clean_decode_s"]
    papers = projected + (theirs_vis - ours_vis) * args.target
    return {"papers_visual_per_clip": pv, "robustlab_visual_per_clip_s": round(ours_vis, 3),
            "papers_visual_and_clean_decode_per_clip_s": round(theirs_vis, 3),
            "robustlab_projected_h": round(projected / 3600, 2), "papers_projected_h": round(papers / 3600, 2),
            "ratio": round(papers / projected, 2), "ratio_visual": round(theirs_vis / max(ours_vis, 1e-9), 2)}


if __name__ == "__main__":
    sys.exit(main())
