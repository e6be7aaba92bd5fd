"""Issue 23: what a browser viewer may reach is the operator's choice (ui/operator.py, robustlab/io/access.py).

Data roots (a picker, folders confined, one message for outside / missing / unreadable), models (built-ins plus the
operator's list; typed specs, local checkpoints and hub downloads only when allowed, and then no connection is
attempted), run names, the per-server sweep limit. The real-browser version is tests/browser/test_browser_security.py.
"""
from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from robustlab.datasets.registry import discover
from robustlab.io.access import AccessDenied, check_read, resolve_inside, set_read_roots
from ui import operator
from ui.folders import ANOTHER

from apptest_helpers import fresh

TIMEOUT = 300


# ---- the configuration ----------------------------------------------------------------------------------------
def test_defaults_are_safe(tmp_path):
    cfg = operator.load_config(env={}, path=tmp_path / "none.toml")
    assert cfg.data_roots == () and not cfg.allow_hub and not cfg.allow_custom_models and not cfg.typed_specs
    assert cfg.max_sweeps == 2 and cfg.problems == ()


def test_file_and_environment_override(tmp_path):
    data, models = tmp_path / "data", tmp_path / "models"
    data.mkdir(), models.mkdir()
    f = tmp_path / "robustlab.toml"
    f.write_text(f'[dashboard]\ndata_roots = ["{data}"]\nallow_hub = true\nui_models = ["hf:org/a", "open_clip:*"]\n'
                 'max_sweeps = 5\nbogus = 1\n')
    cfg = operator.load_config(env={}, path=f)
    assert cfg.data_roots == (data.resolve(),) and cfg.allow_hub and cfg.max_sweeps == 5
    assert cfg.offered_models == ("hf:org/a",) and cfg.model_patterns == ("open_clip:*",) and cfg.typed_specs
    assert cfg.spec_allowed("open_clip:RN50/openai") and not cfg.spec_allowed("hf:org/b")
    assert any("unknown key 'bogus'" in p for p in cfg.problems)
    env = {"ROBUSTLAB_ALLOW_HUB": "0", "ROBUSTLAB_DATA_ROOTS": f"{models}{os.pathsep}{tmp_path / 'missing'}",
           "ROBUSTLAB_MODEL_ROOT": str(models), "ROBUSTLAB_MAX_SWEEPS": "1e999"}
    cfg = operator.load_config(env=env, path=f)
    assert not cfg.allow_hub and cfg.data_roots == (models.resolve(),) and cfg.model_root == models.resolve()
    assert cfg.max_sweeps == 2 and any("max_sweeps" in p for p in cfg.problems)
    assert any("missing is not a folder" in p for p in cfg.problems)


def test_a_broken_config_file_gives_safe_defaults_and_a_line(tmp_path):
    f = tmp_path / "robustlab.toml"
    f.write_text("[dashboard\nallow_hub = yes")
    cfg = operator.load_config(env={}, path=f)
    assert not cfg.allow_hub and cfg.data_roots == () and len(cfg.problems) == 1 and "safe defaults" in cfg.problems[0]


def test_personal_mode_only_on_loopback(tmp_path):
    on = operator.load_config(env={"ROBUSTLAB_PERSONAL": "1"}, path=tmp_path / "x", address="127.0.0.1")
    assert on.personal and on.allow_hub and on.allow_custom_models and on.data_roots == (Path.home().resolve(),)
    off = operator.load_config(env={"ROBUSTLAB_PERSONAL": "1"}, path=tmp_path / "x", address="0.0.0.0")
    assert not off.personal and not off.allow_hub and off.data_roots == ()
    assert any("personal mode ignored" in p for p in off.problems)


def test_apply_sets_the_hub_offline_switches_and_the_read_roots(tmp_path):
    cfg = operator.OperatorConfig(data_roots=(tmp_path.resolve(),))
    operator.apply(cfg)
    assert all(os.environ.get(v) == "1" for v in operator.HUB_ENV)
    from robustlab.models.hf_backend import offline_reason

    assert "offline mode" in offline_reason()  # answered from the switch: no probe of the hub
    (tmp_path / "a.txt").write_text("x")
    assert check_read(tmp_path / "a.txt") == tmp_path / "a.txt"
    with pytest.raises(AccessDenied):
        check_read("/etc/hostname")


# ---- folders: resolved, confined, one message ------------------------------------------------------------------
@pytest.fixture
def tree(tmp_path):
    """root/ with a dataset and a symlink leaving it; outside/ with a planted secret."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "shapes").mkdir(parents=True)
    outside.mkdir()
    for i in range(3):
        Image.fromarray(np.full((16, 16, 3), 40 * i, np.uint8)).save(root / "shapes" / f"s{i}.png")
        Image.fromarray(np.full((16, 16, 3), 50 * i, np.uint8)).save(outside / f"p{i}.png")
    (root / "shapes" / "captions.txt").write_text("a\nb\nc\n")
    (outside / "captions.txt").write_text("TOP-SECRET-CAPTION\n" * 3)
    (root / "leak").symlink_to(outside, target_is_directory=True)
    (root / ".hidden").mkdir()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(root / ".hidden" / "h.png")
    return root, outside


def test_one_message_for_outside_missing_and_symlinked_out(tree):
    root, outside = tree
    msgs = []
    for rel in ("leak", "../outside", str(outside), "no/such", "shapes/../../outside", "x\x00y"):
        with pytest.raises(AccessDenied) as e:
            resolve_inside(root, rel, roots=[root])
        msgs.append(str(e.value).replace(repr(e.value.shown), "<shown>"))
        assert "outside" not in str(e.value).replace(rel, "") and "secret" not in str(e.value).lower()
    assert len(set(msgs)) == 1, msgs
    assert resolve_inside(root, "shapes", roots=[root]) == (root / "shapes").resolve()


def test_unreadable_folder_has_the_same_message(tree, monkeypatch):
    root, _ = tree
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if str(p).endswith("shapes") else real_access(p, m))
    with pytest.raises(AccessDenied) as e:
        resolve_inside(root, "shapes", roots=[root])
    assert str(e.value) == str(AccessDenied("shapes"))


def test_discovery_skips_symlinks_leaving_the_root_and_hidden_folders(tree):
    root, _ = tree
    found = discover([root])
    assert [(e["name"], e["rel"]) for e in found] == [("upload", "shapes")]
    (root / "coco").mkdir()
    (root / "coco" / "dataset_coco.json").write_text("{}")
    assert ("coco", "coco") in [(e["name"], e["rel"]) for e in discover([root])]


def test_reads_are_confined_even_through_a_symlinked_file(tree):
    root, outside = tree
    (root / "shapes" / "captions.txt").unlink()
    (root / "shapes" / "captions.txt").symlink_to(outside / "captions.txt")
    set_read_roots([root])
    with pytest.raises(AccessDenied) as e:
        check_read(root / "shapes" / "captions.txt")
    assert str(e.value) == str(AccessDenied("captions.txt"))
    set_read_roots(None)
    assert check_read(root / "shapes" / "captions.txt")  # the library and the CLI: no confinement


def _app(**state) -> AppTest:
    return fresh(timeout=TIMEOUT, **state)


def _page_text(at) -> str:
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "text", "success"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def test_dashboard_shows_the_same_line_for_every_folder_it_may_not_open(tree, monkeypatch):
    root, outside = tree
    monkeypatch.setenv("ROBUSTLAB_DATA_ROOTS", str(root))
    at = _app(dataset="folder")
    assert at.selectbox(key="folder_pick").options == [f"upload · {root.name}/shapes", ANOTHER]
    assert not at.error and "TOP-SECRET" not in _page_text(at)
    lines = {}
    for rel in ("leak", "../outside", str(outside), "no/such/folder"):
        at = _app(dataset="folder", folder_pick=ANOTHER, folder_fmt="upload", folder_sub=rel)
        (err,) = [e.value for e in at.error]
        lines[rel] = err.replace(rel.replace("/", "/"), "<shown>")
        assert "TOP-SECRET" not in _page_text(at) and "p0.png" not in _page_text(at)
    assert len(set(lines.values())) == 1, lines


# ---- models ---------------------------------------------------------------------------------------------------
def test_typed_specs_are_off_by_default_and_the_list_is_the_operators(monkeypatch):
    at = _app()
    assert operator.config().typed_specs is False
    assert all(o.startswith("builtin:") for o in at.selectbox(key="model_choice").options)
    monkeypatch.setenv("ROBUSTLAB_UI_MODELS", "open_clip:ViT-B-32, hf:*")
    operator.reset_for_tests()
    at = _app()
    opts = at.selectbox(key="model_choice").options
    assert "open_clip:ViT-B-32" in opts and opts[-1].startswith("other") and "hf:*" not in opts


def test_the_operator_picks_the_model_a_session_opens_with(monkeypatch, tmp_path, caplog):
    """default_model: a built-in or one of ui_models opens first (the sidebar's first choice, the model the pages
    load); anything else is logged and the dashboard's own default stays; an empty value is a problem line."""
    from ui import state

    assert operator.load_config(env={"ROBUSTLAB_DEFAULT_MODEL": " builtin:tiny-clip "},
                                path=tmp_path / "x").default_model == "builtin:tiny-clip"
    bad = operator.load_config(env={"ROBUSTLAB_DEFAULT_MODEL": ""}, path=tmp_path / "x")
    assert bad.default_model is None and any("default_model" in p for p in bad.problems)
    monkeypatch.setenv("ROBUSTLAB_DEFAULT_MODEL", "builtin:tiny-clip")
    operator.reset_for_tests()
    at = _app()
    assert at.selectbox(key="model_choice").options[0] == "builtin:tiny-clip"
    assert at.selectbox(key="model_choice").value == "builtin:tiny-clip" and not at.exception
    monkeypatch.setenv("ROBUSTLAB_DEFAULT_MODEL", "hf:org/not-offered")
    operator.reset_for_tests()
    with caplog.at_level("WARNING", logger="robustlab.ui"):
        assert state.default_model() == state.DEFAULT_MODEL
    assert any("not-offered" in r.getMessage() for r in caplog.records)
    at = _app()
    assert at.selectbox(key="model_choice").options[0] == state.DEFAULT_MODEL and not at.exception
    monkeypatch.setenv("ROBUSTLAB_UI_MODELS", "hf:org/offered")
    monkeypatch.setenv("ROBUSTLAB_DEFAULT_MODEL", "hf:org/offered")
    operator.reset_for_tests()
    assert state.default_model() == "hf:org/offered" and state.offered_models()[0] == "hf:org/offered"
    monkeypatch.delenv("ROBUSTLAB_DEFAULT_MODEL")
    monkeypatch.delenv("ROBUSTLAB_UI_MODELS")
    operator.reset_for_tests()


@pytest.mark.parametrize("spec", ["open_clip:ViT-B-32//etc/shadow", "open_clip:ViT-B-32//etc/nonexistent.pt",
                                  "hf:/etc", "hf:/no/such/folder", "/etc/passwd", "/no/such.pt",
                                  "open_clip:local-dir:/etc"])
def test_local_checkpoints_outside_the_roots_get_one_message(spec, tmp_path):
    cfg = operator.OperatorConfig(data_roots=(tmp_path.resolve(),), allow_custom_models=True)
    why = operator.spec_refusal(spec, cfg)
    assert why is not None and why.startswith("it is not a checkpoint this dashboard may open"), why


def test_a_checkpoint_inside_the_model_root_is_allowed(tmp_path):
    ck = tmp_path / "w.safetensors"
    ck.write_bytes(b"0")
    cfg = operator.OperatorConfig(model_root=tmp_path.resolve(), allow_custom_models=True)
    assert operator.spec_refusal(f"open_clip:ViT-B-32/{ck}", cfg) is None


class _NoNetwork:
    """An audit hook that records every connection and name lookup to a non-loopback address (the hook stays
    installed for the process, so it only records while armed)."""

    armed = False
    seen: list = []
    installed = False

    @classmethod
    def arm(cls):
        if not cls.installed:
            sys.addaudithook(cls._hook)
            cls.installed = True
        cls.seen = []
        cls.armed = True

    @classmethod
    def _hook(cls, event, args):
        if not cls.armed or event not in ("socket.connect", "socket.getaddrinfo", "socket.sendto"):
            return
        host = args[0] if event == "socket.getaddrinfo" else (args[1][0] if isinstance(args[1], tuple) else args[1])
        if str(host) not in ("127.0.0.1", "localhost", "::1", "") and not str(host).startswith("/"):
            cls.seen.append((event, host, threading.current_thread().name))


@pytest.mark.parametrize("spec", ["open_clip:ViT-B-32/openai", "hf:openai/clip-vit-base-patch32",
                                  "hf-grounding:google/owlv2-base-patch16-ensemble"])
def test_a_typed_hub_spec_opens_no_connection_when_the_hub_is_off(spec, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_ALLOW_CUSTOM_MODELS", "1")
    _NoNetwork.arm()
    try:
        at = _app(model_choice="other (open_clip / hf / path)…", custom_spec=spec)
        shown = [_page_text(at)]
        at.switch_page("pages/grounding.py").run()  # the grounding page's own model check
        shown.append(_page_text(at))
    finally:
        _NoNetwork.armed = False
    assert not at.exception
    assert _NoNetwork.seen == [], _NoNetwork.seen
    assert "hub downloads are off" in shown[0] and "ROBUSTLAB_ALLOW_HUB=1" in shown[0]
    if spec.startswith("hf-grounding:"):
        assert "hub downloads are off" in shown[1]


def test_an_operator_listed_hub_model_loads_cache_only_without_a_connection(monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_UI_MODELS", "hf:openai/clip-vit-base-patch32")
    _NoNetwork.arm()
    try:
        at = _app(model_choice="hf:openai/clip-vit-base-patch32")
    finally:
        _NoNetwork.armed = False
    assert _NoNetwork.seen == [], _NoNetwork.seen
    assert any("can't be loaded here" in e.value and "offline" in e.value for e in at.error), _page_text(at)


def test_the_audit_hook_does_see_a_connection():
    """The check above is only worth something if the hook sees a real attempt."""
    _NoNetwork.arm()
    try:
        with pytest.raises(OSError):
            socket.create_connection(("192.0.2.1", 9), timeout=0.01)  # TEST-NET-1: never routed
    finally:
        _NoNetwork.armed = False
    assert any(h == "192.0.2.1" for _, h, _ in _NoNetwork.seen)


# ---- run names and the sweep limit ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["x" * 300, "a\nb", "ok\u202etxt", ".hidden", "CON", "nul.txt", "![t](http://x/y.png)",
                                  "a b", "", "../up", "é"])
def test_bad_run_names_are_one_line(name):
    from ui.bench import RUN_NAME_RULE, run_name_problem

    assert run_name_problem(name) == f"Run name refused: use {RUN_NAME_RULE}."  # one line; the name never echoed


def test_good_run_names_and_the_default(monkeypatch):
    from ui.bench import default_run_name, run_name_problem

    assert run_name_problem("builtin-retrieval") is None and run_name_problem("a" * 64) is None
    assert run_name_problem(default_run_name("refcoco+", "grounding")) is None


def test_a_300_character_run_name_on_the_page_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBUSTLAB_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    at.session_state["bench_name"] = "r" * 300  # what a client can send, whatever the box's max_chars
    at.switch_page("pages/benchmark.py").run()
    assert not at.exception
    assert [e.value for e in at.error] == [f"Run name refused: use {__import__('ui.bench').bench.RUN_NAME_RULE}."]
    assert at.button(key="bench_go").disabled


def test_the_server_runs_at_most_max_sweeps_and_says_busy():
    from ui.bench import Job, ServerJobs

    jobs = ServerJobs()
    hold = threading.Event()
    running = Job(spec=None, out=Path("a"))
    running.thread = threading.Thread(target=hold.wait, daemon=True)
    running.thread.start()
    try:
        assert jobs.admit(running, 1) is None
        why = jobs.admit(Job(spec=None, out=Path("b")), 1)
        assert why is not None and why.startswith("The server is busy: 1 sweep(s) are running") and "\n" not in why
        assert jobs.admit(Job(spec=None, out=Path("c")), 2) is None
    finally:
        hold.set()


def test_a_sweep_whose_session_has_gone_is_cancelled(monkeypatch):
    from streamlit.runtime import Runtime

    from ui.bench import Job

    class FakeRuntime:
        alive = True

        def is_active_session(self, sid):
            return self.alive

    rt = FakeRuntime()
    monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: rt))
    job = Job(spec=None, out=Path("x"), owner="s1")
    assert not job.owner_gone(grace_s=0)
    rt.alive = False
    assert job.owner_gone(grace_s=0)
    assert not Job(spec=None, out=Path("y"), owner="").owner_gone(grace_s=0)  # outside a server: never
