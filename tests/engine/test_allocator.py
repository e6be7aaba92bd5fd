"""glibc malloc tuning (robustlab.perturb.allocator): applied by the CLI and the dashboard, opt-out by env.

The setting is process-wide and cannot be undone, so the behaviour is checked in fresh interpreters.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

import robustlab.cli as cli

PROBE = ("import json; from robustlab.perturb.allocator import tune_allocator, allocator_state; "
         "a = tune_allocator(); b = tune_allocator(); print(json.dumps([a, b, allocator_state()]))")


def _probe(**env):
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
                    reason="mallopt tuning is glibc-only")
def test_tuning_applies_once_on_glibc():
    first, again, state = _probe(ROBUSTLAB_MALLOC_TUNING="1")
    assert first is True and again is True
    assert state == {"applied": True, "mmap_threshold": 32 << 20, "trim_threshold": 64 << 20}


@pytest.mark.parametrize("value", ["0", "off", "False"])
def test_tuning_can_be_turned_off(value):
    first, again, state = _probe(ROBUSTLAB_MALLOC_TUNING=value)
    assert first is False and again is False
    assert state == {"applied": False, "mmap_threshold": None, "trim_threshold": None}


def test_cli_tunes_the_allocator_before_running_a_command(monkeypatch, capsys):
    from robustlab.perturb import allocator as alloc

    calls = []
    monkeypatch.setattr(alloc, "tune_allocator", lambda: calls.append(1) or True)
    assert cli.main(["perturbations", "--modality", "image"]) == 0
    assert calls == [1]
    assert "gaussian_noise" in capsys.readouterr().out


def test_tuning_leaves_perturbation_outputs_unchanged():
    """Same bytes with and without the tuning (it changes where memory comes from, never a value)."""
    code = ("import hashlib, numpy as np, robustlab as rl\n"
            "v = np.random.default_rng(0).integers(0, 256, (12, 64, 80, 3), dtype=np.uint8)\n"
            "h = hashlib.sha256()\n"
            "for n in ('zoom_blur', 'brightness', 'fog', 'glass_blur', 'gaussian_noise'):\n"
            "    h.update(rl.perturb(v, n, 3, seed=1).output.tobytes())\n"
            "print(h.hexdigest())")
    runs = []
    for flag in ("1", "0"):
        pre = "from robustlab.perturb.allocator import tune_allocator; tune_allocator()\n"
        out = subprocess.run([sys.executable, "-c", pre + code], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "ROBUSTLAB_MALLOC_TUNING": flag})
        assert out.returncode == 0, out.stderr
        runs.append(out.stdout.strip())
    assert runs[0] == runs[1] and len(runs[0]) == 64
