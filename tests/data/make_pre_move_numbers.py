"""Numbers of the pre-move code (commit 93efafd) that the task layer must reproduce exactly."""
import json, sys
import torch
torch.set_num_threads(2)
import robustlab as rl
# run on commit 93efafd (the module paths of that time): python tests/data/make_pre_move_numbers.py OUT.json
from robustlab.evaluate import eval_retrieval
from robustlab.evaluate_video import eval_video_retrieval
from robustlab.evaluate_fusion import eval_vqa, eval_grounding, eval_clavi, eval_itm
from robustlab.analysis.hubness_eval import eval_hubness
from robustlab.engine.cache import EmbeddingCache
out = {"commit": "93efafd", "n": 200, "seed": 1000}
c = EmbeddingCache(enabled=False)
m = rl.load_model("builtin:tiny-clip")
out["retrieval"] = [eval_retrieval(m, n=200, seed=1000, cache=c),
                    eval_retrieval(m, n=200, seed=1000, image_perturb="gaussian_noise", image_severity=3, cache=c),
                    eval_retrieval(m, n=200, seed=1000, text_perturb="keyboard", text_severity=3, cache=c)]
out["hubness"] = [eval_hubness(m, n=200, seed=1000, k=10, direction="t2i", perturb="gaussian_noise", severity=3, reduce="qbnorm", cache=c),
                  eval_hubness(m, n=200, seed=1000, k=10, direction="i2t", perturb="keyboard", severity=3, cache=c)]
out["video_retrieval"] = []
for spec in ("builtin:tiny-clip-video-meanp", "builtin:tiny-clip-video-seqtransf"):
    v = rl.load_model(spec)
    out["video_retrieval"] += [eval_video_retrieval(v, n=200, seed=1000, cache=c),
                               eval_video_retrieval(v, n=200, seed=1000, perturb="jumble", severity=3, cache=c),
                               eval_video_retrieval(v, n=200, seed=1000, text_perturb="keyboard", text_severity=2, cache=c)]
    out.setdefault("video_hubness", []).append(eval_hubness(v, n=200, seed=1000, k=10, direction="v2t", dataset="videos", perturb="gaussian_noise", severity=5, cache=c))
vl = rl.load_model("builtin:tiny-vilt")
out["vqa"] = [eval_vqa(vl, n=200, seed=1000), eval_vqa(vl, n=100, seed=1000, perturb="gaussian_noise", severity=3)]
out["grounding"] = [eval_grounding(vl, n=200, seed=1000), eval_grounding(vl, n=100, seed=1000, text_perturb="keyboard", text_severity=3)]
out["clavi"] = [eval_clavi(vl, n=100, seed=1000)]
out["itm"] = [eval_itm(vl, n=100, seed=1000)]
json.dump(out, open(sys.argv[1], "w"), indent=1, default=float)
print("ok")
