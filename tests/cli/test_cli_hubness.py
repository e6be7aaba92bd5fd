"""`robustlab hubness`: JSON output, clean vs perturbed, reduction, one-line errors."""
import json

import numpy as np

from robustlab.cli import main

MEASURES = {"k_skewness", "k_skewness_truncnorm", "atkinson", "robinhood", "antihub_occurrence", "hub_occurrence",
            "gini"}


def test_hubness_json_clean_perturbed_and_reduced(capsys):
    assert main(["hubness", "--model", "builtin:tiny-clip", "--dataset", "builtin", "--n", "60", "--k", "5",
                 "--seed", "3", "--direction", "i2t", "--perturb", "gaussian_noise", "--severity", "5",
                 "--reduce", "qbnorm", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n"] == 60 and res["k"] == 5 and res["direction"] == "i2t" and res["perturbed_modality"] == "image"
    assert res["reduce"] == "qbnorm" and res["reduce_params"]["beta"] == 20.0
    for cond in ("clean", "perturbed", "clean_reduced", "perturbed_reduced"):
        r = res[cond]
        assert MEASURES | {"R@1", "R@5", "R@10", "MdR", "MnR", "top_hubs", "max_n_k"} <= set(r)
        assert 0 <= r["R@1"] <= r["R@5"] <= r["R@10"] <= 1
        nk_top = [c for _, c in r["top_hubs"]]
        assert nk_top == sorted(nk_top, reverse=True) and nk_top[0] == r["max_n_k"]
    clean, pert = res["clean"], res["perturbed"]
    # the built-in model is broken by strong noise: recall collapses and the noisy image queries pile onto hubs
    assert pert["R@1"] < clean["R@1"] - 0.5
    assert pert["hub_occurrence"] > clean["hub_occurrence"] and pert["k_skewness"] > clean["k_skewness"]
    assert res["perturbed_reduced"]["hub_occurrence"] < pert["hub_occurrence"]


def test_hubness_text_output_and_same_numbers_as_the_library(capsys, tiny_clip):
    from robustlab.diagnostics.hubness import k_occurrence, measures_from_nk
    from robustlab.engine.cache import cached_encode_images, cached_encode_texts
    from robustlab.datasets import build

    assert main(["hubness", "--n", "30", "--k", "3", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "k_skewness" in out and "top hubs, clean" in out and "t2i" in out
    assert main(["hubness", "--n", "30", "--k", "3", "--seed", "4", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    ds = build("builtin", n=30, seed=4)
    s = cached_encode_texts(tiny_clip, ds.captions) @ cached_encode_images(tiny_clip, ds.images).T
    nk = k_occurrence(s, 3)
    ref = measures_from_nk(nk, 3)
    for key in MEASURES:
        assert np.isclose(res["clean"][key], ref[key]), key
    assert "perturbed" not in res


def test_hubness_errors_are_one_line(capsys):
    assert main(["hubness", "--model", "hf:nobody/nothing-here", "--n", "10", "--k", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robustlab:") and "\n" not in err and "builtin:tiny-clip" in err
    assert main(["hubness", "--perturb", "no_such_thing", "--n", "10", "--k", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown perturbation" in err and "\n" not in err
    assert main(["hubness", "--n", "10", "--k", "20"]) == 2
    assert "--k must be between" in capsys.readouterr().err
    assert main(["hubness", "--n", "10", "--k", "3", "--split", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert "builtin has no split 'nosuch'" in err and "test, demo, train" in err and "\n" not in err
    assert main(["hubness", "--n", "10", "--k", "3", "--dataset", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown dataset 'nosuch'" in err and "builtin-videos" in err and "\n" not in err


def test_hubness_on_held_out_videos_same_numbers_as_the_library(capsys):
    from robustlab.diagnostics.hubness import k_occurrence, measures_from_nk
    from robustlab.engine.cache import cached_encode_texts, cached_encode_videos
    from robustlab.datasets import build
    from robustlab.metrics import caption_groups, retrieval
    from robustlab.models import load_model
    from robustlab.perturb.condition import Condition, perturb_many

    spec = "builtin:tiny-clip-video-seqtransf"
    assert main(["hubness", "--dataset", "builtin-videos", "--model", spec, "--n", "24", "--k", "4", "--seed", "5",
                 "--perturb", "jumble", "--severity", "4", "--reduce", "dsl", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["dataset"], res["direction"], res["queries"], res["gallery"]) == ("builtin-videos", "t2v",
                                                                                   "captions", "videos")
    assert res["perturbed_modality"] == "video" and {"perturbed_reduced", "clean_reduced"} <= set(res)
    model = load_model(spec, device="cpu")
    ds = build("builtin-videos", n=24, seed=5)
    vids, caps = ds.visuals(), ds.captions
    te = cached_encode_texts(model, caps)
    pv, _ = perturb_many(vids, Condition("jumble", 4), "video")
    groups = caption_groups(caps)  # identical captions are all positives
    for cond, ve in (("clean", cached_encode_videos(model, vids)), ("perturbed", cached_encode_videos(model, pv))):
        s = te @ ve.T
        ref = measures_from_nk(k_occurrence(s, 4), 4)
        for key in MEASURES:
            assert np.isclose(res[cond][key], ref[key]), (cond, key)
        assert np.isclose(res[cond]["R@1"], retrieval(s, groups)["R@1"])
    # video→text with a text perturbation, as a table
    assert main(["hubness", "--dataset", "builtin-videos", "--model", spec, "--n", "24", "--k", "4", "--seed", "5",
                 "--direction", "v2t", "--perturb", "keyboard", "--severity", "2"]) == 0
    out = capsys.readouterr().out
    assert "v2t (videos query captions)" in out and "keyboard s2 (text)" in out and "top hubs, perturbed" in out


def test_hubness_video_errors_are_one_line(capsys):
    assert main(["hubness", "--dataset", "builtin-videos", "--direction", "t2i", "--n", "10", "--k", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--direction t2i does not go with the video dataset builtin-videos" in err and "\n" not in err
    assert main(["hubness", "--direction", "v2t", "--n", "10", "--k", "3"]) == 2
    assert "use t2i or i2t" in capsys.readouterr().err
    # an image model embeds a video as the mean of its frames: allowed, and a temporal op is a video perturbation
    assert main(["hubness", "--dataset", "builtin-videos", "--perturb", "reverse_sampling", "--n", "10", "--k", "3",
                 "--model", "builtin:tiny-clip", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["perturbed_modality"] == "video" and res["model"] == "builtin:tiny-clip"
    assert main(["hubness", "--perturb", "jumble", "--n", "10", "--k", "3"]) == 2  # a video-only op on images
    err = capsys.readouterr().err.strip()
    assert "'jumble' is a video perturbation" in err and "not to images" in err and "\n" not in err
