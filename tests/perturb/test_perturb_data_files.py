"""Perturbation cards as data (issue 46): the ``<module>.toml`` beside a perturbation module declares each of its
perturbations' metadata, variants, notes and severity tables (:func:`robustlab.perturb.specs.card_from_data`);
``register()`` keeps the behaviour. Checked here: every data file's tables are the registered specs (no orphan, no
card declared twice), the file format's two table shapes and its one-line errors, and that a fresh install ships the
files (``pyproject.toml``'s package data)."""
from __future__ import annotations

import inspect
import sys
import textwrap
import types
from fnmatch import fnmatch
from pathlib import Path

import pytest

import robustlab.perturb  # noqa: F401  (the built-ins)
from robustlab.perturb import specs as S

ROOT = Path(__file__).resolve().parents[2]
PERTURB = ROOT / "robustlab" / "perturb"
DATA_FILES = sorted(PERTURB.rglob("*.toml"))


def test_every_data_file_table_is_a_registered_perturbation_of_the_module_beside_it():
    assert len(DATA_FILES) >= 8
    for path in DATA_FILES:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        assert path.with_suffix(".py").is_file(), f"{path.name} has no module beside it"
        names = list(S._read_data_file(str(path)))
        assert names, path.name
        for name in names:
            spec = S.get_perturbation(name)
            assert spec.fn.__module__ == module, (name, spec.fn.__module__, module)
            card = S._card(name, **S.card_from_data(name, path))
            assert (spec.modality, spec.category, spec.source, spec.tags, spec.default_variant, spec.variants,
                    spec.variant_notes) == (card["modality"], card["category"], card["source"], card["tags"],
                                            card["default_variant"], card["variants"], card["variant_notes"])


def test_a_module_with_a_data_file_declares_every_card_there():
    """One place per fact: a module beside a data file registers no card in code."""
    files = {".".join(p.relative_to(ROOT).with_suffix("").parts): p for p in DATA_FILES}
    for spec in S.list_perturbations():
        path = files.get(spec.fn.__module__)
        if path is not None:
            assert spec.name in S._read_data_file(str(path)), f"{spec.name} is not in {path.name}"


def test_register_keeps_the_behaviour_and_the_card_is_data():
    params = inspect.signature(S.register).parameters
    keywords = [p for p in params.values() if p.kind is p.KEYWORD_ONLY]
    assert len(keywords) == 10 and not {p.name for p in keywords} & set(S.CARD_KEYWORDS)
    assert params["card"].kind is inspect.Parameter.VAR_KEYWORD
    with pytest.raises(TypeError, match="unexpected keyword argument 'severity'"):
        S.register("_test_typo", severity={})


@pytest.fixture
def module_with_data(tmp_path):
    """A throwaway module ``_test_data_mod`` (a file beside its data file) and a function of it to register."""
    made = []

    def make(toml: str, name: str = "_test_data_mod"):
        py = tmp_path / f"{name}.py"
        py.write_text("")
        (tmp_path / f"{name}.toml").write_text(textwrap.dedent(toml))
        mod = types.ModuleType(name)
        mod.__file__ = str(py)
        sys.modules[name] = mod
        made.append(name)
        S._read_data_file.cache_clear()

        def fn(x, params, rng):
            """From the docstring."""
            return x

        fn.__module__ = name
        return fn

    yield make
    for name in made:
        sys.modules.pop(name, None)
    for n in [n for n in S._REGISTRY if n.startswith("_test_data_")]:
        del S._REGISTRY[n]
    S._read_data_file.cache_clear()


def test_a_data_file_gives_the_card_in_columns_or_one_table_per_severity(module_with_data):
    fn = module_with_data("""
        [_test_data_cols]
        modality = "image"
        category = "test"
        tags = ["random"]
        source = "tests"
        variants.main.note = "the default: listed first"
        variants.main.sigma = [0.1, 0.2, 0.3, 0.4, 0.5]
        variants.main.mode = "same at every severity"

        [_test_data_cols.variants.rows]
        1 = {k = 1}
        2 = {k = 2}
        3 = {k = 3, extra = true}
        4 = {k = 4}
        5 = {k = 5}
        """)
    S.register("_test_data_cols", batched=True)(fn)
    spec = S.get_perturbation("_test_data_cols")
    assert spec.default_variant == "main" and list(spec.variants) == ["main", "rows"]
    assert spec.params(2) == {"sigma": 0.2, "mode": "same at every severity"}
    assert spec.params(3, "rows") == {"k": 3, "extra": True} and spec.params(4, "rows") == {"k": 4}
    assert spec.variant_notes == {"main": "the default: listed first"}
    assert spec.description == "From the docstring." and spec.tags == ("random",) and spec.batched


@pytest.mark.parametrize("toml, message", [
    ("[_test_data_bad]\nmodality = 'image'\ncategory = 't'\nsource = 't'\nseverity = 1\n"
     "[_test_data_bad.variants.v]\na = [1, 2, 3, 4, 5]\n", r"unknown key\(s\) severity"),
    ("[_test_data_bad]\nmodality = 'image'\ncategory = 't'\n[_test_data_bad.variants.v]\na = 1\n", "lacks source"),
    ("[_test_data_bad]\nmodality = 'image'\ncategory = 't'\nsource = 't'\n"
     "[_test_data_bad.variants.v]\na = [1, 2, 3]\n", "a lists 3 values"),
    ("[_test_data_bad]\nmodality = 'audio'\ncategory = 't'\nsource = 't'\n"
     "[_test_data_bad.variants.v]\na = 1\n", "modality must be one of"),
    ("[_test_data_bad]\nmodality = 'image'\ncategory = 't'\nsource = 't'\n"
     "[_test_data_bad.variants.v]\n1 = {a = 1}\n2 = {a = 2}\n", "lacks severities"),
    ("[_test_data_other]\nmodality = 'image'\ncategory = 't'\nsource = 't'\n"
     "[_test_data_other.variants.v]\na = 1\n", r"no \[_test_data_bad\] table in _test_data_mod.toml"),
    ("[_test_data_bad\n", "not valid TOML"),
])
def test_a_bad_data_file_is_one_line_naming_the_file(module_with_data, toml, message):
    fn = module_with_data(toml)
    with pytest.raises(ValueError, match=message) as e:
        S.register("_test_data_bad")(fn)
    assert "\n" not in str(e.value) and "_test_data_bad" not in S._REGISTRY


def test_a_card_is_declared_once(module_with_data):
    fn = module_with_data("[_test_data_twice]\nmodality = 'image'\ncategory = 't'\nsource = 't'\n"
                          "[_test_data_twice.variants.v]\na = 1\n")
    with pytest.raises(ValueError, match="both in _test_data_mod.toml and given to register"):
        S.register("_test_data_twice", modality="image", category="t", source="t",
                   severity_table={s: {} for s in range(1, 6)})(fn)
    fn.__module__ = "_test_data_nowhere"
    with pytest.raises(ValueError, match="no data file _test_data_nowhere.toml beside its module and no card"):
        S.register("_test_data_twice")(fn)


def test_a_fresh_install_ships_the_data_files():
    """Every data file matches a ``[tool.setuptools.package-data]`` pattern of pyproject.toml."""
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["robustlab"]
    for path in DATA_FILES:
        rel = path.relative_to(ROOT / "robustlab").as_posix()
        assert any(fnmatch(rel, p) and rel.count("/") == p.count("/") for p in patterns), rel
