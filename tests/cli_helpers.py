"""Shared by the CLI tests: a command's stderr is exactly one ``robustlab: …`` line, never a traceback."""
from __future__ import annotations


def one_line(capsys, *, says=()) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("robustlab: "), err
    assert "Traceback" not in err, err
    for s in says:
        assert s in lines[0], err
    return lines[0]
