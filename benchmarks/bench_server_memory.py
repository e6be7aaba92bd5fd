"""Memory a viewer can pin on a shared server (issue 44, finding 2): peak and retained RSS, before and after.

Each scenario runs the dashboard's real pages in a fresh process (Streamlit's AppTest: the script runs in this
process, so its RSS is the server's), after a first run of the default page (the baseline):

- ``big-image``: one viewer uploads a 6300 × 6300 PNG (about 100 KB, under the 40-megapixel limit) on the Perturb
  page and runs it through 4 perturbations (each shows severities 1–5 and one severity side by side);
- ``random-models``: with ``ROBUSTLAB_UI_MODELS=open_clip:*`` a viewer types three architectures without weights
  (``open_clip:ViT-B-32``, ``open_clip:ViT-B-16``, ``open_clip:RN50``) into the model box;
- ``local-models``: with ``ROBUSTLAB_MODEL_ROOT`` holding three open_clip checkpoints (random weights saved as
  files, so they load as real checkpoints would) and ``ROBUSTLAB_MODEL_CACHE_MB=1024``, a viewer loads all three.

Peak: the process's high-water mark (``VmHWM``, reset with ``/proc/self/clear_refs`` after the baseline). Retained:
RSS after the viewer's session is dropped, ``gc.collect()`` and ``malloc_trim(0)``: what stays pinned for everyone.

    python benchmarks/bench_server_memory.py                       # this checkout → results/server_memory.json
    python benchmarks/bench_server_memory.py --checkout /tmp/old --label before   # the same scenarios, another tree

A scenario of a checkout without the feature it needs still runs (the old dashboard loads random weights).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "server_memory.json"
SCENARIOS = ("big-image", "random-models", "local-models")
PERTURBATIONS = ("gaussian_noise", "brightness", "contrast", "pixelate")
ARCHS = ("ViT-B-32", "ViT-B-16", "RN50")
MB = 1 << 20


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _trim() -> None:
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc
        pass


def _big_png() -> bytes:
    import io

    import numpy as np
    from PIL import Image

    a = np.full((6300, 6300, 3), 200, np.uint8)
    a[1000:3000, 1500:4500] = (200, 30, 30)  # two flat shapes: about 100 KB as a PNG
    a[4000:5500, 800:2000] = (30, 30, 200)
    b = io.BytesIO()
    Image.fromarray(a).save(b, format="PNG", optimize=True)
    return b.getvalue()


def _checkpoints(folder: Path) -> list[str]:
    import open_clip
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    specs = []
    for arch in ARCHS:
        path = folder / f"{arch}.pt"
        if not path.exists():
            m = open_clip.create_model(arch, pretrained=None)
            torch.save(m.state_dict(), path)
            del m
        specs.append(f"open_clip:{arch}/{path}")
    return specs


def scenario(name: str) -> dict:
    """Run one scenario in this process; RSS figures in MB."""
    import torch
    from streamlit.testing.v1 import AppTest

    torch.set_num_threads(2)
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.run()  # the default page: the model, the gallery, the bench
    first = [str(e.value)[:300] for e in at.exception] + [e.value[:300] for e in at.error]
    _trim()
    base = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    notes: list[str] = []
    t0 = time.perf_counter()
    if name == "big-image":
        at.switch_page("pages/perturb.py").run()
        at.radio(key="pt_source_image").set_value("upload").run()
        at.file_uploader(key="pt_upload_image").set_value(("big.png", _big_png(), "image/png")).run()
        for p in PERTURBATIONS:
            at.selectbox(key="pt_name_image").set_value(p).run()
            notes += [e.value for e in at.error]
    else:
        specs = [f"open_clip:{a}" for a in ARCHS] if name == "random-models" else \
            _checkpoints(Path(os.environ["ROBUSTLAB_MODEL_ROOT"]))
        for spec in specs:  # what typing the spec into the sidebar's model box sets (tests/apptest_helpers.fresh)
            at.session_state["model_choice"] = "other (open_clip / hf / path)…"
            at.session_state["custom_spec"] = spec
            at.run()
            notes += [e.value[:300] for e in at.error] + [w.value[:300] for w in at.warning]
    notes += [str(e.value)[:300] for e in at.exception]
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM")
    at = None
    _trim()
    retained = _status("VmRSS")
    return {"baseline_mb": round(base / MB), "peak_mb": round(peak / MB), "retained_mb": round(retained / MB),
            "peak_growth_mb": round((peak - base) / MB), "retained_growth_mb": round((retained - base) / MB),
            "seconds": round(seconds, 1), "exception": None, "messages": sorted(set(notes))[:6],
            "default_page_problems": first[:3]}


def run_in(checkout: Path, name: str, tmp: Path) -> dict:
    if name == "local-models":  # made here: the operator's model root must exist when the server reads it
        _checkpoints(tmp / "checkpoints")
    env = {**os.environ, "ROBUSTLAB_CACHE": str(tmp / "cache"), "ROBUSTLAB_WARM_UP": "0",
           "PYTHONPATH": str(checkout)}
    if name == "random-models":
        env["ROBUSTLAB_UI_MODELS"] = "open_clip:*"
    if name == "local-models":
        env.update(ROBUSTLAB_UI_MODELS="open_clip:*", ROBUSTLAB_MODEL_ROOT=str(tmp / "checkpoints"),
                   ROBUSTLAB_MODEL_CACHE_MB="1024")
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_server_memory as b; "
            f"b.ROOT = __import__('pathlib').Path({str(checkout)!r}); "
            f"print('RESULT ' + json.dumps(b.scenario({name!r})), flush=True)")
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=checkout, capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        return {"exception": (p.stderr or p.stdout)[-1500:]}
    return json.loads(lines[-1][len("RESULT "):])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the tree whose dashboard is measured")
    ap.add_argument("--label", default="after", help="the key this run's numbers go under in the results file")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    import tempfile

    data = json.loads(args.out.read_text()) if args.out.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.scenarios.split(","):
            print(f"{args.label}: {name}…", flush=True)
            res = run_in(args.checkout.resolve(), name, Path(tmp))
            commit = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
            data.setdefault(name, {})[args.label] = {**res, "commit": commit}
            print(json.dumps(res), flush=True)
    data["_about"] = ("RSS of one process running the dashboard's pages (AppTest), MB: baseline after the default "
                      "page, peak (VmHWM), retained after the session is dropped; benchmarks/bench_server_memory.py")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
