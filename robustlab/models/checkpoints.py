"""Where the built-in models' checkpoints live: ``assets/`` at the repository root.

A module of its own, with no robustlab imports, so the registry (which reports whether a built-in's checkpoint
is present) and the built-in model modules (which load them) both import it without importing each other.
"""
from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def checkpoint_path(name: str) -> Path:
    """The path of a built-in checkpoint file (e.g. ``tiny-clip.safetensors``); it may not exist yet."""
    return ASSETS / name


__all__ = ["ASSETS", "checkpoint_path"]
