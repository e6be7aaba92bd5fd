"""Device selection: CUDA when present, else CPU (``ROBUSTLAB_DEVICE`` overrides).

A device robustlab runs on is ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` with N one of this machine's CUDA devices,
or ``mps`` where PyTorch has it. Anything else (``tpu:9``, ``meta``, ``cuda:9`` on a machine with one GPU, ``cuda``
with no GPU) is a :class:`DeviceError`: one line, raised before a model is built, never PyTorch's own message.
"""
from __future__ import annotations

import os
import re

import torch

KINDS = ("cpu", "cuda", "mps")  # the device types robustlab runs on


class DeviceError(ValueError, RuntimeError):
    """A device robustlab cannot run on here (one line). A ValueError (bad input) and, as before, a RuntimeError."""


def _choices() -> str:
    return ", ".join(["auto"] + describe_devices())


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` (or ``ROBUSTLAB_DEVICE`` when it is None, ``""`` or ``"auto"``) as a torch.device this machine
    has; :class:`DeviceError` otherwise. A ``torch.device`` is returned as it is."""
    if isinstance(device, torch.device):
        return device
    source = ""
    if device in (None, "", "auto"):
        device, source = os.environ.get("ROBUSTLAB_DEVICE", "auto"), " (from ROBUSTLAB_DEVICE)"
    text = str(device).strip().lower()
    if text in ("", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    m = re.fullmatch(r"([a-z_]+)(?::(\d{1,4}))?", text)
    try:
        if m is None:
            raise RuntimeError("malformed")
        dev = torch.device(text)
    except (RuntimeError, ValueError):
        raise DeviceError(f"unknown device {str(device)!r}{source}; devices here: {_choices()}") from None
    if dev.type not in KINDS:
        raise DeviceError(f"{str(device)!r}{source} is not a device robustlab runs on; devices here: {_choices()}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"device {str(device)!r}{source} was asked for but CUDA is not available here; use "
                              "'cpu' or 'auto'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceError(f"device {str(device)!r}{source}: this machine has {torch.cuda.device_count()} CUDA "
                              f"device(s); devices here: {_choices()}")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise DeviceError(f"device {str(device)!r}{source} was asked for but MPS is not available here; use 'cpu' "
                          "or 'auto'")
    if dev.type == "cpu" and dev.index not in (None, 0):
        raise DeviceError(f"unknown device {str(device)!r}{source}; devices here: {_choices()}")
    return dev


def describe_devices() -> list[str]:
    """Devices a user can pick, best first."""
    out = []
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    out.append("cpu")
    return out
