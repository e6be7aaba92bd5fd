"""The tiny-clip image side, core against plain loop, with glibc malloc as is and tuned (``TUNE=1``).

    PYTHONPATH=. python benchmarks/profile_engine_alloc.py   (results: benchmarks/results/engine_h200_profile.txt)

The text tower is replaced by an identity (only images are encoded), so it runs without the MiniLM package.
"""
import cProfile
import io
import os
import pstats
import time

import numpy as np
import torch

import robustlab.models.builtin as B

B.load_minilm = lambda: (None, torch.nn.Identity())  # image side only: the text tower is not needed here
from robustlab.engine import batching
from robustlab.models.builtin import TinyClip, load_tiny_clip
from robustlab.models.registry import checkpoint_path

net, _ = load_tiny_clip(checkpoint_path("tiny-clip.safetensors"))
model = TinyClip(device="cpu", net=net)
rng = np.random.default_rng(0)
imgs = [rng.integers(0, 256, (128, 128, 3), dtype=np.uint8) for _ in range(1024)]
bs = 256

def plain(nb=False):
    out = []
    with torch.inference_mode():
        for i in range(0, len(imgs), bs):
            pix = model.preprocess_images(imgs[i:i + bs]).to(model.device, dtype=model.dtype, non_blocking=nb)
            f = model._image_features(pix).float()
            out.append((f / f.norm(dim=-1, keepdim=True)).cpu())
    return torch.cat(out).numpy()

def core():
    return batching.encode_images(model, imgs, batch_size=bs)

orig = batching.to_uint8_rgb
def core_noconv():
    batching.to_uint8_rgb = lambda x: x
    try:
        return batching.encode_images(model, imgs, batch_size=bs)
    finally:
        batching.to_uint8_rgb = orig

def core_numpy_end():  # the core's loop with the tensors kept until the end
    out = []
    with torch.inference_mode():
        for i in range(0, len(imgs), bs):
            batch = [batching.to_uint8_rgb(im) for im in imgs[i:i + bs]]
            pix = model.preprocess_images(batch).to(model.device, dtype=model.dtype, non_blocking=True)
            out.append(batching._normalise(model._image_features(pix)))
    return np.concatenate(out)

res = {}
if os.environ.get("TUNE"):
    from robustlab.perturb.allocator import tune_allocator

    print("tuned", tune_allocator())
for threads in (2, 16):
    torch.set_num_threads(threads)
    fns = {"plain": plain, "plain_nb": lambda: plain(True), "core": core, "core_noconv": core_noconv,
           "core_loop": core_numpy_end}
    for f in fns.values():
        f()
    t = {k: [] for k in fns}
    for r in range(10):
        order = list(fns) if r % 2 == 0 else list(fns)[::-1]
        for k in order:
            s = time.perf_counter()
            fns[k]()
            t[k].append(time.perf_counter() - s)
    res[threads] = {k: round(min(v), 4) for k, v in t.items()}
    print(threads, res[threads], flush=True)
torch.set_num_threads(2)
for name, fn in (("plain", plain), ("core", core)):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3):
        fn()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12)
    print(name, s.getvalue()[:3000])
