"""builtin:tiny-vilt: protocol, attention capture/replacement, inputs, checkpoint, and held-out quality."""
import numpy as np
import pytest
import torch

from robustlab.datasets.synthetic import world
from robustlab.models import ModelUnavailable, load_model
from robustlab.models.attention import AttentionCapture, identity, only_layers, uniform
from robustlab.models.protocols import Box, FusionModel, GroundingModel
from robustlab.models.tiny_vilt import CHECKPOINT
from robustlab.models.checkpoints import checkpoint_path

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")

# The full measurement of the shipped checkpoint (stages 1-3; n = 1000 each, world seed 1000;
# benchmarks/results/tiny_vilt_quality.json):
#   image VQA 0.825 (count 0.929, position 0.962, exist 0.765, colour 0.835, shape 0.662)
#   video VQA 0.845 (direction 0.987, order 0.933, event 0.873, event_order 0.817, first 0.546),
#   grounding acc@0.5 0.925 (mean IoU 0.753), order reversal 0.916 / pair consistency 0.841 (chance 0.5 / 0.25).
# Every bar of the issue is met. The bars are checked where they are defined, on the n = 1000 held-out split (about
# 30 s); the small-split tests use floors about three binomial standard errors under the figures measured there,
# so they catch regressions.
IMAGE_VQA_FLOOR = 0.80  # the issue's bar (measured 0.825 at n = 1000, 0.855 on the n = 200 split)
VIDEO_VQA_FLOOR = 0.72  # measured 0.845 at n = 1000 (0.810 before stage 3), 0.835 on the n = 200 split
COUNT_FLOOR = 0.80  # measured 0.884 on the 43 count questions of the n = 200 split (sd ~ 0.04), 0.929 at n = 1000
COUNT_BAR_1000 = 0.88  # checked on the n = 1000 split (197 count questions, sd ~ 0.018)
VIDEO_DIRECTION_FLOOR = 0.85
GROUNDING_MIN = 0.70  # the issue's bar (measured 0.925 at n = 1000)
BAR_VQA = 0.80
# order reversal "above chance" (0.5 / 0.25) by a margin; measured 0.916 / 0.841
CLAVI_ACC_BAR, CLAVI_PAIR_BAR = 0.60, 0.30


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(2)
    return load_model("builtin:tiny-vilt", device="cpu")


@pytest.fixture(scope="module")
def scene():
    sc = world.sample_scene(1000, 3)
    return sc, world.render_scene(sc, 128)


@pytest.fixture(scope="module")
def video():
    v = world.sample_video(1000, 1)
    return v, world.render_video(v, 64)


def test_registered_and_protocols(model):
    from robustlab.models import list_models

    row = next(r for r in list_models() if r["spec"] == "builtin:tiny-vilt")
    assert row["task"] == "fusion" and row["available"]
    assert isinstance(model, FusionModel) and isinstance(model, GroundingModel)
    assert model.random_init is False
    assert set(model.answers) >= {"yes", "no", "red", "circle", "top left", "left", "up", "1", "4"}
    info = model.info()
    assert info.extra["layers"] == model.n_layers and "quality" in info.extra and "train" in info.extra


def test_missing_checkpoint_says_how_to_make_it(tmp_path):
    with pytest.raises(ModelUnavailable, match="robustlab train tiny-vilt"):
        load_model("builtin:tiny-vilt", checkpoint=tmp_path / "nope.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(ModelUnavailable, match="robustlab train tiny-vilt"):
        load_model("builtin:tiny-vilt", checkpoint=bad)


def _check_capture(cap: AttentionCapture, model, n_text: int, n_visual: int, n_frames: int):
    L, H, N, N2 = cap.attentions.shape
    assert (L, H) == (model.n_layers, model.n_heads) and N == N2 == n_text + n_visual
    assert cap.attentions.dtype == np.float32
    np.testing.assert_allclose(cap.attentions.sum(-1), 1.0, atol=1e-5)  # every row a distribution
    assert (cap.attentions >= 0).all()
    lay = cap.layout
    # text and visual partition the sequence: text first, then the visual tokens
    assert np.array_equal(np.sort(np.concatenate([lay.text_idx, lay.visual_idx])), np.arange(N))
    assert list(lay.text_idx) == list(range(n_text)) and len(lay.visual_idx) == n_visual
    assert lay.special[0] == "[CLS]" and "[SEP]" in set(lay.special[:n_text])
    assert lay.n_frames == n_frames and set(lay.frame[lay.visual_idx]) == set(range(n_frames))
    assert (lay.frame[lay.text_idx] == -1).all()
    g = lay.grid[0]
    for f in range(n_frames):  # each frame: its full patch grid, row-major
        idx = lay.indices("visual", frame=f)
        assert [tuple(p) for p in lay.patch[idx]] == [(r, c) for r in range(g) for c in range(g)]
    assert len(lay.tokens) == N and not lay.is_pad.any()


def test_attention_capture_layout_image(model, scene):
    _, img = scene
    cap = model.forward_with_attention(img, "is there a red circle?")
    n_text = len(model.tokenizer("is there a red circle?")["input_ids"])
    _check_capture(cap, model, n_text, 64, 1)
    assert cap.layout.grid == (8, 8) and not cap.replaced
    assert cap.outputs["vqa_answer"] in model.answers and 0 <= cap.outputs["itm_score"] <= 1
    assert len(cap.outputs["box"]) == 4
    pw = cap.outputs["pool_weights"]  # where the answer looked: one weight per visual token
    assert pw.shape == (64,) and abs(float(pw.sum()) - 1) < 1e-4 and (pw >= 0).all()
    # the captured attention is what the model computes: same answer as vqa()
    ans, scores = model.vqa(img, "is there a red circle?")
    assert ans == cap.outputs["vqa_answer"] and abs(sum(scores.values()) - 1) < 1e-4


def test_attention_capture_layout_video(model, video):
    _, frames = video
    q = "does the red circle move left?"
    cap = model.forward_with_attention(frames, q)
    n_text = len(model.tokenizer(q)["input_ids"])
    _check_capture(cap, model, n_text, 8 * 16, 8)
    assert cap.layout.grid == (4, 4)
    assert cap.mass("text", "visual").shape == (model.n_layers, model.n_heads)


def test_replacement_identity_keeps_uniform_changes(model, scene):
    _, img = scene
    q = "what colour is the star?"
    base = model.forward_with_attention(img, q)
    same = model.forward_with_attention(img, q, replace=identity)
    np.testing.assert_allclose(same.outputs["vqa_logits"], base.outputs["vqa_logits"], atol=1e-5)
    np.testing.assert_allclose(same.attentions, base.attentions, atol=1e-6)
    assert same.replaced
    uni = model.forward_with_attention(img, q, replace=uniform)
    n = uni.n_tokens
    np.testing.assert_allclose(uni.attentions, 1.0 / n, atol=1e-6)  # what was used is what is captured
    assert np.abs(uni.outputs["vqa_logits"] - base.outputs["vqa_logits"]).max() > 1e-2
    # only the last layer replaced: earlier layers' attention is untouched
    last = model.forward_with_attention(img, q, replace=only_layers([model.n_layers - 1], uniform))
    np.testing.assert_allclose(last.attentions[:-1], base.attentions[:-1], atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        model.forward_with_attention(img, q, replace=lambda i, p, lay: p[:, :1])


def test_deterministic(model, scene, video):
    _, img = scene
    a = model.forward_with_attention(img, "where is the star?")
    b = model.forward_with_attention(img, "where is the star?")
    assert np.array_equal(a.attentions, b.attentions)
    assert model.ground(img, "the star") == model.ground(img, "the star")
    other = load_model("builtin:tiny-vilt", device="cpu")
    assert other.vqa(video[1], "which way does the red circle move?") == \
        model.vqa(video[1], "which way does the red circle move?")


def test_ground_returns_box_in_input_pixels(model, scene):
    sc, img = scene
    ref = world.referring_expression(sc, 0, 128)
    b = model.ground(img, ref["expression"])
    assert isinstance(b, Box) and 0 <= b.x0 < b.x1 <= 128 and 0 <= b.y0 < b.y1 <= 128 and 0 < b.score <= 1
    big = np.kron(img, np.ones((2, 2, 1), np.uint8))  # the same scene at 256 px: the box scales with it
    b2 = model.ground(big, ref["expression"])
    assert b2.iou([2 * v for v in b.as_tuple()]) > 0.8


def test_bad_inputs_say_why(model, scene):
    _, img = scene
    for text in ("", "   "):
        with pytest.raises(ValueError, match="empty"):
            model.vqa(img, text)
        with pytest.raises(ValueError, match="empty"):
            model.ground(img, text)
    with pytest.raises(ValueError, match="string"):
        model.itm_score(img, None)
    with pytest.raises(ValueError, match="channels"):
        model.vqa(np.zeros((64, 64, 5), np.uint8), "how many objects are there?")
    with pytest.raises(ValueError, match="shape"):
        model.vqa(np.zeros(100, np.uint8), "how many objects are there?")
    with pytest.raises(ValueError, match="numbers"):
        model.vqa(np.array([["a"]]), "how many objects are there?")
    with pytest.raises(ValueError, match="too small"):
        model.vqa(np.zeros((4, 4, 3), np.uint8), "how many objects are there?")
    with pytest.raises(ValueError, match="too large"):
        model.vqa(np.zeros((9000, 8, 3), np.uint8), "how many objects are there?")
    with pytest.raises(ValueError, match="no image"):
        model.vqa(None, "how many objects are there?")
    with pytest.raises(ValueError, match="single image"):
        model.ground(np.stack([img, img]), "the star")
    # converted, not refused (the project's input convention): grayscale, RGBA, float in [0, 1], PIL
    from PIL import Image

    gray = img.mean(-1).astype(np.uint8)
    for x in (gray, np.dstack([img, np.full(img.shape[:2], 255, np.uint8)]), img / 255.0, Image.fromarray(img)):
        ans, _ = model.vqa(x, "how many objects are there?")
        assert ans in model.answers


def test_eval_refuses_models_without_the_head():
    from robustlab.datasets import build
    from robustlab.tasks import get

    class Retrieval:
        model_id = "builtin:tiny-clip"

    for task, name, what in (("vqa", "builtin", "vqa"), ("grounding", "builtin", "ground"),
                             ("clavi", "builtin-videos", "vqa")):
        with pytest.raises(ValueError, match=f"cannot do {task} .*no {what}\\(\\)"):
            get(task).evaluate(Retrieval(), build(name, n=2))


def test_cli_eval_says_why_for_a_retrieval_model(capsys):
    from robustlab.cli import main

    assert main(["eval", "grounding", "--model", "builtin:tiny-clip", "--n", "2", "--json"]) == 2
    err = capsys.readouterr().err
    assert "cannot do grounding" in err and "Traceback" not in err


# ---- quality on small fresh held-out splits (the full n=1000 figures are in the benchmark) ---------------
def vqa_on(model, n, seed, **kw):
    """Image and video VQA on the first n scenes and n videos of world ``seed`` (two task runs)."""
    from robustlab.datasets import build
    from robustlab.tasks import get

    return [get("vqa").evaluate(model, build(name, n=n, seed=seed), **kw)[0].metrics
            for name in ("builtin", "builtin-videos")]


@pytest.fixture(scope="module")
def vqa_result(model):
    return vqa_on(model, 200, 2024)


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_quality_vqa_on_a_small_split(vqa_result):
    img, vid = vqa_result
    assert img["acc"] >= IMAGE_VQA_FLOOR and vid["acc"] >= VIDEO_VQA_FLOOR, vqa_result
    assert img["per_type"]["count"]["acc"] >= COUNT_FLOOR, img
    assert vid["per_type"]["direction"]["acc"] >= VIDEO_DIRECTION_FLOOR, vid
    assert sum(v["n"] for v in vid["per_type"].values()) == 200
    assert sum(v["n"] for v in img["per_type"].values()) == 200


@pytest.mark.slow
def test_issue_bar_image_and_video_vqa_on_1000_held_out_items(model):
    from robustlab.datasets.synthetic.world import HELDOUT_SEED

    img, vid = vqa_on(model, 1000, HELDOUT_SEED)
    assert img["acc"] >= BAR_VQA and vid["acc"] >= BAR_VQA, (img, vid)
    # before/after is read, not guessed: order questions well above chance
    assert vid["per_type"]["order"]["acc"] >= 0.75, vid
    assert img["per_type"]["count"]["acc"] >= COUNT_BAR_1000, img


def test_quality_grounding(model):
    from robustlab.datasets import build
    from robustlab.tasks import get

    r = get("grounding").evaluate(model, build("builtin", n=200, seed=2024))[0].metrics
    assert r["acc@0.5"] >= GROUNDING_MIN, r
    assert 0 < r["mean_iou"] <= 1


@pytest.fixture(scope="module")
def clavi_result(model):
    from robustlab.datasets import build
    from robustlab.tasks import get

    # the first 150 videos of world 2024 that have a before/after question (about 1 in 2.2 has one)
    return get("order-reversal").evaluate(model, build("builtin-videos", n=500, seed=2024), n=150)[0]


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_clavi_pairs_flip_and_are_reported(clavi_result):
    from robustlab.datasets import build
    from robustlab.tasks.order_reversal import pairs

    ds = build("builtin-videos", n=80, seed=2024)
    found = pairs(ds, 30)
    assert len(found) == 30
    for i, q, q_rev in found:
        assert q.question == q_rev.question and {q.answer, q_rev.answer} == {"yes", "no"}
        v = ds.scene(i)
        assert v.events[0].obj != v.events[1].obj
    r = clavi_result.metrics
    assert clavi_result.n == 150 and r["chance_acc"] == 0.5 and r["chance_pair_consistency"] == 0.25
    assert 0 <= r["pair_consistency"] <= min(r["acc_original"], r["acc_complement"])


def test_issue_bar_clavi_above_chance(clavi_result):
    r = clavi_result.metrics
    assert r["acc"] >= CLAVI_ACC_BAR and r["pair_consistency"] >= CLAVI_PAIR_BAR, r


def test_perturbed_eval_records_what_was_perturbed(model):
    from robustlab.datasets import build
    from robustlab.tasks import get

    scenes = build("builtin", n=40, seed=7)
    clean, noisy = get("grounding").evaluate(model, scenes, [None, {"visual": "gaussian_noise:5"}])
    assert noisy.conditions["visual"] == {"name": "gaussian_noise", "severity": 5, "seed": 0}
    assert clean.conditions["visual"] == {"name": None} and noisy.conditions["text"] == {"name": None}
    assert noisy.metrics["mean_iou"] != clean.metrics["mean_iou"]
    r = get("vqa").evaluate(model, build("builtin", n=10, seed=7), {"visual": "gaussian_noise:2",
                                                                    "text": "keyboard:2"})[0]
    assert r.conditions["visual"]["name"] == "gaussian_noise" and r.conditions["text"]["name"] == "keyboard"
    with pytest.raises(ValueError, match="unknown perturbation"):
        get("vqa").evaluate(model, scenes, {"visual": "no_such_thing:2"})
    # a video-only perturbation is refused on images, before any work
    with pytest.raises(ValueError, match="not to images"):
        get("grounding").evaluate(model, scenes, {"visual": "jumble:2"})


@pytest.mark.slow
def test_training_is_reproducible_from_the_seed(tmp_path):
    from safetensors.torch import load_file

    from robustlab.training.tiny_vilt import train_tiny_vilt

    kw = dict(seed=3, n_train=32, n_videos=16, epochs=1, eval_n=0, verbose=False, threads=1, pretrain_steps=4,
              answer_steps=3, uniqueness_steps=2)
    a = train_tiny_vilt(out=tmp_path / "a.safetensors", **kw)
    b = train_tiny_vilt(out=tmp_path / "b.safetensors", **kw)
    assert torch.get_num_threads() == 2  # the recipe restores the caller's thread count
    sa, sb = load_file(a["checkpoint"]), load_file(b["checkpoint"])
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    t = a["train"]
    assert t["steps"] == 1 + 1 and t["n_train_videos"] == 16 and t["threads"] == 1  # one image + one video batch
    assert t["seed"] == 3 and t["reversed_videos"] == 0.5
    assert {"img_vqa", "img_aux", "vid_aux"} <= set(t["final_losses"]) or {"img_aux", "vid_aux"} <= set(
        t["final_losses"])
    m = load_model("builtin:tiny-vilt", checkpoint=a["checkpoint"], device="cpu")
    assert m.net.pixel_patches and m.net.pooled_vqa and m.net.frame_diff and m.model_id.endswith("a.safetensors")
    # stage 2 gave it a fresh answer head with question pools, and the checkpoint loads with them
    assert t["answer_refine_steps"] == 3 and t["question_pools"] == 2 and m.net.question_pool == 2
    assert m.net.vqa_head[0].in_features == 2 * 128 + 40 + 8 + 2 * 128  # [CLS], pool, attributes, frame, words
    assert m.vqa(np.zeros((64, 64, 3), np.uint8), "how many?")[0] in m.answers
    # stage 3 (PEELING's uniqueness questions) added "0" to the answers; it depends only on the stage-2 weights and
    # the seed, so running it on a saved stage-2 checkpoint (--stage3-from) gives the whole recipe's checkpoint
    assert t["uniqueness"]["steps"] == 2 and m.answers[-1] == "0" and len(m.answers) == 32
    two = train_tiny_vilt(out=tmp_path / "two.safetensors", **{**kw, "uniqueness_steps": 0})
    assert "0" not in load_model("builtin:tiny-vilt", checkpoint=two["checkpoint"], device="cpu").answers
    c = train_tiny_vilt(out=tmp_path / "c.safetensors", stage3_from=two["checkpoint"], **kw)
    sc = load_file(c["checkpoint"])
    assert sc.keys() == sa.keys() and all(torch.equal(sa[k], sc[k]) for k in sa)
    with pytest.raises(ValueError, match="already has stage 3"):
        train_tiny_vilt(out=tmp_path / "d.safetensors", stage3_from=c["checkpoint"], **kw)


def test_question_pools_read_only_real_words_and_old_configs_load_without_them(tmp_path):
    from robustlab.models.tiny_vilt import TINY_VILT_CONFIG, TinyViltNet, load_tiny_vilt, save_tiny_vilt

    torch.manual_seed(0)
    cfg = dict(TINY_VILT_CONFIG, answers=["yes", "no"], question_pool=2)
    net = TinyViltNet(cfg).eval()
    te = torch.randn(3, 7, 128)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 4:] = False  # a shorter question: padding
    h = torch.randn(3, 7 + 64, 128)
    with pytest.raises(ValueError, match="text_emb and text_mask"):
        net.heads_out(h, 7)
    with torch.no_grad():
        out = net.heads_out(h, 7, te, mask)
    qw = out["question_weights"]  # B × words × pools
    assert qw.shape == (3, 7, 2) and out["vqa"].shape == (3, 2)
    torch.testing.assert_close(qw.sum(1), torch.ones(3, 2))
    assert float(qw[1, 4:].abs().sum()) == 0.0  # padding is never read
    # the VQA answer changes with a word of the question when nothing else does
    te2 = te.clone()
    te2[0, 2] += 1.0
    with torch.no_grad():
        assert not torch.allclose(net.heads_out(h, 7, te2, mask)["vqa"][0], out["vqa"][0])
    # a checkpoint whose config predates the option loads with it off
    old = dict(TINY_VILT_CONFIG, answers=["yes", "no"])
    old.pop("question_pool")
    path = tmp_path / "old.safetensors"
    save_tiny_vilt(TinyViltNet(old), path, {})
    net2, _ = load_tiny_vilt(path)
    assert net2.question_pool == 0 and "question_weights" not in net2.heads_out(h, 7, te, mask)
