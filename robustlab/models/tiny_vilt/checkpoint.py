"""Saving and loading tiny-vilt checkpoints (safetensors; the config in the metadata). Part of
:mod:`robustlab.models.tiny_vilt`."""
from __future__ import annotations

import json
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import load_file

from robustlab.models.base import ModelUnavailable
from robustlab.models.builtin import save_checkpoint
from robustlab.models.tiny_vilt.config import ADDED_OPTIONS_OFF, TINY_VILT_CONFIG
from robustlab.models.tiny_vilt.net import TinyViltNet


def save_tiny_vilt(net: TinyViltNet, path: Path, meta: dict) -> None:
    save_checkpoint(net, path, meta)


def load_tiny_vilt(path: Path) -> tuple[TinyViltNet, dict]:
    path = Path(path)
    if not path.exists():
        raise ModelUnavailable(f"tiny-vilt checkpoint {path} is missing; run `robustlab train tiny-vilt` to make it")
    try:
        with safe_open(str(path), "pt") as f:
            md = f.metadata() or {}
        # a checkpoint stores its whole config; options added since are off for one that does not name them
        cfg = {**TINY_VILT_CONFIG, **ADDED_OPTIONS_OFF, **json.loads(md.get("config", "{}"))}
        meta = {k: json.loads(v) for k, v in md.items() if k != "config"}
        net = TinyViltNet(cfg)
        net.load_state_dict(load_file(str(path)))
    except Exception as e:  # noqa: BLE001 - a corrupt or foreign file (SafetensorError, size mismatch, bad JSON)
        raise ModelUnavailable(f"tiny-vilt checkpoint {path} is unreadable ({str(e).splitlines()[0][:200]}); "
                               f"run `robustlab train tiny-vilt` to remake it") from None
    net.eval()
    return net, meta
