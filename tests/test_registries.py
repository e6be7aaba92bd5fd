"""Every registry lists and gets the same in a fresh interpreter whatever was imported before (issue 46).

Each registry is a table of names declared once (``"module:attr"`` entries imported at the first lookup; the entries
that live in a layer above their registry in :data:`robustlab.ABOVE`). For each, a subprocess imports only the
registry's module, lists it and gets every name; the result must equal what a process that imported everything
first lists and gets.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# registry -> (the one module imported, the listing as a list of names, getting one name ``n`` -> its name)
REGISTRIES = {
    "perturbations": ("robustlab.perturb.specs", "[s.name for s in M.list_perturbations()]",
                      "M.get_perturbation(n).name"),
    "datasets": ("robustlab.datasets.registry", "[d['name'] for d in M.list_datasets()]", "M.get_entry(n)['name']"),
    "built-in models": ("robustlab.models.registry", "[m['name'] for m in M.list_builtin()]",
                        "M._BUILTIN[n]['name'] if M.get_builtin(n) else None"),
    "backends": ("robustlab.models.registry", "[b['prefix'] for b in M.list_backends()]",
                 "M.get_backend(n).prefix + ':'"),
    "tasks": ("robustlab.tasks.registry", "[t['name'] for t in M.list_tasks()]", "M.get(n).name"),
    "adaptation methods": ("robustlab.tasks.conditions", "[m['name'] for m in M.adaptation().list_methods()]",
                           "M.adaptation().get_method(n).name"),
    "hubness reduction": ("robustlab.diagnostics.reduction", "[m['name'] for m in M.list_methods()]",
                          "M.METHODS[n].name"),
    "interventions": ("robustlab.models.interventions", "list(M.names())", "n if M.parse(n) else None"),
    "protocols": ("robustlab.bench.protocol", "[p.name for p in M.list_protocols()]", "M.load_protocol(n).name"),
    "event clips": ("robustlab.perturb.video.mlvp.content", "['world']",
                    "'world' if M._event_clips()(4242, 0, 16).shape[1:] == (16, 16, 3) else None"),
}

EVERYTHING = ("import robustlab, robustlab.cli.parser, robustlab.adapt, robustlab.diagnostics.peeling, "
              "robustlab.bench.runner, robustlab.tasks.retrieval, robustlab.datasets.synthetic.datasets")


def _program(names: list[str], first: str = "") -> str:
    lines = ["import importlib, json", first, "out = {}"]
    for name in names:
        mod, listing, get = REGISTRIES[name]
        lines += [f"M = importlib.import_module({mod!r})", f"L = {listing}",
                  f"out[{name!r}] = [L, [{get} for n in L]]"]
    lines.append("print(json.dumps(out))")
    return "\n".join(ln for ln in lines if ln)


def _run(program: str) -> dict:
    r = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def everything() -> dict:
    return _run(_program(list(REGISTRIES), first=EVERYTHING))


@pytest.mark.parametrize("name", list(REGISTRIES))
def test_a_registry_imported_alone_lists_and_gets_what_everything_does(name, everything):
    listed, got = _run(_program([name]))[name]
    assert listed, f"{name}: nothing listed"
    assert got == listed, f"{name}: get() of a listed name gave another"
    assert [listed, got] == everything[name], f"{name} depends on what was imported before"


def test_the_perturbation_table_is_what_is_registered():
    """Each built-in's ``@register`` sits in the module the table names, and the table is the listing order."""
    from robustlab.perturb.specs import _REGISTRY, list_perturbations
    from robustlab.perturb.table import PERTURBATIONS

    builtins = [s for s in list_perturbations() if s.name in PERTURBATIONS]
    assert [s.name for s in builtins] == list(PERTURBATIONS)
    assert all(s.fn.__module__ == PERTURBATIONS[s.name] for s in builtins)
    assert {n for n, s in _REGISTRY.items() if s.fn.__module__.startswith("robustlab.")} <= set(PERTURBATIONS)


def test_the_task_table_names_each_task_once():
    import robustlab
    from robustlab.tasks import registry as R

    assert not set(R.TASKS) & set(robustlab.ABOVE["tasks"])
    assert R.names() == sorted({*R.TASKS, *robustlab.ABOVE["tasks"]})
    assert all(R.get(n).name == n for n in R.names())


def test_a_builtin_models_metadata_is_declared_once():
    """What ``list_models`` lists is what the model class (and so ``info()``) says."""
    from robustlab.models import registry as R

    R.list_builtin()
    for name, e in R._BUILTIN.items():
        assert (e["cls"].name, e["cls"].description) == (name, e["description"])


def test_a_perturbation_of_a_builtins_name_registered_first_replaces_it_for_good():
    """``override=True`` from a user's module before anything was looked up: the built-in loads first, the user's
    stays (what is registered does not depend on whether a lookup came before)."""
    program = ("from robustlab.perturb.registry import register, get_perturbation\n"
               "@register('gaussian_noise', modality='image', category='test', source='test', override=True,\n"
               "          severity_table={s: {} for s in range(1, 6)})\n"
               "def mine(x, params, rng):\n    return x\n"
               "print(get_perturbation('gaussian_noise').source)\n")
    r = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "test", r.stderr[-1000:]
