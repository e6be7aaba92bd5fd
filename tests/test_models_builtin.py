import numpy as np
import pytest

from robustlab.datasets.synthetic import world
from robustlab.models import ModelUnavailable, list_models, load_model, parse_spec


def test_specs_parse():
    assert parse_spec("builtin:tiny-clip") == ("builtin", "tiny-clip")
    assert parse_spec("open_clip:ViT-B-32/openai") == ("open_clip", "ViT-B-32/openai")
    assert parse_spec("hf:openai/clip-vit-base-patch32") == ("hf", "openai/clip-vit-base-patch32")
    for bad in ("", "nonsense", "builtin:"):
        with pytest.raises(ValueError):
            parse_spec(bad)


def test_unknown_builtin_names_the_alternatives():
    with pytest.raises(ModelUnavailable, match="tiny-clip"):
        load_model("builtin:nope")


def test_registry_lists_tiny_clip_available():
    rows = {r["spec"]: r for r in list_models()}
    assert rows["builtin:tiny-clip"]["available"] is True


def test_encodes_to_normalised_embeddings(tiny_clip):
    m = tiny_clip
    info = m.info()
    assert info.random_init is False and info.embed_dim == 256 and info.device == "cpu"
    assert info.n_params < 5_000_000  # trained parts only; MiniLM is frozen and not counted
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (h, w, 3), dtype=np.uint8) for h, w in ((1, 1), (64, 64), (300, 17))]
    images.append(rng.integers(0, 255, (20, 20), dtype=np.uint8))  # grayscale
    e = m.encode_images(images)
    assert e.shape == (4, 256) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    t = m.encode_texts(["a red circle", "", "   ", "ünïcödé ✓ emoji 🙂", "x" * 3000])
    assert t.shape == (5, 256) and np.isfinite(t).all()
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1, atol=1e-5)
    assert np.array_equal(m.encode_texts(["a red circle"]), m.encode_texts(["a red circle"]))


def test_checkpoint_is_safetensors_and_small():
    from robustlab.models.builtin import checkpoint_path

    p = checkpoint_path("tiny-clip.safetensors")
    assert p.suffix == ".safetensors" and p.stat().st_size <= 20 * 2**20


def test_missing_checkpoint_is_a_clear_message(tmp_path):
    from robustlab.models.builtin import TinyClip

    with pytest.raises(ModelUnavailable, match="robustlab train tiny-clip"):
        TinyClip(device="cpu", checkpoint=tmp_path / "none.safetensors")


def test_quality_on_a_small_heldout_split_and_it_breaks_under_noise_and_blur(tiny_clip):
    """The full bars (1,000 held-out scenes) are measured in benchmarks/; this is the fast guard (300 scenes)."""
    from robustlab.tasks.retrieval import eval_retrieval

    kw = dict(n=300, seed=world.HELDOUT_SEED + 1)
    clean = eval_retrieval(tiny_clip, **kw)
    assert clean["t2i_R@1"] >= 0.80 and clean["t2i_R@5"] >= 0.95
    assert clean["i2t_R@1"] >= 0.80
    noisy = eval_retrieval(tiny_clip, image_perturb="gaussian_noise", image_severity=5, **kw)
    blurry = eval_retrieval(tiny_clip, image_perturb="defocus_blur", image_severity=5, **kw)
    assert noisy["t2i_R@1"] < clean["t2i_R@1"] - 0.5
    # blur hurts less than noise (colour and position survive it; shapes and small objects don't)
    assert blurry["t2i_R@1"] < clean["t2i_R@1"] - 0.04
    assert blurry["i2t_R@1"] < clean["i2t_R@1"] - 0.06
