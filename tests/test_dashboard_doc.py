"""docs/dashboard.md tours every page of the app (issue 48: the Failures page was missing): one section per page of
app.VIEWS, headed by its title, in the app's order, each with its screenshot."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def views() -> list[tuple[str, str]]:
    """(file, title) of app.VIEWS, read from app.py's source (no Streamlit import)."""
    tree = ast.parse((ROOT / "app.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "VIEWS" for t in node.targets):
            return [(e.elts[0].value, e.elts[1].value) for e in node.value.elts]
    raise AssertionError("app.VIEWS not found")


def test_every_page_has_its_section_in_the_apps_order():
    text = (ROOT / "docs" / "dashboard.md").read_text()
    heads = re.findall(r"^## ([^:\n]+)", text, re.M)
    titles = [t for _, t in views()]
    assert len(titles) == 11 and "Failures" in titles
    assert [h for h in heads if h in titles] == titles
    words = {10: "ten", 11: "eleven", 12: "twelve"}
    assert f"shared by {words[len(titles)]} pages" in text
    for title in titles:  # each section shows its page
        section = text.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]
        imgs = re.findall(r"!\[[^\]]*\]\((img/[^)]+)\)", section)
        assert imgs and all((ROOT / "docs" / i).is_file() for i in imgs), title
