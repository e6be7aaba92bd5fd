"""Device selection: CUDA when present, else CPU (``ROBUSTLAB_DEVICE`` overrides)."""
from __future__ import annotations

import os

import torch


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    if isinstance(device, torch.device):
        return device
    if device in (None, "", "auto"):
        device = os.environ.get("ROBUSTLAB_DEVICE", "auto")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} was asked for but CUDA is not available here; use 'cpu' or 'auto'")
    return dev


def describe_devices() -> list[str]:
    """Devices a user can pick, best first."""
    out = []
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    out.append("cpu")
    return out
