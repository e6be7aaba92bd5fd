"""Static security checks over robustlab's own code (run in CI with the rest of the suite; issue 15): no unpickling
of user files, torch.load only with weights_only=True, remote code never trusted, no user text rendered as HTML,
numpy never allowed to unpickle, and Streamlit's XSRF protection, CORS and upload limit left as they should be.

Each check walks the syntax tree (not a text grep), so a comment or a docstring that names a call never trips it and
a call spelled differently does."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("robustlab/**/*.py"), *ROOT.glob("ui/**/*.py"), *ROOT.glob("pages/*.py"),
                  ROOT / "app.py", *ROOT.glob("benchmarks/*.py")])
# The one place a pickle is read: RefCOCO's refs(*).p annotation file, only behind --trust-pickle / an explicit
# trust_pickle=True (tests/datasets/test_datasets_loaders.py checks the refusal without it).
PICKLE_ALLOWED = {("robustlab/datasets/refcoco.py", "pickle.load")}


def _name(node) -> str:
    """Dotted name of a call's function (``torch.load``, ``st.markdown``, ``load``)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _calls():
    for path in SOURCES:
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                yield rel, node, _name(node.func), {k.arg: k.value for k in node.keywords if k.arg}


def _true(v) -> bool:
    return isinstance(v, ast.Constant) and v.value is True


def test_the_scan_sees_the_code():
    assert len(SOURCES) > 100 and any(n == "torch.load" for _, _, n, _ in _calls())


def test_no_unpickling_outside_the_one_gated_annotation_reader():
    bad = [(rel, node.lineno, name) for rel, node, name, _ in _calls()
           if name.split(".")[-1] in ("load", "loads", "Unpickler") and name.split(".")[0] in ("pickle", "cPickle",
                                                                                             "dill", "joblib")
           and (rel, name) not in PICKLE_ALLOWED]
    assert not bad, bad


def test_torch_load_always_with_weights_only_true():
    bad = [(rel, node.lineno) for rel, node, name, kw in _calls()
           if name == "torch.load" and not _true(kw.get("weights_only"))]
    assert not bad, bad


def test_remote_code_never_trusted_and_numpy_never_unpickles():
    bad = [(rel, node.lineno, name) for rel, node, name, kw in _calls()
           if "trust_remote_code" in kw and not (isinstance(kw["trust_remote_code"], ast.Constant)
                                                 and kw["trust_remote_code"].value is False)]
    bad += [(rel, node.lineno, name) for rel, node, name, kw in _calls()
            if name.split(".")[-1] == "load" and name.split(".")[0] in ("np", "numpy")
            and _true(kw.get("allow_pickle"))]
    assert not bad, bad


def test_no_html_rendering_switched_on():
    bad = [(rel, node.lineno, name) for rel, node, name, kw in _calls() if _true(kw.get("unsafe_allow_html"))]
    bad += [(rel, node.lineno, name) for rel, node, name, _ in _calls() if name in ("st.html", "components.html")]
    assert not bad, bad


def test_streamlit_config_keeps_xsrf_cors_and_sets_the_upload_limit():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    server = cfg.get("server", {})
    assert server.get("enableXsrfProtection", True) is True
    assert server.get("enableCORS", True) is True
    assert 0 < int(server["maxUploadSize"]) <= 200


@pytest.mark.parametrize("snippet, check", [
    ("import torch\ntorch.load('x')", test_torch_load_always_with_weights_only_true),
    ("import pickle\npickle.load(open('x','rb'))", test_no_unpickling_outside_the_one_gated_annotation_reader),
    ("AutoModel.from_pretrained('x', trust_remote_code=True)",
     test_remote_code_never_trusted_and_numpy_never_unpickles),
    ("import numpy as np\nnp.load('x', allow_pickle=True)", test_remote_code_never_trusted_and_numpy_never_unpickles),
    ("import streamlit as st\nst.markdown(user, unsafe_allow_html=True)", test_no_html_rendering_switched_on),
])
def test_each_check_catches_what_it_is_for(tmp_path, monkeypatch, snippet, check):
    bad = tmp_path / "bad.py"
    bad.write_text(snippet)
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "SOURCES", [bad])
    with pytest.raises(AssertionError):
        check()
