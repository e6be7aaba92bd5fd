"""Hub access shared by every backend that may download weights (transformers, open_clip) and by the registry.

An offline check that answers in seconds (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``, else a short TCP probe of
the hub), a context that runs the hub libraries cache-only when offline and turns a failed load into the one-line
:class:`ModelUnavailable` (:func:`unavailable`: what, why, the underlying error and what works offline), and a
seeded random init that leaves the global RNG alone. It names no backend: the registry and the backends both build
on it.
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import Iterator
from urllib.parse import urlparse

import torch

from robustlab.models.base import ModelUnavailable

OFFLINE_ALTERNATIVES = "offline alternatives: builtin:tiny-clip (see `robustlab models`)"

PROBE_TIMEOUT_S = 3.0
_PROBE_TTL_S = 60.0
_probe_cache: dict[str, tuple[float, str | None]] = {}
_offline_lock = threading.RLock()
_TRUE = {"1", "on", "yes", "true"}


def offline_alternatives() -> str:
    return OFFLINE_ALTERNATIVES


def one_line(text, limit: int = 240) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def unavailable(what: str, why: str, err: BaseException | str | None = None) -> ModelUnavailable:
    """The one-line error: what failed, why, the underlying error, and what works offline."""
    detail = ""
    if err is not None:
        detail = one_line(f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else err)
        detail = f" [{detail}]"
    return ModelUnavailable(one_line(f"{what} unavailable: {why}{detail}; {OFFLINE_ALTERNATIVES}", 600))


def _hub_endpoint() -> str:
    try:
        from huggingface_hub import constants  # optional heavy dependency (comes with transformers / open_clip)

        return constants.ENDPOINT
    except Exception:  # pragma: no cover - huggingface_hub is a dependency of transformers and open_clip
        return "https://huggingface.co"


def offline_reason(url: str | None = None) -> str | None:
    """Why the hub (or ``url``) can't be reached from here, or None when it can.

    ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` are read at call time (the hub libraries read them at import);
    otherwise one TCP connection with a short timeout (to the proxy when one is set), cached for a minute.
    """
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"offline mode ({var} is set), so no hub access"
    u = urlparse(url or _hub_endpoint())
    proxy = os.environ.get(f"{u.scheme}_proxy".upper()) or os.environ.get(f"{u.scheme}_proxy") or \
        os.environ.get("ALL_PROXY") or os.environ.get("all_proxy")
    target = urlparse(proxy if "//" in (proxy or "") else f"http://{proxy}") if proxy else u
    host = target.hostname or "huggingface.co"
    port = target.port or (443 if target.scheme == "https" else 80)
    key = f"{host}:{port}"
    now = time.monotonic()
    hit = _probe_cache.get(key)
    if hit and now - hit[0] < _PROBE_TTL_S:
        return hit[1]
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            reason = None
    except OSError as e:
        reason = f"no network/hub access ({host} unreachable: {one_line(e, 80)})"
    _probe_cache[key] = (now, reason)
    return reason


@contextlib.contextmanager
def _hub_cache_only() -> Iterator[None]:
    """Run the hub libraries cache-only: cached files load, anything else fails at once (no retries)."""
    try:
        from huggingface_hub import constants  # optional heavy dependency (comes with transformers / open_clip)
    except ImportError:  # pragma: no cover
        yield
        return
    with _offline_lock:
        before = constants.HF_HUB_OFFLINE
        constants.HF_HUB_OFFLINE = True
        try:
            yield
        finally:
            constants.HF_HUB_OFFLINE = before


def _is_load_error(e: BaseException) -> bool:
    if isinstance(e, (OSError, RuntimeError, ValueError, ImportError)):
        return True
    root = type(e).__module__.split(".")[0]
    return root in {"httpx", "requests", "urllib3", "huggingface_hub", "open_clip", "transformers", "safetensors"}


@contextlib.contextmanager
def hub_access(what: str, offline: str | None, local: bool = False) -> Iterator[None]:
    """Wrap a load that may touch the hub: offline it runs cache-only; a failure becomes one-line ModelUnavailable."""
    with (_hub_cache_only() if offline else contextlib.nullcontext()):
        try:
            yield
        except ModelUnavailable:
            raise
        except Exception as e:
            if not _is_load_error(e):
                raise
            if offline:
                why = f"{offline} and no local copy in the cache"
            elif local:
                why = "could not load the local files"
            else:
                why = "download or load failed (no network/hub access, or no local weights)"
            raise unavailable(what, why, e) from e


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Deterministic random init that leaves the global RNG state alone."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


__all__ = ["OFFLINE_ALTERNATIVES", "PROBE_TIMEOUT_S", "offline_alternatives", "one_line", "unavailable",
           "offline_reason", "hub_access", "seeded"]
