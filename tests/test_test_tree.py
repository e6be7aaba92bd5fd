"""The test tree's own shape: one conftest. The tests run in pytest's default "prepend" import mode (no
``__init__.py``), where every ``conftest.py`` is imported as the module ``conftest``; a second one (a sub-folder's)
shadows ``tests/conftest.py`` for the tests that import its helpers (``from conftest import run_server``), and their
collection fails. Shared fixtures of one folder go in a plain module its tests import
(``tests/adapt/adapt_fixtures.py``)."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_the_only_conftest_is_the_root_one():
    found = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("conftest.py"))
    assert found == ["conftest.py"], found


def test_the_root_conftest_is_the_one_the_browser_tests_import():
    import conftest

    assert Path(conftest.__file__).resolve() == TESTS / "conftest.py"
    assert callable(conftest.run_server)
