"""Issue 15, faults: a model that fails to load, and a CUDA out-of-memory in the middle of an encode.

A model that fails to load -- for any reason: a damaged checkpoint, a state dict of another architecture, a bug in
a backend -- leaves every page usable with a one-line banner, and the session goes on working once the model
loads again. A CUDA out-of-memory error while a page encodes halves the batch and carries on: the page shows the
same results as without the error.
"""
from __future__ import annotations

import numpy as np
import pytest
from ui.cache import clear_all
import torch
from streamlit.testing.v1 import AppTest

TIMEOUT = 300

MODEL_PAGES = ["pages/retrieval.py", "pages/grounding.py", "pages/attention.py", "pages/clavi.py",
               "pages/hubness.py", "pages/adaptation.py", "pages/embeddings.py"]
OTHER_PAGES = ["pages/perturb.py", "pages/benchmark.py", "pages/export.py"]


class DamagedCheckpoint(Exception):
    """Stands for what a broken weights file raises from deep inside a loader (not a ValueError/OSError)."""


FAILURES = [RuntimeError("Error(s) in loading state_dict for TinyClipNet: size mismatch for proj.weight"),
            KeyError("text.proj.weight"), DamagedCheckpoint("header too large: the file is truncated\nline 2")]


@pytest.fixture()
def fresh_models():
    """Models are cached per process (ui.cache): start and end each test without any."""
    clear_all()  # the shared pools (ui.cache)
    yield
    clear_all()  # the shared pools (ui.cache)


@pytest.mark.slow
@pytest.mark.parametrize("exc", FAILURES, ids=lambda e: type(e).__name__)
def test_a_model_that_fails_to_load_leaves_every_page_usable_with_a_banner(monkeypatch, fresh_models, exc):
    import ui.loaders

    def broken(spec, device=None, **kw):
        raise exc

    monkeypatch.setattr(ui.loaders, "load_model", broken)  # (ui.state re-exports ui.loaders' names)
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    for page in MODEL_PAGES + OTHER_PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        banners = [e.value for e in at.error if "failed to load" in e.value or "can't be loaded" in e.value]
        if page in MODEL_PAGES:
            assert len(banners) == 1, (page, [e.value for e in at.error])
            assert "\n" not in banners[0]
            assert type(exc).__name__ in banners[0] or isinstance(exc, RuntimeError)  # RuntimeError: "can't be loaded"
        else:
            assert not banners, page
            assert len(at.main.children) > 0 and at.header and not at.error, page  # the page as without a model
    # the model loads again (the file was fixed): the same session works, nothing was lost on the way
    monkeypatch.undo()
    at.switch_page("pages/retrieval.py").run()
    assert not at.exception and not at.error
    assert {m.label for m in at.metric} >= {"Ground-truth rank, clean", "Ground-truth rank, perturbed"}


@pytest.mark.slow
def test_a_cuda_out_of_memory_while_a_page_encodes_halves_the_batch_and_carries_on(monkeypatch, tmp_path,
                                                                                    fresh_models):
    """An injected CUDA OOM for any batch over 40 images or 24 captions: the Retrieval page shows the same ranks
    and metrics as a run without it, and the back-off is logged; nothing reaches the user as an error."""
    from robustlab.models.builtin import TinyClip

    def run_page(cache):
        monkeypatch.setenv("ROBUSTLAB_CACHE", str(cache))  # an empty cache: every embedding is computed
        clear_all()  # the shared pools (ui.cache)
        at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
        at.run()
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
        return {m.label: m.value for m in at.metric}, at.dataframe[0].value

    want_metrics, want_table = run_page(tmp_path / "a")
    sizes = {"image": [], "text": []}
    img, txt = TinyClip._image_features, TinyClip._text_features

    def oom_images(self, pix):
        sizes["image"].append(len(pix))
        if len(pix) > 40:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected)")
        return img(self, pix)

    def oom_texts(self, texts):
        sizes["text"].append(len(texts))
        if len(texts) > 24:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB (injected)")
        return txt(self, texts)

    monkeypatch.setattr(TinyClip, "_image_features", oom_images)
    monkeypatch.setattr(TinyClip, "_text_features", oom_texts)
    got_metrics, got_table = run_page(tmp_path / "b")
    assert got_metrics == want_metrics
    num = want_table.select_dtypes("number").columns
    assert np.allclose(got_table[num].to_numpy(float), want_table[num].to_numpy(float), atol=1e-4)
    # the back-off happened and settled: a failed batch over the limit, then only batches within it
    assert max(sizes["image"]) > 40 and max(sizes["text"]) > 24
    assert sizes["image"][-1] <= 40 and sizes["text"][-1] <= 24
