"""Append the registries' catalogues to their pages at build time (mkdocs-gen-files).

Below each page's hand-written introduction, the catalogue comes from the registry of the code being documented,
so it cannot drift from it:

- perturbations.md, from ``robustlab.list_perturbations()``: one summary table per modality (name, category, source
  papers, variants, availability here) and one section per perturbation (description, full source, inputs,
  variants with their notes, the default variant's severity table);
- datasets.md, from ``robustlab.datasets.list()``: name, kind, tasks, splits, what the folder needs, the paper;
- protocols-vs-papers.md, its marks filled in by protocol_doc.py: the command behind each screenshot and each
  protocol's "not run here" list.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the docs build runs from a checkout, installed or not
    sys.path.insert(0, str(ROOT))

import robustlab  # noqa: E402

MODALITY_TITLES = {"image": "Image perturbations", "video": "Video perturbations", "text": "Text perturbations"}
FAMILIES = (("p1", "Schiappa et al. [P1]"), ("p2", "Qiu et al. [P2]"), ("mlvp", "MLVP"), ("imagenet-c", "ImageNet-C"))


def esc(text: str) -> str:
    """Plain text safe in Markdown (and in a table cell)."""
    out = str(text).replace("\\", "\\\\")
    for ch in "`*_[]#|":
        out = out.replace(ch, "\\" + ch)
    return out.replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def family(spec) -> str:
    tags = set(spec.tags)
    names = [label for tag, label in FAMILIES if tag in tags]
    return ", ".join(names) or esc(spec.source.split(";")[0])


def variants(spec) -> str:
    return ", ".join(f"**{esc(v)}**" if v == spec.default_variant else esc(v) for v in spec.variants)


def params(p: dict) -> str:
    return esc(", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in p.items()))


def section(spec) -> list[str]:
    lines = [f"### {spec.name}", ""]
    if spec.description:
        lines += [esc(spec.description), ""]
    avail = "available here" if spec.available else f"**unavailable here**: {esc(spec.reason)}"
    lines += [f"- **modality**: {spec.modality} (accepts {', '.join(spec.applies_to)}); **category**: "
              f"{esc(spec.category)}; {avail}",
              f"- **source**: {esc(spec.source)}"]
    if spec.tags:
        lines.append(f"- **tags**: {', '.join(f'`{t}`' for t in spec.tags)}")
    if spec.output_note:
        lines.append(f"- **output**: {esc(spec.output_note)}")
    for v in spec.variants:
        note = spec.variant_notes.get(v, "")
        default = " (default)" if v == spec.default_variant else ""
        lines.append(f"- **variant `{v}`**{default}" + (f": {esc(note)}" if note else ""))
    lines += ["", f"| severity | parameters (variant `{spec.default_variant}`) |", "|---:|---|"]
    lines += [f"| {s} | {params(p)} |" for s, p in spec.severity_table.items()]
    return lines + [""]


def catalogue() -> str:
    specs = robustlab.list_perturbations()
    by_mod = {m: [s for s in specs if s.modality == m] for m in MODALITY_TITLES}
    n_avail = sum(s.available for s in specs)
    out = ["", "## Summary", "",
           f"{len(specs)} perturbations are registered ({n_avail} available on the machine that built these pages): "
           + ", ".join(f"{len(v)} {m}" for m, v in by_mod.items()) + ".", ""]
    for mod, group in by_mod.items():
        out += [f"## {MODALITY_TITLES[mod]}", "",
                "| name | category | source papers | variants (default in bold) | available |",
                "|---|---|---|---|---|"]
        for s in group:
            ok = "✓" if s.available else "✗ (see below)"
            out.append(f"| [{esc(s.name)}](#{s.name}) | {esc(s.category)} | {family(s)} | {variants(s)} | {ok} |")
        out.append("")
        for s in group:
            out += section(s)
    return "\n".join(out) + "\n"


def datasets() -> str:
    out = ["", "## Registered datasets", "",
           "| name | kind | tasks | splits (default in bold) | what it needs | paper |", "|---|---|---|---|---|---|"]
    for d in robustlab.datasets.list():
        splits = ", ".join(f"**{esc(s)}**" if s == d["default_split"] else esc(s) for s in d["splits"])
        out.append(f"| `{d['name']}` | {esc(d['kind'])} | {esc(', '.join(d['tasks']))} | {splits} | "
                   f"{esc(d['needs'])} | {esc(d['paper']) or '—'} |")
    return "\n".join(out) + "\n"


with mkdocs_gen_files.open("perturbations.md", "a") as f:
    f.write(catalogue())
with mkdocs_gen_files.open("datasets.md", "a") as f:
    f.write(datasets())

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protocol_doc import PAGE, render  # noqa: E402 - the protocols' page: runs and "not run here" lists

with mkdocs_gen_files.open(PAGE.name, "w") as f:
    f.write(render(PAGE.read_text(encoding="utf-8")))
