"""Issue 46, items 6: ``python -m robustlab`` is the ``robustlab`` command, and ``import robustlab.X.Y as M`` works
for every module -- no function of a package hides a sub-module of the same name. The documented functional API
stays: ``rl.perturb(x, name, severity, seed=...)``, ``rl.metrics.retrieval(scores, gt)``, ``rl.metrics.robustness``
(the package or module under that name is callable as its function)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# in a fresh interpreter: every package imported first (so a package whose function shares a sub-module's name
# shows up even when the sub-module would later replace it), then every module as ``import a.b.c as M``
_CHECK = r"""
import importlib, json, pathlib, sys, types
root = pathlib.Path(sys.argv[1])
mods = []
for p in sorted((root / "robustlab").rglob("*.py")):
    parts = list(p.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__main__":
        continue  # running it is the CLI (tested below)
    mods.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
pkgs = [m for m in mods if (root / m.replace(".", "/") / "__init__.py").is_file()]
out = {"shadowed": [], "failed": [], "missing": [], "checked": 0}
for m in pkgs:
    importlib.import_module(m)
for m in pkgs:
    d = root / m.replace(".", "/")
    kids = {p.stem for p in d.glob("*.py")} | {p.parent.name for p in d.glob("*/__init__.py")}
    for k in sorted(kids - {"__init__", "__main__"}):
        v = vars(sys.modules[m]).get(k)
        if v is not None and not isinstance(v, types.ModuleType):
            out["shadowed"].append(f"{m}.{k} is a {type(v).__name__}, not the module")
for m in mods:
    try:
        ns = {}
        exec(f"import {m} as M", ns)
        if ns["M"] is not sys.modules[m]:
            out["failed"].append(f"import {m} as M gave {ns['M']!r}")
        out["checked"] += 1
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "robustlab":
            out["failed"].append(f"import {m} as M: {e!r}")
        else:
            out["missing"].append(f"{m}: {e.name}")  # an optional dependency not installed here
    except ImportError as e:
        out["failed"].append(f"import {m} as M: {e!r}")
print(json.dumps(out))
"""


def test_every_module_imports_as_a_dotted_name():
    r = subprocess.run([sys.executable, "-c", _CHECK, str(ROOT)], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert not out["shadowed"], "\n".join(out["shadowed"])
    assert not out["failed"], "\n".join(out["failed"])
    assert out["checked"] > 150  # the walk found the package (about 200 modules)
    # the example, spelled out
    r = subprocess.run([sys.executable, "-c", "import robustlab.perturb.registry as R; print(R.__name__)"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "robustlab.perturb.registry", r.stderr[-2000:]


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_python_m_robustlab_is_the_cli():
    for args in (["--help"], ["perturbations", "--modality", "text"], ["tasks"], ["no-such-command"]):
        a, b = _run("-m", "robustlab", *args), _run("-m", "robustlab.cli", *args)
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), args
        assert a.stderr.replace("robustlab/__main__.py", "") == b.stderr.replace("robustlab/cli/__main__.py", "")
        assert (a.returncode == 0) == (args[0] != "no-such-command"), (args, a.returncode, a.stderr[-2000:])
    assert "usage: robustlab" in _run("-m", "robustlab", "--help").stdout
    assert "keyboard" in _run("-m", "robustlab", "perturbations", "--modality", "text").stdout


def test_rl_perturb_is_the_package_and_calls_the_registry():
    import robustlab as rl
    import robustlab.perturb.registry as R

    assert rl.perturb is sys.modules["robustlab.perturb"] and callable(rl.perturb)
    img = np.random.default_rng(3).integers(0, 255, (20, 27, 3), dtype=np.uint8)
    got, want = rl.perturb(img, "gaussian_noise", 3, seed=7), R.perturb(img, "gaussian_noise", 3, seed=7)
    assert np.array_equal(got.output, want.output) and got.record == want.record
    got = rl.perturb(img, name="defocus_blur", severity=2, seed=1)
    assert np.array_equal(got.output, R.perturb(img, "defocus_blur", 2, seed=1).output)
    text = "a small red circle at the top left"
    assert rl.perturb(text, "keyboard", 3, seed=2).output == R.perturb(text, "keyboard", 3, seed=2).output
    assert np.array_equal(rl.regenerate(json.loads(json.dumps(got.record)), img), got.output)
    # the package's own names are unchanged
    assert rl.perturb.perturb is R.perturb and rl.perturb.list_perturbations is rl.list_perturbations


def test_metrics_and_peeling_modules_are_callable_as_their_functions():
    import robustlab as rl
    import robustlab.diagnostics.peeling as P
    import robustlab.diagnostics.peeling.candidates as C
    import robustlab.metrics.retrieval as MR
    import robustlab.metrics.robustness as MB
    import robustlab.perturb.text.catalogue as TC
    from robustlab.perturb.text import catalogue

    assert rl.metrics.retrieval is MR and rl.metrics.robustness is MB and P.candidates is C and catalogue is TC
    scores = np.random.default_rng(0).normal(size=(6, 6))
    assert rl.metrics.retrieval(scores, list(range(6))) == MR.retrieval(scores, list(range(6)))
    clean, pert = 0.5, np.array([0.4, 0.25])
    got, want = rl.metrics.robustness(clean, pert), MB.robustness(clean, pert)
    assert set(got) == set(want) and all(np.array_equal(got[k], want[k]) for k in want)
    ex = P.Extraction("circle", ["red", "small"])
    assert [c.text for c in P.candidates(ex, "the small red circle")] == \
        [c.text for c in C.candidates(ex, "the small red circle")]
    assert catalogue("MLVP") == TC.catalogue("MLVP")
