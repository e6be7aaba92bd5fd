"""The CLI's last tracebacks and hangs (issue 44, finding 8): each is one line on stderr, exit code 2, nothing
written, and no work done before it — ``--out`` at a file or under one, a full disk during a sweep (the finished cells
kept, a rerun resumes), a protocol file nested 100,000 deep, ``--device tpu:9``, and ``--n`` past the dataset (the
built-in world's maximum, or what a folder holds)."""
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import one_line

from robustlab.cli import main

ROOT = Path(__file__).resolve().parents[2]


_one_line = one_line  # tests/cli_helpers.py


def _tree(root: Path) -> dict:
    """Every path under root with its bytes (None for folders): "nothing written" is this, unchanged."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _boom(*a, **k):
    raise AssertionError("work started before the bad input was refused")


@pytest.fixture
def no_work(monkeypatch):
    """Any dataset build, model load or command body below fails the test: the bad input must be refused first."""
    for target in ("robustlab.datasets.registry.build", "robustlab.models.load_model",
                   "robustlab.models.registry.load_model",
                   "robustlab.diagnostics.quag_simulation.simulate",
                   "robustlab.datasets.synthetic.world.make_scenes",
                   "robustlab.datasets.synthetic.world.sample_video"):
        monkeypatch.setattr(target, _boom)


# --------------------------------------------------------------------------------------- --out at or under a file
def _folder_commands(tmp_path: Path) -> dict:
    from PIL import Image

    img = tmp_path / "in" / "im.png"
    img.parent.mkdir()
    Image.new("RGB", (8, 8)).save(img)
    run = tmp_path / "run"
    (run / "cells").mkdir(parents=True)
    return {
        "bench": ["bench", "--models", "builtin:tiny-clip", "--n", "4", "--perturbations", "none", "--quiet"],
        "eval": ["eval", "retrieval", "--n", "4"],
        "perturb": ["perturb", str(img), "--name", "gaussian_noise", "--severity", "1", "--quiet"],
        "regenerate": ["regenerate", str(tmp_path / "in" / "manifest.jsonl"), "--quiet"],
        "bench report": ["bench", "report", str(run)],
    }


def _file_commands() -> dict:
    return {
        "adapt": ["adapt", "--model", "builtin:tiny-clip", "--direction", "t2i", "--n", "4"],
        "quag-sim": ["quag-sim", "--alphas", "0.05", "--epochs", "1", "--samples", "20"],
        "clavi-distance": ["clavi-distance", "--pairs", "1"],
        "train": ["train", "tiny-clip"],
    }


def _guard_bodies(monkeypatch):
    monkeypatch.setattr("robustlab.cli.train._resolve", lambda target: _boom)
    monkeypatch.setattr("robustlab.cli.perturb.FilePerturber", _boom)
    monkeypatch.setattr("robustlab.cli.regenerate.regenerate_export", _boom)
    monkeypatch.setattr("robustlab.bench.report.write_report", _boom)


@pytest.mark.parametrize("command", ["bench", "eval", "perturb", "regenerate", "bench report"])
@pytest.mark.parametrize("where", ["a file", "under a file", "two levels under a file"])
def test_out_folder_at_or_under_a_file_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, no_work,
                                                                      command, where):
    argv = _folder_commands(tmp_path)[command]
    _guard_bodies(monkeypatch)
    (tmp_path / "afile").write_text("keep me")
    out = {"a file": "afile", "under a file": "afile/sub", "two levels under a file": "afile/sub/deeper"}[where]
    before = _tree(tmp_path)
    assert main([*argv, "--out", str(tmp_path / out)]) == 2
    line = _one_line(capsys, says=("--out", "is a file, not a folder"))
    assert str(tmp_path / "afile") in line
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("command", ["adapt", "quag-sim", "clavi-distance", "train"])
@pytest.mark.parametrize("where", ["under a file", "a folder"])
def test_out_file_under_a_file_or_at_a_folder_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, no_work,
                                                                           command, where):
    _guard_bodies(monkeypatch)
    (tmp_path / "afile").write_text("keep me")
    (tmp_path / "adir").mkdir()
    out, says = {"under a file": ("afile/x.json", "is a file, not a folder"),
                 "a folder": ("adir", "is a folder, not a file")}[where]
    before = _tree(tmp_path)
    assert main([*_file_commands()[command], "--out", str(tmp_path / out)]) == 2
    _one_line(capsys, says=("--out", says))
    assert _tree(tmp_path) == before


# --------------------------------------------------------------------------------- a full disk during a sweep
BENCH = ["bench", "--models", "builtin:tiny-clip", "--n", "8", "--perturbations", "gaussian_noise,contrast",
         "--severities", "1,2", "--quiet"]  # 5 cells


def test_a_full_disk_during_a_sweep_is_one_line_keeps_the_finished_cells_and_a_rerun_resumes(tmp_path, capsys,
                                                                                             monkeypatch):
    import robustlab.bench.cells as cells
    from robustlab.bench.cellfile import problem

    real = cells.atomic_write
    written = []

    def full_after_two(path, data, **kw):
        if Path(path).parent.name == "cells":
            if len(written) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            written.append(Path(path).stem)
        return real(path, data, **kw)
    monkeypatch.setattr(cells, "atomic_write", full_after_two)
    out = tmp_path / "run"
    assert main([*BENCH, "--out", str(out)]) == 2
    line = _one_line(capsys, says=("the disk is full", "2 cells finished before it are kept", "rerun"))
    assert str(out) in line
    kept = sorted((out / "cells").iterdir())
    assert [p.stem for p in kept] == sorted(written)  # no temporary file, no half cell
    for p in kept:
        assert problem(json.loads(p.read_text()), p.stem) is None
    monkeypatch.setattr(cells, "atomic_write", real)  # space freed: the rerun computes the other 3
    assert main([*BENCH, "--out", str(out)]) == 0
    assert "3 cells run, 2 already there, 5 in the sweep" in capsys.readouterr().err
    assert len(list((out / "cells").glob("*.json"))) == 5


def test_a_full_disk_before_the_first_cell_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import robustlab.bench.runner as runner

    def full(path, data, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    monkeypatch.setattr(runner, "atomic_write", full)  # sweep.json, the sweep's first file
    assert main([*BENCH, "--out", str(tmp_path / "run")]) == 2
    _one_line(capsys, says=("the disk is full",))
    assert not list((tmp_path / "run").rglob("*.json"))


# ------------------------------------------------------------------------------ a protocol nested 100,000 deep
@pytest.mark.parametrize("name, text", [
    ("deep_array.json", "[" * 100_000 + "]" * 100_000),
    ("deep_object.json", '{"a":' * 100_000 + "1" + "}" * 100_000),
    ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000),
    ("inline.toml", "a = " + "{b = " * 100_000 + "1" + "}" * 100_000),
    ("deep_enough.json", '{"schema": 1, "name": "x", "fields": ' + '{"a":' * 300 + "1" + "}" * 300 + "}"),
], ids=["array", "object", "toml-array", "toml-table", "json-300"])
def test_a_protocol_nested_too_deep_is_one_line(tmp_path, capsys, no_work, name, text):
    from robustlab.bench.protocol import ProtocolError, load_protocol

    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(ProtocolError, match="nested"):
        load_protocol(str(f))
    assert main(["bench", "--protocol", str(f), "--dry-run"]) == 2
    _one_line(capsys, says=(name, "nested"))
    assert main(["bench", "--protocol", str(f), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    _one_line(capsys, says=(name,))
    assert main(["protocols", str(f)]) == 2
    _one_line(capsys, says=(name,))
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------- --device tpu:9
@pytest.mark.parametrize("argv", [
    ["eval", "retrieval", "--n", "4"],
    ["hubness", "--n", "4"],
    ["bench", "--models", "builtin:tiny-clip", "--n", "4", "--perturbations", "none", "--quiet", "--out", "RUN"],
    ["adapt", "--model", "builtin:tiny-clip", "--direction", "t2i", "--n", "4"],
    ["quag-sim", "--alphas", "0.05", "--epochs", "1", "--samples", "20"],
    ["clavi-distance", "--pairs", "1"],
])
@pytest.mark.parametrize("device, says", [("tpu:9", "unknown device 'tpu:9'"), ("cuda:x", "unknown device"),
                                          ("meta", "not a device robustlab runs on"),
                                          ("cuda:9", "cuda:9")])
def test_an_unknown_device_is_one_line_before_any_work(tmp_path, capsys, no_work, argv, device, says):
    argv = [str(tmp_path / "run") if a == "RUN" else a for a in argv]
    assert main([*argv, "--device", device]) == 2
    _one_line(capsys, says=(says,))
    assert not (tmp_path / "run").exists()


def test_resolve_device_refuses_unknown_devices_with_one_line(monkeypatch):
    import torch

    from robustlab.engine.device import DeviceError, resolve_device

    for bad in ("tpu:9", "cuda:x", "meta", "cpu:1:2", "cuda:99", "xla"):
        with pytest.raises(DeviceError) as ei:
            resolve_device(bad)
        assert "\n" not in str(ei.value) and isinstance(ei.value, ValueError)
    assert resolve_device("cpu").type == "cpu" and resolve_device("CPU").type == "cpu"
    assert resolve_device(torch.device("cpu")).type == "cpu"
    monkeypatch.setenv("ROBUSTLAB_DEVICE", "tpu:9")
    with pytest.raises(DeviceError, match="ROBUSTLAB_DEVICE"):
        resolve_device(None)


def test_a_bad_robustlab_device_variable_is_one_line(capsys, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_DEVICE", "tpu:9")
    assert main(["eval", "retrieval", "--n", "4"]) == 2
    _one_line(capsys, says=("ROBUSTLAB_DEVICE", "tpu:9"))


# ------------------------------------------------------------------------------------------- --n 10**12
@pytest.mark.parametrize("argv", [
    ["eval", "retrieval"],
    ["eval", "retrieval", "--dataset", "builtin-videos", "--model", "builtin:tiny-clip-video-meanp"],
    ["hubness"],
    ["adapt", "--model", "builtin:tiny-clip", "--direction", "t2i"],
    ["clavi-distance", "--pairs", "1"],
    ["bench", "--models", "builtin:tiny-clip", "--perturbations", "none", "--quiet", "--out", "RUN"],
    ["bench", "--models", "builtin:tiny-clip-video-meanp", "--dataset", "builtin-videos", "--perturbations", "none",
     "--quiet", "--out", "RUN"],
])
def test_n_over_the_builtin_maximum_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv):
    from robustlab.datasets.synthetic.datasets import BUILTIN_MAX_N

    for target in ("robustlab.datasets.synthetic.world.make_scenes", "robustlab.datasets.synthetic.world.sample_video",
                   "robustlab.models.load_model", "robustlab.models.registry.load_model"):
        monkeypatch.setattr(target, _boom)
    argv = [str(tmp_path / "run") if a == "RUN" else a for a in argv]
    assert main([*argv, "--n", str(10 ** 12)]) == 2
    _one_line(capsys, says=(f"at most {BUILTIN_MAX_N:,}", "1000000000000"))
    assert not (tmp_path / "run").exists()
    assert main([*argv, "--n", str(BUILTIN_MAX_N + 1)]) == 2
    _one_line(capsys, says=(f"at most {BUILTIN_MAX_N:,}",))


def test_the_builtin_maximum_is_the_documented_one():
    from robustlab.datasets.synthetic.datasets import BUILTIN_MAX_N

    assert f"{BUILTIN_MAX_N:,}" in (ROOT / "docs" / "cli.md").read_text()


def test_n_over_what_a_folder_holds_is_one_line(tmp_path, capsys, monkeypatch):
    from PIL import Image

    monkeypatch.setattr("robustlab.models.load_model", _boom)
    for i in range(4):
        Image.new("RGB", (8, 8), (i, 0, 0)).save(tmp_path / f"im{i}.png")
    (tmp_path / "captions.csv").write_text("file,caption\n" + "".join(f"im{i}.png,picture {i}\n" for i in range(4)))
    for argv in (["eval", "retrieval"], ["bench", "--models", "builtin:tiny-clip", "--perturbations", "none",
                                         "--quiet", "--out", str(tmp_path / "run")]):
        assert main([*argv, "--dataset", "upload", "--root", str(tmp_path), "--n", str(10 ** 12)]) == 2
        _one_line(capsys, says=("n 1000000000000", "holds 4 items"))
    assert not (tmp_path / "run").exists()


def test_n_10_to_the_12_in_a_fresh_process_exits_2_with_one_line(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "robustlab.cli", "bench", "--models", "builtin:tiny-clip", "--n",
                        str(10 ** 12), "--perturbations", "none", "--out", str(out)],  # no --quiet: no bar either
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "n must be at most" in lines[0] and "Traceback" not in r.stderr, r.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def test_a_full_disk_while_eval_writes_is_one_line(tmp_path, capsys, monkeypatch):
    import robustlab.tasks.result as base

    def full(path, data, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(base, "atomic_write", full)
    assert main(["eval", "retrieval", "--n", "6", "--out", str(tmp_path / "res")]) == 2
    _one_line(capsys, says=("cannot write", str(tmp_path / "res"), "the disk is full"))
    assert not list(tmp_path.rglob("*.json"))


def test_a_cuda_index_this_machine_lacks_is_one_line(monkeypatch):
    """On a machine with one GPU (simulated: this check runs anywhere), cuda:9 is refused, cuda and cuda:0 pass."""
    import torch

    from robustlab.engine.device import DeviceError, resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == torch.device("cuda:0") and resolve_device("cuda").type == "cuda"
    assert resolve_device("auto").type == "cuda"
    with pytest.raises(DeviceError, match=r"^device 'cuda:9': this machine has 1 CUDA device\(s\); devices here: "
                                          r"auto, cuda:0, cpu$"):
        resolve_device("cuda:9")
