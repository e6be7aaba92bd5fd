"""robustlab.tasks.quality.heldout_quality: what a training recipe stores as a checkpoint's held-out numbers, on the
held-out world (seed 1000), at the dataset's size or at the render size the recipe names."""
import robustlab as rl
from robustlab.tasks.quality import heldout_quality


def test_the_render_size_is_used_and_recorded():
    model = rl.load_model("builtin:tiny-clip-video-seqtransf", device="cpu")
    default = heldout_quality("retrieval", model, "builtin-videos", 6)
    big = heldout_quality("retrieval", model, "builtin-videos", 6, size=96)
    assert default["seed"] == big["seed"] == 1000 and default["n"] == big["n"] == 6
    assert "size" not in default and big["size"] == 96  # a recipe that names no size keeps its old metadata
    assert 0.0 <= big["t2v_R@1"] <= 1.0 and 0.0 <= default["t2v_R@1"] <= 1.0
