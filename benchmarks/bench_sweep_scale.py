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
metrics' n² part is a few ms at n = 1,000). Results: benchmarks/results/sweep_scale.json.
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


class Timers:
    """Exclusive time per part: a part called inside another (decoding inside a lazy perturbation) is taken out of
    the outer one; a part called inside itself counts once."""

    def __init__(self):
        self.s = collections.Counter()
        self.stack: list = []

    def wrap(self, owner, name: str, part: str):
        fn = getattr(owner, name)
        timers = self

        def timed(*a, **k):
            st = timers.stack
            if st and st[-1][0] == part:
                return fn(*a, **k)
            now = time.perf_counter()
            if st:
                timers.s[st[-1][0]] += now - st[-1][1]
            st.append([part, now])
            try:
                return fn(*a, **k)
            finally:
                now = time.perf_counter()
                p, t = st.pop()
                timers.s[p] += now - t
                if st:
                    st[-1][1] = now
        setattr(owner, name, timed)


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
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sweep_scale.json"))
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    from robustlab.datasets import _clips
    from robustlab import bench as sw
    from robustlab.perturb import registry

    data = Path(args.data or tempfile.mkdtemp(prefix="msrvtt_p_"))
    t0 = time.perf_counter()
    if not (data / "MSRVTT_JSFUSION_test.csv").exists():
        write_msrvtt(data, args.clips, args.frames, args.px)
    t_write = time.perf_counter() - t0

    timers = Timers()
    timers.wrap(_clips.ClipSource, "read", "decode")
    timers.wrap(registry, "_run", "perturb")
    from robustlab.perturb import lazy

    timers.wrap(lazy, "perturb_sampled", "perturb")
    import robustlab.models.builtin_video as bv

    for cls in vars(bv).values():
        if isinstance(cls, type) and hasattr(cls, "encode_videos") and cls.__module__ == bv.__name__:
            timers.wrap(cls, "encode_videos", "encode")
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
    out = Path(tempfile.mkdtemp(prefix="sweep_scale_"))
    t1 = time.perf_counter()
    status = sw.run_sweep(spec, out, cache=EmbeddingCache(out / "cache"))
    total = time.perf_counter() - t1
    parts = {k: round(v, 2) for k, v in timers.s.items()}
    parts["rest"] = round(total - sum(timers.s.values()), 2)
    scale = args.target / args.clips
    res = {"clips": args.clips, "frames": args.frames, "px": args.px, "model": args.model,
           "perturbations": len(vis), "severities": sevs, "cells": status.total, "seconds": round(total, 1),
           "parts_s": parts, "projected_clips": args.target, "projected_s": round(total * scale, 1),
           "projected_h": round(total * scale / 3600, 2), "write_videos_s": round(t_write, 1),
           "cpus": os.cpu_count(), "lazy": True,
           "frame_cache": {"frames_decoded": sum(c.decoded for c in caches), "evicted": sum(c.evicted for c in caches),
                           "peak_mb": round(max((c.peak for c in caches), default=0) / 2**20, 1),
                           "max_mb": round(max((c.max_bytes for c in caches), default=0) / 2**20, 1)}}
    by_p = collections.Counter()
    for r in sw.load_results(out):
        by_p[r["conditions"]["visual"].get("name") or "clean"] += r["extra"].get("seconds", 0.0)
    res["seconds_by_perturbation"] = {k: round(v, 2) for k, v in by_p.most_common()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
