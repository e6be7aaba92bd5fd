"""``robustlab failures`` (issue 47, items 1 and 7): ``--json`` prints one object that follows the documented schema,
``--out`` writes it with the sweep's cells, a rerun reuses every cell, and every bad input is one line, exit code 2,
nothing written."""
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from cli_helpers import one_line

from robustlab.cli import main
from robustlab.failures import schema

BASE = ["failures", "--model", "builtin:tiny-clip", "--dataset", "builtin", "--n", "8", "--quiet"]


_one_line = one_line  # tests/cli_helpers.py


def test_json_follows_the_schema_and_out_keeps_it_with_the_cells(tmp_path, capsys):
    out = tmp_path / "run"
    args = [*BASE, "--perturbations", "gaussian_noise,keyboard", "--severities", "1,3,5", "--json", "--out", str(out)]
    assert main(args) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)  # one object on stdout, nothing else
    jsonschema.validate(d, schema())
    assert d["model"] == "builtin:tiny-clip" and d["dataset"]["name"] == "builtin" and d["n"] == 8
    assert d["task"] == "retrieval" and d["direction"] == "t2i" and d["k"] == 1 and d["severities"] == [1, 3, 5]
    assert len(d["items"]) == 2 * 8
    for sl in d["slices"]:  # computed by default (tests/failures/test_failure_slices.py checks what they hold)
        assert sl["kind"] in ("discovered", "metadata") and set(sl["members"]) <= set(range(8))
    it = d["items"][0]
    assert {"item", "id", "perturbation", "breaks_at", "ranks", "thief"} <= set(it)
    assert json.loads((out / "failures.json").read_text()) == d
    assert len(list((out / "cells").glob("*.json"))) == 7 and (out / "sweep.json").is_file()
    assert "7 cells run, 0 already there, 7 in the sweep" in cap.err
    # the same command again: every cell is reused, the same map
    assert main(args) == 0
    cap = capsys.readouterr()
    assert "0 cells run, 7 already there, 7 in the sweep" in cap.err and json.loads(cap.out) == d


def test_words_without_json(tmp_path, capsys):
    assert main([*BASE, "--perturbations", "gaussian_noise", "--severities", "5", "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "an example fails when its ground truth leaves the top 1 (t2i)" in text
    assert "gaussian_noise (visual, s5):" in text


def test_grounding_and_baseline_from_the_command_line(tmp_path, capsys):
    assert main(["failures", "--model", "builtin:tiny-vilt", "--task", "grounding", "--dataset", "builtin-refs",
                 "--n", "4", "--perturbations", "gaussian_noise", "--severities", "5", "--json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)
    jsonschema.validate(d, schema())
    assert d["metric"] == "iou" and all("scores" in it for it in d["items"])
    assert main([*BASE, "--baseline", "builtin:tiny-vit-clip", "--perturbations", "gaussian_noise", "--severities",
                 "5", "--json", "--out", str(tmp_path / "b")]) == 0
    d = json.loads(capsys.readouterr().out)
    jsonschema.validate(d, schema())
    assert d["baseline"] == "builtin:tiny-vit-clip" and all("breaks_for" in it for it in d["items"])


@pytest.fixture
def no_captions(tmp_path) -> Path:
    from PIL import Image

    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(3):
        Image.fromarray(np.full((16, 16, 3), 40 * i, np.uint8)).save(folder / f"{i}.png")
    return folder


@pytest.mark.parametrize("extra, says", [
    (["--perturbations", "gausian_noise"], ["unknown perturbation 'gausian_noise'", "did you mean 'gaussian_noise'"]),
    (["--perturbations", "category:nope"], ["no image perturbation has category 'nope'"]),
    (["--perturbations", "jumble"], ["'jumble' is a video perturbation, not one of images or texts"]),
    (["--perturbations", "gaussian_noise", "--k", "0"], ["--k must be at least 1"]),
    (["--perturbations", "gaussian_noise", "--k", "9"], ["k 9 is larger than the gallery: t2i ranks 8 items"]),
    (["--perturbations", "gaussian_noise", "--direction", "i2t", "--k", "9"], ["larger than the gallery"]),
    (["--perturbations", "gaussian_noise", "--direction", "t2v"], ["direction 't2v' is not one of builtin's"]),
    (["--perturbations", "gaussian_noise", "--severities", "0-7"], ["severities must be in 1..5"]),
    (["--perturbations", "gaussian_noise", "--model", "builtin:tiny-vilt"],
     ["cannot encode images and texts into one space"]),
    (["--perturbations", "gaussian_noise", "--task", "grounding", "--model", "builtin:tiny-clip"],
     ["cannot do grounding"]),
    (["--perturbations", "gaussian_noise", "--task", "vqa"], ["cannot do vqa"]),
    (["--perturbations", "gaussian_noise", "--task", "nope"], ["nope"]),
    (["--perturbations", "gaussian_noise", "--dataset", "builtin-refs"], ["dataset builtin-refs has nothing for "
                                                                          "retrieval"]),
    (["--perturbations", "gaussian_noise", "--refine", "--refine-steps", "0"], ["--refine-steps must be in 1..20"]),
    ([], ["pass --perturbations LIST"]),
    (["--perturbations", "gaussian_noise", "--model", "builtin:nope"], ["no built-in model 'nope'"]),
    (["--perturbations", "gaussian_noise", "--dataset", "nope"], ["unknown dataset 'nope'"]),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, extra, says):
    out = tmp_path / "run"
    assert main([*BASE, "--out", str(out), *extra]) == 2
    _one_line(capsys, says=says)
    assert not out.exists()


def test_a_dataset_without_ground_truth_is_one_line(tmp_path, capsys, no_captions):
    out = tmp_path / "run"
    assert main(["failures", "--model", "builtin:tiny-clip", "--dataset", "upload", "--root", str(no_captions),
                 "--perturbations", "gaussian_noise", "--out", str(out), "--quiet"]) == 2
    _one_line(capsys, says=["upload has no ground truth for retrieval", "has a caption"])
    assert not out.exists()


def test_out_at_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main([*BASE, "--perturbations", "gaussian_noise", "--out", str(f)]) == 2
    _one_line(capsys, says=["is a file, not a folder"])
    assert f.read_text() == "x"


@pytest.fixture
def videos_without_captions(tmp_path) -> Path:
    from robustlab.io.media import write_video

    folder = tmp_path / "vids"
    folder.mkdir()
    for i in range(3):
        write_video(np.random.default_rng(i).integers(0, 255, (8, 24, 32, 3), dtype=np.uint8), folder / f"v{i}.mp4",
                    fps=8.0)
    return folder


@pytest.mark.parametrize("extra, says", [
    (["--model", "builtin:tiny-clip-video-meanp"], ["upload has no ground truth for retrieval", "has a caption"]),
    (["--model", "builtin:tiny-vilt", "--task", "vqa"], ["upload has nothing for vqa"]),
    (["--model", "builtin:tiny-vilt", "--task", "grounding"], ["grounding runs on images; dataset upload has videos"]),
])
def test_a_video_folder_without_ground_truth_is_one_line(tmp_path, capsys, videos_without_captions, extra, says):
    out = tmp_path / "run"
    assert main(["failures", "--dataset", "upload", "--root", str(videos_without_captions), "--perturbations",
                 "gaussian_noise", "--out", str(out), "--quiet", *extra]) == 2
    _one_line(capsys, says=says)
    assert not out.exists()


def test_vqa_refine_and_no_slices_from_the_command_line(tmp_path, capsys):
    assert main(["failures", "--model", "builtin:tiny-vilt", "--task", "vqa", "--dataset", "builtin", "--n", "6",
                 "--perturbations", "word_deletion", "--severities", "2,4", "--refine", "--no-slices", "--json",
                 "--quiet", "--out", str(tmp_path / "q")]) == 0
    d = json.loads(capsys.readouterr().out)
    jsonschema.validate(d, schema())
    assert d["task"] == "vqa" and d["metric"] == "answer" and d["slices"] == [] and d["refine_steps"] == 6
    for it in d["items"]:
        assert ("refined" in it) == bool(it["breaks_at"]) and set(it["answers"]) == {"0", "2", "4"}
