"""Cells that lie (issue 44, finding 9): a resumed sweep checks every cell file it would skip against the cell schema
and the SHA-256 checksum written with it, and recomputes one that fails (one log line each), instead of skipping a
truncated, empty, malformed, edited or misplaced file as done. Cells written before checksums (no ``checksum`` key,
a valid schema) are still accepted; the report skips a cell whose checksum does not match, with a warning."""
import json
import logging
import shutil

import pytest

from robustlab.bench import SweepSpec, condition_grid, pending, run_sweep
from robustlab.bench.cellfile import checksum, problem

SPEC = dict(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "test", "n": 8},
            conditions=condition_grid(["gaussian_noise", "contrast"], [1, 2]))


def _stable(path) -> dict:
    d = json.loads(path.read_text())
    d["extra"].pop("seconds", None)
    return d


def _cells(out) -> dict:
    return {p.name: _stable(p) for p in sorted((out / "cells").glob("*.json"))}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run of SPEC (5 cells), copied by each test that damages it."""
    out = tmp_path_factory.mktemp("ref") / "run"
    st = run_sweep(SweepSpec(**SPEC), out)
    assert st.done == 5
    return out


def _copy(reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(reference, out)
    return out


def test_every_cell_is_written_with_a_checksum_that_validates(reference):
    spec = SweepSpec(**SPEC)
    for c in spec.cells():
        d = json.loads((reference / "cells" / f"{c.key}.json").read_text())
        assert d["checksum"].startswith("sha256:") and d["checksum"] == checksum(d)
        assert problem(d, c.key) is None
        assert problem(d, spec.cells()[0].key if c != spec.cells()[0] else spec.cells()[1].key) is not None
    # the time a cell took is the one field outside the checksum: it differs between two runs of the same cell
    d = json.loads((reference / "cells" / f"{spec.cells()[0].key}.json").read_text())
    d["extra"]["seconds"] = 123.0
    assert problem(d, spec.cells()[0].key) is None


def test_resume_recomputes_truncated_empty_malformed_edited_and_misplaced_cells(reference, tmp_path, caplog):
    spec = SweepSpec(**SPEC)
    out = _copy(reference, tmp_path)
    cells = spec.cells()
    path = {c.key: out / "cells" / f"{c.key}.json" for c in cells}
    misplaced = path[cells[1].key].read_bytes()  # a valid, checksummed cell of another condition
    raw = path[cells[0].key].read_bytes()
    path[cells[0].key].write_bytes(raw[: len(raw) // 2])  # truncated by something other than robustlab's writer
    path[cells[1].key].write_bytes(b"")  # empty
    path[cells[2].key].write_text(json.dumps({"model": "builtin:tiny-clip", "metrics": "oops"}))  # not a cell
    d = json.loads(path[cells[3].key].read_text())
    d["metrics"]["t2i"]["R@1"] = 0.999  # a number edited after the cell was written
    path[cells[3].key].write_text(json.dumps(d, indent=1))
    path[cells[4].key].write_bytes(misplaced)  # another cell's file in this one's place
    assert pending(spec, out) == cells  # none of them is done

    with caplog.at_level(logging.WARNING, logger="robustlab.bench"):
        st = run_sweep(spec, out)
    assert st.done == 5 and st.skipped == 0 and sorted(st.invalid) == sorted(c.key for c in cells)
    lines = [r.getMessage() for r in caplog.records if r.name == "robustlab.bench"]
    assert len(lines) == 5 and all("\n" not in ln and "recomputing it" in ln for ln in lines), lines
    said = "\n".join(lines)
    for why in ("not JSON", "empty", "lacks 'model_fingerprint'", "checksum", "written for another cell"):
        assert why in said, said
    assert _cells(out) == _cells(reference)  # the same numbers as the uninterrupted run
    assert pending(spec, out) == []


def test_a_cell_without_a_checksum_but_a_valid_schema_is_accepted(reference, tmp_path):
    """Back-compatible: runs written before checksums resume without recomputing their cells."""
    spec = SweepSpec(**SPEC)
    out = _copy(reference, tmp_path)
    for c in spec.cells():
        p = out / "cells" / f"{c.key}.json"
        d = json.loads(p.read_text())
        d.pop("checksum")
        p.write_text(json.dumps(d, indent=1))
    assert pending(spec, out) == []
    st = run_sweep(spec, out)
    assert st.done == 0 and st.skipped == 5 and st.invalid == []
    # ... but a schema problem is one even without a checksum
    p = out / "cells" / f"{spec.cells()[2].key}.json"
    d = json.loads(p.read_text())
    d["n"] = "eight"
    p.write_text(json.dumps(d))
    assert pending(spec, out) == [spec.cells()[2]]


@pytest.mark.parametrize("mutate, says", [
    (lambda d: d.pop("metrics"), "lacks 'metrics'"),
    (lambda d: d.update(n=0), "'n' must be a positive integer"),
    (lambda d: d.update(n=True), "'n' must be a positive integer"),
    (lambda d: d.update(conditions=[]), "'conditions' must be an object"),
    (lambda d: d.update(task=3), "'task' must be a string"),
    (lambda d: d.update(extra=None), "'extra' must be an object"),
    (lambda d: d["extra"].update(cell="another__key"), "written for another cell"),
    (lambda d: d.update(checksum="sha256:" + "0" * 64), "checksum"),
    (lambda d: d.update(checksum=5), "checksum"),
])
def test_cell_schema_problems_are_one_line(reference, mutate, says):
    key = SweepSpec(**SPEC).cells()[1].key
    d = json.loads((reference / "cells" / f"{key}.json").read_text())
    mutate(d)
    why = problem(d, key)
    assert why and says in why and "\n" not in why, why
    assert problem([1, 2], key) == "not a JSON object"


def test_the_report_skips_a_cell_whose_checksum_fails_with_a_warning(reference, tmp_path):
    pytest.importorskip("pandas")
    from robustlab.bench.report_data import load_run

    spec = SweepSpec(**SPEC)
    out = _copy(reference, tmp_path)
    p = out / "cells" / f"{spec.cells()[3].key}.json"
    d = json.loads(p.read_text())
    d["metrics"]["t2i"]["R@1"] = 0.999
    p.write_text(json.dumps(d, indent=1))
    run = load_run(out)
    assert len(run.results) == 4
    assert any(p.name in w and "checksum" in w for w in run.warnings), run.warnings
