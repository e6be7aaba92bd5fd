"""Issue 45 (7): the Benchmark page writes its run folders into a data folder, never into the dashboard's own folder.

Before: ``runs_root()`` was ``$ROBUSTLAB_RUNS`` or ``./runs`` -- a sweep started from a browser wrote into the
folder the server was started in (the app's code folder, ``streamlit run app.py``), and no document named the
variable. Now the operator's ``runs_dir`` / ``ROBUSTLAB_RUNS`` (ui/operator.py, read with the rest of the operator's
configuration), else ``<cache>/runs`` (``ROBUSTLAB_CACHE`` or ``~/.cache/robustlab``)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import operator

APP = Path(__file__).resolve().parents[2] / "app.py"
TIMEOUT = 300


def _real(p) -> Path:
    return Path(os.path.realpath(p))


# ---- the setting ------------------------------------------------------------------------------------------------
def test_the_default_runs_folder_is_the_users_cache_not_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = operator.load_config(env={}, path=tmp_path / "none.toml")
    assert cfg.runs_dir is None and cfg.problems == ()
    assert cfg.runs_root == _real(os.environ["ROBUSTLAB_CACHE"]) / "runs"  # the test session's cache (conftest)
    monkeypatch.delenv("ROBUSTLAB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert operator.OperatorConfig().runs_root == _real(tmp_path / "xdg") / "robustlab" / "runs"
    assert tmp_path / "runs" != operator.OperatorConfig().runs_root and APP.parent not in cfg.runs_root.parents


def test_the_operator_sets_it_in_the_file_or_the_variable(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    f = tmp_path / "robustlab.toml"
    f.write_text(f'[dashboard]\nruns_dir = "{a}"\n')
    cfg = operator.load_config(env={}, path=f)
    assert cfg.runs_dir == _real(a) and cfg.runs_root == _real(a) and cfg.problems == ()  # made when first needed
    cfg = operator.load_config(env={"ROBUSTLAB_RUNS": str(b)}, path=f)
    assert cfg.runs_root == _real(b) and cfg.problems == ()
    assert operator.load_config(env={"ROBUSTLAB_RUNS": ""}, path=tmp_path / "x").runs_dir is None


@pytest.mark.parametrize("where", ["plain", "plain/under"])
def test_a_runs_dir_that_is_or_lies_under_a_file_is_one_line_without_a_path(tmp_path, where):
    (tmp_path / "plain").write_text("x")
    cfg = operator.load_config(env={"ROBUSTLAB_RUNS": str(tmp_path / where)}, path=tmp_path / "x")
    assert cfg.runs_dir is None and cfg.runs_root == _real(os.environ["ROBUSTLAB_CACHE"]) / "runs"
    assert cfg.problems == ("runs_dir is not a folder (using the default runs folder, <cache>/runs)",)
    assert str(tmp_path) not in cfg.problems[0]  # the sidebar shows the problems to every viewer


# ---- the page -------------------------------------------------------------------------------------------------
def _sweep_page(name: str) -> AppTest:
    """The Benchmark page set up for a 2-cell sweep (tiny-clip, 4 built-in images, gaussian_noise s1) into run
    ``name``, the button pressed (ROBUSTLAB_SYNC_SWEEP=1: the sweep runs in the script run)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["model_choice"] = "builtin:tiny-clip"
    at.switch_page("pages/benchmark.py").run()
    assert not at.exception, at.exception
    at.number_input(key="bench_n").set_value(4)
    at.radio(key="bench_pmode").set_value("chosen names").run()
    at.multiselect(key="bench_pnames").set_value(["gaussian_noise"])
    at.multiselect(key="bench_sev").set_value([1])
    at.text_input(key="bench_name").set_value(name).run()
    at.button(key="bench_go").click().run()
    assert not at.exception, at.exception
    return at


def _said(at) -> str:
    return "\n".join(str(e.value) for k in ("markdown", "caption", "info", "warning", "error", "success")
                     for e in getattr(at, k))


def test_a_sweep_started_on_the_page_lands_in_the_cache_not_in_the_server_folder(tmp_path, monkeypatch):
    """The server started in ``started_here`` without ROBUSTLAB_RUNS: before, the run folder was
    ``started_here/runs/where``; now it is ``<cache>/runs/where``, and "Open a run" lists it from there."""
    cache = _real(os.environ["ROBUSTLAB_CACHE"])
    here = tmp_path / "started_here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.delenv("ROBUSTLAB_RUNS", raising=False)
    monkeypatch.setenv("ROBUSTLAB_SYNC_SWEEP", "1")
    at = _sweep_page("where")
    assert not at.error, [e.value for e in at.error]
    assert any("Done: 2 cell(s) run" in s.value for s in at.success)
    assert (cache / "runs" / "where" / "sweep.json").is_file()
    assert not (here / "runs").exists() and not (APP.parent / "runs" / "where").exists()
    assert str(cache) not in _said(at) and str(tmp_path) not in _said(at)  # never shown by its path

    at.radio(key="bench_mode").set_value("Open a run").run()
    assert not at.exception, at.exception
    assert "where" in at.selectbox(key="bench_open").options


@pytest.mark.parametrize("broken", ["file", "sweep.json"])
def test_a_run_folder_the_page_cannot_use_is_named_by_its_run_name_never_its_path(tmp_path, monkeypatch, broken):
    """A run name whose folder is a file (the runner's refusal) or holds an unreadable sweep.json (the page's own
    check): one line naming the run, never the server path of the runs folder (before: both named it in full)."""
    runs = tmp_path / "srv" / "runs"
    runs.mkdir(parents=True)
    if broken == "file":
        (runs / "busted").write_text("not a folder")
    else:
        (runs / "busted").mkdir()
        (runs / "busted" / "sweep.json").write_text("{not json")
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(runs))
    monkeypatch.setenv("ROBUSTLAB_SYNC_SWEEP", "1")
    at = _sweep_page("busted")
    (err,) = [e.value for e in at.error]
    assert "busted" in err and "\n" not in err
    assert str(tmp_path) not in _said(at) and "srv" not in _said(at)
    assert not any(runs.glob("busted/cells/*.json"))
