"""docs/protocols-vs-papers.md (issue 48, "must show"): every shipped protocol has its section, its report screenshot,
the command that made it and its "not run here" list, and the generated parts come from the files themselves
(docs/scripts/protocol_doc.py renders them at build time), so they cannot drift from the protocols."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from robustlab.bench.protocol import load_protocol, shipped
from robustlab.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "scripts"))
import protocol_doc  # noqa: E402 - the page's generator lives with the docs' scripts
from protocol_screenshots import PLAN, bench_command  # noqa: E402

PAGE = ROOT / "docs" / "protocols-vs-papers.md"


def sections(text: str) -> dict[str, str]:
    """``{protocol: its section's text}``, from the ``## name — ...`` headings."""
    parts = re.split(r"^## ([\w.-]+) — .*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.fixture(scope="module")
def rendered() -> str:
    return protocol_doc.render(PAGE.read_text(encoding="utf-8"))


def test_every_shipped_protocol_has_a_screenshot_recipe_and_a_section():
    assert set(PLAN) == set(shipped())
    secs = sections(PAGE.read_text(encoding="utf-8"))
    assert set(secs) == set(shipped())
    marks = protocol_doc.marks(PAGE.read_text(encoding="utf-8"))
    assert marks == {"run": set(shipped()), "not-run": set(shipped())}
    for name, body in secs.items():
        assert f"<!-- run: {name} -->" in body and f"<!-- not-run: {name} -->" in body, name
        img = f"img/protocols/{name}.png"
        assert f"]({img})" in body, f"{name}: no screenshot in its section"
        assert (ROOT / "docs" / img).is_file(), f"docs/{img} is missing: run docs/scripts/protocol_screenshots.py"
        assert "| --- |" not in body  # tables use |---|
        assert re.search(r"^\|.*\|$", body, re.M), f"{name}: no transcribed table of the paper"


def test_the_page_is_in_the_nav_next_to_the_protocols_page():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"protocols\.md\n\s+- .*: protocols-vs-papers\.md", nav)


def test_the_rendered_page_lists_every_not_run_entry_of_every_protocol(rendered):
    assert not protocol_doc.MARK.search(rendered)
    secs = sections(rendered)
    for name in shipped():
        p = load_protocol(name)
        body = secs[name]
        rows = [line for line in body.splitlines() if line.startswith("| ") and line.endswith(" |")]
        for x in p.not_run():
            cell = protocol_doc._cell(x["perturbation"])
            row = next((r for r in rows if r.startswith(f"| {cell} | {x['axis']} |")), None)
            assert row is not None, f"{name}: {x['perturbation']} is not in its not-run list"
            assert protocol_doc._cell(x["reason"]) in row
        own = [x["perturbation"] for x in p.data.get("not_run") or []]
        for what in own:  # the file's own [[not_run]] entries are named as such
            row = next(r for r in rows if r.startswith(f"| {protocol_doc._cell(what)} |"))
            assert "the protocol file" in row
        if not p.not_run():
            assert "nothing: every cell of the protocol runs" in body


def test_the_rendered_commands_are_the_script_s_and_parse(rendered):
    secs = sections(rendered)
    parser = build_parser()
    for name in shipped():
        cmd = bench_command(name, Path(protocol_doc.RUNS) / name)
        assert " ".join(cmd) in secs[name]
        assert f"n = {PLAN[name]['n']}" in secs[name] and PLAN[name]["model"] in secs[name]
        args = parser.parse_args(cmd[1:])
        assert args.protocol == name and args.n == PLAN[name]["n"]
        assert PLAN[name]["model"] in load_protocol(name).data["models"], "the model is one of the protocol's own"


def test_a_reason_never_shows_the_building_machine_s_home_folder():
    assert protocol_doc._cell(f"files missing in {Path.home()}/.cache/robustlab/adain") == \
        "files missing in ~/.cache/robustlab/adain"
    assert protocol_doc._cell("a | b") == "a \\| b"
