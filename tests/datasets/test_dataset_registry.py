"""A dataset's metadata is declared once, in ``register_dataset``: a registered class gets its name, kind, tasks and
splits from there and no class body repeats them; every ``list_*`` of a registry takes a wildcard first."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

from robustlab.datasets import registry as R
from robustlab.datasets.base import Dataset
from robustlab.tasks.registry import list_tasks

DATASETS = Path(R.__file__).parent


def test_registered_classes_get_their_metadata_from_the_registration():
    R._ensure_loaded()
    classes = 0
    for name, e in R._REGISTRY.items():
        b = e["builder"]
        if not inspect.isclass(b):
            continue
        classes += 1
        assert issubclass(b, Dataset)
        assert (b.name, b.kind, b.tasks, b.splits) == (name, e["kind"], e["tasks"], e["splits"]), name
    assert classes >= 12


def _dataset_classes() -> set[str]:
    R._ensure_loaded()
    out, todo = set(), [Dataset]
    while todo:
        c = todo.pop()
        todo += c.__subclasses__()
        if c is not Dataset and c.__module__.startswith("robustlab.datasets"):
            out.add(c.__name__)
    return out


def test_no_dataset_class_body_repeats_the_registration():
    classes = _dataset_classes()
    assert {"COCOCaptions", "ClipDataset", "SyntheticRefs", "RefCOCOBase"} <= classes
    repeated = []
    for path in sorted(DATASETS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or node.name not in classes:
                continue
            for stmt in node.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
                repeated += [f"{path.relative_to(DATASETS)}:{stmt.lineno} {node.name}.{t.id}" for t in targets
                             if isinstance(t, ast.Name) and t.id in R.CLASS_FIELDS + ("needs_root",)]
    assert not repeated, "declared in register_dataset, not in the class body:\n" + "\n".join(repeated)


def test_list_patterns_are_wildcards_first_and_case_insensitive():
    assert [e["name"] for e in R.list_datasets("REF*")] == [e["name"] for e in R.list_datasets("ref*")] == \
        ["refcoco", "refcoco+", "refcocog"]
    assert [e["name"] for e in R.list_datasets("ms*", task="retrieval", kind="video")] == ["msrvtt", "msvd"]
    assert [t["name"] for t in list_tasks("RET*")] == [t["name"] for t in list_tasks("ret*")] == ["retrieval"]
    assert list_tasks("no-such-*") == [] and R.list_datasets("no-such-*") == []
