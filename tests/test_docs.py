"""The README stays short and the docs stay whole: every relative link points to a file that exists, and every
benchmark result file is named on a page. (The strict MkDocs build itself runs in .ci/run, not here.)"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
MAX_README_LINES = 250

# [text](target) and ![alt](target), with an optional "title"; reference-style definitions: [id]: target
INLINE_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
FENCE = re.compile(r"^(\s*)(```|~~~).*?^\1\2\s*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def links(md: str) -> list[str]:
    """The link targets of a Markdown text, outside code blocks and code spans."""
    text = CODE_SPAN.sub("", FENCE.sub("", md))
    return INLINE_LINK.findall(text) + REF_DEF.findall(text)


def is_relative(target: str) -> bool:
    return not (re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")))


def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move detail into docs/"


def test_link_checker_sees_links():
    """The checker itself: it finds inline, image and reference links, and skips code and external targets."""
    md = ("see [a](a.md#x) and ![b](img/b.png \"t\")\n[c]: c.md\n`[d](d.md)`\n```\n[e](e.md)\n```\n"
          "[f](https://example.org) [g](#anchor)\n")
    found = links(md)
    assert found == ["a.md#x", "img/b.png", "https://example.org", "#anchor", "c.md"]
    assert [t for t in found if is_relative(t)] == ["a.md#x", "img/b.png", "c.md"]


def test_every_relative_link_points_to_a_file():
    pages = [README, *doc_pages()]
    assert len(pages) > 10, "the docs pages were not found"
    broken = []
    for page in pages:
        for target in links(page.read_text(encoding="utf-8")):
            if not is_relative(target):
                continue
            path = unquote(target.split("#", 1)[0].split("?", 1)[0])
            if path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_readme_links_the_docs_pages():
    text = README.read_text(encoding="utf-8")
    linked = {Path(t.split("#", 1)[0]).name for t in links(text) if t.startswith("docs/")}
    for page in ("installation.md", "dashboard.md", "cli.md", "python-api.md", "perturbations.md", "models.md",
                 "datasets.md", "sweeps.md", "security.md", "benchmarks.md", "architecture.md"):
        assert page in linked, f"README.md does not link docs/{page}"


def test_every_result_file_is_named_in_the_docs():
    named = "\n".join(p.read_text(encoding="utf-8") for p in [README, *doc_pages()])
    files = sorted(p for p in RESULTS.iterdir() if p.is_file())
    assert files, "benchmarks/results/ is empty"
    unnamed = [p.name for p in files if f"benchmarks/results/{p.name}" not in named and
               not re.search(rf"(?<![\w.-]){re.escape(p.name)}(?![\w.-])", named)]
    assert not unnamed, ("result files named on no page (README.md or docs/**/*.md); describe them on "
                         "docs/benchmarks.md or remove them: " + ", ".join(unnamed))
