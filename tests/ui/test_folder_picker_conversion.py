"""Issue 45 (8): a RefCOCO folder in refer's real format (the pickled ``refs(unc).p``) is listed by the Local folder
picker as needing a conversion, with the command the operator runs on the server, and never by a server path.

Before: discovery looked for ``refs(unc).json`` / ``refs.json`` only, so the folder was silently missing from the
picker; only "another folder…" said why -- the loader's pickle refusal (``trust_pickle=True``, ``--trust-pickle``,
a ``python -c`` line), which a viewer can do nothing with. Now the picker lists it after the datasets it can open,
as ``refcoco · data/refer — needs conversion: run `python -m robustlab.datasets.refcoco FOLDER` on the server``;
picking it, or typing that folder under "another folder…", says that same line, and opens nothing.
``python -m robustlab.datasets.refcoco FOLDER`` converts it (robustlab.datasets.refcoco.convert_refs)."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from robustlab.datasets import build
from robustlab.datasets.base import DatasetError
from robustlab.datasets.registry import discover
from ui.folders import ANOTHER

APP = Path(__file__).resolve().parents[2] / "app.py"
TIMEOUT = 300
REFS = [{"ref_id": 0, "ann_id": 5, "image_id": 1, "split": "val", "category_id": 1,
         "sentences": [{"sent": "the left square", "sent_id": 0}, {"sent": "red one", "sent_id": 1}]}]
INSTANCES = {"images": [{"id": 1, "file_name": "COCO_train2014_000000000001.jpg"}],
             "annotations": [{"id": 5, "image_id": 1, "bbox": [1, 2, 8, 6]}]}
CONVERT_COMMAND = "python -m robustlab.datasets.refcoco FOLDER"


def line(name: str, where: str) -> str:
    return f"{name} · {where} — needs conversion: run `{CONVERT_COMMAND}` on the server"


LINE = line("refcoco", "data/refer")


@pytest.fixture
def data(tmp_path):
    """data/ (the operator's data root): refer/refcoco/ as refer's zip has it (instances.json, the pickled
    refs(unc).p, the images) and shapes/, an upload folder the dashboard opens."""
    root = tmp_path / "data"
    ref = root / "refer" / "refcoco"
    (ref / "train2014").mkdir(parents=True)
    (ref / "instances.json").write_text(json.dumps(INSTANCES))
    with open(ref / "refs(unc).p", "wb") as f:
        pickle.dump(REFS, f, protocol=2)
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(ref / "train2014" / INSTANCES["images"][0]["file_name"])
    (root / "shapes").mkdir()
    for i in range(2):
        Image.fromarray(np.full((16, 16, 3), 60 * i, np.uint8)).save(root / "shapes" / f"s{i}.png")
    (root / "shapes" / "captions.txt").write_text("a\nb\n")
    return root


def test_the_line_is_the_pickers_and_the_command_the_registrys():
    from robustlab.datasets.refcoco import CONVERT_COMMAND as registered
    from ui.folders import conversion_line

    assert registered == CONVERT_COMMAND and conversion_line("refcoco", "data/refer", registered) == LINE


# ---- the library: discovery, the check, the conversion -------------------------------------------------------------
def test_discovery_lists_the_pickled_folder_as_needing_conversion(data):
    from robustlab.datasets.registry import needs_conversion

    plain = [(e["name"], e["rel"]) for e in discover([data])]
    assert plain == [("upload", "shapes")]  # the default listing: what a loader opens as it is
    got = [(e["name"], e["rel"], e.get("convert")) for e in discover([data], convertible=True)]
    assert ("refcoco", "refer", CONVERT_COMMAND) in got and ("upload", "shapes", None) in got
    assert ("refcoco", "refer/refcoco", CONVERT_COMMAND) in got  # as refs(unc).json there is found today
    assert not any(n == "refcocog" for n, _, _ in got)  # refs(umd).p is RefCOCOg's
    assert needs_conversion("refcoco", data / "refer") == CONVERT_COMMAND
    assert needs_conversion("refcoco", data / "shapes") is None and needs_conversion("upload", data / "shapes") is None


def test_the_converted_folder_is_found_and_opens_without_trusting_a_pickle(data):
    from robustlab.datasets.refcoco import convert_refs
    from robustlab.datasets.registry import needs_conversion

    folder = data / "refer"
    with pytest.raises(DatasetError, match=r"python -m robustlab\.datasets\.refcoco .*json\.dump"):
        build("refcoco", root=folder)  # the library's refusal names the command too (and keeps the one-liner)
    (res,) = convert_refs(folder)
    assert res[1] == folder / "refcoco" / "refs(unc).json" and res[2] == "wrote refs(unc).json: 1 refs"
    assert json.loads(res[1].read_text()) == REFS
    assert needs_conversion("refcoco", folder) is None
    assert ("refcoco", "refer", None) in [(e["name"], e["rel"], e.get("convert"))
                                          for e in discover([data], convertible=True)]
    ds = build("refcoco", root=folder)
    assert len(ds) == 1 and [r.expression for r in ds.item(0).refs] == ["the left square", "red one"]
    assert convert_refs(folder)[0][2] == "kept: refs(unc).json is already there"


def test_the_command_line(data, tmp_path):
    run = subprocess.run([sys.executable, "-m", "robustlab.datasets.refcoco", str(data / "refer")],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith("refs(unc).p: wrote refs(unc).json: 1 refs")
    assert (data / "refer" / "refcoco" / "refs(unc).json").is_file()
    bad = subprocess.run([sys.executable, "-m", "robustlab.datasets.refcoco", str(data / "shapes")],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    assert "no refs(*).p in" in bad.stderr


# ---- the dashboard --------------------------------------------------------------------------------------------------
def _app(page: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    (at.switch_page(page) if page else at).run()
    assert not at.exception, at.exception
    return at


def _text(at) -> str:
    parts = [str(e.value) for k in ("markdown", "caption", "info", "warning", "error", "text", "success")
             for e in getattr(at, k)]
    parts += [str(o) for box in at.selectbox for o in box.options]
    return "\n".join(parts)


def test_the_picker_lists_it_as_needing_conversion_and_names_no_server_path(data, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(data))
    at = _app(dataset="folder")
    options = at.selectbox(key="folder_pick").options
    assert options[0] == "upload · data/shapes" and options[-1] == ANOTHER  # what opens first, as before
    assert LINE in options
    assert set(options[1:-1]) == {LINE, line("refcoco", "data/refer/refcoco"), line("refcoco+", "data/refer/refcoco")}
    assert str(data.parent) not in _text(at)


@pytest.mark.parametrize("page", [None, "pages/benchmark.py"])
def test_picking_it_says_the_same_one_line(data, monkeypatch, page):
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(data))
    at = _app(page, dataset="folder", folder_pick=LINE)
    assert [w.value for w in at.warning] == [LINE]
    said = [str(e.value) for k in ("info", "warning", "error") for e in getattr(at, k)]
    assert not at.error and not any("pickle" in m for m in said)
    assert str(data.parent) not in _text(at)
    if page:
        assert at.button(key="bench_go").disabled


def test_typing_that_folder_under_another_folder_says_the_same_line(data, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(data))
    at = _app(dataset="folder", folder_pick=ANOTHER, folder_fmt="refcoco", folder_sub="refer")
    assert [w.value for w in at.warning] == [LINE]  # before: the loader's pickle refusal, an error
    said = [str(e.value) for k in ("info", "warning", "error") for e in getattr(at, k)]
    assert not at.error and not any("pickle" in m for m in said) and str(data.parent) not in _text(at)
