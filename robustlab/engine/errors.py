"""Errors of the inference core that the layers above share."""
from __future__ import annotations


class ModelUnavailable(RuntimeError):
    """A model that cannot be loaded here (no weights offline, missing package). The message is one line."""


__all__ = ["ModelUnavailable"]
