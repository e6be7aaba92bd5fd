import json
import subprocess
import sys


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
    for d in ("t2i", "i2t"):
        for key in ("R@1", "R@5", "R@10", "MdR", "MnR"):
            assert 0 <= res["metrics"][d][key] <= 50
    assert res["n"] == 50 and res["dataset"] == "builtin" and res["split"] == "test" and res["task"] == "retrieval"
    assert res["conditions"]["visual"] == {"name": None}
    assert res["dataset_params"] == {"n": 50, "seed": 5, "size": 128}  # the world seed the items came from
    assert main(["eval", "retrieval", "--n", "50", "--seed", "5", "--perturb", "gaussian_noise", "--severity", "5",
                 "--json"]) == 0
    pert = json.loads(capsys.readouterr().out)
    assert pert["conditions"]["visual"] == {"name": "gaussian_noise", "severity": 5, "seed": 0}
    assert pert["metrics"]["t2i"]["R@1"] < res["metrics"]["t2i"]["R@1"]


def test_eval_any_task_and_dataset_writes_results(capsys, tmp_path):
    from robustlab.tasks import Result

    assert main(["eval", "retrieval", "--dataset", "builtin-videos", "--model", "builtin:tiny-clip-video-meanp",
                 "--n", "20", "--text-perturb", "keyboard", "--text-severity", "2", "--out", str(tmp_path),
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res["metrics"]) >= {"t2v", "v2t", "order_acc"} and res["conditions"]["text"]["name"] == "keyboard"
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and Result.load(files[0]).to_json() == res
    assert main(["eval", "vqa", "--dataset", "builtin-videos", "--model", "builtin:tiny-vilt", "--n", "10"]) == 0
    out = capsys.readouterr().out
    assert "vqa · builtin:tiny-vilt · builtin-videos (test, n=10) · clean" in out and "acc" in out
    # clavi runs on videos by default
    assert main(["eval", "clavi", "--model", "builtin:tiny-vilt", "--n", "12", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["dataset"] == "builtin-videos"


def test_eval_on_a_folder_of_uploads(capsys, tmp_path):
    from PIL import Image

    rng = __import__("numpy").random.default_rng(0)
    for i in range(4):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype="uint8")).save(tmp_path / f"im{i}.png")
    (tmp_path / "captions.csv").write_text("file,caption\n" + "".join(f"im{i}.png,picture number {i}\n"
                                                                       for i in range(4)))
    assert main(["eval", "retrieval", "--dataset", "upload", "--root", str(tmp_path), "--n", "3", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n"] == 3 and res["dataset"] == "upload" and res["dataset_params"]["root"] == str(tmp_path)


def test_datasets_and_tasks_listing(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    for name in ("builtin ", "builtin-videos", "upload"):
        assert name in out
    assert "needs:" in out and "splits: test, demo, train" in out
    assert main(["datasets", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["builtin-videos"]["kind"] == "video" and not rows["builtin"]["needs_root"]
    assert main(["datasets", "builtin*", "--task", "clavi", "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == ["builtin-videos"]
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for t in ("retrieval", "grounding", "vqa", "itm", "clavi", "entailment", "reasoning"):
        assert t in out


def test_eval_errors_are_one_line(capsys):
    assert main(["eval", "retrieval", "--model", "hf:nobody/nothing-here", "--n", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robustlab:") and "\n" not in err and "builtin:tiny-clip" in err
    assert main(["eval", "retrieval", "--perturb", "no_such_thing", "--n", "10"]) == 2
    assert "no_such_thing" in capsys.readouterr().err
    for argv, says in ((["--dataset", "nosuch"], "unknown dataset 'nosuch'"),
                       (["--dataset", "upload"], "--root"),
                       (["--dataset", "upload", "--root", "/no/such/folder"], "/no/such/folder"),
                       (["--split", "validation"], "no split 'validation'"),
                       (["--trust-pickle"], "builtin takes no option trust_pickle (its options: cache"),
                       (["--text-perturb", "gaussian_noise"], "not to texts"),
                       (["--dataset", "builtin-videos", "--perturb", "gaussian_noise", "--model", "builtin:tiny-clip",
                         "--n", "4"], None)):
        rc = main(["eval", "retrieval", "--n", "10", *argv])
        err = capsys.readouterr().err.strip()
        if says is None:  # an image model pools frames, a per-frame perturbation applies to videos: it runs
            assert rc == 0, err
            continue
        assert rc == 2 and says in err and "\n" not in err and "Traceback" not in err, (argv, err)
    assert main(["eval", "grounding", "--dataset", "builtin-videos", "--model", "builtin:tiny-vilt", "--n", "2"]) == 2
    assert "grounding runs on images" in capsys.readouterr().err


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


def test_train_stage_options_reach_only_the_recipe_that_has_them(monkeypatch, capsys):
    import robustlab.cli as cli

    seen = {}

    def vit(out=None, seed=0, eval_n=0, stage2_from=None):  # a stand-in for tiny-vit-clip's recipe
        seen.update(stage2_from=stage2_from)
        return {"ok": True}

    def other(out=None, seed=0, eval_n=0):
        return {"ok": True}

    monkeypatch.setattr(cli, "_resolve", lambda target: {"fake:vit": vit, "fake:other": other}[target])
    monkeypatch.setitem(cli.TRAIN_RECIPES, "vit-model", "fake:vit")
    monkeypatch.setitem(cli.TRAIN_RECIPES, "other-model", "fake:other")
    assert main(["train", "vit-model", "--eval-n", "0", "--stage2-from", "stage1.safetensors"]) == 0
    assert seen == {"stage2_from": "stage1.safetensors"}
    assert main(["train", "other-model", "--stage2-from", "stage1.safetensors"]) == 2  # a usage error
    assert main(["train", "other-model", "--stage3-from", "stage2.safetensors"]) == 2
    err = capsys.readouterr().err
    assert "--stage2-from is for tiny-vit-clip and tiny-vit-clip-video, not other-model" in err
    assert "--stage3-from is for tiny-vilt and tiny-vit-clip-video, not other-model" in err
    assert "Traceback" not in err


def test_train_from_a_missing_stage_checkpoint_is_a_message(tmp_path, capsys):
    # the real recipes: the stage-1 checkpoint is read before any training starts
    for model in ("tiny-vit-clip", "tiny-vit-clip-video"):
        missing = tmp_path / f"{model}-stage1.safetensors"
        assert main(["train", model, "--eval-n", "0", "--stage2-from", str(missing)]) == 2
        err = capsys.readouterr().err
        assert f"checkpoint {missing} is missing" in err and "Traceback" not in err
