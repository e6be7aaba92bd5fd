import json
import subprocess
import sys

import pytest

from robustlab.cli import main


def test_models_and_perturbations_listing(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "builtin:tiny-clip" in out and "available" in out
    assert main(["perturbations", "--modality", "image", "--json"]) == 0
    specs = json.loads(capsys.readouterr().out)
    names = {s["name"] for s in specs}
    assert {"gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "jpeg_compression", "pixelate"} <= names
    # image perturbations, plus camera ops that apply to a single frame too
    assert all((s["modality"] == "image" or "image" in s.get("applies_to", [])) and s["severity_table"]
               for s in specs)


def test_models_pattern_task_and_backends(capsys):
    assert main(["models", "*clip*", "--task", "video-retrieval"]) == 0
    out = capsys.readouterr().out
    assert "builtin:tiny-clip-video-meanp" in out and "builtin:tiny-vilt" not in out
    assert "hf-xclip:" in out and "hf-grounding:" not in out  # backends are listed from the registry too
    assert main(["models", "--task", "grounding", "--json"]) == 0
    assert [r["spec"] for r in json.loads(capsys.readouterr().out)] == ["builtin:tiny-vilt"]
    assert main(["models", "--task", "grounding", "--json", "--backends"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["kind"], r["spec"]) for r in rows] == [("builtin", "builtin:tiny-vilt"),
                                                      ("backend", "hf-grounding:google/owlv2-base-patch16-ensemble")]
    assert main(["models", "--task", "ground"]) == 2
    err = capsys.readouterr().err
    assert "unknown task 'ground'" in err and len(err.strip().splitlines()) == 1
    assert main(["models", "nothing-like-this*"]) == 0
    assert "no model matches" in capsys.readouterr().out


def test_eval_retrieval_json(capsys):
    assert main(["eval", "retrieval", "--model", "builtin:tiny-clip", "--dataset", "builtin", "--n", "50",
                 "--seed", "5", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    for key in ("t2i_R@1", "t2i_R@5", "t2i_R@10", "i2t_R@1", "t2i_MdR"):
        assert 0 <= res[key] <= 50
    assert res["n"] == 50 and res["seed"] == 5
    assert main(["eval", "retrieval", "--n", "50", "--seed", "5", "--perturb", "gaussian_noise", "--severity", "5",
                 "--json"]) == 0
    pert = json.loads(capsys.readouterr().out)
    assert pert["image_perturb"] == "gaussian_noise" and pert["t2i_R@1"] < res["t2i_R@1"]


def test_eval_errors_are_one_line(capsys):
    assert main(["eval", "retrieval", "--model", "hf:nobody/nothing-here", "--n", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robustlab:") and "\n" not in err and "builtin:tiny-clip" in err
    assert main(["eval", "retrieval", "--perturb", "no_such_thing", "--n", "10"]) == 2
    assert "no_such_thing" in capsys.readouterr().err
    assert main(["eval", "retrieval", "--dataset", "coco", "--n", "10"]) == 2


def test_console_script_is_installed():
    r = subprocess.run([sys.executable, "-m", "robustlab.cli", "models"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "tiny-clip" in r.stdout


def test_train_passes_threads_to_recipes_that_take_them(monkeypatch, capsys, tmp_path):
    import robustlab.cli as cli

    seen = {}

    def recipe(out=None, seed=0, eval_n=0, threads=None):  # a stand-in recipe: records what the CLI passes
        seen.update(out=out, seed=seed, eval_n=eval_n, threads=threads)
        return {"ok": True}

    def old_recipe(out=None, seed=0, eval_n=0):  # a recipe without a threads argument still runs
        seen.update(old=True)
        return {"ok": True}

    monkeypatch.setattr(cli, "_resolve", lambda target: {"fake:new": recipe, "fake:old": old_recipe}[target])
    monkeypatch.setitem(cli.TRAIN_RECIPES, "new-model", "fake:new")
    monkeypatch.setitem(cli.TRAIN_RECIPES, "old-model", "fake:old")
    out = str(tmp_path / "x.safetensors")
    assert main(["train", "new-model", "--threads", "1", "--seed", "4", "--eval-n", "0", "--out", out]) == 0
    assert seen == {"out": out, "seed": 4, "eval_n": 0, "threads": 1}
    assert main(["train", "old-model", "--threads", "1", "--eval-n", "0"]) == 0 and seen["old"]
    assert capsys.readouterr().out.count('"ok": true') == 2  # each run prints its recipe's result as JSON
