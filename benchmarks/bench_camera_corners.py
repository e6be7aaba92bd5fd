"""What in a rotation breaks the built-in video models: the black corners, or the rotated content?

Schiappa's ``static_rotate`` and ``rotate`` turn each frame with PIL (:mod:`robustlab.perturb.video.camera`), which
leaves black corners where the turned frame no longer covers the canvas. This benchmark splits the two effects and
scores each on its own, at the perturbation's own severities and angles:

* **black corners only**: the frame is not turned; only the pixels a rotation would leave black are set to black;
* **turned, corners kept**: the frame is turned, and the corners a rotation leaves black keep the original pixels;
* **both**: the perturbation itself.

The two halves are diagnostics for this benchmark only (registered here, in this process, never in the library).
``static_rotate`` turns every frame by the table's angle; ``rotate`` draws an integer angle per frame in
±max_angle, and the split draws its own angles the same way.

    python benchmarks/bench_camera_corners.py [--n 1000] [--seed 2027] [--size 128] [--severities 1]
        [--models builtin:tiny-vit-clip-video-meanp,builtin:tiny-vit-clip-video-seqtransf]
        [--out benchmarks/results/camera_corners.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

import robustlab as rl
from robustlab.perturb.condition import Condition
from robustlab.perturb import get_perturbation, list_perturbations, register
from robustlab.perturb.video._common import frames_of
from robustlab.perturb.video.camera import rotate_frames, rotation_map
from robustlab.tasks.registry import get

OUT = Path(__file__).resolve().parent / "results" / "camera_corners.json"
SOURCES = ("static_rotate", "rotate")


def _angles(name: str, params: dict, n: int, rng: np.random.Generator) -> np.ndarray:
    """The angles the perturbation ``name`` turns n frames by (rotate: drawn as it draws them)."""
    if name == "static_rotate":
        return np.full(n, float(params["angle"]))
    m = int(params["max_angle"])
    return rng.integers(-m, m + 1, size=n).astype(np.float64)


def _corner_masks(shape, angles) -> np.ndarray:
    """T×H×W: True where PIL's rotation by angles[t] leaves frame t black."""
    _, h, w, _ = shape
    return np.stack([rotation_map(h, w, float(a)) == 0 for a in angles])


def _split(name: str):
    """The two halves of perturbation ``name``: black corners alone, and the turned frame with its corners kept."""
    def corners_only(x, params, rng):
        v = frames_of(x).copy()
        v[_corner_masks(v.shape, _angles(name, params, len(v), rng))] = 0
        return v

    def corners_kept(x, params, rng):
        v = frames_of(x)
        angles = _angles(name, params, len(v), rng)
        out = rotate_frames(v, angles)
        masks = _corner_masks(v.shape, angles)
        out[masks] = v[masks]
        return out

    return corners_only, corners_kept


def register_halves() -> dict:
    """Register both halves of each source perturbation (this process only); {source: (corners, kept)} names."""
    names, known = {}, {p.name for p in list_perturbations(modality="video")}
    for src in SOURCES:
        table = get_perturbation(src).severity_table  # the default variant's, as Condition(src, s) uses it
        pair = (f"{src}_black_corners_only", f"{src}_corners_kept")
        for n, fn, what in zip(pair, _split(src), ("black corners only", "turned, corners kept")):
            if n not in known:
                register(n, modality="video", category="camera", source=f"diagnostic half of {src}",
                         severity_table=table, description=f"{src}: {what} (bench_camera_corners.py)",
                         applies_to=("image", "video"))(fn)
        names[src] = pair
    return names


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--severities", default="1")
    ap.add_argument("--models", default="builtin:tiny-vit-clip-video-meanp,builtin:tiny-vit-clip-video-seqtransf")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    import torch  # heavy: only a run needs it

    torch.set_num_threads(a.threads)
    halves = register_halves()
    sevs = [int(s) for s in a.severities.split(",")]
    ds = rl.datasets.build("builtin-videos", split="test", n=a.n, seed=a.seed, size=a.size)
    labels, conds = ["clean"], [{}]
    for src, (corners, kept) in halves.items():
        for s in sevs:
            for what, name in (("both", src), ("black corners only", corners), ("turned, corners kept", kept)):
                labels.append(f"{src} s{s}: {what}")
                conds.append({"visual": Condition(name, s, 0)})
    res = {"meta": {"n": a.n, "seed": a.seed, "size": a.size, "severities": sevs, "dataset": "builtin-videos",
                    "metric": "t2v R@1", "threads": a.threads, "machine": platform.processor() or platform.machine()},
           "models": {}}
    for spec in a.models.split(","):
        t0 = time.time()
        model = rl.load_model(spec, device="cpu")
        rows = get("retrieval").evaluate(model, ds, conds)
        res["models"][spec] = {lab: round(r.metrics["t2v"]["R@1"], 4) for lab, r in zip(labels, rows)}
        res["models"][spec]["seconds"] = round(time.time() - t0, 1)
        print(spec, json.dumps(res["models"][spec]), flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
