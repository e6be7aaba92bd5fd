"""``[dataset.options]`` in a protocol: keyword options of the dataset's loader (HAT-VTR's MSVD setup keeps one caption
per video: ``captions_per_video = 1``), checked when the protocol loads, shown by --dry-run, and used by a run on a
tiny MSVD-format folder."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datasets"))  # the loaders' fixture helpers
from test_video_loaders import msvd_root  # noqa: E402,F401 - the MSVD-format folder (a fixture)

from robustlab.bench.protocol import ProtocolError, dry_run_lines, load_protocol  # noqa: E402
from robustlab.bench.runner import run_sweep  # noqa: E402
from robustlab.cli import main  # noqa: E402

PROTOCOL = """schema = 1
name = "msvd-one-caption"
title = "MSVD with one caption per video (HAT-VTR's setup)"
paper = "Zhang et al., HAT-VTR"
tasks = ["retrieval"]
models = ["builtin:tiny-clip-video-meanp"]

[dataset]
name = "msvd"
split = "test"

[dataset.options]
{options}
"""


def write(tmp_path, options: str = "captions_per_video = 1", name: str = "p.toml") -> Path:
    f = tmp_path / name
    f.write_text(PROTOCOL.format(options=options))
    return f


def test_options_reach_the_spec_and_the_dry_run(msvd_root, tmp_path, capsys):  # noqa: F811
    f = write(tmp_path)
    p = load_protocol(str(f))
    assert p.dataset["options"] == {"captions_per_video": 1}
    spec = p.build_spec(dataset={"root": str(msvd_root)})
    assert spec.dataset["options"] == {"captions_per_video": 1} and spec.dataset["split"] == "test"
    assert f"dataset msvd split test root {msvd_root} options captions_per_video=1" in dry_run_lines(spec, p)
    # options given with the call add to the protocol's; another dataset drops them with the split
    more = p.build_spec(dataset={"root": str(msvd_root), "options": {"skip_missing": True}})
    assert more.dataset["options"] == {"captions_per_video": 1, "skip_missing": True}
    other = p.build_spec(dataset={"name": "builtin-videos", "n": 4})
    assert other.dataset["options"] == {} and other.dataset["name"] == "builtin-videos"
    assert main(["bench", "--protocol", str(f), "--root", str(msvd_root), "--dry-run"]) == 0
    assert "options captions_per_video=1" in capsys.readouterr().out


def test_a_run_reads_one_caption_per_video(msvd_root, tmp_path):  # noqa: F811
    p = load_protocol(str(write(tmp_path)))
    st = run_sweep(p.build_spec(dataset={"root": str(msvd_root)}), tmp_path / "run")
    assert st.done == st.total == 1
    one = json.loads(next((tmp_path / "run" / "cells").glob("*.json")).read_text())
    assert one["dataset"] == "msvd" and one["n"] == 2 and one["extra"]["texts"] == 2  # 2 videos, 1 caption each
    # the same protocol without the option: every caption (3 + 2) is a query
    every = load_protocol(str(write(tmp_path, options="", name="all.toml")))
    st = run_sweep(every.build_spec(dataset={"root": str(msvd_root)}), tmp_path / "run-all")
    assert st.done == 1
    cell = json.loads(next((tmp_path / "run-all" / "cells").glob("*.json")).read_text())
    assert cell["extra"]["texts"] == 5 and cell["n"] == 2


@pytest.mark.parametrize("options,line", [
    ("captions_per_clip = 1", r"^protocol 'msvd-one-caption': dataset\.options: msvd takes no option "
                              r"captions_per_clip \(its options: ann_file, captions_per_video, fps, max_frames, "
                              r"max_side, n, num_frames, skip_missing\)$"),
    ("n = 3", r"dataset\.options\.n: n is a key of \[dataset\] itself, not a loader option$"),
    ("captions_per_video = [1]", r"dataset\.options\.captions_per_video: \[1\] is not of type 'string', "),
    ("fps = inf", r"dataset\.options\.fps=inf: not a finite number$"),
])
def test_a_bad_option_is_one_line(options, line, tmp_path, capsys):
    f = write(tmp_path, options)
    with pytest.raises(ProtocolError, match=line) as e:
        load_protocol(str(f))
    assert "\n" not in str(e.value)
    assert main(["bench", "--protocol", str(f), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "takes no option" in err or "dataset.options" in err
    assert "\n" not in err and "Traceback" not in err and str(tmp_path) not in err


def test_an_unknown_dataset_with_options_is_one_line(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(PROTOCOL.format(options="x = 1").replace('name = "msvd"', 'name = "msvd2"'))
    with pytest.raises(ProtocolError, match=r"^protocol 'msvd-one-caption': dataset: unknown dataset 'msvd2'; "):
        load_protocol(str(f))
