"""The generated parts of docs/protocols-vs-papers.md, filled in at build time by gen_catalogues.py.

The page marks two places per protocol, each replaced here from the files themselves so that it cannot drift:

- ``<!-- run: NAME -->``: the command that made ``img/protocols/NAME.png``, its n, model and data (from
  :data:`protocol_screenshots.PLAN`, the table the screenshot script runs);
- ``<!-- not-run: NAME -->``: the protocol's "not run here" list, from
  :meth:`robustlab.bench.protocol.Protocol.not_run`, the same list ``--dry-run`` and the report print: the file's own
  ``[[not_run]]`` entries (settings and baselines of the paper it does not express) and its perturbations that are
  unavailable on the machine that built the pages (hub weights, AdaIN files).

tests/docs/test_protocols_vs_papers.py checks that every shipped protocol has both marks and that the rendered lists
hold every entry.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protocol_screenshots import PLAN, bench_command  # noqa: E402 - the screenshot script's table

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "protocols-vs-papers.md"
MARK = re.compile(r"<!-- (run|not-run): ([\w.-]+) -->")
RUNS = "/tmp/protocol-runs"


def _cell(text) -> str:
    """Plain text safe in a Markdown table cell, without the building machine's home folder."""
    out = str(text).replace(str(Path.home()), "~").replace("\\", "\\\\").replace("|", "\\|")
    for ch in "`*_[]":
        out = out.replace(ch, "\\" + ch)
    return out.replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def run_block(name: str) -> str:
    p = PLAN[name]
    cmd = " ".join(bench_command(name, Path(RUNS) / name))
    if p["dataset"]:
        data = f"`{p['dataset']}` (standing in for the paper's data)"
    else:
        from robustlab.bench.protocol import load_protocol

        data = f"`{load_protocol(name).dataset.get('name')}` (the protocol's own)"
    return (f"Made with n = {p['n']} on {data}, model `{p['model']}` (one of the protocol's), by "
            f"`python docs/scripts/protocol_screenshots.py --only {name}`, which runs\n\n"
            f"```bash\n{cmd}\nrobustlab bench-report {RUNS}/{name}\n```\n")


def not_run_block(name: str) -> str:
    from robustlab.bench.protocol import load_protocol

    p = load_protocol(name)
    own = {x["perturbation"] for x in p.data.get("not_run") or []}
    rows = p.not_run()
    if not rows:
        return "**Not run here:** nothing: every cell of the protocol runs on this machine.\n"
    out = [f"**Not run here** ({len(rows)}; the list `robustlab bench --protocol {name} --dry-run` and the report "
           "print):", "", "| what | axis | category | why | from |", "|---|---|---|---|---|"]
    for x in rows:
        src = ("the protocol file (`[[not_run]]`)" if x["perturbation"] in own
               else "unavailable on the machine that built these pages")
        out.append(f"| {_cell(x['perturbation'])} | {_cell(x['axis'])} | {_cell(x['category']) or '—'} | "
                   f"{_cell(x['reason'])} | {src} |")
    return "\n".join(out) + "\n"


def render(text: str) -> str:
    """The page with every mark replaced."""
    return MARK.sub(lambda m: (run_block if m.group(1) == "run" else not_run_block)(m.group(2)), text)


def marks(text: str) -> dict[str, set[str]]:
    """``{"run": {names}, "not-run": {names}}``: the protocols each kind of mark names."""
    found: dict[str, set[str]] = {"run": set(), "not-run": set()}
    for kind, name in MARK.findall(text):
        found[kind].add(name)
    return found
