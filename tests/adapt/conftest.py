"""The built-in data and model the adaptation tests run on, loaded once per test module."""
import pytest
import torch


@pytest.fixture(scope="module")
def videos(request):
    """The built-in videos: the test module's ``VIDEOS_N`` of them."""
    import robustlab as rl

    return rl.datasets.build("builtin-videos", n=request.module.VIDEOS_N)


@pytest.fixture(scope="module")
def seq():
    """The trained built-in video model with a sequence transformer (two torch threads)."""
    import robustlab as rl

    torch.set_num_threads(2)
    return rl.load_model("builtin:tiny-clip-video-seqtransf")
