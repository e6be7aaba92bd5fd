"""The public interface documented in the README keeps these names and shapes."""
import json

import numpy as np


def test_public_names():
    import robustlab as rl

    for name in ("list_perturbations", "perturb", "regenerate", "load_model", "list_models", "metrics",
                 "eval_retrieval", "__version__"):
        assert hasattr(rl, name), name
    # the README's documented entry points of the diagnostics and adaptation packages
    assert callable(rl.adapt.run) and callable(rl.adapt.list_methods) and callable(rl.adapt.check)
    assert callable(rl.diagnostics.quag.apply) and callable(rl.diagnostics.quag.rank_diagnostic)
    assert callable(rl.metrics.mmi)


def test_model_registry_interface():
    import robustlab as rl
    import robustlab.models as M
    from robustlab.models.tasks import (KNOWN_MODELS, Box, FusionModel, GroundingModel,  # noqa: F401 - older home
                                        VideoRetrievalModel, as_frames, availability, hf_source, sample_frames)

    assert rl.load_model is M.load_model and rl.list_models is M.list_models
    for name in ("load_model", "list_models", "parse_spec", "register_backend", "register_builtin", "model_tasks",
                 "can", "ModelUnavailable", "OFFLINE_ALTERNATIVES", "EmbeddingModel"):
        assert hasattr(M, name), name
    assert [r["spec"] for r in rl.list_models("tiny-clip", task="retrieval")] == ["builtin:tiny-clip"]
    assert rl.ModelUnavailable is M.ModelUnavailable


def test_perturb_and_regenerate_round_trip_through_json():
    import robustlab as rl

    img = np.random.default_rng(0).integers(0, 255, (24, 31, 3), dtype=np.uint8)
    res = rl.perturb(img, "gaussian_noise", 4, seed=11)
    rec = json.loads(json.dumps(res.record))
    assert rec["name"] == "gaussian_noise" and rec["severity"] == 4 and rec["seed"] == 11
    assert {"modality", "variant", "params", "versions"} <= set(rec)
    assert np.array_equal(rl.regenerate(rec, img), res.output)
    txt = rl.perturb("a small red circle at the top left", "keyboard", 3, seed=2)
    assert rl.regenerate(json.loads(json.dumps(txt.record)), "a small red circle at the top left") == txt.output


def test_listing_shows_category_modality_source_and_table():
    import robustlab as rl

    specs = {s.name: s for s in rl.list_perturbations()}
    s = specs["defocus_blur"]
    assert s.modality == "image" and s.category == "blur" and s.source and s.available
    assert set(s.severity_table) >= {1, 2, 3, 4, 5}
    assert all(x.modality == "text" for x in rl.list_perturbations(modality="text"))


def test_metrics_retrieval_interface():
    import robustlab as rl

    out = rl.metrics.retrieval(np.eye(4), [0, 1, 2, 3])
    assert out["R@1"] == 1.0 and out["MdR"] == 1.0 and set(out) >= {"R@1", "R@5", "R@10", "MdR", "MnR"}


def test_records_with_blake2b_hashes_still_verify():
    import robustlab as rl
    from robustlab.perturb.record import hash_value, matches

    img = np.random.default_rng(1).integers(0, 255, (9, 9, 3), dtype=np.uint8)
    res = rl.perturb(img, "impulse_noise", 2, seed=4)
    assert res.record["input_hash"].startswith("xxh3_128:")
    old = dict(res.record, input_hash=hash_value(img, "blake2b128"), output_hash=hash_value(res.output, "blake2b128"))
    assert np.array_equal(rl.regenerate(old, img), res.output)
    assert matches(res.output, old["output_hash"]) and not matches(img, old["output_hash"])
    assert not matches(img, "md5:abc") and not matches(img, None)
