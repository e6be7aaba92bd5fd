import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # app-level modules (ui.py) for AppTest


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Every test session gets its own embedding/gallery cache, so tests never read a stale user cache."""
    d = tmp_path_factory.mktemp("rlcache")
    old = os.environ.get("ROBUSTLAB_CACHE")
    os.environ["ROBUSTLAB_CACHE"] = str(d)
    yield d
    if old is None:
        os.environ.pop("ROBUSTLAB_CACHE", None)
    else:
        os.environ["ROBUSTLAB_CACHE"] = old


@pytest.fixture(scope="session")
def tiny_clip():
    import torch

    torch.set_num_threads(2)
    from robustlab.models import load_model

    return load_model("builtin:tiny-clip", device="cpu")
