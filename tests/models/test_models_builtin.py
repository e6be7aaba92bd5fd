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
    from robustlab.models.checkpoints import checkpoint_path

    p = checkpoint_path("tiny-clip.safetensors")
    assert p.suffix == ".safetensors" and p.stat().st_size <= 20 * 2**20


def test_missing_checkpoint_is_a_clear_message(tmp_path):
    from robustlab.models.builtin import TinyClip

    with pytest.raises(ModelUnavailable, match="robustlab train tiny-clip"):
        TinyClip(device="cpu", checkpoint=tmp_path / "none.safetensors")


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
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


# ---- the registry: wildcards, tasks, prefixes ------------------------------------------------------------------

def test_list_models_with_a_wildcard():
    specs = [r["spec"] for r in list_models("tiny-clip*")]
    assert specs == ["builtin:tiny-clip", "builtin:tiny-clip-video-meanp", "builtin:tiny-clip-video-seqtransf"]
    assert [r["spec"] for r in list_models("tiny-vit-clip*")] == [
        "builtin:tiny-vit-clip", "builtin:tiny-vit-clip-video-meanp", "builtin:tiny-vit-clip-video-seqtransf"]
    assert [r["spec"] for r in list_models("builtin:*VILT")] == ["builtin:tiny-vilt"]  # spec or name, any case
    assert list_models("no-such-*") == []
    rows = list_models("*clip*", backends=True)
    assert {"builtin:tiny-clip", "open_clip:ViT-B-32/openai"} <= {r["spec"] for r in rows}
    assert all(r["kind"] in ("builtin", "backend") and "available" in r and "reason" in r for r in rows)


def test_list_models_by_task():
    assert [r["spec"] for r in list_models(task="grounding")] == ["builtin:tiny-vilt"]
    both = {r["spec"]: r for r in list_models(task="grounding", backends=True)}
    assert set(both) == {"builtin:tiny-vilt", "hf-grounding:google/owlv2-base-patch16-ensemble"}
    assert both["hf-grounding:google/owlv2-base-patch16-ensemble"]["prefix"] == "hf-grounding:"
    video = {r["spec"] for r in list_models(task="video-retrieval", backends=True)}
    assert {"builtin:tiny-clip-video-meanp", "builtin:tiny-clip", "hf-xclip:microsoft/xclip-base-patch32"} <= video
    assert "builtin:tiny-vilt" not in video
    assert [r["spec"] for r in list_models("*seq*", task="video-retrieval")] == [
        "builtin:tiny-clip-video-seqtransf", "builtin:tiny-vit-clip-video-seqtransf"]
    with pytest.raises(ValueError, match="unknown task 'ground'.*grounding"):
        list_models(task="ground")


def test_declared_tasks_match_what_the_loaded_model_can_do(tiny_clip):
    from robustlab.models import can, model_tasks

    rows = {r["spec"]: r for r in list_models()}
    assert model_tasks(tiny_clip) == ("retrieval", "video-retrieval")
    assert set(rows["builtin:tiny-clip"]["tasks"]) == set(model_tasks(tiny_clip))
    assert can(tiny_clip, "retrieval") and not can(tiny_clip, "grounding")
    with pytest.raises(ValueError, match="unknown task"):
        can(tiny_clip, "bogus")
    for spec in ("builtin:tiny-vilt", "builtin:tiny-clip-video-meanp"):
        if rows[spec]["available"]:
            m = load_model(spec, device="cpu")
            assert set(rows[spec]["tasks"]) == set(model_tasks(m)), spec
            assert can(m, "grounding") == (spec == "builtin:tiny-vilt")


def test_unknown_prefix_is_one_line_and_names_the_prefixes():
    for fn in (parse_spec, load_model):
        with pytest.raises(ValueError) as ei:
            fn("nope:some/model")
        msg = str(ei.value)
        assert "\n" not in msg and "'nope:'" in msg and "open_clip:" in msg and "hf-grounding:" in msg
        assert "builtin:tiny-clip" in msg  # the offline alternative
    with pytest.raises(ValueError, match="names no model.*open_clip:ViT-B-32"):
        parse_spec("open_clip:")


@pytest.fixture()
def scratch_registry(monkeypatch):
    from robustlab.models import registry

    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    return registry


class _ToyModel:
    def __init__(self, spec, device=None, **kw):
        self.model_id, self.device, self.kw = spec, device, kw

    def ground(self, image, expression):  # a grounding model, by its method
        from robustlab.models.protocols import Box

        return Box(0, 0, 1, 1)


def _toy_loader(rest, device=None, **kwargs):
    return _ToyModel(f"toy:{rest}", device, **kwargs)


def test_a_registered_backend_loads_by_its_prefix(scratch_registry):
    from robustlab.models import can, register_backend

    register_backend("toy", _toy_loader, description="a test backend", tasks=("grounding",), example="toy:one")
    m = load_model("toy:abc", device="cpu", flavour=2)
    assert isinstance(m, _ToyModel) and (m.model_id, m.device, m.kw) == ("toy:abc", "cpu", {"flavour": 2})
    assert parse_spec("toy:abc") == ("toy", "abc") and can(m, "grounding")
    rows = list_models("toy*", backends=True)
    assert len(rows) == 1
    r = rows[0]
    assert (r["prefix"], r["spec"], r["kind"], r["tasks"], r["available"]) == \
        ("toy:", "toy:one", "backend", ["grounding"], True)
    assert [r["spec"] for r in list_models(task="grounding", backends=True) if r["kind"] == "backend"] == \
        ["hf-grounding:google/owlv2-base-patch16-ensemble", "toy:one"]
    # a loader named as "module:attr" is imported only when a spec with its prefix is loaded
    register_backend("toy-lazy:", f"{__name__}:_toy_loader", tasks=("grounding",))
    assert load_model("toy-lazy:x").model_id == "toy:x"
    # a backend whose package is missing says so in one line
    register_backend("toy-pkg", _toy_loader, requires=("no_such_package_xyz",))
    with pytest.raises(ModelUnavailable, match="needs no_such_package_xyz") as ei:
        load_model("toy-pkg:x")
    assert "\n" not in str(ei.value)
    assert next(r for r in list_models("toy-pkg", backends=True))["available"] is False
    for bad in ("", "9x", "a b", "x/y"):
        with pytest.raises(ValueError, match="bad backend prefix"):
            register_backend(bad, _toy_loader)
    with pytest.raises(ValueError, match="unknown task"):
        register_backend("toy2", _toy_loader, tasks=("bogus",))


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_importing_the_registry_stays_light_and_acyclic():
    import subprocess
    import sys

    code = ("import sys, robustlab.models as M; M.list_models(backends=True); M.parse_spec('hf-vilt:a/b'); "
            "print('transformers' in sys.modules, 'open_clip' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
    for mod in ("robustlab.models.registry", "robustlab.models.builtin", "robustlab.models.tiny_vilt",
                "robustlab.models.builtin_video", "robustlab.models.tasks"):
        r = subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (mod, r.stderr[-500:])


def test_minilm_in_plain_torch_matches_transformers_bit_for_bit():
    """robustlab.engine.minilm (what the built-ins run, without transformers' import cost at cold start) gives the
    token ids and hidden states of transformers' AutoTokenizer + BertModel on the same package folder."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from robustlab.engine import minilm
    from robustlab.engine.minilm import load_minilm, minilm_path

    p = minilm_path()
    tok, enc = load_minilm()
    assert isinstance(enc, minilm.MiniLM) and not any(q.requires_grad for q in enc.parameters())
    htok = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
    henc = AutoModel.from_pretrained(str(p), local_files_only=True).eval()
    texts = ["a large red circle at the left on a gray background", "", "   ", "Ünïcödé café — naïve 🎉 emoji",
             "x " * 300, "the red circle moves left, then the blue square appears", "[MASK] hello [SEP] [CLS]",
             "tab\tand\nnewline", "UPPER lower MiXeD 12345 3.14 e-mail@x.org"]
    for max_length in (8, 64, 256):
        a = tok(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        b = htok(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        for k in ("input_ids", "token_type_ids", "attention_mask"):
            assert torch.equal(a[k], b[k]), (max_length, k)
        with torch.inference_mode():
            x, y = enc(**a).last_hidden_state, henc(**b).last_hidden_state
        assert torch.allclose(x, y, atol=1e-5, rtol=0), (max_length, (x - y).abs().max())
    assert tok.get_vocab() == htok.get_vocab()
    ids = list(range(95, 2100, 37))
    assert tok.convert_ids_to_tokens(ids) == htok.convert_ids_to_tokens(ids)
    assert tok.convert_tokens_to_ids(["[CLS]", "circle", "notawordpiece"]) == \
        htok.convert_tokens_to_ids(["[CLS]", "circle", "notawordpiece"])
    assert torch.equal(enc.embeddings.word_embeddings.weight, henc.embeddings.word_embeddings.weight)
