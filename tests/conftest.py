import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # app-level modules (ui.py) for AppTest


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Every test session gets its own embedding/gallery cache, so tests never read a stale user cache."""
    d = tmp_path_factory.mktemp("rlcache")
    old = os.environ.get("ROBUSTLAB_CACHE")
    os.environ["ROBUSTLAB_CACHE"] = str(d)
    yield d
    if old is None:
        os.environ.pop("ROBUSTLAB_CACHE", None)
    else:
        os.environ["ROBUSTLAB_CACHE"] = old


@pytest.fixture(autouse=True)
def _operator_config_per_test():
    """The dashboard's operator configuration is read once per process (app.py) and applied process-wide (dataset
    reads confined to the data roots, the hub's offline switches): every test starts and ends without it."""
    keep = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")}

    def reset():
        from robustlab.io.access import set_read_roots

        set_read_roots(None)
        if "ui.operator" in sys.modules:
            sys.modules["ui.operator"].reset_for_tests()
        for k, v in keep.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        hub = sys.modules.get("huggingface_hub")
        if hub is not None and keep["HF_HUB_OFFLINE"] is None:
            hub.constants.HF_HUB_OFFLINE = False
    reset()
    yield
    reset()


@pytest.fixture(scope="session")
def tiny_clip():
    import torch

    torch.set_num_threads(2)
    from robustlab.models import load_model

    return load_model("builtin:tiny-clip", device="cpu")


# ---- real-browser fixtures (tests/browser/test_browser*.py) ------------------------------------------------------
def _chromium():
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def need_or_skip(reason: str):
    """Browser tests skip with a visible reason on a machine without Chromium, but never in CI."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser test cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``streamlit run app.py`` on a free localhost port, with its own cache; fails if the log shows a traceback."""
    yield from run_server(tmp_path_factory)


def run_server(tmp_path_factory, args=(), env=None):
    """The ``server`` fixture's body, for a fixture that needs other Streamlit options or environment: yields
    the URL, then stops the server and fails if its log shows a traceback."""
    import socket
    import subprocess
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, ROBUSTLAB_CACHE=str(tmp_path_factory.mktemp("cache")), **(env or {}))
    log = open(tmp_path_factory.mktemp("log") / "streamlit.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true", *args],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    up = False
    while time.time() < deadline and proc.poll() is None:
        try:
            up = urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok"
        except OSError:
            pass
        if up:
            break
        time.sleep(0.5)
    if not up:
        proc.kill()
        log.seek(0)
        pytest.fail("streamlit did not start:\n" + log.read()[-3000:])
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.seek(0)
    tail = log.read()[-3000:]
    assert "Traceback" not in tail, tail


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright with executable_path (no browser download)."""
    exe = _chromium()
    if exe is None:
        need_or_skip("Chromium is not installed (apt-get install chromium, or ROBUSTLAB_BROWSER=1 bash setup.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need_or_skip("the playwright Python package is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--autoplay-policy=no-user-gesture-required"])
        yield b
        b.close()


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory):
    """One local Ray for every test that needs it (Ray has no local_mode any more), shut down at the end. The
    embedding cache of its workers is the test session's (they inherit the environment at start)."""
    ray = pytest.importorskip("ray")
    from robustlab.bench import ray_runner as ray_engine

    ray_engine.start(num_cpus=2)
    yield ray
    ray.shutdown()


# ---- the fast lane ---------------------------------------------------------------------------------------------
# Folders whose every test is marked slow: the dashboard (AppTest runs of whole pages), the real-browser tests and the
# training recipes. ``python -m pytest -q -m "not slow"`` is then the library's lane (under 3 minutes on 2 cores);
# CI runs everything. Single heavy tests elsewhere carry @pytest.mark.slow themselves.
SLOW_FOLDERS = ("ui", "browser", "training")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    for item in items:
        try:
            folder = Path(str(item.fspath)).resolve().relative_to(here).parts[0]
        except ValueError:
            continue
        if folder in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
