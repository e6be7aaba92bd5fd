"""Where the built-in models' checkpoints live: ``assets/`` at the repository root.

A module of its own, with no robustlab imports, so the registry (which reports whether a built-in's checkpoint
is present) and the built-in model modules (which load them) both import it without importing each other.
"""
from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets"
STAGE1_PREFIX = "stage1."  # an earlier stage's heads, kept in a checkpoint for the recipes that start from them


def checkpoint_path(name: str) -> Path:
    """The path of a built-in checkpoint file (e.g. ``tiny-clip.safetensors``); it may not exist yet."""
    return ASSETS / name


__all__ = ["ASSETS", "STAGE1_PREFIX", "checkpoint_path"]
