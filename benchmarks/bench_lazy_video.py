"""Lazy video perturbation vs the papers' pipeline vs eager in memory, per video perturbation, in one run.

    python benchmarks/bench_lazy_video.py [--clips 1] [--frames 300] [--px 224] [--n 8] [--severities 1-5]
                                          [--ops all|NAME,...]

For every available video-capable perturbation and severity, on ``--clips`` H.264 clips of ``--frames`` frames at
``--px``² (the built-in world's event clips, upscaled and slowed down; a keyframe every 12 frames) and a model
that samples ``--n`` frames (tiny-clip-video's uniform sampler), the time to get those ``n`` perturbed frames:

* papers: MSRVTT-P / MLVP's pipeline — decode the whole clip, perturb it, write it to an mp4 file (PyAV, MPEG-4
  Part 2 as cv2's ``mp4v`` writer in [C1]; a faster encoder than x264, so the ratio is conservative), decode that
  file, sample ``n`` frames;
* eager: decode the whole clip, perturb it in memory, sample;
* lazy: :func:`robustlab.perturb.lazy.perturb_sampled` on the file, decoding only the frames it needs.

Every lazy output is checked equal to the eager one (bit for bit). The whole-clip perturbation is run once per
(perturbation, severity, clip) and its time counted in both papers and eager. Ratios per perturbation and overall
(sum of times) land in benchmarks/results/lazy_video.json, rewritten after each perturbation.
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


def write_mp4(frames, path: Path, codec: str = "mpeg4") -> None:
    import av

    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=30)
        s.width, s.height = frames.shape[2], frames.shape[1]
        s.pix_fmt = "yuv420p"
        for f in frames:
            for pkt in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(pkt)
        for pkt in s.encode():
            c.mux(pkt)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clips", type=int, default=1)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--px", type=int, default=224)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--severities", default="1-5")
    ap.add_argument("--ops", default="all")
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lazy_video.json"))
    args = ap.parse_args(argv)

    import numpy as np

    from bench_sweep_scale import write_msrvtt
    from robustlab.datasets._clips import ClipSource
    from robustlab import bench as sw
    from robustlab.models.protocols import sample_frame_indices
    from robustlab.perturb import perturb
    from robustlab.perturb.lazy import perturb_sampled

    data = Path(args.data or tempfile.mkdtemp(prefix="lazy_video_"))
    if not (data / "MSRVTT_JSFUSION_test.csv").exists():
        write_msrvtt(data, args.clips, args.frames, args.px)
    paths = [data / "videos" / f"video{i}.mp4" for i in range(args.clips)]
    ops = sw.parse_perturbations(args.ops, "video")
    sevs = sw.parse_severities(args.severities)

    def sampler(t):
        return sample_frame_indices(t, args.n)

    tmp = Path(tempfile.mkdtemp(prefix="lazy_video_out_"))
    res = {"clips": args.clips, "frames": args.frames, "px": args.px, "n_sampled": args.n, "severities": sevs,
           "cpus": os.cpu_count(), "threads": os.environ.get("ROBUSTLAB_THREADS", "default"), "per_op": {}}
    tot = {"papers": 0.0, "eager": 0.0, "lazy": 0.0}
    for op in ops:
        row = {"decode": 0.0, "perturb_whole": 0.0, "write_read": 0.0, "lazy": 0.0, "lazy_ok": True}
        for p in paths:
            t0 = time.perf_counter()
            clip = ClipSource(p).read(np.arange(ClipSource(p).n_frames))
            row["decode"] += time.perf_counter() - t0
            for s in sevs:
                t0 = time.perf_counter()
                whole = perturb(clip, op, s, seed=s).output
                row["perturb_whole"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                write_mp4(whole, tmp / "p.mp4")
                src = ClipSource(tmp / "p.mp4")
                _ = src.read(sampler(src.n_frames))
                row["write_read"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                lz = perturb_sampled(ClipSource(p), op, s, seed=s, indices=sampler)
                row["lazy"] += time.perf_counter() - t0
                row["lazy_ok"] &= bool(np.array_equal(lz.output, whole[sampler(len(whole))]))
                row["whole_clip"] = not lz.record["sampled"]["lazy"]
        papers = row["decode"] * len(sevs) + row["perturb_whole"] + row["write_read"]
        eager = row["decode"] * len(sevs) + row["perturb_whole"]
        row.update(papers=papers, eager=eager, vs_papers=papers / row["lazy"], vs_eager=eager / row["lazy"])
        row = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}
        res["per_op"][op] = row
        for k in tot:
            tot[k] += row[k]
        res["total_s"] = {k: round(v, 2) for k, v in tot.items()}
        res["overall_vs_papers"] = round(tot["papers"] / tot["lazy"], 2)
        res["overall_vs_eager"] = round(tot["eager"] / tot["lazy"], 2)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
        print(f"{op:26s} papers {papers:7.2f}s eager {eager:7.2f}s lazy {row['lazy']:6.2f}s  "
              f"×{row['vs_papers']:.1f} / ×{row['vs_eager']:.1f}  ok={row['lazy_ok']}", flush=True)
    print(json.dumps({k: res[k] for k in ("total_s", "overall_vs_papers", "overall_vs_eager")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
