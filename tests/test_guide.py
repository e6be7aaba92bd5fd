"""docs/architecture.md's "Where to add things", followed literally (issue 46): in a scratch copy of the repository,
a throwaway perturbation, dataset format, task and page are each added as the guide says (one new file each and
the one registry entry it names), then a fresh interpreter lists them, a tiny sweep runs the new task on the new
dataset under the new perturbation, and the new page passes an AppTest. When the guide and the code part ways,
this fails.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "architecture.md").read_text()

PERTURBATION = '''
from robustlab.perturb.registry import register

@register("guide_invert", batched=True)
def guide_invert(x, params, rng):
    """Blends each pixel towards its inverse."""
    a = float(params["amount"])
    return (x * (1 - a) + (255 - x.astype("float64")) * a).round().clip(0, 255).astype("uint8")
'''

PERTURBATION_CARD = '''
[guide_invert]
modality = "image"
category = "digital"
source = "tests/test_guide.py"
tags = ["deterministic"]

[guide_invert.variants.default]
note = "amount = .2/.4/.6/.8/1"
amount = [0.2, 0.4, 0.6, 0.8, 1.0]
'''

DATASET = '''
from pathlib import Path

from robustlab.datasets.base import Dataset, DatasetError, Item
from robustlab.datasets.registry import register_dataset
from robustlab.io.files import load_image


@register_dataset("guide-pairs", kind="image", tasks=("retrieval",), description="images and captions in pairs.tsv",
                  splits=("test",), needs="pairs.tsv (one IMAGE<TAB>CAPTION a line) beside the images",
                  paper="tests/test_guide.py", markers=("pairs.tsv",))
class GuidePairs(Dataset):
    def __init__(self, split=None, root=None, **params):
        super().__init__(split=split, root=root, **params)
        f = Path(root) / "pairs.tsv"
        if not f.is_file():
            raise DatasetError(f"{root} has no pairs.tsv")
        self.pairs = [line.split("\\t", 1) for line in f.read_text().splitlines() if line.strip()]
        self.pairs = self.pairs[:params["n"]] if params.get("n") else self.pairs

    def __len__(self):
        return len(self.pairs)

    def item(self, i):
        name, caption = self.pairs[i]
        return Item(id=name, texts=[caption], load=lambda: load_image(Path(self.root) / name))
'''

TASK = '''
from robustlab.tasks.task import Task


class GuideCaptions(Task):
    name = "guide-captions"
    description = "captions per item (a throwaway task of tests/test_guide.py)"
    needs = ()
    kinds = ("image",)
    dataset_task = "retrieval"

    def run(self, model, dataset, visual, text, m, progress, **options):
        n = sum(len(dataset.item(i).texts) for i in range(m))
        return m, {"captions_per_item": n / m}, {}


TASK = GuideCaptions()
'''

PAGE = '''
import streamlit as st

import robustlab as rl

st.title("Guide")
st.write(", ".join(s.name for s in rl.list_perturbations("guide_*")))
'''


def _add_entry(path: Path, opening: str, entry: str) -> None:
    """The one registry entry: a line right after the table's opening line."""
    src = path.read_text()
    assert src.count(opening) == 1, f"{path.name} has no single {opening!r}"
    path.write_text(src.replace(opening, opening + "\n    " + entry, 1))


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A scratch copy of the repository with the four things added as the guide says."""
    for words in ("`PERTURBATIONS` (`robustlab/perturb/table.py`)", "a `[name]` table of `MODULE.toml` beside",
                  "`[name.variants.VARIANT]`", "`DATASET_MODULES` in that file",
                  "`TASKS` (`robustlab/tasks/registry.py`)", "`VIEWS` in `app.py`", "`TASK = MyTask()`"):
        assert words in GUIDE, f"the guide no longer says {words}"
    tmp = tmp_path_factory.mktemp("guide")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for d in ("robustlab", "ui", "pages", ".streamlit"):
        if (ROOT / d).is_dir():
            shutil.copytree(ROOT / d, tmp / d, ignore=ignore)
    shutil.copy2(ROOT / "app.py", tmp / "app.py")
    (tmp / "assets").symlink_to(ROOT / "assets")  # the built-in weights, read only
    (tmp / "robustlab/perturb/image/guide_invert.py").write_text(PERTURBATION)
    (tmp / "robustlab/perturb/image/guide_invert.toml").write_text(PERTURBATION_CARD)
    _add_entry(tmp / "robustlab/perturb/table.py", "PERTURBATIONS: dict[str, str] = {",
               '"guide_invert": "robustlab.perturb.image.guide_invert",')
    (tmp / "robustlab/datasets/guide_pairs.py").write_text(DATASET)
    _add_entry(tmp / "robustlab/datasets/registry.py", "DATASET_MODULES = (", '"robustlab.datasets.guide_pairs",')
    (tmp / "robustlab/tasks/guide_captions.py").write_text(TASK)
    _add_entry(tmp / "robustlab/tasks/registry.py", "TASKS = {",
               '"guide-captions": "robustlab.tasks.guide_captions:TASK",')
    (tmp / "pages/guide.py").write_text(PAGE)
    _add_entry(tmp / "app.py", "VIEWS = [", '("pages/guide.py", "Guide", ":material/school:"),')
    # a folder in the new format: 6 images of the built-in world and their captions
    from PIL import Image

    from robustlab.datasets.registry import build
    data = tmp / "data"
    data.mkdir()
    ds = build("builtin", split="test", n=6)
    lines = []
    for i in range(len(ds)):
        Image.fromarray(np.asarray(ds.visual(i))).save(data / f"{i}.png")
        lines.append(f"{i}.png\t{ds.item(i).texts[0]}")
    (data / "pairs.tsv").write_text("\n".join(lines) + "\n")
    return tmp


def _run(repo: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo), "ROBUSTLAB_WARM_UP": "0"}
    r = subprocess.run([sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (r.stdout[-1500:], r.stderr[-3000:])
    return r


def test_the_scratch_copy_is_the_one_imported(repo):
    r = _run(repo, "-c", "import robustlab; print(robustlab.__file__)")
    assert Path(r.stdout.strip()).resolve().is_relative_to(repo.resolve())


def test_the_listings_offer_what_was_added(repo):
    assert "guide_invert" in _run(repo, "-m", "robustlab", "perturbations").stdout
    assert "guide-pairs" in _run(repo, "-m", "robustlab", "datasets").stdout
    assert "guide-captions" in _run(repo, "-m", "robustlab", "tasks").stdout


def test_a_tiny_sweep_of_the_new_task_on_the_new_dataset_under_the_new_perturbation(repo):
    out = repo / "sweep"
    _run(repo, "-m", "robustlab", "bench", "--models", "builtin:tiny-clip", "--dataset", "guide-pairs",
         "--root", str(repo / "data"), "--n", "4", "--tasks", "retrieval,guide-captions",
         "--perturbations", "guide_invert", "--severities", "2", "--out", str(out), "--quiet", "--device", "cpu")
    cells = [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]
    got = {(c["task"], c["conditions"]["visual"]["name"]) for c in cells}
    assert got == {(t, p) for t in ("retrieval", "guide-captions") for p in (None, "guide_invert")}
    assert all(c["dataset"] == "guide-pairs" and c["n"] == 4 for c in cells)
    assert {c["metrics"]["captions_per_item"] for c in cells if c["task"] == "guide-captions"} == {1.0}
    perturbed = [c for c in cells if c["task"] == "retrieval" and c["conditions"]["visual"]["name"]]
    assert perturbed[0]["conditions"]["visual"]["severity"] == 2


def test_the_new_page_passes_its_apptest(repo):
    program = textwrap.dedent('''
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file("app.py", default_timeout=240)
        at.switch_page("pages/guide.py").run()
        assert not at.exception, at.exception
        print(at.title[0].value, "|", at.markdown[-1].value)
    ''')
    r = _run(repo, "-c", program, timeout=400)
    assert r.stdout.strip().splitlines()[-1] == "Guide | guide_invert"
