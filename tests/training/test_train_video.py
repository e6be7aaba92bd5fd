"""`robustlab train tiny-clip-video` is reproducible from its seed (a small recipe; the full one is in the README)."""
import pytest
import torch
from safetensors.torch import load_file

from robustlab.training.tiny_clip_video import train_tiny_clip_video


@pytest.mark.slow  # trains
def test_video_training_is_reproducible_from_the_seed(tmp_path):
    torch.set_num_threads(2)
    kw = dict(n_train=128, epochs=1, batch_size=64, eval_n=0, val_n=0, log=lambda *a: None)
    a = train_tiny_clip_video(tmp_path / "a.safetensors", seed=3, **kw)
    b = train_tiny_clip_video(tmp_path / "b.safetensors", seed=3, **kw)
    c = train_tiny_clip_video(tmp_path / "c.safetensors", seed=4, **kw)
    sa, sb, sc = (load_file(r["path"]) for r in (a, b, c))
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    assert a["train"]["final_loss_seqtransf"] == b["train"]["final_loss_seqtransf"]
    # the frame tower's conv features stay tiny-clip's (frozen)
    from pathlib import Path

    base = load_file(str(Path(__file__).resolve().parents[2] / "assets" / "tiny-clip.safetensors"))
    conv = [k for k in base if k.startswith("image.features.") and "num_batches" not in k]
    assert conv and all(torch.equal(base[k], sa[k]) for k in conv)
