"""The built-in data and model the adaptation tests run on, loaded once per test module: a test module imports
the fixtures it uses (``from adapt_fixtures import seq_fixture, videos_fixture``: pytest finds them by their
names, ``seq`` and ``videos``). Not a ``conftest.py``: a second conftest module would shadow ``tests/conftest.py``,
which the browser tests import as ``conftest`` (``tests/test_test_tree.py``)."""
import pytest
import torch


@pytest.fixture(scope="module", name="videos")
def videos_fixture(request):
    """The built-in videos: the test module's ``VIDEOS_N`` of them."""
    import robustlab as rl

    return rl.datasets.build("builtin-videos", n=request.module.VIDEOS_N)


@pytest.fixture(scope="module", name="seq")
def seq_fixture():
    """The trained built-in video model with a sequence transformer (two torch threads)."""
    import robustlab as rl

    torch.set_num_threads(2)
    return rl.load_model("builtin:tiny-clip-video-seqtransf")
