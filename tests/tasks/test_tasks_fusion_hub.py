"""Entailment (SNLI-VE) and reasoning (NLVR2) through the task layer, on random-init ViLT models of the real
architectures (plumbing only: no numbers here are results), and the refusals a user meets."""
import numpy as np
import pytest

pytest.importorskip("transformers")

from robustlab.datasets.base import QA, InMemoryDataset  # noqa: E402
from robustlab.tasks import get  # noqa: E402


@pytest.fixture(scope="module")
def vilt():
    from transformers import ViltConfig

    from robustlab.models.hf_fusion import HFViltModel

    cfg = ViltConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=64,
                     patch_size=16, max_position_embeddings=40, vocab_size=300)
    return {h: HFViltModel.from_config(cfg, head=h, device="cpu") for h in ("ve", "nlvr2", "vqa")}


def images(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (48 + 8 * (i % 2), 64, 3), dtype=np.uint8) for i in range(n)]


class Pairs(InMemoryDataset):
    """Two images per item and true/false statements about them (the NLVR2 layout)."""

    def __init__(self, n=4):
        ims = images(2 * n)
        super().__init__([np.stack([ims[2 * i][:48], ims[2 * i + 1][:48]]) for i in range(n)], [None] * n,
                         name="pairs", kind="image",
                         questions=[[QA(f"statement {i}", "true" if i % 2 == 0 else "false", "reasoning")]
                                    for i in range(n)])
        self.tasks = ("reasoning",)


def test_entailment_task_on_a_ve_head(vilt):
    labels = ["entailment", "neutral", "contradiction", "entailment"]
    ds = InMemoryDataset(images(4), [None] * 4, name="ve", questions=[[QA(f"hypothesis {i}", lab, "entailment")]
                                                                     for i, lab in enumerate(labels)])
    ds.tasks = ("entailment",)
    ve = vilt["ve"]
    assert ve.head == "ve" and ve.supported_tasks == ("entailment",)
    pred, scores = ve.entail(ds.visual(0), "a hypothesis")
    assert pred in scores and set(scores) == {"entailment", "neutral", "contradiction"}
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-5)
    rs = get("entailment").evaluate(ve, ds, [None, {"visual": "gaussian_noise:3", "text": "keyboard:2"}])
    assert [r.n for r in rs] == [4, 4] and rs[0].extra["hypotheses"] == 4
    m = rs[0].metrics
    assert 0 <= m["acc"] <= 1 and m["chance_acc"] == pytest.approx(1 / 3)
    assert sum(v["n"] for v in m["per_label"].values()) == 4
    # the same item under the same condition gives the same answer (seeded perturbation)
    again = get("entailment").evaluate(ve, ds, {"visual": "gaussian_noise:3", "text": "keyboard:2"})[0]
    assert again.metrics == rs[1].metrics
    with pytest.raises(ValueError, match="cannot do vqa .*serves entailment"):
        get("vqa").evaluate(ve, ds)


def test_reasoning_task_on_an_nlvr2_head(vilt):
    ds = Pairs(4)
    nl = vilt["nlvr2"]
    ans, p = nl.reason(list(ds.visual(0)), "two things")
    assert isinstance(ans, bool) and 0 <= p <= 1 and ans == (p > 0.5)
    r = get("reasoning").evaluate(nl, ds, {"visual": "defocus_blur:2"})[0]
    assert r.n == 4 and r.extra["statements"] == 4 and 0 <= r.metrics["acc"] <= 1
    assert r.metrics["acc_true"] is not None and r.metrics["acc_false"] is not None
    with pytest.raises(ValueError, match="two images"):
        nl.reason([ds.visual(0)[0]], "one image")


def test_refusals_are_one_line(vilt, tiny_clip):
    ds = Pairs(2)
    for task, model in (("reasoning", tiny_clip), ("reasoning", vilt["vqa"]), ("entailment", vilt["nlvr2"])):
        with pytest.raises(ValueError) as e:
            get(task).evaluate(model, ds)
        assert "cannot do" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="has nothing for entailment"):
        get("entailment").evaluate(vilt["ve"], ds)
